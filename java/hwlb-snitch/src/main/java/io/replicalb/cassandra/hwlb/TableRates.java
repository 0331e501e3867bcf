package io.replicalb.cassandra.hwlb;

import io.replicalb.core.hwlb.HitRateTracker;
import io.replicalb.core.hwlb.RatePublisher;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * This node's hit rate per table ("per column family", as the seed computes it): one
 * {@link HitRateTracker} and one {@link RatePublisher} per table with a row cache, fed the
 * deltas of Cassandra's per-table counts ({@link TableProbe}) on every tick, by the same rules
 * as the node-wide rate.
 *
 * <p>Which tables are gossiped (bounded): only tables read within the last window
 * ({@code window_ms}), at most {@code maxTables} of them, the hottest by their average reads
 * per second (ties by key), so the gossip value stays within
 * {@link GossipValue#BASE_BYTES} + {@link GossipValue#TABLE_ENTRY_BYTES} x maxTables bytes. A
 * table's published rate changes by the publication rule of {@link RatePublisher}; a table that
 * leaves the published set starts afresh when it comes back (its first rate is published at
 * once). Not thread-safe: {@link LocalRate} serialises the ticks.
 */
public final class TableRates
{
    /** One table's state. */
    private static final class Entry
    {
        final int key;
        final String name;
        final HitRateTracker tracker;
        RatePublisher publisher = new RatePublisher();
        long lastHits;
        long lastMisses;
        /** When a read was last seen, ns (Long.MIN_VALUE: none since tracking began). */
        long lastReadNs = Long.MIN_VALUE;
        boolean inSet;

        Entry(int key, String name, long tickNs, long windowNs, long nowNs, long hits, long misses)
        {
            this.key = key;
            this.name = name;
            // Half a tick of slack: the tick that follows this one (scheduled a tick later, run
            // a little early or late) advances it.
            this.tracker = new HitRateTracker(tickNs, windowNs, nowNs - tickNs / 2);
            this.lastHits = hits;
            this.lastMisses = misses;
        }

        double readsPerS()
        {
            return tracker.avgHitsPerS() + tracker.avgMissesPerS();
        }
    }

    /** What is known of one table, for the {@code tables} virtual table. */
    public record Info(int key, String name, double hitRate, double publishedRate, double readsPerS, long hits, long misses, boolean published)
    {
    }

    private final long tickNs;
    private final long windowNs;
    private final int maxTables;
    private final Map<Integer, Entry> entries = new HashMap<>();
    private int[] publishedKeys = new int[0];

    /**
     * Per-table rates with the tracker's {@code tickNs} and {@code windowNs}, gossiping at most
     * {@code maxTables} tables (in [0, {@link GossipValue#MAX_TABLES}]).
     */
    public TableRates(long tickNs, long windowNs, int maxTables)
    {
        if (maxTables < 0 || maxTables > GossipValue.MAX_TABLES)
            throw new IllegalArgumentException("max_tables " + maxTables + ": must be in [0, " + GossipValue.MAX_TABLES + "]");
        this.tickNs = tickNs;
        this.windowNs = windowNs;
        this.maxTables = maxTables;
    }

    /**
     * One tick at {@code nowNs}: reads every table's counts from {@code probe}, advances their
     * trackers, chooses the tables to gossip and offers their rates for publication. Returns
     * whether the gossiped set or a gossiped rate changed (the value is to be republished).
     */
    public boolean tick(TableProbe probe, long nowNs)
    {
        Set<Integer> seen = new HashSet<>();
        probe.forEach((key, name, hits, misses) -> {
            if (!seen.add(key))
                return; // two tables whose keys collide: the first one reported stands for both
            Entry e = entries.get(key);
            if (e == null)
            {
                // First sight: its counts so far are history, measured from now on.
                entries.put(key, new Entry(key, name, tickNs, windowNs, nowNs, hits, misses));
                return;
            }
            long dh = Math.max(0, hits - e.lastHits);
            long dm = Math.max(0, misses - e.lastMisses);
            e.lastHits = hits;
            e.lastMisses = misses;
            if (dh + dm > 0)
                e.lastReadNs = nowNs;
            e.tracker.recordHits(dh);
            e.tracker.recordMisses(dm);
            e.tracker.advance(nowNs);
        });
        // Tables dropped, or whose row cache was turned off.
        entries.keySet().retainAll(seen);

        List<Entry> candidates = new ArrayList<>();
        for (Entry e : entries.values())
            if (e.lastReadNs != Long.MIN_VALUE && nowNs - e.lastReadNs <= windowNs && e.tracker.avgHitsPerS() + e.tracker.avgMissesPerS() > 0.0)
                candidates.add(e);
        candidates.sort((a, b) -> {
            int c = Double.compare(b.readsPerS(), a.readsPerS());
            return c != 0 ? c : Integer.compare(a.key, b.key);
        });
        int n = Math.min(maxTables, candidates.size());
        boolean changed = false;
        int[] keys = new int[n];
        Set<Integer> chosen = new HashSet<>();
        for (int i = 0; i < n; i++)
        {
            Entry e = candidates.get(i);
            keys[i] = e.key;
            chosen.add(e.key);
            if (e.publisher.offer(e.tracker.hitRate(), nowNs))
                changed = true;
            e.inSet = true;
        }
        for (Entry e : entries.values())
        {
            if (e.inSet && !chosen.contains(e.key))
            {
                e.inSet = false;
                e.publisher = new RatePublisher();
            }
        }
        Arrays.sort(keys);
        if (!Arrays.equals(keys, publishedKeys))
            changed = true;
        publishedKeys = keys;
        return changed;
    }

    /** The keys of the tables gossiped now, ascending. */
    public int[] publishedKeys()
    {
        return publishedKeys.clone();
    }

    /** Their last published rates, in the order of {@link #publishedKeys()}. */
    public double[] publishedRates()
    {
        double[] out = new double[publishedKeys.length];
        for (int i = 0; i < out.length; i++)
            out[i] = entries.get(publishedKeys[i]).publisher.last();
        return out;
    }

    /** Every table measured, hottest first. */
    public List<Info> describe()
    {
        List<Info> out = new ArrayList<>();
        for (Entry e : entries.values())
            out.add(new Info(e.key, e.name, e.tracker.hitRate(), e.inSet ? e.publisher.last() : Double.NaN, e.readsPerS(), e.lastHits,
                             e.lastMisses, e.inSet));
        out.sort((a, b) -> {
            int c = Double.compare(b.readsPerS(), a.readsPerS());
            return c != 0 ? c : Integer.compare(a.key(), b.key());
        });
        return out;
    }

    /** The name of table {@code key} as this node knows it, or null. */
    public String name(int key)
    {
        Entry e = entries.get(key);
        return e == null ? null : e.name;
    }
}
