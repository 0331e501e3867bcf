package io.replicalb.cassandra.hwlb;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The tracker's formula and the publisher's thresholds: the Rust tests, mirrored. */
class TrackerPublisherTest
{
    private static final long S = 1_000_000_000L;

    private static void feed(HitRateTracker t, long hits, long misses)
    {
        t.recordHits(hits);
        t.recordMisses(misses);
    }

    @Test
    void zeroUntilTheFirstTickAndWithoutHits()
    {
        HitRateTracker t = HitRateTracker.withDefaults(0);
        feed(t, 80, 20);
        assertEquals(0.0, t.hitRate());
        assertFalse(t.advance(9 * S));
        assertTrue(t.advance(10 * S));
        assertEquals(0.8, t.hitRate(), 1e-12);
        assertEquals(8.0, t.avgHitsPerS());
        assertEquals(2.0, t.avgMissesPerS());

        HitRateTracker cold = HitRateTracker.withDefaults(0);
        feed(cold, 0, 50);
        cold.advance(10 * S);
        assertEquals(0.0, cold.hitRate());
    }

    @Test
    void movingAverageFollowsThePublishedFormula()
    {
        HitRateTracker t = HitRateTracker.withDefaults(0);
        feed(t, 0, 100); // tick 1: 0 hits/s, 10 misses/s
        t.advance(10 * S);
        feed(t, 100, 0); // tick 2: 10 hits/s, 0 misses/s
        t.advance(20 * S);
        double alpha = 1.0 - Math.exp(-10.0 / 60.0);
        assertEquals(alpha, t.alpha(), 1e-15);
        assertEquals(alpha * 10.0, t.avgHitsPerS(), 1e-12);
        assertEquals(10.0 - alpha * 10.0, t.avgMissesPerS(), 1e-12);
        assertEquals(alpha, t.hitRate(), 1e-12);
        for (int i = 3; i < 9; i++)
        {
            feed(t, 100, 0);
            t.advance(i * 10 * S);
        }
        double expect = 1.0 - Math.pow(1.0 - alpha, 7);
        assertEquals(expect, t.hitRate(), 1e-9);
        assertEquals(700, t.hitsTotal());
        assertEquals(100, t.missesTotal());
    }

    @Test
    void idleTicksDecayBothAverages()
    {
        HitRateTracker t = new HitRateTracker(S, 4 * S, 0);
        feed(t, 10, 10);
        t.advance(S);
        t.advance(4 * S); // three idle ticks in one call
        double alpha = 1.0 - Math.exp(-0.25);
        double keep = Math.pow(1.0 - alpha, 3);
        assertEquals(10.0 * keep, t.avgHitsPerS(), 1e-9);
        assertEquals(10.0 * keep, t.avgMissesPerS(), 1e-9);
        assertEquals(0.5, t.hitRate(), 1e-12, "the ratio survives decay");
        assertEquals(5 * S, t.nextTickNs());
    }

    @Test
    void publisherFirstAlwaysThenBigAtOnceAndSmallAfterFiveSeconds()
    {
        RatePublisher p = new RatePublisher();
        assertTrue(Double.isNaN(p.last()));
        assertTrue(p.offer(0.5, 0));
        assertFalse(p.offer(0.55, S), "small change, too soon");
        assertFalse(p.offer(0.505, 6 * S), "below the small threshold");
        assertTrue(p.offer(0.52, 6 * S), "small change after 5 s");
        assertTrue(p.offer(0.70, 6 * S + 1), "big change at once");
        assertFalse(p.offer(0.715, 7 * S));
        assertEquals(0.70, p.last());
    }

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
