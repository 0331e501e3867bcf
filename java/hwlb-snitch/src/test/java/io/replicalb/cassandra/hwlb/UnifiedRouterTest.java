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
 * stops answering takes one read, gives way while that read is out and is passed over once it is
 * overdue, and comes back with its first reply; while passed over it is never among the first k,
 * and the draw stays exact.
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
    void aReplicaThatStopsAnsweringTakesOneReadThenIsPassedOverAndComesBackWithItsFirstReply() throws Exception
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
        // .23 answered in 50 ms before: the pooled usual time is 50 ms (.22 has no average of its
        // own), long enough that a loaded machine draws .22 again before its read is overdue.
        for (int i = 0; i < 20; i++)
            s.health().replied(id23, 50_000_000, now);
        EndpointsForToken rs = replicas(21, 22, 23);
        // .23 answers every read; .22 answers nothing (paused).
        int to22 = 0;
        for (int i = 0; i < 400; i++)
        {
            List<InetAddressAndPort> o = order(s.sortedByProximity(ep(21), rs));
            if (o.get(0).equals(ep(22)))
                to22++;
            if (o.get(0).equals(ep(23)))
                s.health().replied(id23, 50_000_000, System.nanoTime());
        }
        // One unanswered read doubles its expected time: it gives way from then on, and once
        // that read has waited longer than the usual time it is overdue, passed over.
        assertEquals(1, to22, "one read reaches the silent replica");
        assertTrue(s.control().counters().totals().get(HwlbCounters.GAVE_WAY) > 0, "it gave way");
        Thread.sleep(200);
        assertTrue(s.health().overdue(id22, System.nanoTime()), "its read is overdue");
        assertFalse(s.health().silent(id22, System.nanoTime()), "ten sends would make it silent: it got one");
        long before = s.control().getPassedOver();
        for (int i = 0; i < 50; i++)
        {
            List<InetAddressAndPort> o = order(s.sortedByProximity(ep(21), rs));
            assertEquals(ep(22), o.get(2), "the overdue replica is the last resort");
            s.health().replied(d.view().id(o.get(0)), 50_000_000, System.nanoTime());
        }
        assertEquals(before + 50, s.control().getPassedOver(), "passed over in every read");
        assertEquals(0, s.control().getFallbacks());
        // It answers (the pause ends) a request queued 4 s ago: a stall, not slowness; taken back at once.
        s.health().replied(id22, 4_000_000_000L, System.nanoTime());
        assertTrue(Double.isNaN(s.health().latencyNs(id22, System.nanoTime())), "a stall stays out of the average");
        assertFalse(s.health().overdue(id22, System.nanoTime()));
        long passed = s.control().getPassedOver();
        boolean seen = false;
        for (int i = 0; i < 100 && !seen; i++)
        {
            List<InetAddressAndPort> o = order(s.sortedByProximity(ep(21), rs));
            seen = o.get(0).equals(ep(22));
            s.health().replied(d.view().id(o.get(0)), 50_000_000, System.nanoTime());
        }
        assertTrue(seen, "drawn again");
        assertEquals(passed, s.control().getPassedOver());
    }

    /** The first two replicas of {@code o} answer in 1 ms (so none turns silent). */
    private static void answer(HwlbSnitch s, List<InetAddressAndPort> o)
    {
        for (InetAddressAndPort e : o.subList(0, 2))
            s.health().replied(s.directory().view().id(e), 1_000_000, System.nanoTime());
    }

    /**
     * A {@code unified} snitch with {@code props} at coordinator .24, which holds no replica (it
     * draws by HWLB's shares themselves): .21 and .22 at 0.9, .23 at 0.6 and come up
     * {@code upAgoNs} ago.
     */
    private static HwlbSnitch withColdReplica(Map<String, String> props, long upAgoNs)
    {
        HwlbSnitch s = new HwlbSnitch(HwlbSettings.parse(props::get), new TestCluster.RankSnitch(Map.of()), ep(24));
        long now = System.nanoTime();
        PeerDirectory d = s.directory();
        d.setLocalRate(0.9, now);
        for (int last : new int[]{ 21, 22, 23 })
            d.observe(ep(last), now, true, true, true, now);
        d.recordRate(ep(21), 0.9, now, now);
        d.recordRate(ep(22), 0.9, now, now);
        d.recordRate(ep(23), 0.6, now, now);
        s.warmup().cameUp(d.view().id(ep(23)), now - upAgoNs);
        return s;
    }

    /**
     * Orders {@code reads} armed reads of {@code rs} at coordinator .24, checking .23 is never
     * among the first two; how many asked for a background read of it.
     */
    private static int backgroundReads(HwlbSnitch s, EndpointsForToken rs, int reads)
    {
        int id23 = s.directory().view().id(ep(23));
        int background = 0;
        for (int i = 0; i < reads; i++)
        {
            WarmupReads.arm();
            List<InetAddressAndPort> o = order(s.sortedByProximity(ep(24), rs));
            int target = WarmupReads.take();
            WarmupReads.disarm();
            answer(s, o);
            assertEquals(ep(23), o.get(2), "the cold replica after the warm ones");
            if (target >= 0)
            {
                assertEquals(id23, target);
                background++;
            }
        }
        return background;
    }

    /** Whether {@code got} of {@code draws} is within 5 standard errors of {@code expected}. */
    private static boolean close(int got, int draws, double expected)
    {
        double se = Math.sqrt(expected * (1 - expected) / draws);
        return Math.abs((double) got / draws - expected) < 5 * se;
    }

    @Test
    void aRestartedColdReplicaWarmsInTheBackgroundOnlyInsideAStatement()
    {
        // No slow start: the whole pace from its first moment back (the next test ramps it).
        HwlbSnitch s = withColdReplica(Map.of("policy", "unified", "read_cl", "QUORUM", "warmup_ramp_s", "0"), 0L);
        PeerDirectory d = s.directory();
        EndpointsForToken rs = replicas(21, 22, 23);
        int reads = 20_000;
        // Outside a statement the handler runs, nothing can warm it: its HWLB share (in about
        // 22% of the reads).
        int firstTwo = 0;
        for (int i = 0; i < 2000; i++)
        {
            List<InetAddressAndPort> o = order(s.sortedByProximity(ep(24), rs));
            answer(s, o);
            if (o.subList(0, 2).contains(ep(23)))
                firstTwo++;
        }
        assertTrue(firstTwo > 0, "unarmed: .23 takes its HWLB share");
        assertEquals(0, s.control().getColdLeftOut());
        // Inside one: never among the first two; read in the background at the pace (unified's
        // default: twice the warm replicas' misses per second) x 0.1 / 0.4 of the reads (the warm
        // replicas each miss 0.1 per read, it 0.4).
        int background = backgroundReads(s, rs, reads);
        assertEquals(0, s.control().getFallbacks(), "no ordering failed");
        assertEquals(reads, s.control().getColdLeftOut());
        assertTrue(close(background, reads, WarmupConfig.DEFAULT.share() * 0.1 / 0.4), background + " of " + reads);
        // Warm again (within 0.05 of the warmest): its HWLB share, nothing in the background.
        d.recordRate(ep(23), 0.86, System.nanoTime(), System.nanoTime());
        WarmupReads.arm();
        s.sortedByProximity(ep(24), rs);
        assertEquals(-1, WarmupReads.take());
        WarmupReads.disarm();
        assertEquals(reads, s.control().getColdLeftOut());
    }

    @Test
    void theSlowStartRampsTheWarmUpPaceUp()
    {
        // An hour's ramp: half-way up 30 minutes after it came up (the test's own seconds move
        // the pace by less than 1e-3), a quarter at 15.
        Map<String, String> props = Map.of("policy", "unified", "read_cl", "QUORUM", "warmup_ramp_s", "3600", "warmup_window_s", "7200");
        int reads = 20_000;
        long minute = 60_000_000_000L;
        for (int minutes : new int[]{ 15, 30, 90 })
        {
            HwlbSnitch s = withColdReplica(props, minutes * minute);
            int background = backgroundReads(s, replicas(21, 22, 23), reads);
            double expected = Math.min(1.0, minutes / 60.0) * WarmupConfig.DEFAULT.share() * 0.1 / 0.4;
            assertTrue(close(background, reads, expected), minutes + " min after it came up: " + background + " of " + reads);
            assertEquals(reads, s.control().getColdLeftOut(), "left out of the reads from the start");
        }
        assertEquals(WarmupConfig.DEFAULT.share() / 2, withColdReplica(props, 0L).warmup().pace(0, System.nanoTime() + 30 * minute), 1e-3,
                     "a node not seen coming up: its ramp from the plug-in's start");
    }
}
