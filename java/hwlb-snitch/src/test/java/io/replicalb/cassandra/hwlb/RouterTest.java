package io.replicalb.cassandra.hwlb;

import io.replicalb.core.hwlb.HwlbPlan;
import io.replicalb.core.hwlb.PlanConfig;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.cassandra.locator.EndpointsForToken;
import org.apache.cassandra.locator.InetAddressAndPort;
import org.apache.cassandra.locator.Replica;
import org.junit.jupiter.api.Test;

import static io.replicalb.cassandra.hwlb.TestCluster.ep;
import static io.replicalb.cassandra.hwlb.TestCluster.replicas;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The snitch's request path with real Cassandra replica collections. */
class RouterTest
{
    /** Inner order by rank: .23 before .22 before .21 (after the target). */
    private static final Map<Integer, Integer> RANK = Map.of(21, 3, 22, 2, 23, 1, 24, 0);

    /** A snitch in policy hwlb (these tests check HWLB's draw; unified has its own tests) unless props say otherwise. */
    private static HwlbSnitch snitch(Map<String, String> props, org.apache.cassandra.locator.IEndpointSnitch inner)
    {
        Map<String, String> all = new java.util.HashMap<>(props);
        if (!all.containsKey("enabled"))
            all.putIfAbsent("policy", "hwlb");
        return new HwlbSnitch(HwlbSettings.parse(all::get), inner, ep(21));
    }

    /** Peers .22 .. .(21 + peers) with the given rates (NaN: no plug-in), all alive; this node's rate. */
    private static void rates(HwlbSnitch s, double local, double... peers)
    {
        long now = System.nanoTime();
        PeerDirectory d = s.directory();
        d.setLocalRate(local, now);
        for (int i = 0; i < peers.length; i++)
        {
            InetAddressAndPort p = ep(22 + i);
            d.observe(p, now, true, !Double.isNaN(peers[i]), true, now);
            if (!Double.isNaN(peers[i]))
                d.recordRate(p, peers[i], now, now);
        }
    }

    private static List<InetAddressAndPort> order(EndpointsForToken e)
    {
        List<InetAddressAndPort> out = new ArrayList<>();
        for (Replica r : e)
            out.add(r.endpoint());
        return out;
    }

    @Test
    void anotherAddressGetsTheInnerOrder()
    {
        HwlbSnitch s = snitch(Map.of(), new TestCluster.RankSnitch(RANK));
        rates(s, 0.0, 0.8, 0.8);
        EndpointsForToken rs = replicas(21, 22, 23);
        EndpointsForToken inner = s.router().inner().sortedByProximity(ep(22), rs);
        for (int i = 0; i < 100; i++)
            assertEquals(order(inner), order(s.sortedByProximity(ep(22), rs)));
        assertEquals(0, s.control().getReadsCoordinated());
    }

    @Test
    void offOrSteppingAsideGivesExactlyTheInnerOrder()
    {
        HwlbSnitch s = snitch(Map.of("enabled", "false"), new TestCluster.RankSnitch(RANK));
        rates(s, 0.0, 0.8, 0.8);
        EndpointsForToken rs = replicas(22, 21, 23);
        List<InetAddressAndPort> inner = order(s.router().inner().sortedByProximity(ep(21), rs));
        assertEquals(List.of(ep(21), ep(23), ep(22)), inner);
        for (int i = 0; i < 100; i++)
            assertEquals(inner, order(s.sortedByProximity(ep(21), rs)));
        assertEquals(100, s.control().getReadsCoordinated());
        assertEquals(100, s.control().getLocalReads(), "the inner order reads locally first");
        assertEquals(100, s.control().getRemoteReads(), "and one remote for QUORUM of 3");
        assertEquals(0, s.control().getDraws());
        assertEquals(0, s.control().getSteppedAside(), "off is not stepping aside");

        // Switched on, but equally warm: steps aside.
        s.control().setEnabled(true);
        rates(s, 0.8, 0.8, 0.805);
        for (int i = 0; i < 100; i++)
            assertEquals(inner, order(s.sortedByProximity(ep(21), rs)));
        assertEquals(100, s.control().getSteppedAside());
        assertEquals(0, s.control().getDraws());
        // k >= replicas: no choice.
        s.control().setReadCl("ALL");
        rates(s, 0.0, 0.8, 0.8);
        assertEquals(inner, order(s.sortedByProximity(ep(21), rs)));
        assertEquals(101, s.control().getSteppedAside());
    }

    @Test
    void aPeerWithoutThePluginOrUnknownMakesHwlbStepAside()
    {
        HwlbSnitch s = snitch(Map.of(), new TestCluster.RankSnitch(RANK));
        rates(s, 0.0, 0.8, Double.NaN);
        EndpointsForToken rs = replicas(21, 22, 23);
        List<InetAddressAndPort> inner = order(s.router().inner().sortedByProximity(ep(21), rs));
        for (int i = 0; i < 50; i++)
            assertEquals(inner, order(s.sortedByProximity(ep(21), rs)));
        assertEquals(50, s.control().getSteppedAside());
        // An endpoint never heard of: stepped aside, and it gets an id for next time.
        EndpointsForToken other = replicas(21, 22, 25);
        assertEquals(order(s.router().inner().sortedByProximity(ep(21), other)), order(s.sortedByProximity(ep(21), other)));
        assertTrue(s.directory().view().id(ep(25)) >= 0);
    }

    @Test
    void drawsFollowTheCoordinatorsRow()
    {
        HwlbSnitch s = snitch(Map.of(), new TestCluster.RankSnitch(RANK));
        // This node (.21) is cold, .22 and .23 warm: the seeds' cold restart, QUORUM of 3.
        rates(s, 0.0, 0.8, 0.8);
        EndpointsForToken rs = replicas(23, 21, 22);
        int draws = 200_000;
        int[] first = new int[3];
        for (int i = 0; i < draws; i++)
        {
            List<InetAddressAndPort> o = order(s.sortedByProximity(ep(21), rs));
            assertEquals(3, o.size());
            assertEquals(3, o.stream().distinct().count(), "a permutation");
            // The two drawn come first in the inner order among themselves (.21 first, then .23, then .22).
            int r0 = RANK.get(last(o.get(0))) * (o.get(0).equals(ep(21)) ? 0 : 1);
            int r1 = RANK.get(last(o.get(1))) * (o.get(1).equals(ep(21)) ? 0 : 1);
            assertTrue(r0 < r1 || o.get(0).equals(ep(21)), "drawn ones in the inner order: " + o);
            for (int j = 0; j < 2; j++)
                first[last(o.get(j)) - 21]++;
        }
        HwlbControl c = s.control();
        assertEquals(draws, c.getDraws());
        assertEquals(1, c.getPlanRecomputes(), "one plan, reused");
        assertEquals(2L * draws, c.getLocalReads() + c.getRemoteReads());
        // Coordinator 0's row for H = (0, .8, .8), k = 2 is (3/11, 4/11, 4/11): included with 2 * row.
        double[] row = HwlbPlan.compute(new double[]{ 0.0, 0.8, 0.8 }, 2, PlanConfig.DEFAULT).row(0);
        HwlbCounters.Totals t = c.counters().totals();
        for (int j = 0; j < 3; j++)
        {
            int id = s.directory().view().id(ep(21 + j));
            double p = 2 * row[j];
            assertEquals(p * draws, t.expected(id), 1e-6 * draws, "expected = sum of k * row");
            double se = Math.sqrt(draws * p * (1 - p));
            assertTrue(Math.abs(t.chosen(id) - p * draws) < 5 * se, "replica " + j + ": chosen " + t.chosen(id) + " vs " + p * draws);
            assertEquals(first[j], t.chosen(id), "chosen = the first k of the returned order");
        }
        // A reset starts a new window for the per-peer counters.
        c.resetCounters();
        t = c.counters().totals();
        assertEquals(0, t.chosen(0));
        assertEquals(0.0, t.expected(1), 1e-9);
        assertEquals(draws, c.getDraws(), "node counters keep counting");
    }

    @Test
    void thePlanIsRecomputedOnlyWhenARateChanges()
    {
        HwlbSnitch s = snitch(Map.of(), new TestCluster.RankSnitch(RANK));
        rates(s, 0.0, 0.8, 0.8);
        EndpointsForToken rs = replicas(21, 22, 23);
        EndpointsForToken sameSet = replicas(23, 22, 21);
        for (int i = 0; i < 100; i++)
        {
            s.sortedByProximity(ep(21), rs);
            s.sortedByProximity(ep(21), sameSet);
        }
        assertEquals(1, s.control().getPlanRecomputes(), "one replica set, whatever its order");
        assertEquals(1, s.router().cachedPlans());
        // A heartbeat: nothing a plan sees changes.
        long now = System.nanoTime();
        s.directory().observe(ep(22), now, true, true, true, now);
        s.sortedByProximity(ep(21), rs);
        assertEquals(1, s.control().getPlanRecomputes());
        rates(s, 0.0, 0.8, 0.7);
        s.sortedByProximity(ep(21), rs);
        s.sortedByProximity(ep(21), rs);
        assertEquals(2, s.control().getPlanRecomputes());
        // The QUORUM of 5 is another plan.
        rates(s, 0.0, 0.8, 0.7, 0.9, 0.5);
        s.sortedByProximity(ep(21), replicas(21, 22, 23, 24, 25));
        assertEquals(2, s.router().cachedPlans());
    }

    @Test
    void aDownReplicaIsLeftOutOfThePlan()
    {
        HwlbSnitch s = snitch(Map.of("read_cl", "ONE"), new TestCluster.RankSnitch(RANK));
        rates(s, 0.0, 0.8, 0.8);
        long now = System.nanoTime();
        s.directory().observe(ep(23), now, false, true, true, now);
        EndpointsForToken rs = replicas(21, 22, 23);
        List<InetAddressAndPort> inner = order(s.router().inner().sortedByProximity(ep(21), rs));
        for (int i = 0; i < 2000; i++)
        {
            List<InetAddressAndPort> o = order(s.sortedByProximity(ep(21), rs));
            assertNotEquals(ep(23), o.get(0), "never first: the failure detector would drop it");
            List<InetAddressAndPort> rest = new ArrayList<>(inner);
            rest.remove(o.get(0));
            assertEquals(rest, o.subList(1, 3), "the rest in the inner order");
        }
        assertEquals(2000, s.control().getDraws());
    }

    @Test
    void anInnerSnitchWithItsOwnOrderKeepsItForTheRest()
    {
        HwlbSnitch s = snitch(Map.of("read_cl", "ONE"), new TestCluster.ReversingSnitch());
        assertFalse(ReplicaRouter.sortsByComparator(s.router().inner()));
        assertTrue(ReplicaRouter.sortsByComparator(new TestCluster.RankSnitch(RANK)));
        assertTrue(ReplicaRouter.sortsByComparator(new org.apache.cassandra.locator.SimpleSnitch()));
        rates(s, 0.0, 0.9, 0.9, 0.9);
        EndpointsForToken rs = replicas(21, 22, 23, 24);
        for (int i = 0; i < 1000; i++)
        {
            List<InetAddressAndPort> o = order(s.sortedByProximity(ep(21), rs));
            List<InetAddressAndPort> rest = new ArrayList<>(List.of(ep(24), ep(23), ep(22), ep(21)));
            rest.remove(o.get(0));
            assertEquals(rest, o.subList(1, 4), "the rest in the inner (reversed) order");
        }
    }

    private static int last(InetAddressAndPort e)
    {
        byte[] b = e.getAddress().getAddress();
        return b[b.length - 1] & 0xff;
    }

    @Test
    void manyThreadsAtOnce() throws Exception
    {
        HwlbSnitch s = snitch(Map.of(), new TestCluster.RankSnitch(RANK));
        rates(s, 0.0, 0.8, 0.8);
        EndpointsForToken rs = replicas(21, 22, 23);
        int threads = 4;
        int calls = 20_000;
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(threads);
        List<java.util.concurrent.Future<?>> done = new ArrayList<>();
        for (int t = 0; t < threads; t++)
        {
            done.add(pool.submit(() -> {
                for (int i = 0; i < calls; i++)
                {
                    EndpointsForToken o = s.sortedByProximity(ep(21), rs);
                    if (o.size() != 3 || o.endpoints().size() != 3)
                        throw new AssertionError("a permutation of the replicas: " + o);
                }
            }));
            // A rate changing meanwhile makes the threads recompute and swap the plan.
            rates(s, 0.0, 0.8, 0.7 + 0.01 * t);
        }
        for (java.util.concurrent.Future<?> f : done)
            f.get();
        pool.shutdown();
        HwlbControl c = s.control();
        assertEquals((long) threads * calls, c.getReadsCoordinated());
        assertEquals((long) threads * calls, c.getDraws());
        HwlbCounters.Totals t = c.counters().totals();
        assertEquals(2L * threads * calls, t.chosen(0) + t.chosen(1) + t.chosen(2));
        assertEquals(2.0 * threads * calls, t.expected(0) + t.expected(1) + t.expected(2), 1e-6 * threads * calls);
    }
}
