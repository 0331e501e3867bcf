package io.replicalb.cassandra.hwlb;

import io.replicalb.core.hwlb.HitRateTracker;
import io.replicalb.core.hwlb.PlanConfig;

import java.util.LinkedHashMap;
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
        return HwlbProperties.describe();
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
        HwlbProperties in = new HwlbProperties(lookup);
        String inner = in.innerSnitch();
        CoordinatorPolicy policy = in.startPolicy();
        ReadConsistency cl = ReadConsistency.parse(PREFIX + "read_cl", in.text("read_cl", "QUORUM"));
        CacheKind cache = CacheKind.parse(PREFIX + "cache", in.text("cache", "auto"));
        long tickMs = in.whole("tick_ms", HitRateTracker.DEFAULT_TICK_MS, 100, 3_600_000);
        long windowMs = in.whole("window_ms", HitRateTracker.DEFAULT_WINDOW_MS, 100, 86_400_000);
        long staleAfterMs = in.whole("stale_after_ms", DEFAULT_STALE_AFTER_MS, 100, 86_400_000);
        double staleRate = in.real("stale_rate", DEFAULT_STALE_RATE, 0.0, 1.0);
        double cap = in.real("hit_rate_cap", PlanConfig.DEFAULT_HIT_RATE_CAP, 0.0, 0.999);
        double spread = in.real("min_spread", PlanConfig.DEFAULT_MIN_SPREAD, 0.0, 1.0);
        String state = in.gossipState();
        CoordinatorRule rule = in.rule();
        int maxTables = (int) in.whole("max_tables", DEFAULT_MAX_TABLES, 0, GossipValue.MAX_TABLES);
        WarmupConfig warmup = in.warmup();
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
}
