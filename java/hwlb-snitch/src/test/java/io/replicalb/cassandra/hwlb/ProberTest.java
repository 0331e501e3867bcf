package io.replicalb.cassandra.hwlb;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.cassandra.locator.InetAddressAndPort;
import org.junit.jupiter.api.Test;

import static io.replicalb.cassandra.hwlb.TestCluster.ep;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link HealthProber} with a fake transport and clock, and {@link LatencyFeed}. */
class ProberTest
{
    private static final long MS = 1_000_000L;

    static final class FakeTransport implements HealthProber.Transport
    {
        final Map<InetAddressAndPort, Integer> pending = new HashMap<>();
        final List<InetAddressAndPort> probed = new ArrayList<>();
        final Map<InetAddressAndPort, Runnable> answers = new HashMap<>();

        @Override
        public int pending(InetAddressAndPort peer)
        {
            return pending.getOrDefault(peer, 0);
        }

        @Override
        public void probe(InetAddressAndPort peer, Runnable onReply)
        {
            probed.add(peer);
            answers.put(peer, onReply);
        }
    }

    @Test
    void probesQuietPeersRecordsAnswersAndTimeOutsAndPendingCounts()
    {
        long[] now = { 1_000 * MS };
        PeerDirectory d = new PeerDirectory(ep(21), 3_000 * MS, 0.95, now[0]);
        d.observe(ep(22), now[0], true, true, true, now[0]);
        d.observe(ep(23), now[0], true, true, true, now[0]);
        d.observe(ep(24), now[0], false, true, true, now[0]);
        CoordinatorHealth h = new CoordinatorHealth(CoordinatorRule.DEFAULT);
        HwlbCounters counters = new HwlbCounters();
        FakeTransport t = new FakeTransport();
        HealthProber p = new HealthProber(d, h, t, counters, CoordinatorRule.DEFAULT, () -> now[0]);
        int id22 = d.view().id(ep(22));
        int id23 = d.view().id(ep(23));
        // .23 replied just now: not probed; .24 is down: not probed; .22 never replied: probed.
        h.replied(id23, MS, now[0]);
        t.pending.put(ep(22), 12);
        p.tick();
        assertEquals(List.of(ep(22)), t.probed);
        assertEquals(1, counters.probes());
        // Pending 12 >= 10 and no replies: silent.
        assertTrue(h.silent(id22, now[0]));
        // The answer 3 ms later is an answer (no longer silent) but no latency sample: an ECHO
        // touches no disk, so it says nothing of how fast the peer serves reads.
        now[0] += 3 * MS;
        t.answers.get(ep(22)).run();
        assertEquals(now[0], h.lastReplyNs(id22));
        assertTrue(Double.isNaN(h.latencyNs(id22, now[0])));
        // One outstanding at most; a probe unanswered for probe_timeout_ms is an expiry.
        now[0] += 300 * MS;
        p.tick();
        assertEquals(List.of(ep(22), ep(22), ep(23)), t.probed);
        now[0] += 500 * MS;
        p.tick();
        assertEquals(3, t.probed.size(), "outstanding: no new probe");
        now[0] += 600 * MS;
        p.tick();
        assertTrue(h.expiredRecently(id22, now[0]), "unanswered for 1 s: an expiry");
        // A late answer of the abandoned probe is ignored.
        t.answers.get(ep(22)).run();
        assertTrue(h.expiredRecently(id22, now[0]));
    }

    @Test
    void theLatencyFeedTellsRepliesFromExpiries()
    {
        PeerDirectory d = new PeerDirectory(ep(21), 3_000 * MS, 0.95, 0);
        CoordinatorHealth h = new CoordinatorHealth(CoordinatorRule.DEFAULT);
        LatencyFeed f = new LatencyFeed(d, h, 5_000 * MS);
        f.receiveTiming(ep(22), 2, java.util.concurrent.TimeUnit.MILLISECONDS);
        int id = d.view().id(ep(22));
        assertTrue(id > 0, "an endpoint first met in the feed gets an id");
        assertFalse(h.expiredRecently(id, System.nanoTime()));
        f.receiveTiming(ep(22), 5_000, java.util.concurrent.TimeUnit.MILLISECONDS);
        assertTrue(h.expiredRecently(id, System.nanoTime()), "the time-out as latency: an expiry");
    }
}
