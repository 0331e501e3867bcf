package io.replicalb.cassandra.hwlb;

import java.util.function.Consumer;

/**
 * This node's own hit rate, advanced once per tick: reads the cache's cumulative counts, feeds
 * the deltas to the {@link HitRateTracker}, offers the rate to the {@link RatePublisher}, and
 * when it is to go out, hands the gossip value to the sender and the published rate to the
 * {@link PeerDirectory}. The local node plans with its published rate (not the tracker's
 * latest), so that every coordinator computes the same plan from the same numbers.
 */
public final class LocalRate
{
    private final HitRateTracker tracker;
    private final RatePublisher publisher = new RatePublisher();
    private final CacheProbe probe;
    private final Consumer<String> gossip;
    private final PeerDirectory directory;
    private long lastHits;
    private long lastMisses;
    private volatile double hitRate;
    private volatile double publishedRate = Double.NaN;

    /**
     * Starts measuring at {@code nowNs}.
     *
     * @param tickMs the tracker's tick
     * @param windowMs the tracker's window
     * @param probe the cache measured
     * @param gossip sends a gossip value
     * @param directory receives the published rate
     */
    public LocalRate(long tickMs, long windowMs, CacheProbe probe, Consumer<String> gossip, PeerDirectory directory, long nowNs)
    {
        this.tracker = new HitRateTracker(tickMs * 1_000_000L, windowMs * 1_000_000L, nowNs);
        this.probe = probe;
        this.gossip = gossip;
        this.directory = directory;
        this.lastHits = probe.hits();
        this.lastMisses = probe.misses();
    }

    /** One tick at {@code nowNs}; returns whether a rate was published. */
    public synchronized boolean tick(long nowNs)
    {
        long hits = probe.hits();
        long misses = probe.misses();
        tracker.recordHits(Math.max(0, hits - lastHits));
        tracker.recordMisses(Math.max(0, misses - lastMisses));
        lastHits = hits;
        lastMisses = misses;
        if (!tracker.advance(nowNs))
            return false;
        double rate = tracker.hitRate();
        hitRate = rate;
        if (!publisher.offer(rate, nowNs))
            return false;
        String value = GossipValue.of(rate);
        double published = GossipValue.parse(value);
        gossip.accept(value);
        publishedRate = published;
        directory.setLocalRate(published, nowNs);
        return true;
    }

    /** The tracker's current rate. */
    public double hitRate()
    {
        return hitRate;
    }

    /** The last rate published (NaN before the first). */
    public double publishedRate()
    {
        return publishedRate;
    }

    /** The cache's cumulative hits now. */
    public long cacheHits()
    {
        return probe.hits();
    }

    /** The cache's cumulative misses now. */
    public long cacheMisses()
    {
        return probe.misses();
    }

    /** The cache measured. */
    public CacheKind cache()
    {
        return probe.kind();
    }
}
