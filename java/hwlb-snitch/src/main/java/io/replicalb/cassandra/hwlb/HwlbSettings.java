package io.replicalb.cassandra.hwlb;

import io.replicalb.core.hwlb.HitRateTracker;
import io.replicalb.core.hwlb.PlanConfig;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;

/**
 * The plug-in's configuration, read from JVM system properties {@code replica_lb.hwlb.*} once at
 * start and validated there: a bad value stops the node with a message naming it and what is
 * allowed. Every property is optional. {@code policy} (or the older {@code enabled}) and
 * {@code read_cl} are only the initial values of {@link HwlbSwitch}, which changes at run time.
 *
 * @param innerSnitch the snitch HWLB delegates to (racks, datacenters, the order when it steps aside)
 * @param policy the coordinator policy at start ({@code policy}; else {@code enabled}: true = hwlb,
 *        false = naive; else unified)
 * @param readCl the consistency level reads are planned for
 * @param cache whose misses count
 * @param tickMs the tracker's tick
 * @param windowMs the tracker's moving-average window
 * @param staleAfterMs a peer not heard from for longer counts as stale
 * @param staleRate the rate a stale peer counts as
 * @param plan the plan's cap and minimum spread
 * @param gossipState the application state (X1..X10) carrying the rate
 * @param rule the parameters of unified's coordinator rule
 * @param maxTables the most tables whose own rates this node gossips (the hottest by reads; 0:
 *        node-wide rates only)
 * @param warmup unified's warm-up reads for a restarted replica
 */
public record HwlbSettings(String innerSnitch,
                           CoordinatorPolicy policy,
                           ReadConsistency readCl,
                           CacheKind cache,
                           long tickMs,
                           long windowMs,
                           long staleAfterMs,
                           double staleRate,
                           PlanConfig plan,
                           String gossipState,
                           CoordinatorRule rule,
                           int maxTables,
                           WarmupConfig warmup)
{
    /** Default of {@code max_tables}: a gossip value of at most 15 + 18 x 16 = 303 bytes. */
    public static final int DEFAULT_MAX_TABLES = 16;

    /** Prefix of every property. */
    public static final String PREFIX = "replica_lb.hwlb.";
    /** The default inner snitch. */
    public static final String DEFAULT_INNER_SNITCH = "org.apache.cassandra.locator.GossipingPropertyFileSnitch";
    /** Default staleness: three gossip rounds (gossip runs every second). */
    public static final long DEFAULT_STALE_AFTER_MS = 3000;
    /** Default stale rate (published). */
    public static final double DEFAULT_STALE_RATE = 0.95;
    /**
     * Default application state: X10, the last of the ten states Cassandra leaves to
     * extensions, the least likely to be taken by another plug-in counting up from X1.
     */
    public static final String DEFAULT_GOSSIP_STATE = "X10";

    /** Every property with its default and what it accepts (for the doc and the settings table). */
    public static Map<String, String> describe()
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

    /** The settings from the JVM's system properties. */
    public static HwlbSettings fromSystemProperties()
    {
        return parse(name -> System.getProperty(PREFIX + name));
    }

    /**
     * The settings from {@code lookup} (short name, e.g. {@code "tick_ms"}, to value or null).
     *
     * @throws IllegalArgumentException naming the first bad property, its value and what is allowed
     */
    public static HwlbSettings parse(Function<String, String> lookup)
    {
        String inner = text(lookup, "inner_snitch", DEFAULT_INNER_SNITCH);
        if (inner.isEmpty())
            throw bad("inner_snitch", inner, "a snitch class name");
        if (!inner.contains("."))
            inner = "org.apache.cassandra.locator." + inner;
        if (inner.equals(HwlbSnitch.class.getName()) || inner.endsWith(".DynamicEndpointSnitch"))
            throw bad("inner_snitch", inner, "a plain snitch class (not HwlbSnitch itself, not DynamicEndpointSnitch)");
        CoordinatorPolicy policy;
        String p = lookup.apply("policy");
        if (p != null)
            policy = CoordinatorPolicy.parse(PREFIX + "policy", p);
        else if (lookup.apply("enabled") != null)
            policy = bool(lookup, "enabled", true) ? CoordinatorPolicy.HWLB : CoordinatorPolicy.NAIVE;
        else
            policy = CoordinatorPolicy.DEFAULT;
        ReadConsistency cl = ReadConsistency.parse(PREFIX + "read_cl", text(lookup, "read_cl", "QUORUM"));
        CacheKind cache = CacheKind.parse(PREFIX + "cache", text(lookup, "cache", "auto"));
        long tickMs = whole(lookup, "tick_ms", HitRateTracker.DEFAULT_TICK_MS, 100, 3_600_000);
        long windowMs = whole(lookup, "window_ms", HitRateTracker.DEFAULT_WINDOW_MS, 100, 86_400_000);
        long staleAfterMs = whole(lookup, "stale_after_ms", DEFAULT_STALE_AFTER_MS, 100, 86_400_000);
        double staleRate = real(lookup, "stale_rate", DEFAULT_STALE_RATE, 0.0, 1.0);
        double cap = real(lookup, "hit_rate_cap", PlanConfig.DEFAULT_HIT_RATE_CAP, 0.0, 0.999);
        double spread = real(lookup, "min_spread", PlanConfig.DEFAULT_MIN_SPREAD, 0.0, 1.0);
        String state = text(lookup, "gossip_state", DEFAULT_GOSSIP_STATE).toUpperCase(Locale.ROOT);
        if (!state.matches("X([1-9]|10)"))
            throw bad("gossip_state", state, "one of X1 .. X10");
        CoordinatorRule d = CoordinatorRule.DEFAULT;
        double weight = real(lookup, "latency_ewma_weight", d.latencyEwmaWeight(), 0.0, 1.0);
        if (weight == 0.0)
            throw bad("latency_ewma_weight", "0", "a number in (0, 1]");
        CoordinatorRule rule = new CoordinatorRule((int) whole(lookup, "in_flight_threshold", d.inFlightThreshold(), 1, 1_000_000),
                                                   (int) whole(lookup, "min_responses", d.minResponses(), 1, CoordinatorRule.MAX_MIN_RESPONSES),
                                                   whole(lookup, "response_window_ms", d.responseWindowMs(), 1, 3_600_000),
                                                   weight,
                                                   real(lookup, "slow_factor", d.slowFactor(), 1.0, 1e6),
                                                   real(lookup, "slow_margin_ms", d.slowMarginMs(), 0.0, 3_600_000.0),
                                                   whole(lookup, "latency_memory_ms", d.latencyMemoryMs(), 1, 3_600_000),
                                                   whole(lookup, "stall_ms", d.stallMs(), 1, 3_600_000),
                                                   whole(lookup, "expiry_memory_ms", d.expiryMemoryMs(), 0, 3_600_000),
                                                   real(lookup, "cold_hit_rate_gap", d.coldHitRateGap(), 0.0, 1.0),
                                                   whole(lookup, "probe_interval_ms", d.probeIntervalMs(), 10, 3_600_000),
                                                   whole(lookup, "probe_timeout_ms", d.probeTimeoutMs(), 10, 3_600_000),
                                                   real(lookup, "overdue_factor", d.overdueFactor(), 0.0, 1e6),
                                                   (int) whole(lookup, "heat_weight", d.heatWeight(), 0, GiveWay.MAX_HEAT_WEIGHT));
        int maxTables = (int) whole(lookup, "max_tables", DEFAULT_MAX_TABLES, 0, GossipValue.MAX_TABLES);
        WarmupConfig w = WarmupConfig.DEFAULT;
        WarmupConfig warmup = new WarmupConfig(real(lookup, "warmup_reads", w.share(), 0.0, 10.0),
                                               (int) whole(lookup, "warmup_max_in_flight", w.maxInFlight(), 1, 1_000_000),
                                               real(lookup, "warmup_window_s", w.windowS(), 1.0, 86_400.0),
                                               real(lookup, "warmup_ramp_s", w.rampS(), 0.0, 3_600.0));
        return new HwlbSettings(inner, policy, cl, cache, tickMs, windowMs, staleAfterMs, staleRate,
                                new PlanConfig(cap, spread), state, rule, maxTables, warmup);
    }

    /** Whether the start policy draws with HWLB (hwlb or unified): the old {@code enabled}. */
    public boolean enabled()
    {
        return policy.draws();
    }

    /** The defaults (no property set). */
    public static HwlbSettings defaults()
    {
        return parse(name -> null);
    }

    /** This node's settings as (name, value) pairs, for the settings table. */
    public Map<String, String> asMap()
    {
        Map<String, String> m = new LinkedHashMap<>();
        m.put("inner_snitch", innerSnitch);
        m.put("policy", policy.label());
        m.put("enabled", Boolean.toString(policy.draws()));
        m.put("read_cl", readCl.name());
        m.put("cache", cache.label());
        m.put("tick_ms", Long.toString(tickMs));
        m.put("window_ms", Long.toString(windowMs));
        m.put("stale_after_ms", Long.toString(staleAfterMs));
        m.put("stale_rate", Double.toString(staleRate));
        m.put("hit_rate_cap", Double.toString(plan.hitRateCap()));
        m.put("min_spread", Double.toString(plan.minSpread()));
        m.put("gossip_state", gossipState);
        m.put("max_tables", Integer.toString(maxTables));
        m.put("in_flight_threshold", Integer.toString(rule.inFlightThreshold()));
        m.put("min_responses", Integer.toString(rule.minResponses()));
        m.put("response_window_ms", Long.toString(rule.responseWindowMs()));
        m.put("latency_ewma_weight", Double.toString(rule.latencyEwmaWeight()));
        m.put("slow_factor", Double.toString(rule.slowFactor()));
        m.put("slow_margin_ms", Double.toString(rule.slowMarginMs()));
        m.put("latency_memory_ms", Long.toString(rule.latencyMemoryMs()));
        m.put("stall_ms", Long.toString(rule.stallMs()));
        m.put("expiry_memory_ms", Long.toString(rule.expiryMemoryMs()));
        m.put("cold_hit_rate_gap", Double.toString(rule.coldHitRateGap()));
        m.put("probe_interval_ms", Long.toString(rule.probeIntervalMs()));
        m.put("probe_timeout_ms", Long.toString(rule.probeTimeoutMs()));
        m.put("overdue_factor", Double.toString(rule.overdueFactor()));
        m.put("heat_weight", Integer.toString(rule.heatWeight()));
        m.put("warmup_reads", Double.toString(warmup.share()));
        m.put("warmup_max_in_flight", Integer.toString(warmup.maxInFlight()));
        m.put("warmup_window_s", Double.toString(warmup.windowS()));
        m.put("warmup_ramp_s", Double.toString(warmup.rampS()));
        return m;
    }

    private static String text(Function<String, String> lookup, String name, String dflt)
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

    private static boolean bool(Function<String, String> lookup, String name, boolean dflt)
    {
        String v = lookup.apply(name);
        return v == null ? dflt : parseBool(PREFIX + name, v);
    }

    private static long whole(Function<String, String> lookup, String name, long dflt, long min, long max)
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

    private static double real(Function<String, String> lookup, String name, double dflt, double min, double max)
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

    private static IllegalArgumentException bad(String name, String value, String allowed)
    {
        return new IllegalArgumentException(PREFIX + name + " '" + value + "' is not allowed; use " + allowed);
    }
}
