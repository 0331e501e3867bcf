package io.replicalb.cassandra.hwlb;

import io.replicalb.core.hwlb.HitRateTracker;
import io.replicalb.core.hwlb.PlanConfig;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;

import static io.replicalb.cassandra.hwlb.HwlbSettings.DEFAULT_GOSSIP_STATE;
import static io.replicalb.cassandra.hwlb.HwlbSettings.DEFAULT_INNER_SNITCH;
import static io.replicalb.cassandra.hwlb.HwlbSettings.DEFAULT_MAX_TABLES;
import static io.replicalb.cassandra.hwlb.HwlbSettings.DEFAULT_STALE_AFTER_MS;
import static io.replicalb.cassandra.hwlb.HwlbSettings.DEFAULT_STALE_RATE;
import static io.replicalb.cassandra.hwlb.HwlbSettings.PREFIX;

/**
 * Reads the plug-in's properties ({@link HwlbSettings}) one by one from a lookup (short name
 * to value, or null when unset): each with its default and its allowed range, a bad value
 * refused naming the property, its value and what is allowed. Kept apart from the settings
 * record so that each group of properties (the snitch, the policy, the coordinator rule, the
 * warm-up) is read by one short method.
 */
final class HwlbProperties
{
    private final Function<String, String> lookup;

    HwlbProperties(Function<String, String> lookup)
    {
        this.lookup = lookup;
    }

    /** Every property with its default and what it accepts (for the doc and the settings table). */
    static Map<String, String> describe()
    {
        Map<String, String> m = new LinkedHashMap<>();
        m.put("inner_snitch", DEFAULT_INNER_SNITCH + "; a snitch class (short names in org.apache.cassandra.locator)");
        m.put("policy", CoordinatorPolicy.DEFAULT.label() + "; " + CoordinatorPolicy.allowed());
        m.put("enabled", "(policy is hwlb or unified); true = policy hwlb, false = policy naive");
        m.put("read_cl", "QUORUM; " + ReadConsistency.allowed());
        m.put("cache", "auto; auto, row, chunk, key");
        m.put("tick_ms", HitRateTracker.DEFAULT_TICK_MS + "; [100, 3600000]");
        m.put("window_ms", HitRateTracker.DEFAULT_WINDOW_MS + "; [100, 86400000]");
        m.put("stale_after_ms", DEFAULT_STALE_AFTER_MS + "; [100, 86400000]");
        m.put("stale_rate", DEFAULT_STALE_RATE + "; [0, 1]");
        m.put("hit_rate_cap", PlanConfig.DEFAULT_HIT_RATE_CAP + "; [0, 0.999]");
        m.put("min_spread", PlanConfig.DEFAULT_MIN_SPREAD + "; [0, 1]");
        m.put("gossip_state", DEFAULT_GOSSIP_STATE + "; X1 .. X10");
        m.put("max_tables", DEFAULT_MAX_TABLES + "; [0, " + GossipValue.MAX_TABLES + "]");
        CoordinatorRule d = CoordinatorRule.DEFAULT;
        m.put("in_flight_threshold", d.inFlightThreshold() + "; [1, 1000000]");
        m.put("min_responses", d.minResponses() + "; [1, " + CoordinatorRule.MAX_MIN_RESPONSES + "]");
        m.put("response_window_ms", d.responseWindowMs() + "; [1, 3600000]");
        m.put("latency_ewma_weight", d.latencyEwmaWeight() + "; (0, 1]");
        m.put("slow_factor", d.slowFactor() + "; [1, 1000000]");
        m.put("slow_margin_ms", d.slowMarginMs() + "; [0, 3600000]");
        m.put("latency_memory_ms", d.latencyMemoryMs() + "; [1, 3600000]");
        m.put("stall_ms", d.stallMs() + "; [1, 3600000]");
        m.put("expiry_memory_ms", d.expiryMemoryMs() + "; [0, 3600000]");
        m.put("cold_hit_rate_gap", d.coldHitRateGap() + "; [0, 1]");
        m.put("probe_interval_ms", d.probeIntervalMs() + "; [10, 3600000]");
        m.put("probe_timeout_ms", d.probeTimeoutMs() + "; [10, 3600000]");
        m.put("overdue_factor", d.overdueFactor() + "; [0, 1000000] (0 = off)");
        m.put("heat_weight", d.heatWeight() + "; [0, " + GiveWay.MAX_HEAT_WEIGHT + "] (0 = load alone decides)");
        WarmupConfig w = WarmupConfig.DEFAULT;
        m.put("warmup_reads", w.share() + "; [0, 10] (unified: the multiple of its peers' misses per second a cold replica reads in the background; 0 = it takes its HWLB share)");
        m.put("warmup_max_in_flight", w.maxInFlight() + "; [1, 1000000]");
        m.put("warmup_window_s", w.windowS() + "; [1, 86400]");
        m.put("warmup_ramp_s", w.rampS() + "; [0, 3600] (0 = the whole pace at once)");
        return m;
    }

    /** {@code inner_snitch}: a plain snitch class (short names in org.apache.cassandra.locator). */
    String innerSnitch()
    {
        String inner = text("inner_snitch", DEFAULT_INNER_SNITCH);
        if (inner.isEmpty())
            throw bad("inner_snitch", inner, "a snitch class name");
        if (!inner.contains("."))
            inner = "org.apache.cassandra.locator." + inner;
        if (inner.equals(HwlbSnitch.class.getName()) || inner.endsWith(".DynamicEndpointSnitch"))
            throw bad("inner_snitch", inner, "a plain snitch class (not HwlbSnitch itself, not DynamicEndpointSnitch)");
        return inner;
    }

    /** The policy at start: {@code policy}; else {@code enabled} (true = hwlb, false = naive); else the default. */
    CoordinatorPolicy startPolicy()
    {
        String p = lookup.apply("policy");
        if (p != null)
            return CoordinatorPolicy.parse(PREFIX + "policy", p);
        if (lookup.apply("enabled") != null)
            return bool("enabled", true) ? CoordinatorPolicy.HWLB : CoordinatorPolicy.NAIVE;
        return CoordinatorPolicy.DEFAULT;
    }

    /** {@code gossip_state}: one of X1 .. X10, upper case. */
    String gossipState()
    {
        String state = text("gossip_state", DEFAULT_GOSSIP_STATE).toUpperCase(Locale.ROOT);
        if (!state.matches("X([1-9]|10)"))
            throw bad("gossip_state", state, "one of X1 .. X10");
        return state;
    }

    /** unified's coordinator rule, each parameter defaulting to {@link CoordinatorRule#DEFAULT}'s. */
    CoordinatorRule rule()
    {
        CoordinatorRule d = CoordinatorRule.DEFAULT;
        double weight = real("latency_ewma_weight", d.latencyEwmaWeight(), 0.0, 1.0);
        if (weight == 0.0)
            throw bad("latency_ewma_weight", "0", "a number in (0, 1]");
        return new CoordinatorRule((int) whole("in_flight_threshold", d.inFlightThreshold(), 1, 1_000_000),
                                   (int) whole("min_responses", d.minResponses(), 1, CoordinatorRule.MAX_MIN_RESPONSES),
                                   whole("response_window_ms", d.responseWindowMs(), 1, 3_600_000),
                                   weight,
                                   real("slow_factor", d.slowFactor(), 1.0, 1e6),
                                   real("slow_margin_ms", d.slowMarginMs(), 0.0, 3_600_000.0),
                                   whole("latency_memory_ms", d.latencyMemoryMs(), 1, 3_600_000),
                                   whole("stall_ms", d.stallMs(), 1, 3_600_000),
                                   whole("expiry_memory_ms", d.expiryMemoryMs(), 0, 3_600_000),
                                   real("cold_hit_rate_gap", d.coldHitRateGap(), 0.0, 1.0),
                                   whole("probe_interval_ms", d.probeIntervalMs(), 10, 3_600_000),
                                   whole("probe_timeout_ms", d.probeTimeoutMs(), 10, 3_600_000),
                                   real("overdue_factor", d.overdueFactor(), 0.0, 1e6),
                                   (int) whole("heat_weight", d.heatWeight(), 0, GiveWay.MAX_HEAT_WEIGHT));
    }

    /** unified's warm-up reads, each parameter defaulting to {@link WarmupConfig#DEFAULT}'s. */
    WarmupConfig warmup()
    {
        WarmupConfig w = WarmupConfig.DEFAULT;
        return new WarmupConfig(real("warmup_reads", w.share(), 0.0, 10.0),
                                (int) whole("warmup_max_in_flight", w.maxInFlight(), 1, 1_000_000),
                                real("warmup_window_s", w.windowS(), 1.0, 86_400.0),
                                real("warmup_ramp_s", w.rampS(), 0.0, 3_600.0));
    }

    /** Property {@code name} trimmed, or {@code dflt} when unset. */
    String text(String name, String dflt)
    {
        String v = lookup.apply(name);
        return v == null ? dflt : v.trim();
    }

    /** Parses "true"/"false" (case-insensitive), naming {@code name} when it is neither. */
    static boolean parseBool(String name, String v)
    {
        String t = v == null ? "" : v.trim().toLowerCase(Locale.ROOT);
        if (t.equals("true"))
            return true;
        if (t.equals("false"))
            return false;
        throw new IllegalArgumentException(name + " '" + v + "' is not allowed; use true or false");
    }

    /** Property {@code name} as true or false, or {@code dflt} when unset. */
    boolean bool(String name, boolean dflt)
    {
        String v = lookup.apply(name);
        return v == null ? dflt : parseBool(PREFIX + name, v);
    }

    /** Property {@code name} as a whole number in [min, max], or {@code dflt} when unset. */
    long whole(String name, long dflt, long min, long max)
    {
        String v = lookup.apply(name);
        if (v == null)
            return dflt;
        long x;
        try
        {
            x = Long.parseLong(v.trim());
        }
        catch (NumberFormatException e)
        {
            throw bad(name, v, "a whole number in [" + min + ", " + max + "]");
        }
        if (x < min || x > max)
            throw bad(name, v, "a whole number in [" + min + ", " + max + "]");
        return x;
    }

    /** Property {@code name} as a number in [min, max], or {@code dflt} when unset. */
    double real(String name, double dflt, double min, double max)
    {
        String v = lookup.apply(name);
        if (v == null)
            return dflt;
        double x;
        try
        {
            x = Double.parseDouble(v.trim());
        }
        catch (NumberFormatException e)
        {
            throw bad(name, v, "a number in [" + min + ", " + max + "]");
        }
        if (!(x >= min && x <= max))
            throw bad(name, v, "a number in [" + min + ", " + max + "]");
        return x;
    }

    /** The error for property {@code name}'s bad {@code value}. */
    static IllegalArgumentException bad(String name, String value, String allowed)
    {
        return new IllegalArgumentException(PREFIX + name + " '" + value + "' is not allowed; use " + allowed);
    }
}
