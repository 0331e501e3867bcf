package io.replicalb.core.hwlb;

/**
 * A node's own hit rate (a port of {@code crates/policy/src/hwlb/tracker.rs}).
 *
 * <p>Hits and misses are counted; every tick (published: 10 s) the tick's counts become rates
 * per second that feed exponentially weighted moving averages of hits/s and misses/s over a
 * window (published: 1 minute): avg += alpha (instant - avg), alpha = 1 - exp(-tick / window),
 * the first tick initialising the average. Ticks that passed idle decay both averages. The hit
 * rate is avg hits / (avg hits + avg misses), 0 without hits. Not thread-safe: one tick thread
 * owns it.
 */
public final class HitRateTracker
{
    /** The published tick, ms. */
    public static final long DEFAULT_TICK_MS = 10_000;
    /** The published window, ms. */
    public static final long DEFAULT_WINDOW_MS = 60_000;

    private final long tickNs;
    private final double alpha;
    private long nextTickNs;
    private long hitsInTick;
    private long missesInTick;
    private long hitsTotal;
    private long missesTotal;
    private boolean averaged;
    private double avgHitsPerS;
    private double avgMissesPerS;

    /** A tracker started at {@code nowNs} with the given tick and window (both positive). */
    public HitRateTracker(long tickNs, long windowNs, long nowNs)
    {
        if (tickNs <= 0 || windowNs <= 0)
            throw new IllegalArgumentException("tick and window must be positive (tick " + tickNs + " ns, window " + windowNs + " ns)");
        this.tickNs = tickNs;
        this.alpha = 1.0 - Math.exp(-((double) tickNs) / (double) windowNs);
        this.nextTickNs = nowNs + tickNs;
    }

    /** A tracker with the published 10 s tick and 1 minute window. */
    public static HitRateTracker withDefaults(long nowNs)
    {
        return new HitRateTracker(DEFAULT_TICK_MS * 1_000_000L, DEFAULT_WINDOW_MS * 1_000_000L, nowNs);
    }

    /** The weight of one tick in the moving averages, 1 - exp(-tick / window). */
    public double alpha()
    {
        return alpha;
    }

    /** Counts one cache hit. */
    public void recordHit()
    {
        recordHits(1);
    }

    /** Counts one cache miss. */
    public void recordMiss()
    {
        recordMisses(1);
    }

    /** Counts {@code count} cache hits (a delta of Cassandra's cumulative metric). */
    public void recordHits(long count)
    {
        assert count >= 0;
        hitsInTick += count;
        hitsTotal += count;
    }

    /** Counts {@code count} cache misses. */
    public void recordMisses(long count)
    {
        assert count >= 0;
        missesInTick += count;
        missesTotal += count;
    }

    /**
     * Advances the averages over every tick that ended at or before {@code nowNs}. Returns true
     * when the averages changed (so the caller can offer the new rate for publication).
     */
    public boolean advance(long nowNs)
    {
        if (nowNs < nextTickNs)
            return false;
        double tickS = tickNs / 1e9;
        double instantHits = hitsInTick / tickS;
        double instantMisses = missesInTick / tickS;
        hitsInTick = 0;
        missesInTick = 0;
        double hits;
        double misses;
        if (!averaged)
        {
            hits = instantHits;
            misses = instantMisses;
        }
        else
        {
            hits = avgHitsPerS + alpha * (instantHits - avgHitsPerS);
            misses = avgMissesPerS + alpha * (instantMisses - avgMissesPerS);
        }
        // Ticks that passed with no activity recorded at all: each one decays toward zero.
        long idleTicks = (nowNs - nextTickNs) / tickNs;
        if (idleTicks > 0)
        {
            double keep = Math.pow(1.0 - alpha, (double) idleTicks);
            hits *= keep;
            misses *= keep;
        }
        averaged = true;
        avgHitsPerS = hits;
        avgMissesPerS = misses;
        nextTickNs += (idleTicks + 1) * tickNs;
        return true;
    }

    /** The hit rate: avg hits/s / (avg hits/s + avg misses/s); 0 without hits. */
    public double hitRate()
    {
        if (averaged && avgHitsPerS > 0.0)
            return avgHitsPerS / (avgHitsPerS + avgMissesPerS);
        return 0.0;
    }

    /** Moving average of hits per second; 0 before the first tick. */
    public double avgHitsPerS()
    {
        return averaged ? avgHitsPerS : 0.0;
    }

    /** Moving average of misses per second; 0 before the first tick. */
    public double avgMissesPerS()
    {
        return averaged ? avgMissesPerS : 0.0;
    }

    /** All hits counted since the start. */
    public long hitsTotal()
    {
        return hitsTotal;
    }

    /** All misses counted since the start. */
    public long missesTotal()
    {
        return missesTotal;
    }

    /** When the next tick ends, ns. */
    public long nextTickNs()
    {
        return nextTickNs;
    }
}
