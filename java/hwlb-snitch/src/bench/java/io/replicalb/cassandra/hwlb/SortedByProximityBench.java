package io.replicalb.cassandra.hwlb;

import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.cassandra.locator.AbstractNetworkTopologySnitch;
import org.apache.cassandra.locator.EndpointsForToken;
import org.apache.cassandra.locator.IEndpointSnitch;
import org.apache.cassandra.locator.InetAddressAndPort;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import static io.replicalb.cassandra.hwlb.TestCluster.ep;

/**
 * Cost of {@code sortedByProximity} for 3 replicas (QUORUM: k = 2), in ns per call:
 * <ul>
 * <li>{@code innerAlone}: the inner snitch by itself (a network-topology snitch with map lookups
 *     for datacenter and rack, as GossipingPropertyFileSnitch does);</li>
 * <li>{@code hwlbOff}: the HWLB snitch switched off (the inner order, with the counting);</li>
 * <li>{@code hwlbSteppedAside}: on, all replicas equally warm (the inner order);</li>
 * <li>{@code hwlbCachedPlan}: on, this node cold and its peers warm: a cached plan, one draw.</li>
 * <li>{@code hwlbPerTable}: the same draw with per-table rates: the query handler's
 *     {@code ReadTable.set} for the request, then the read planned with its own table's rates
 *     (this node cold for that table, warm node-wide; two tables in the view);</li>
 * <li>{@code unified}: policy unified with the same rates and every peer answering in 1 ms:
 *     the coordinator rule evaluated (nothing passed over), the same draw, then the give-way
 *     comparison of the drawn replicas' expected times weighed by heat against the undrawn
 *     one's. Its busy threshold and overdue factor are set out of reach, because no replies
 *     arrive here to answer the reads it counts (they would soon be overdue); the rule's cost
 *     is the same;</li>
 * <li>{@code unifiedPassingOver}: the same with one peer passed over (a recent expiry): k
 *     healthy replicas are left, so the inner order with the passed-over one last;</li>
 * <li>{@code dynamicSnitch}: Cassandra's own DynamicEndpointSnitch over the same inner snitch,
 *     fed the same latencies (its scores set as its update task would set them; the task
 *     itself needs a running node).</li>
 * </ul>
 * Run with {@code mvn -B -f java/hwlb-snitch/pom.xml -Pbench verify}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(1)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class SortedByProximityBench
{
    /** A network-topology snitch whose racks and datacenters come from maps. */
    static final class MapTopologySnitch extends AbstractNetworkTopologySnitch
    {
        private final Map<InetAddressAndPort, String> racks = Map.of(ep(21), "rack1", ep(22), "rack2", ep(23), "rack3");

        @Override
        public String getRack(InetAddressAndPort endpoint)
        {
            return racks.getOrDefault(endpoint, "rack1");
        }

        @Override
        public String getDatacenter(InetAddressAndPort endpoint)
        {
            return "dc1";
        }

        @Override
        public String getLocalDatacenter()
        {
            return "dc1";
        }

        @Override
        public String getLocalRack()
        {
            return "rack1";
        }
    }

    private InetAddressAndPort local;
    private EndpointsForToken replicas;
    private IEndpointSnitch inner;
    private HwlbSnitch off;
    private HwlbSnitch equallyWarm;
    private HwlbSnitch active;
    private HwlbSnitch perTable;
    /** The table the per-table benchmark reads. */
    private static final int TABLE = 0x0000000a;
    private HwlbSnitch unified;
    private HwlbSnitch unifiedPassing;
    private IEndpointSnitch dynamicSnitch;

    private static HwlbSnitch snitch(boolean enabled, IEndpointSnitch inner, double local, double a, double b)
    {
        return snitch(Map.of("enabled", Boolean.toString(enabled)), inner, local, a, b);
    }

    private static HwlbSnitch snitch(Map<String, String> props, IEndpointSnitch inner, double local, double a, double b)
    {
        HwlbSettings s = HwlbSettings.parse(props::get);
        HwlbSnitch snitch = new HwlbSnitch(s, inner, ep(21));
        long now = System.nanoTime();
        PeerDirectory d = snitch.directory();
        d.setLocalRate(local, now);
        // Heard "in the future" so nothing turns stale while the benchmark runs (no poll here).
        long heard = now + TimeUnit.HOURS.toNanos(1);
        d.observe(ep(22), heard, true, true, true, now);
        d.recordRate(ep(22), a, heard, now);
        d.observe(ep(23), heard, true, true, true, now);
        d.recordRate(ep(23), b, heard, now);
        return snitch;
    }

    /** Builds the snitches and warms their plan caches. */
    @Setup
    public void setup()
    {
        local = ep(21);
        replicas = TestCluster.replicas(22, 21, 23);
        inner = new MapTopologySnitch();
        off = snitch(false, inner, 0.0, 0.8, 0.8);
        equallyWarm = snitch(true, inner, 0.8, 0.8, 0.805);
        active = snitch(true, inner, 0.0, 0.8, 0.8);
        if (active.sortedByProximity(local, replicas).size() != 3 || active.control().getDraws() != 1)
            throw new IllegalStateException("the active snitch did not draw");
        perTable = snitch(true, inner, 0.0, 0.8, 0.8);
        perTableRates(perTable);
        ReadTable.set(TABLE);
        if (perTable.sortedByProximity(local, replicas).size() != 3 || perTable.control().getDraws() != 1
            || perTable.control().getTableReads() != 1)
            throw new IllegalStateException("the per-table snitch did not draw with its table's rates");
        ReadTable.clear();
        Map<String, String> props = Map.of("policy", "unified", "in_flight_threshold", "1000000", "expiry_memory_ms", "3600000",
            "overdue_factor", "1000000");
        unified = snitch(props, inner, 0.0, 0.8, 0.8);
        unifiedPassing = snitch(props, inner, 0.0, 0.8, 0.8);
        long now = System.nanoTime();
        for (HwlbSnitch u : new HwlbSnitch[]{ unified, unifiedPassing })
            for (int last : new int[]{ 22, 23 })
                for (int i = 0; i < 100; i++)
                    u.health().replied(u.directory().view().id(ep(last)), TimeUnit.MILLISECONDS.toNanos(1), now);
        unifiedPassing.health().expired(unifiedPassing.directory().view().id(ep(23)), now + 1);
        unified.sortedByProximity(local, replicas);
        unifiedPassing.sortedByProximity(local, replicas);
        if (unified.control().getDraws() != 1 || unified.control().getPassedOver() != 0)
            throw new IllegalStateException("unified should draw without passing over");
        if (unifiedPassing.control().getPassedOver() != 1)
            throw new IllegalStateException("unified should pass .23 over");
        dynamicSnitch = dynamicSnitch(inner);
    }

    /** Per-table rates: table 0a cold here and warm at the peers, table 0b warm everywhere; node-wide warm. */
    private static void perTableRates(HwlbSnitch snitch)
    {
        long now = System.nanoTime();
        long heard = now + TimeUnit.HOURS.toNanos(1);
        PeerDirectory d = snitch.directory();
        d.setLocalRate(GossipValue.parseFull("hwlb2:0.800000;0000000a=0.000000,0000000b=0.800000"), now);
        for (int last : new int[]{ 22, 23 })
            d.recordRate(ep(last), GossipValue.parseFull("hwlb2:0.800000;0000000a=0.800000,0000000b=0.800000"), heard, now);
    }

    /**
     * Cassandra's DynamicEndpointSnitch over {@code inner} with its default settings, fed the
     * same latencies (1 ms from .22 and .23), its scores set as its update task computes them
     * (median over the largest median: 1.0 each, and 0.0 for this node; the task needs a
     * running node).
     */
    private static IEndpointSnitch dynamicSnitch(IEndpointSnitch inner)
    {
        org.apache.cassandra.config.DatabaseDescriptor.clientInitialization(false);
        org.apache.cassandra.locator.DynamicEndpointSnitch des = new org.apache.cassandra.locator.DynamicEndpointSnitch(inner);
        java.util.HashMap<InetAddressAndPort, Double> scores = new java.util.HashMap<>();
        // This node has no samples; on a node its default score is its gossiped severity, 0.0
        // when idle (looking it up needs the Gossiper, so it is set here).
        scores.put(ep(21), 0.0);
        for (int last : new int[]{ 22, 23 })
        {
            for (int i = 0; i < 100; i++)
                des.receiveTiming(ep(last), 1, TimeUnit.MILLISECONDS);
            scores.put(ep(last), 1.0);
        }
        try
        {
            java.lang.reflect.Field f = org.apache.cassandra.locator.DynamicEndpointSnitch.class.getDeclaredField("scores");
            f.setAccessible(true);
            f.set(des, scores);
        }
        catch (ReflectiveOperationException e)
        {
            throw new IllegalStateException("DynamicEndpointSnitch.scores not found", e);
        }
        return des;
    }

    /** The inner snitch alone. */
    @Benchmark
    public EndpointsForToken innerAlone()
    {
        return inner.sortedByProximity(local, replicas);
    }

    /** HWLB switched off. */
    @Benchmark
    public EndpointsForToken hwlbOff()
    {
        return off.sortedByProximity(local, replicas);
    }

    /** HWLB on, equally warm: steps aside. */
    @Benchmark
    public EndpointsForToken hwlbSteppedAside()
    {
        return equallyWarm.sortedByProximity(local, replicas);
    }

    /** HWLB on, the read's table named by the query handler: its own cached plan, one draw. */
    @Benchmark
    public EndpointsForToken hwlbPerTable()
    {
        ReadTable.set(TABLE);
        return perTable.sortedByProximity(local, replicas);
    }

    /** HWLB on with a cached plan: one systematic draw. */
    @Benchmark
    public EndpointsForToken hwlbCachedPlan()
    {
        return active.sortedByProximity(local, replicas);
    }

    /** unified: the coordinator rule (nothing passed over), the draw, the give-way comparison. */
    @Benchmark
    public EndpointsForToken unified()
    {
        return unified.sortedByProximity(local, replicas);
    }

    /** unified passing one replica over: the inner order with it last. */
    @Benchmark
    public EndpointsForToken unifiedPassingOver()
    {
        return unifiedPassing.sortedByProximity(local, replicas);
    }

    /** Cassandra's DynamicEndpointSnitch over the same inner snitch. */
    @Benchmark
    public EndpointsForToken dynamicSnitch()
    {
        return dynamicSnitch.sortedByProximity(local, replicas);
    }
}
