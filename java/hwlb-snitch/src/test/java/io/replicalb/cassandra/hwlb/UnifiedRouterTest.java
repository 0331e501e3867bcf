package io.replicalb.cassandra.hwlb;

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
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * unified through {@code sortedByProximity}: the router counts its own sends, so a replica that
 * stops answering is passed over after in_flight_threshold reads and comes back with its first
 * reply; while passed over it is never among the first k, and the draw stays exact.
 */
class UnifiedRouterTest
{
    private static List<InetAddressAndPort> order(EndpointsForToken e)
    {
        List<InetAddressAndPort> out = new ArrayList<>();
        for (Replica r : e)
            out.add(r.endpoint());
        return out;
    }

    @Test
    void aReplicaThatStopsAnsweringIsPassedOverAndComesBackWithItsFirstReply() throws Exception
    {
        Map<String, String> props = Map.of("policy", "unified", "read_cl", "ONE");
        HwlbSnitch s = new HwlbSnitch(HwlbSettings.parse(props::get), new TestCluster.RankSnitch(Map.of()), ep(21));
        long now = System.nanoTime();
        PeerDirectory d = s.directory();
        // .21 (this node) cold: at ONE, HWLB sends its reads to .22 and .23.
        d.setLocalRate(0.0, now);
        for (int last : new int[]{ 22, 23 })
        {
            d.observe(ep(last), now, true, true, true, now);
            d.recordRate(ep(last), 0.9, now, now);
        }
        int id22 = d.view().id(ep(22));
        int id23 = d.view().id(ep(23));
        EndpointsForToken rs = replicas(21, 22, 23);
        // .23 answers every read; .22 answers nothing (paused).
        int to22 = 0;
        int silentFrom = -1;
        for (int i = 0; i < 400; i++)
        {
            List<InetAddressAndPort> o = order(s.sortedByProximity(ep(21), rs));
            if (o.get(0).equals(ep(22)) && ++to22 == 10)
                silentFrom = i + 1;
            if (o.get(0).equals(ep(23)))
                s.health().replied(id23, 1_000_000, System.nanoTime());
        }
        // Its last replies (none) are older than the window at once: after 10 sends it is silent.
        assertEquals(10, to22, "exactly in_flight_threshold reads reach the silent replica");
        assertTrue(s.health().silent(id22, System.nanoTime()));
        assertTrue(silentFrom > 0 && silentFrom < 100, "the 10th read to .22 came early: " + silentFrom);
        assertEquals(400 - silentFrom, s.control().getPassedOver(), "passed over in every read from then on");
        assertEquals(0, s.control().getFallbacks());
        // It answers (the pause ends) a request queued 4 s ago: a stall, not slowness; taken back at once.
        s.health().replied(id22, 4_000_000_000L, System.nanoTime());
        assertTrue(Double.isNaN(s.health().latencyNs(id22, System.nanoTime())), "a stall stays out of the average");
        assertFalse(s.health().silent(id22, System.nanoTime()));
        long passed = s.control().getPassedOver();
        boolean seen = false;
        for (int i = 0; i < 100 && !seen; i++)
            seen = order(s.sortedByProximity(ep(21), rs)).get(0).equals(ep(22));
        assertTrue(seen, "drawn again");
        assertEquals(passed, s.control().getPassedOver());
    }
}
