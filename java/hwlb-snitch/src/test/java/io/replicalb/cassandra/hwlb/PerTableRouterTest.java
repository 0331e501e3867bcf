package io.replicalb.cassandra.hwlb;

import io.replicalb.core.hwlb.HwlbPlan;
import io.replicalb.core.hwlb.PlanConfig;

import java.util.Map;

import org.apache.cassandra.locator.EndpointsForToken;
import org.apache.cassandra.locator.InetAddressAndPort;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static io.replicalb.cassandra.hwlb.TestCluster.ep;
import static io.replicalb.cassandra.hwlb.TestCluster.replicas;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Reads planned with their own table's rates: a node warm for table A and cold for table B gets
 * A's reads as a warm node and few of B's; a table no node reported, or no table named, is
 * planned with the node-wide rates.
 */
class PerTableRouterTest
{
    private static final int A = 0x0000000a;
    private static final int B = 0x0000000b;
    private static final int C = 0x0000000c;
    private static final int DRAWS = 60_000;

    @AfterEach
    void clear()
    {
        ReadTable.clear();
    }

    /**
     * Table A: coordinator .21 half warm, .22 and .23 warm. Table B: .21 and .23 warm, .22 cold.
     * Node-wide: .21 0.7, .22 0.5 (the mix), .23 0.9.
     */
    private static HwlbSnitch cluster()
    {
        HwlbSnitch s = new HwlbSnitch(HwlbSettings.parse(Map.of("policy", "hwlb")::get), new TestCluster.RankSnitch(Map.of(21, 3, 22, 2, 23, 1)), ep(21));
        long now = System.nanoTime();
        // Heard "in the future" so nothing turns stale while the test runs.
        long heard = now + 3_600_000_000_000L;
        PeerDirectory d = s.directory();
        d.setLocalRate(GossipValue.parseFull("hwlb2:0.700000;0000000a=0.500000,0000000b=0.900000"), now);
        for (int last : new int[]{ 22, 23 })
            d.observe(ep(last), heard, true, true, true, now);
        d.recordRate(ep(22), GossipValue.parseFull("hwlb2:0.500000;0000000a=0.900000,0000000b=0.000000"), heard, now);
        d.recordRate(ep(23), GossipValue.parseFull("hwlb2:0.900000;0000000a=0.900000,0000000b=0.900000"), heard, now);
        return s;
    }

    /** The share of replica .22 among the first k over {@link #DRAWS} reads of {@code table}. */
    private static double shareOf22(HwlbSnitch s, int table)
    {
        s.control().resetCounters();
        EndpointsForToken rs = replicas(21, 22, 23);
        ReadTable.set(table);
        for (int i = 0; i < DRAWS; i++)
            s.sortedByProximity(ep(21), rs);
        ReadTable.clear();
        int id = s.directory().view().id(ep(22));
        return s.control().counters().totals().firstK(id) / (2.0 * DRAWS);
    }

    /** The share of .22 in coordinator .21's row for rates (.21, .22, .23), k = 2. */
    private static double rowShare(double h21, double h22, double h23)
    {
        HwlbPlan p = HwlbPlan.compute(new double[]{ h21, h22, h23 }, 2, PlanConfig.DEFAULT);
        return p.active() ? p.row(0)[1] : 1.0 / 3.0;
    }

    @Test
    void aNodeWarmForOneTableAndColdForAnotherIsBalancedForEach()
    {
        HwlbSnitch s = cluster();
        double a = shareOf22(s, A);
        double b = shareOf22(s, B);
        long tableReads = s.control().getTableReads();
        double expectedA = rowShare(0.5, 0.9, 0.9);
        double expectedB = rowShare(0.9, 0.0, 0.9);
        assertTrue(expectedA > 0.3 && expectedB < 0.1, "A " + expectedA + ", B " + expectedB);
        assertEquals(expectedA, a, 5 * Math.sqrt(expectedA * (1 - expectedA) / DRAWS), "table A: .22 warm");
        assertEquals(expectedB, b, 5 * Math.sqrt(expectedB * (1 - expectedB) / DRAWS), "table B: .22 cold");
        assertEquals(2L * DRAWS, tableReads, "every read planned with its table's rates");
        assertEquals(2L * DRAWS, s.control().getDraws(), "both tables' reads drawn");
    }

    @Test
    void aTableNoNodeReportedOrNoTableIsPlannedNodeWide()
    {
        HwlbSnitch s = cluster();
        double expected = rowShare(0.7, 0.5, 0.9);
        double se = Math.sqrt(expected * (1 - expected) / DRAWS);
        assertEquals(expected, shareOf22(s, C), 5 * se + 1e-9, "table C: nobody reported it");
        assertEquals(expected, shareOf22(s, ReadTable.NONE), 5 * se + 1e-9, "no table named (no query handler)");
        assertEquals(0, s.control().getTableReads());
    }

    @Test
    void aPeerThatReportedNoTablesCountsWithItsNodeWideRate()
    {
        HwlbSnitch s = cluster();
        long now = System.nanoTime();
        // .22 runs an earlier release: node-wide only, cold.
        s.directory().recordRate(ep(22), GossipValue.parseFull("hwlb1:0.000000"), now + 3_600_000_000_000L, now);
        double expected = rowShare(0.5, 0.0, 0.9);
        double se = Math.sqrt(expected * (1 - expected) / DRAWS);
        assertEquals(expected, shareOf22(s, A), 5 * se + 1e-9, "table A: .22's node-wide 0.0");
        InetAddressAndPort p = ep(22);
        assertTrue(Double.isNaN(s.directory().describeTables(now).stream()
                                 .filter(r -> r.endpoint().equals(p) && r.tableKey() == A).findFirst().get().knownRate()));
    }

    @Test
    void plansAreCachedPerTable()
    {
        HwlbSnitch s = cluster();
        EndpointsForToken rs = replicas(21, 22, 23);
        for (int table : new int[]{ A, B, C, ReadTable.NONE, A, B })
        {
            ReadTable.set(table);
            s.sortedByProximity(ep(21), rs);
        }
        // A, B, and the node-wide plan (C and no table share it).
        assertEquals(3, s.router().cachedPlans());
        assertEquals(3, s.control().getPlanRecomputes());
    }
}
