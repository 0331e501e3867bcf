package io.replicalb.cassandra.hwlb;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The gossip value and the local tick. The tracker's formula and the publication thresholds are
 * checked against Rust's by HwlbComponentVectorsTest.
 */
class TrackerPublisherTest
{
    private static final long S = 1_000_000_000L;

    @Test
    void gossipValuesRoundTrip()
    {
        assertEquals("hwlb1:", GossipValue.marker());
        assertTrue(Double.isNaN(GossipValue.parse(GossipValue.marker())));
        assertEquals("hwlb1:0.812345", GossipValue.of(0.8123449999));
        assertEquals(0.812345, GossipValue.parse("hwlb1:0.812345"));
        assertTrue(Double.isNaN(GossipValue.parse("hwlb2:0.5")), "an unknown version carries no rate");
        assertTrue(Double.isNaN(GossipValue.parse("hwlb1:1.5")), "out of range");
        assertTrue(Double.isNaN(GossipValue.parse("hwlb1:abc")));
        assertTrue(Double.isNaN(GossipValue.parse(null)));
    }

    @Test
    void localRatePublishesByTheRuleAndFeedsTheDirectory() throws Exception
    {
        long[] counts = { 0, 0 }; // hits, requests
        CacheProbe probe = new CacheProbe()
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
        java.util.List<String> sent = new java.util.ArrayList<>();
        org.apache.cassandra.locator.InetAddressAndPort me = org.apache.cassandra.locator.InetAddressAndPort.getByName("127.0.0.21");
        PeerDirectory dir = new PeerDirectory(me, 3000 * 1_000_000L, 0.95, 0);
        LocalRate rate = new LocalRate(10_000, 60_000, probe, sent::add, dir, 0);
        counts[0] = 80;
        counts[1] = 100;
        assertFalse(rate.tick(5 * S), "no tick ended yet");
        assertTrue(rate.tick(10 * S), "the first rate goes out");
        assertEquals(java.util.List.of("hwlb1:0.800000"), sent);
        assertEquals(0.8, rate.publishedRate());
        assertEquals(0.8, dir.view().effective(dir.localId()));
        assertEquals(80, rate.cacheHits());
        assertEquals(20, rate.cacheMisses());
        // Another tick at the same rate: nothing new to publish.
        counts[0] += 80;
        counts[1] += 100;
        assertFalse(rate.tick(20 * S));
        assertEquals(1, sent.size());
    }
}
