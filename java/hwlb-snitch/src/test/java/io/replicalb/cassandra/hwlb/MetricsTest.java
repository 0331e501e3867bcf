package io.replicalb.cassandra.hwlb;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import javax.management.MBeanServer;
import javax.management.ObjectName;

import org.apache.cassandra.locator.EndpointsForToken;
import org.apache.cassandra.locator.InetAddressAndPort;
import org.apache.cassandra.locator.Replica;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static io.replicalb.cassandra.hwlb.TestCluster.ep;
import static io.replicalb.cassandra.hwlb.TestCluster.replicas;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The plug-in's metrics in Cassandra's registry, read back as a JMX client reads them: from the
 * platform MBean server by ObjectName ({@code org.apache.cassandra.metrics:type=ReplicaLb,...}).
 * They follow the request path's counts, peers and tables are registered when seen and removed
 * when gone, and stopping the plug-in removes them all.
 */
class MetricsTest
{
    private static final long S = 1_000_000_000L;
    private static final MBeanServer JMX = ManagementFactory.getPlatformMBeanServer();
    private HwlbSnitch snitch;

    @AfterEach
    void stop()
    {
        if (snitch != null)
            snitch.stop();
    }

    private static ObjectName name(String scope, String metric) throws Exception
    {
        return new ObjectName("org.apache.cassandra.metrics:type=ReplicaLb," + (scope == null ? "" : "scope=" + scope + ",") + "name=" + metric);
    }

    private static Object value(String scope, String metric) throws Exception
    {
        return JMX.getAttribute(name(scope, metric), "Value");
    }

    /** unified at coordinator .21 (read_cl ONE) with .22 and .23 at 0.9, .21 itself at 0.5. */
    private HwlbSnitch unified()
    {
        Map<String, String> props = Map.of("policy", "unified", "read_cl", "ONE");
        HwlbSnitch s = new HwlbSnitch(HwlbSettings.parse(props::get), new TestCluster.RankSnitch(Map.of()), ep(21));
        long now = System.nanoTime();
        PeerDirectory d = s.directory();
        d.setLocalRate(0.5, now);
        for (int last : new int[]{ 22, 23 })
        {
            d.observe(ep(last), now, true, true, true, now);
            d.recordRate(ep(last), 0.9, now, now);
        }
        snitch = s;
        return s;
    }

    @Test
    void aSilentPeersPassedOverCountAndTheSharesFollowTheReads() throws Exception
    {
        HwlbSnitch s = unified();
        s.metrics().sync();
        String p22 = ReplicaLbMetrics.scope(ep(22));
        String p23 = ReplicaLbMetrics.scope(ep(23));
        assertEquals("127.0.0.22_7000", p22, "scoped as Cassandra's Connection metrics");
        assertEquals(0L, value(p22, "PassedOverSilent"));
        assertEquals(0.9, value(p23, "EffectiveRate"));
        // .22 has 100 messages pending and no reply: silent, passed over in every read.
        int id22 = s.directory().view().id(ep(22));
        s.health().pending(id22, 100);
        EndpointsForToken rs = replicas(21, 22, 23);
        int reads = 300;
        for (int i = 0; i < reads; i++)
        {
            InetAddressAndPort first = firstOf(s.sortedByProximity(ep(21), rs));
            // The replica read answers (so none but .22 turns silent).
            s.health().replied(s.directory().view().id(first), 1_000_000, System.nanoTime());
        }
        assertEquals((long) reads, value(p22, "PassedOverSilent"));
        for (String reason : new String[]{ "Expired", "Overdue", "Slow" })
            assertEquals(0L, value(p22, "PassedOver" + reason), reason);
        assertEquals(0L, value(p22, "FirstK"), "never read while silent");
        assertEquals(0.0, value(p22, "ReadShare"));
        long first21 = (Long) value(ReplicaLbMetrics.scope(ep(21)), "FirstK");
        long first23 = (Long) value(p23, "FirstK");
        assertEquals(reads, first21 + first23, "k = 1 per read");
        double share23 = (Double) value(p23, "ReadShare");
        assertEquals((double) first23 / reads, share23, 1e-9);
        assertTrue(share23 > 0.5, "the warmer replica takes most reads: " + share23);
        // Node-wide: the MBean's counters, same values.
        assertEquals((long) reads, value(null, "ReadsCoordinated"));
        assertEquals((long) reads, value(null, "PassedOver"));
        assertEquals(s.control().getPassedOver(), value(null, "PassedOver"));
        assertEquals(first21, value(null, "LocalReads"));
        assertEquals(first23, value(null, "RemoteReads"));
        assertEquals(0L, value(null, "Fallbacks"));
        // reset_counters starts a new window for the shares, not for the monotonic counts.
        s.control().resetCounters();
        assertEquals(0.0, value(p23, "ReadShare"));
        assertEquals(first23, value(p23, "FirstK"));
        // The plug-in's own MBean (registered as gossiperStarting does) still works beside them.
        ObjectName own = new ObjectName(HwlbSnitch.MBEAN_NAME);
        JMX.registerMBean(s.control(), own);
        try
        {
            assertEquals((long) reads, JMX.getAttribute(own, "PassedOver"));
            assertEquals((long) reads, JMX.getAttribute(own, "ReadsCoordinated"));
        }
        finally
        {
            JMX.unregisterMBean(own);
        }
    }

    private static InetAddressAndPort firstOf(EndpointsForToken e)
    {
        for (Replica r : e)
            return r.endpoint();
        throw new AssertionError("no replica");
    }

    @Test
    void aPeerThatLeavesAndAStoppedPlugInLeaveNoMBean() throws Exception
    {
        HwlbSnitch s = unified();
        s.metrics().sync();
        String p22 = ReplicaLbMetrics.scope(ep(22));
        assertTrue(JMX.isRegistered(name(p22, "FirstK")));
        s.directory().remove(ep(22), System.nanoTime());
        s.metrics().sync();
        assertFalse(JMX.isRegistered(name(p22, "FirstK")), "removed with the peer");
        assertTrue(JMX.isRegistered(name(ReplicaLbMetrics.scope(ep(23)), "FirstK")));
        s.directory().observe(ep(22), System.nanoTime(), true, true, true, System.nanoTime());
        s.metrics().sync();
        assertTrue(JMX.isRegistered(name(p22, "PassedOverSlow")), "back when it comes back");
        s.stop();
        assertTrue(JMX.queryNames(new ObjectName("org.apache.cassandra.metrics:type=ReplicaLb,*"), null).isEmpty(), "stopping removes them all");
        s.metrics().sync();
        assertTrue(JMX.queryNames(new ObjectName("org.apache.cassandra.metrics:type=ReplicaLb,*"), null).isEmpty(), "and they stay out");
    }

    @Test
    void eachMeasuredTableHasItsRatesUntilItIsGone() throws Exception
    {
        HwlbSnitch s = unified();
        Map<Integer, long[]> counts = new HashMap<>();
        counts.put(1, new long[]{ 0, 0 });
        TableProbe probe = sink -> counts.forEach((key, c) -> sink.table(key, "ks.t" + key, c[0], c[1]));
        long[] node = { 0, 0 };
        CacheProbe nodeWide = new CacheProbe()
        {
            public CacheKind kind()
            {
                return CacheKind.ROW;
            }

            public long hits()
            {
                return node[0];
            }

            public long requests()
            {
                return node[1];
            }
        };
        List<String> gossip = new ArrayList<>();
        LocalRate rate = new LocalRate(10_000, 60_000, nodeWide, probe, 16, gossip::add, new PeerDirectory(ep(21), 3 * S, 0.95, 0), 0);
        s.control().attach(rate);
        rate.tick(S);
        counts.get(1)[0] += 95;
        counts.get(1)[1] += 5;
        rate.tick(10 * S);
        s.metrics().sync();
        assertEquals(0.95, (Double) value("ks.t1", "TableHitRate"), 1e-9);
        double perS = rate.tables().get(0).readsPerS();
        assertTrue(perS > 0.0, "read: " + perS);
        assertEquals(perS, (Double) value("ks.t1", "TableReadsPerSecond"), 1e-9);
        assertEquals(0.95, (Double) value("ks.t1", "TablePublishedRate"), 1e-9);
        counts.remove(1);
        rate.tick(20 * S);
        s.metrics().sync();
        assertFalse(JMX.isRegistered(name("ks.t1", "TableHitRate")), "a table no longer measured is removed");
    }
}
