package io.replicalb.cassandra.hwlb;

import java.io.File;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.cassandra.locator.EndpointsForToken;
import org.apache.cassandra.locator.InetAddressAndPort;
import org.apache.cassandra.locator.Replica;
import org.apache.cassandra.locator.SimpleSnitch;
import org.junit.jupiter.api.Test;

import static io.replicalb.cassandra.hwlb.TestCluster.ep;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The shared decision traces (testdata/unified-coordinator-traces.json, written by the Rust
 * test crates/policy/tests/unified_coordinator_traces.rs): every case's events replayed through
 * the plug-in's real request path ({@link ReplicaRouter} over Cassandra replica collections,
 * {@link CoordinatorHealth}, {@link PeerDirectory}), one snitch per coordinator of the case; every
 * plan must give Rust's order, draw when Rust drew and pass over when Rust passed over.
 */
class UnifiedTracesTest
{
    private static final int NODES = 4;

    /** Trace node n is 127.0.0.(21 + n). */
    private static InetAddressAndPort node(int n)
    {
        return ep(21 + n);
    }

    /** The coordinators of one case: one snitch per trace node, each told every event. */
    private static final class Coordinators
    {
        final HwlbSnitch[] snitch = new HwlbSnitch[NODES];
        final boolean[] live = new boolean[NODES];

        Coordinators()
        {
            // The traces give the warm-up decisions at the pace of the peers' misses per second
            // (the Rust statement's warmup_share 1); the slow start that scales it is tested on its own.
            Map<String, String> props = Map.of("policy", "unified", "stale_after_ms", "86400000", "warmup_ramp_s", "0", "warmup_reads", "1");
            long now = System.nanoTime();
            for (int l = 0; l < NODES; l++)
            {
                snitch[l] = new HwlbSnitch(HwlbSettings.parse(props::get), new SimpleSnitch(), node(l));
                // The traces start long after the coordinators did: a node warms only once seen coming up.
                snitch[l].warmup().startedLongAgo();
                // The other nodes in ascending order: directory ids = the coordinator first, then by node.
                for (int n = 0; n < NODES; n++)
                    if (n != l)
                        snitch[l].directory().observe(node(n), now, true, true, true, now);
                live[l] = true;
            }
            rates(new Double[]{ 0.9, 0.85, 0.82, 0.9 });
        }

        int id(int l, int n)
        {
            int id = snitch[l].directory().view().id(node(n));
            assertTrue(id >= 0);
            return id;
        }

        void rates(Double[] rates)
        {
            long now = System.nanoTime();
            for (int l = 0; l < NODES; l++)
            {
                PeerDirectory d = snitch[l].directory();
                for (int n = 0; n < NODES; n++)
                {
                    if (n == l)
                    {
                        if (rates[n] != null)
                            d.setLocalRate(rates[n], now);
                        continue;
                    }
                    d.observe(node(n), now, live[n], rates[n] != null, true, now);
                    if (rates[n] != null)
                        d.recordRate(node(n), rates[n], now, now);
                }
            }
            current = rates;
        }

        Double[] current;

        /** Node {@code n} goes down or comes up at trace time {@code traceNs}. */
        void liveness(int n, boolean alive, long traceNs)
        {
            live[n] = alive;
            long now = System.nanoTime();
            for (int l = 0; l < NODES; l++)
            {
                if (l != n)
                    snitch[l].directory().observe(node(n), now, alive, current[n] != null, true, now);
                snitch[l].health().reset(id(l, n));
                if (alive)
                    snitch[l].warmup().cameUp(id(l, n), traceNs);
            }
        }
    }

    @Test
    void everyPlanOfEveryTraceMatchesRust() throws Exception
    {
        String path = System.getProperty("unified.traces");
        assertTrue(path != null && !path.isEmpty(), "Surefire passes -Dunified.traces");
        File file = new File(path);
        assertTrue(file.isFile(), "traces at " + file.getAbsolutePath());
        JsonNode cases = new ObjectMapper().readTree(file).get("cases");
        assertTrue(cases.size() >= 7, "the cases of the Rust test, found " + cases.size());
        int plans = 0;
        int passed = 0;
        int warmed = 0;
        for (JsonNode cs : cases)
        {
            String name = cs.get("name").asText();
            Coordinators c = new Coordinators();
            int index = 0;
            for (JsonNode e : cs.get("events"))
            {
                index++;
                long nowNs = e.get("t_us").asLong() * 1000L;
                String kind = e.get("event").asText();
                switch (kind)
                {
                    case "send":
                        for (int l = 0; l < NODES; l++)
                            c.snitch[l].health().sent(c.id(l, e.get("node").asInt()), nowNs);
                        break;
                    case "probe_answer":
                        for (int l = 0; l < NODES; l++)
                            c.snitch[l].health().answered(c.id(l, e.get("node").asInt()), nowNs);
                        break;
                    case "reply":
                        for (int l = 0; l < NODES; l++)
                            c.snitch[l].health().replied(c.id(l, e.get("node").asInt()), e.get("latency_us").asLong() * 1000L, nowNs);
                        break;
                    case "expiry":
                        for (int l = 0; l < NODES; l++)
                            c.snitch[l].health().expired(c.id(l, e.get("node").asInt()), nowNs);
                        break;
                    case "pending":
                        for (int l = 0; l < NODES; l++)
                            c.snitch[l].health().pending(c.id(l, e.get("node").asInt()), e.get("count").asInt());
                        break;
                    case "down":
                        c.liveness(e.get("node").asInt(), false, nowNs);
                        break;
                    case "up":
                        c.liveness(e.get("node").asInt(), true, nowNs);
                        break;
                    case "rates":
                    {
                        Double[] r = new Double[NODES];
                        for (int n = 0; n < NODES; n++)
                            r[n] = e.get("rates").get(n).isNull() ? null : e.get("rates").get(n).asDouble();
                        c.rates(r);
                        break;
                    }
                    case "plan":
                    {
                        int l = e.get("local").asInt();
                        int k = e.get("k").asInt();
                        double u = e.get("u").asDouble();
                        int[] lasts = new int[e.get("replicas").size()];
                        for (int i = 0; i < lasts.length; i++)
                            lasts[i] = 21 + e.get("replicas").get(i).asInt();
                        EndpointsForToken replicas = TestCluster.replicas(lasts);
                        HwlbSnitch s = c.snitch[l];
                        HwlbCounters.Totals before = s.control().counters().totals();
                        double ub = e.get("u_background").asDouble();
                        EndpointsForToken ordered = s.router().orderFor(node(l), replicas, k, u, ub, nowNs);
                        int backgroundId = s.router().lastBackground();
                        int background = -1;
                        for (int n = 0; n < NODES && backgroundId >= 0; n++)
                            if (c.id(l, n) == backgroundId)
                                background = n;
                        HwlbCounters.Totals after = s.control().counters().totals();
                        List<Integer> got = new ArrayList<>();
                        for (Replica r : ordered)
                        {
                            byte[] b = r.endpoint().getAddress().getAddress();
                            got.add((b[b.length - 1] & 0xff) - 21);
                        }
                        List<Integer> expected = new ArrayList<>();
                        for (JsonNode x : e.get("expect"))
                            expected.add(x.asInt());
                        String what = name + ", event " + index + " (" + e + ")";
                        assertEquals(expected, got, what + ": order");
                        assertEquals(e.get("drawn").asBoolean() ? 1 : 0, after.get(HwlbCounters.DRAWS) - before.get(HwlbCounters.DRAWS), what + ": drawn");
                        boolean passedOver = e.get("passed_over").asInt() > 0;
                        assertEquals(passedOver ? 1 : 0, after.get(HwlbCounters.PASSED_OVER) - before.get(HwlbCounters.PASSED_OVER), what + ": passed over");
                        assertEquals(e.get("background").asInt(), background, what + ": background read");
                        if (background >= 0)
                            warmed++;
                        plans++;
                        if (passedOver)
                            passed++;
                        break;
                    }
                    default:
                        throw new AssertionError(name + ": unknown event " + kind);
                }
            }
        }
        assertTrue(plans >= 50 && passed >= 10 && warmed >= 3, plans + " plans, " + passed + " passing over, " + warmed + " warming");
        System.out.println("unified traces: " + plans + " plans agree with Rust (" + passed + " passing over, " + warmed + " warming)");
    }
}
