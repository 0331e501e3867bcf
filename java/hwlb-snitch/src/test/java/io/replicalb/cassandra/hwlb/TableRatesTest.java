package io.replicalb.cassandra.hwlb;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.cassandra.locator.InetAddressAndPort;
import org.junit.jupiter.api.Test;

import static io.replicalb.cassandra.hwlb.TestCluster.ep;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** This node's rates per table: the tracker per table, the bound, idle tables, the gossip value. */
class TableRatesTest
{
    private static final long S = 1_000_000_000L;

    /** Cumulative counts per table, as Cassandra's per-table metrics give them. */
    private static final class Tables implements TableProbe
    {
        final Map<Integer, long[]> counts = new LinkedHashMap<>();

        void read(int key, long hits, long misses)
        {
            long[] c = counts.computeIfAbsent(key, k -> new long[2]);
            c[0] += hits;
            c[1] += misses;
        }

        @Override
        public void forEach(Sink sink)
        {
            for (Map.Entry<Integer, long[]> e : counts.entrySet())
                sink.table(e.getKey(), "ks.t" + e.getKey(), e.getValue()[0], e.getValue()[1]);
        }
    }

    private static CacheProbe nodeWide(long[] counts)
    {
        return new CacheProbe()
        {
            public CacheKind kind()
            {
                return CacheKind.ROW;
            }

            public long hits()
            {
                return counts[0];
            }

            public long requests()
            {
                return counts[1];
            }
        };
    }

    @Test
    void eachTableHasItsOwnRateAndTheValueCarriesThem() throws Exception
    {
        Tables t = new Tables();
        long[] node = { 0, 0 };
        List<String> sent = new ArrayList<>();
        PeerDirectory dir = new PeerDirectory(ep(21), 3 * S, 0.95, 0);
        LocalRate rate = new LocalRate(10_000, 60_000, nodeWide(node), t, 16, sent::add, dir, 0);
        // Known from the start (first sight: its history does not count).
        t.read(1, 500, 500);
        t.read(2, 0, 0);
        assertFalse(rate.tick(1 * S));
        // Table 1 warm, table 2 cold; node-wide the mix.
        t.read(1, 95, 5);
        t.read(2, 0, 100);
        node[0] = 95;
        node[1] = 200;
        assertTrue(rate.tick(10 * S));
        assertEquals(List.of("hwlb2:0.475000;00000001=0.950000,00000002=0.000000"), sent);
        PeerView v = dir.view();
        assertEquals(0.475, v.effective(dir.localId()));
        assertEquals(0.95, v.rates(v.tableSlot(1))[dir.localId()]);
        assertEquals(0.0, v.rates(v.tableSlot(2))[dir.localId()]);
        assertEquals(-1, v.tableSlot(3), "a table no node reported: node-wide");
        List<TableRates.Info> info = rate.tables();
        assertEquals(2, info.size());
        assertTrue(info.get(0).published() && info.get(1).published());
        assertEquals(95, info.stream().filter(i -> i.key() == 1).findFirst().get().hits() - 500);
        // Same rates: nothing to publish.
        t.read(1, 95, 5);
        t.read(2, 0, 100);
        node[0] += 95;
        node[1] += 200;
        assertFalse(rate.tick(20 * S));
        assertEquals(1, sent.size());
        // Table 2 warms past the big-change threshold: republished at once.
        t.read(2, 100, 0);
        t.read(1, 95, 5);
        assertTrue(rate.tick(30 * S));
        GossipValue.Parsed p = GossipValue.parseFull(sent.get(1));
        assertArrayEquals(new int[]{ 1, 2 }, p.tableKeys());
        assertTrue(p.tableRates()[1] > 0.1, sent.get(1));
    }

    @Test
    void onlyTablesReadWithinTheWindowAndAtMostTheBoundAreGossiped()
    {
        Tables t = new Tables();
        TableRates r = new TableRates(10 * S, 60 * S, 3);
        for (int key = 1; key <= 5; key++)
            t.read(key, 0, 0);
        r.tick(t, 0);
        // Five tables read, table k at 10 k reads per tick: the three hottest are gossiped.
        for (int key = 1; key <= 5; key++)
            t.read(key, 5 * key, 5 * key);
        assertTrue(r.tick(t, 10 * S));
        assertArrayEquals(new int[]{ 3, 4, 5 }, r.publishedKeys());
        assertEquals(3, r.publishedRates().length);
        // Only tables 3 and 4 read from now on: table 5 stays while it was read within the
        // window (60 s)...
        long now = 10 * S;
        for (int i = 0; i < 6; i++)
        {
            now += 10 * S;
            for (int key = 3; key <= 4; key++)
                t.read(key, 5 * key, 5 * key);
            r.tick(t, now);
            assertArrayEquals(new int[]{ 3, 4, 5 }, r.publishedKeys(), "at " + now / S + " s");
        }
        // ...and leaves after it, as do tables 1 and 2.
        now += 10 * S;
        for (int key = 3; key <= 4; key++)
            t.read(key, 5 * key, 5 * key);
        assertTrue(r.tick(t, now), "the set changed");
        assertArrayEquals(new int[]{ 3, 4 }, r.publishedKeys());
        // Read again: back (a fresh publisher: its rate goes out at once); the bound holds.
        now += 10 * S;
        for (int key = 1; key <= 5; key++)
            t.read(key, 5 * key, 5 * key);
        assertTrue(r.tick(t, now));
        assertEquals(3, r.publishedKeys().length);
        // A dropped table (or one whose row cache was turned off) is forgotten.
        t.counts.remove(4);
        now += 10 * S;
        for (int key = 1; key <= 5; key++)
            if (key != 4)
                t.read(key, 5 * key, 5 * key);
        assertTrue(r.tick(t, now));
        assertEquals(4, r.describe().size(), "table 4 forgotten");
        for (int key : r.publishedKeys())
            assertTrue(key != 4);
        assertEquals(3, r.publishedKeys().length);
    }

    @Test
    void withoutTablesTheValueIsTheEarlierFormat() throws Exception
    {
        long[] node = { 0, 0 };
        List<String> sent = new ArrayList<>();
        PeerDirectory dir = new PeerDirectory(ep(21), 3 * S, 0.95, 0);
        // max_tables 0 ignores the probe.
        Tables t = new Tables();
        t.read(1, 0, 0);
        LocalRate rate = new LocalRate(10_000, 60_000, nodeWide(node), t, 0, sent::add, dir, 0);
        t.read(1, 10, 10);
        node[0] = 10;
        node[1] = 20;
        assertTrue(rate.tick(10 * S));
        assertEquals(List.of("hwlb1:0.500000"), sent);
        assertEquals(0, dir.view().tables());
        assertTrue(rate.tables().isEmpty());
    }

    @Test
    void peersTablesFallBackToTheirNodeWideRate() throws Exception
    {
        PeerDirectory dir = new PeerDirectory(ep(21), 3 * S, 0.95, 0);
        InetAddressAndPort p = ep(22);
        InetAddressAndPort q = ep(23);
        dir.observe(p, 0, true, true, true, 0);
        dir.observe(q, 0, true, true, true, 0);
        dir.recordRate(p, GossipValue.parseFull("hwlb2:0.500000;00000001=0.900000,00000002=0.100000"), 0, 0);
        dir.recordRate(q, GossipValue.parseFull("hwlb1:0.700000"), 0, 0);
        dir.setLocalRate(0.3, 0);
        PeerView v = dir.view();
        int ip = v.id(p);
        int iq = v.id(q);
        double[] t1 = v.rates(v.tableSlot(1));
        double[] t2 = v.rates(v.tableSlot(2));
        assertEquals(0.9, t1[ip]);
        assertEquals(0.1, t2[ip]);
        assertEquals(0.7, t1[iq], "an old-format peer: its node-wide rate for every table");
        assertEquals(0.3, t2[dir.localId()], "this node reported no tables");
        // Stale: the stale rate for every table.
        dir.refresh(4 * S);
        v = dir.view();
        assertEquals(0.95, v.rates(v.tableSlot(1))[ip]);
        assertEquals(0.95, v.rates(v.tableSlot(2))[ip]);
        // Heard again, then it restarts: its table rates are forgotten with its rate.
        dir.observe(p, 5 * S, true, true, true, 5 * S);
        assertEquals(0.9, dir.view().rates(dir.view().tableSlot(1))[ip]);
        dir.forget(p, 5 * S);
        v = dir.view();
        assertEquals(-1, v.tableSlot(1), "no node reports table 1 any more");
        assertEquals(0.0, v.effective(ip), "restarted: no rate known");
        List<PeerDirectory.TableRateInfo> rows = dir.describeTables(5 * S);
        assertTrue(rows.isEmpty(), rows.toString());
    }
}
