package io.replicalb.cassandra.hwlb;

import io.replicalb.core.hwlb.HitRateTracker;
import io.replicalb.core.hwlb.RatePublisher;

import java.util.List;
import java.util.function.Consumer;

/**
 * This node's own hit rate, advanced once per tick: reads the cache's cumulative counts, feeds
 * the deltas to the {@link HitRateTracker}, offers the rate to the {@link RatePublisher}, and
 * the same per table ({@link TableRates}, when per-table rates are on); when the node-wide rate
 * or the gossiped tables changed, hands the gossip value to the sender and the published rates
 * to the {@link PeerDirectory}. The local node plans with its published rates (not the
 * trackers' latest), so that every coordinator computes the same plan from the same numbers.
 */
public final class LocalRate
{
    private final HitRateTracker tracker;
    private final RatePublisher publisher = new RatePublisher();
    private final CacheProbe probe;
    private final TableProbe tableProbe;
    private final TableRates tables;
    private final Consumer<String> gossip;
    private final PeerDirectory directory;
    private long lastHits;
    private long lastMisses;
    private volatile double hitRate;
    private volatile double publishedRate = Double.NaN;
    private volatile List<TableRates.Info> tableInfo = List.of();

    /**
     * Starts measuring at {@code nowNs}, node-wide only.
     *
     * @param tickMs the tracker's tick
     * @param windowMs the tracker's window
     * @param probe the cache measured
     * @param gossip sends a gossip value
     * @param directory receives the published rate
     */
    public LocalRate(long tickMs, long windowMs, CacheProbe probe, Consumer<String> gossip, PeerDirectory directory, long nowNs)
    {
        this(tickMs, windowMs, probe, TableProbe.NONE, 0, gossip, directory, nowNs);
    }

    /**
     * Starts measuring at {@code nowNs}, node-wide and per table.
     *
     * @param tickMs the trackers' tick
     * @param windowMs the trackers' window
     * @param probe the cache measured node-wide
     * @param tableProbe the per-table counts ({@link TableProbe#NONE}: node-wide only)
     * @param maxTables the most tables gossiped
     * @param gossip sends a gossip value
     * @param directory receives the published rates
     */
    public LocalRate(long tickMs, long windowMs, CacheProbe probe, TableProbe tableProbe, int maxTables, Consumer<String> gossip,
                     PeerDirectory directory, long nowNs)
    {
        this.tracker = new HitRateTracker(tickMs * 1_000_000L, windowMs * 1_000_000L, nowNs);
        this.tables = new TableRates(tickMs * 1_000_000L, windowMs * 1_000_000L, maxTables);
        this.tableProbe = maxTables > 0 ? tableProbe : TableProbe.NONE;
        this.probe = probe;
        this.gossip = gossip;
        this.directory = directory;
        this.lastHits = probe.hits();
        this.lastMisses = probe.misses();
    }

    /** One tick at {@code nowNs}; returns whether a value was published. */
    public synchronized boolean tick(long nowNs)
    {
        long hits = probe.hits();
        long misses = probe.misses();
        tracker.recordHits(Math.max(0, hits - lastHits));
        tracker.recordMisses(Math.max(0, misses - lastMisses));
        lastHits = hits;
        lastMisses = misses;
        boolean publish = false;
        if (tracker.advance(nowNs))
        {
            double rate = tracker.hitRate();
            hitRate = rate;
            publish = publisher.offer(rate, nowNs);
        }
        boolean tablesChanged = tables.tick(tableProbe, nowNs);
        tableInfo = List.copyOf(tables.describe());
        // Tables ride with the node-wide rate: nothing goes out before its first publication.
        if (!(publish || tablesChanged) || Double.isNaN(publisher.last()))
            return false;
        String value = GossipValue.of(publisher.last(), tables.publishedKeys(), tables.publishedRates());
        GossipValue.Parsed published = GossipValue.parseFull(value);
        gossip.accept(value);
        publishedRate = published.rate();
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

    /** Every table measured at the last tick, hottest first (empty when per-table rates are off). */
    public List<TableRates.Info> tables()
    {
        return tableInfo;
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
