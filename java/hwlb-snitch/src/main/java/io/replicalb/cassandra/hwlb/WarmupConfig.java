package io.replicalb.cassandra.hwlb;

/**
 * The warm-up reads' settings ({@link WarmupReads}), with the Rust policy's defaults
 * ({@code crates/policy/src/hwlb/policy.rs}, as {@code unified} sets them).
 *
 * @param share {@code warmup_reads}: the multiple of its warm peers' misses per second at which a
 *        cold replica reads in the background (0 = off: a cold replica takes its HWLB share; 2,
 *        unified's default: it warms in half the time)
 * @param maxInFlight {@code warmup_max_in_flight}: background reads skipped while this many are
 *        unanswered at the cold replica
 * @param windowS {@code warmup_window_s}: a node counts as warming this long after it came up, s
 * @param rampS {@code warmup_ramp_s}: the slow start, the pace rises linearly from 0 over this
 *        long after the cold replica came up, s (0 = the whole pace at once)
 */
public record WarmupConfig(double share, int maxInFlight, double windowS, double rampS)
{
    /** The defaults: unified's. */
    public static final WarmupConfig DEFAULT = new WarmupConfig(2.0, 4, 900.0, 0.0);

    /** Checks the ranges the Rust policy accepts. */
    public WarmupConfig
    {
        if (!(share >= 0.0 && share <= 10.0))
            throw new IllegalArgumentException("warmup_reads " + share + ": must be in [0, 10]");
        if (maxInFlight < 1 || maxInFlight > 1_000_000)
            throw new IllegalArgumentException("warmup_max_in_flight " + maxInFlight + ": must be in [1, 1000000]");
        if (!(windowS >= 1.0 && windowS <= 86_400.0))
            throw new IllegalArgumentException("warmup_window_s " + windowS + ": must be in [1, 86400]");
        if (!(rampS >= 0.0 && rampS <= 3_600.0))
            throw new IllegalArgumentException("warmup_ramp_s " + rampS + ": must be in [0, 3600]");
    }

    /** The window, ns. */
    public long windowNs()
    {
        return (long) (windowS * 1e9);
    }

    /** The slow start's ramp, ns. */
    public long rampNs()
    {
        return (long) (rampS * 1e9);
    }
}
