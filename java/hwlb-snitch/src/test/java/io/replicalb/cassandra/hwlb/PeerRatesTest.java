package io.replicalb.cassandra.hwlb;

import io.replicalb.core.hwlb.PeerRates;
import io.replicalb.core.hwlb.PeerState;

import org.apache.cassandra.locator.InetAddressAndPort;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The peer rules (Rust's published_rules, with Cassandra's heartbeat freshness) and the directory. */
class PeerRatesTest
{
    private static final long MS = 1_000_000L;

    @Test
    void publishedRules()
    {
        PeerRates t = new PeerRates(1000 * MS, 0.95);
        int a = 0, b = 1, c = 2;
        t.setLocal(a);
        assertEquals(0.0, t.effective(b, 0), "no known rate counts as 0.0");
        t.record(b, 0.6, 0, 0);
        t.record(a, 0.7, 0, 0);
        assertEquals(0.6, t.effective(b, 1000 * MS), "exactly 1 s old is still fresh");
        assertEquals(0.95, t.effective(b, 1001 * MS), "older than 1 s counts as 0.95");
        assertEquals(0.7, t.effective(a, 5000 * MS), "the local rate is never stale");
        t.forget(b);
        assertEquals(0.0, t.effective(b, 1001 * MS), "a dropped peer is forgotten");
        t.setSupported(c, false);
        t.record(c, 0.5, 0, 0);
        assertTrue(Double.isNaN(t.effective(c, 0)), "a peer without the plug-in has no rate");
        assertEquals(PeerState.UNSUPPORTED, t.state(c, 0));
        t.setSupported(c, true);
        assertEquals(0.0, t.effective(c, 0));
        t.record(b, 1.5, 0, 0);
        t.record(b, Double.NaN, 0, 0);
        assertEquals(0.0, t.effective(b, 0), "out-of-range rates are ignored");
    }

    @Test
    void ageIsTheTimeSinceLastHeardNotSincePublication()
    {
        PeerRates t = new PeerRates(3000 * MS, 0.95);
        t.setLocal(0);
        t.record(1, 0.4, 0, 0);
        assertEquals(3000 * MS, t.fixedUntilNs(1, 0));
        // Heartbeats keep an unchanged rate fresh long after it was published.
        for (long s = 1; s <= 20; s++)
            t.heard(1, s * 1000 * MS, s * 1000 * MS);
        assertEquals(0.4, t.effective(1, 22_000 * MS));
        assertEquals(PeerState.RATE, t.state(1, 22_000 * MS));
        // Silence: stale after 3 s.
        assertEquals(0.95, t.effective(1, 23_001 * MS));
        assertEquals(PeerState.STALE, t.state(1, 23_001 * MS));
        long v = t.version();
        t.heard(1, 24_000 * MS, 24_000 * MS);
        assertNotEquals(v, t.version(), "stale to fresh bumps the version");
        assertEquals(0.4, t.effective(1, 24_000 * MS));
        // Down: stale at once, and its rate cannot age further.
        t.setDown(1, true);
        assertEquals(0.95, t.effective(1, 24_000 * MS));
        assertEquals(Long.MAX_VALUE, t.fixedUntilNs(1, 24_000 * MS));
        t.setDown(1, false);
        assertEquals(0.4, t.effective(1, 24_000 * MS));
    }

    @Test
    void versionMovesOnlyOnNews()
    {
        PeerRates t = new PeerRates(1000 * MS, 0.95);
        t.record(1, 0.5, 0, 0);
        long v = t.version();
        t.record(1, 0.5, 10 * MS, 10 * MS);
        t.heard(1, 20 * MS, 20 * MS);
        assertEquals(v, t.version(), "the same fresh rate is no news");
        t.record(1, 0.6, 30 * MS, 30 * MS);
        assertNotEquals(v, t.version());
    }

    @Test
    void directoryPublishesViewsOnlyOnChange() throws Exception
    {
        InetAddressAndPort me = InetAddressAndPort.getByName("127.0.0.21");
        InetAddressAndPort peer = InetAddressAndPort.getByName("127.0.0.22");
        PeerDirectory d = new PeerDirectory(me, 3000 * MS, 0.95, 0);
        PeerView v0 = d.view();
        assertEquals(0, v0.id(me));
        assertEquals(-1, v0.id(peer));
        d.observe(peer, 0, true, true, true, 0);
        PeerView v1 = d.view();
        assertEquals(1, v1.id(peer));
        assertTrue(v1.version > v0.version);
        assertEquals(0.0, v1.effective(1), "supported, no rate yet: 0.0");
        d.recordRate(peer, 0.7, 0, 0);
        PeerView v2 = d.view();
        assertEquals(0.7, v2.effective(1));
        d.observe(peer, 1000 * MS, true, true, true, 1000 * MS);
        assertEquals(v2, d.view(), "a heartbeat of a fresh rate changes nothing a plan sees");
        d.refresh(4001 * MS);
        assertEquals(0.95, d.view().effective(1), "not heard for 3 s: stale");
        d.observe(peer, 4100 * MS, false, true, true, 4100 * MS);
        assertTrue(!d.view().live(1), "down");
        d.remove(peer, 4200 * MS);
        assertEquals(0.0, d.view().effective(1), "removed: forgotten");
        assertEquals(1, d.presentEndpoints().size());
        d.observe(peer, 5000 * MS, true, false, true, 5000 * MS);
        assertTrue(Double.isNaN(d.view().effective(1)), "no gossip state: no plug-in");
        assertEquals(PeerState.UNSUPPORTED, d.describe(5000 * MS).get(1).state());
        assertEquals(PeerState.LOCAL, d.describe(5000 * MS).get(0).state());
    }
}
