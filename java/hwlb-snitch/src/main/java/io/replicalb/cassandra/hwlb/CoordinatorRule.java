package io.replicalb.cassandra.hwlb;

/**
 * The parameters of {@code unified}'s coordinator rule (see {@link CoordinatorHealth}); the
 * same defaults as the Rust policy ({@code crates/policy/src/unified/coordinator.rs}).
 *
 * @param inFlightThreshold busy: at least this many sends since the last reply, or messages pending
 * @param minResponses silent: fewer replies than this within the window (1..8)
 * @param responseWindowMs the window, ms
 * @param latencyEwmaWeight weight of a new reply latency in the average, (0, 1]
 * @param slowFactor slow: average above this many times the fastest other candidate's
 * @param slowMarginMs slow: and above it by more than this, ms
 * @param latencyMemoryMs an average counts while its last reply is younger than this, ms
 * @param stallMs a reply slower than this is a stall: an answer, but not in the average, ms
 * @param expiryMemoryMs an expiry passes a replica over this long unless it answered since, ms
 * @param coldHitRateGap cold (never passed over for being slow): hit rate below the warmest's by more than this
 * @param probeIntervalMs a live peer without a reply for this long is probed (ECHO), ms
 * @param probeTimeoutMs a probe unanswered this long counts as an expiry, ms
 * @param overdueFactor overdue: one read unanswered for more than this many times the replica's usual time passes it over (0 = off)
 * @param heatWeight a drawn replica gives way to one whose expected time x (misses ratio)^heatWeight is lower ({@link GiveWay}; 0..8)
 */
public record CoordinatorRule(int inFlightThreshold,
                              int minResponses,
                              long responseWindowMs,
                              double latencyEwmaWeight,
                              double slowFactor,
                              double slowMarginMs,
                              long latencyMemoryMs,
                              long stallMs,
                              long expiryMemoryMs,
                              double coldHitRateGap,
                              long probeIntervalMs,
                              long probeTimeoutMs,
                              double overdueFactor,
                              int heatWeight)
{
    /** The most replies the silent rule can be asked to count. */
    public static final int MAX_MIN_RESPONSES = 8;
    /** The defaults (the Rust policy's). */
    public static final CoordinatorRule DEFAULT = new CoordinatorRule(10, 2, 200, 0.05, 3.0, 5.0, 2000, 1000, 2000, 0.1, 200, 1000, 1.0, 1);

    /** Checks the invariants. */
    public CoordinatorRule
    {
        if (inFlightThreshold < 1)
            throw new IllegalArgumentException("in_flight_threshold must be at least 1");
        if (minResponses < 1 || minResponses > MAX_MIN_RESPONSES)
            throw new IllegalArgumentException("min_responses must be in [1, " + MAX_MIN_RESPONSES + "]");
        if (!(latencyEwmaWeight > 0.0 && latencyEwmaWeight <= 1.0))
            throw new IllegalArgumentException("latency_ewma_weight must be in (0, 1]");
        if (!(slowFactor >= 1.0))
            throw new IllegalArgumentException("slow_factor must be at least 1");
        if (!(overdueFactor >= 0.0))
            throw new IllegalArgumentException("overdue_factor must be at least 0");
        if (heatWeight < 0 || heatWeight > GiveWay.MAX_HEAT_WEIGHT)
            throw new IllegalArgumentException("heat_weight must be in [0, " + GiveWay.MAX_HEAT_WEIGHT + "]");
    }

    /** The window, ns. */
    long responseWindowNs()
    {
        return responseWindowMs * 1_000_000L;
    }

    /** The slow margin, ns (as the Rust rule: ms times 1e6, a double). */
    double slowMarginNs()
    {
        return slowMarginMs * 1e6;
    }

    /** The latency memory, ns. */
    long latencyMemoryNs()
    {
        return latencyMemoryMs * 1_000_000L;
    }

    /** The stall threshold, ns. */
    long stallNs()
    {
        return stallMs * 1_000_000L;
    }

    /** The expiry memory, ns. */
    long expiryMemoryNs()
    {
        return expiryMemoryMs * 1_000_000L;
    }
}
