package io.replicalb.cassandra.hwlb;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.cassandra.locator.EndpointsForToken;
import org.apache.cassandra.locator.IEndpointSnitch;
import org.apache.cassandra.locator.InetAddressAndPort;
import org.apache.cassandra.locator.Replica;
import org.apache.cassandra.locator.ReplicaCollection;
import org.junit.jupiter.api.Test;

import static io.replicalb.cassandra.hwlb.TestCluster.ep;
import static io.replicalb.cassandra.hwlb.TestCluster.replicas;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Safe to install: a mixed cluster, a peer value not understood and an exception inside the
 * ordering never fail a read; the plug-in gives the inner order (for unified, with the
 * passed-over replicas last) and counts it.
 */
class SafetyTest
{
    /** Inner order by rank: .23 before .22 before .21 (after the target). */
    private static final Map<Integer, Integer> RANK = Map.of(21, 3, 22, 2, 23, 1);

    private static HwlbSnitch snitch(String policy, IEndpointSnitch inner)
    {
        Map<String, String> props = Map.of("policy", policy);
        return new HwlbSnitch(HwlbSettings.parse(props::get), inner, ep(21));
    }

    /** .21 (this node) cold, .22 and .23 warm: HWLB draws (active plan). */
    private static void coldRestart(HwlbSnitch s, boolean supported23, boolean garbled23)
    {
        long now = System.nanoTime();
        PeerDirectory d = s.directory();
        d.setLocalRate(0.0, now);
        d.observe(ep(22), now, true, true, true, now);
        d.recordRate(ep(22), 0.8, now, now);
        d.observe(ep(23), now, true, supported23, garbled23, true, now);
        if (supported23 && !garbled23)
            d.recordRate(ep(23), 0.8, now, now);
    }

    /** The peers answered (as Cassandra's latency feed reports replies), 1 ms each. */
    private static void answered(HwlbSnitch s)
    {
        long now = System.nanoTime();
        for (int last : new int[]{ 22, 23 })
            s.health().replied(s.directory().view().id(ep(last)), 1_000_000, now);
    }

    private static List<InetAddressAndPort> order(ReplicaCollection<?> e)
    {
        List<InetAddressAndPort> out = new ArrayList<>();
        for (Replica r : e)
            out.add(r.endpoint());
        return out;
    }

    @Test
    void aMixedClusterGetsTheInnerOrderCountedAsSteppingAside()
    {
        for (String policy : List.of("hwlb", "unified"))
        {
            HwlbSnitch s = snitch(policy, new TestCluster.RankSnitch(RANK));
            coldRestart(s, false, false);
            EndpointsForToken rs = replicas(21, 22, 23);
            List<InetAddressAndPort> inner = order(s.router().inner().sortedByProximity(ep(21), rs));
            for (int i = 0; i < 200; i++)
            {
                assertEquals(inner, order(s.sortedByProximity(ep(21), rs)), policy);
                answered(s);
            }
            assertEquals(200, s.control().getSteppedAside(), policy);
            assertEquals(0, s.control().getDraws(), policy);
            assertEquals(0, s.control().getFallbacks(), policy + ": a peer without the plug-in is no error");
        }
    }

    @Test
    void unifiedInAMixedClusterStillPassesOverASilentReplica()
    {
        HwlbSnitch s = snitch("unified", new TestCluster.RankSnitch(RANK));
        coldRestart(s, false, false);
        int id22 = s.directory().view().id(ep(22));
        for (int i = 0; i < 10; i++)
            s.health().sent(id22, System.nanoTime());
        EndpointsForToken rs = replicas(21, 22, 23);
        // The inner order is .21, .23, .22 already; put .23 silent instead to see it move.
        int id23 = s.directory().view().id(ep(23));
        for (int i = 0; i < 10; i++)
            s.health().sent(id23, System.nanoTime());
        s.health().replied(id22, 1_000_000, System.nanoTime());
        assertEquals(List.of(ep(21), ep(22), ep(23)), order(s.sortedByProximity(ep(21), rs)));
        assertEquals(1, s.control().getPassedOver());
        assertEquals(0, s.control().getFallbacks());
    }

    @Test
    void aPeerValueNotUnderstoodFallsBackAndIsCounted()
    {
        assertFalse(GossipValue.understood("hwlb9:0.5"), "a future version");
        assertFalse(GossipValue.understood("garbage"));
        assertFalse(GossipValue.understood("hwlb1:1.5"), "a rate outside [0, 1]");
        assertFalse(GossipValue.understood("hwlb1:zero"));
        assertTrue(GossipValue.understood("hwlb1:"), "the marker");
        assertTrue(GossipValue.understood("hwlb1:0.812345"));
        assertTrue(GossipValue.understood("hwlb2:0.812345;0000000a=0.5"), "per-table rates");
        assertFalse(GossipValue.understood("hwlb2:0.812345;0000000a=1.5"), "a table rate outside [0, 1]");
        assertFalse(GossipValue.understood("hwlb2:0.812345;0000000a=0.5,0000000a=0.6"), "a table twice");
        for (String policy : List.of("hwlb", "unified"))
        {
            HwlbSnitch s = snitch(policy, new TestCluster.RankSnitch(RANK));
            coldRestart(s, true, true);
            assertTrue(s.directory().view().notUnderstood(s.directory().view().id(ep(23))));
            EndpointsForToken rs = replicas(21, 22, 23);
            List<InetAddressAndPort> inner = order(s.router().inner().sortedByProximity(ep(21), rs));
            for (int i = 0; i < 100; i++)
            {
                assertEquals(inner, order(s.sortedByProximity(ep(21), rs)), policy);
                answered(s);
            }
            assertEquals(100, s.control().getFallbacks(), policy);
            assertEquals(0, s.control().getDraws(), policy);
            // Understood again (the peer was upgraded back): draws resume.
            long now = System.nanoTime();
            s.directory().observe(ep(23), now, true, true, false, true, now);
            s.directory().recordRate(ep(23), 0.8, now, now);
            s.sortedByProximity(ep(21), rs);
            assertEquals(1, s.control().getDraws(), policy);
            assertEquals(100, s.control().getFallbacks(), policy);
        }
    }

    /** Reverses the given order (its own sortedByProximity), throwing on the calls asked to. */
    private static final class ThrowingSnitch extends TestCluster.RankSnitch
    {
        int calls;
        int throwOn = 1;

        ThrowingSnitch()
        {
            super(Map.of());
        }

        @Override
        public <C extends ReplicaCollection<? extends C>> C sortedByProximity(InetAddressAndPort address, C replicas)
        {
            if (++calls == throwOn)
                throw new IllegalStateException("injected: the inner snitch fails once");
            return new TestCluster.ReversingSnitch().sortedByProximity(address, replicas);
        }
    }

    @Test
    void anExceptionInsideTheOrderingGivesTheInnerOrderAndIsCounted()
    {
        for (String policy : List.of("hwlb", "unified"))
        {
            ThrowingSnitch inner = new ThrowingSnitch();
            HwlbSnitch s = snitch(policy, inner);
            coldRestart(s, true, false);
            EndpointsForToken rs = replicas(21, 22, 23);
            // The draw path calls the inner snitch (it has its own order) and it throws: the
            // read gets the inner order from a second call, counted as a fallback.
            List<InetAddressAndPort> got = order(s.sortedByProximity(ep(21), rs));
            assertEquals(List.of(ep(23), ep(22), ep(21)), got, policy + ": the inner (reversed) order");
            assertEquals(1, s.control().getFallbacks(), policy);
            assertEquals(2, inner.calls, policy);
            // The per-thread scratch was cleared: the next calls draw normally.
            for (int i = 0; i < 100; i++)
            {
                List<InetAddressAndPort> o = order(s.sortedByProximity(ep(21), rs));
                assertEquals(3, o.stream().distinct().count(), policy);
                answered(s);
            }
            // The failed call had drawn before the inner snitch threw: 1 + 100 draws.
            assertEquals(101, s.control().getDraws(), policy);
            assertEquals(1, s.control().getFallbacks(), policy);
        }
    }
}
