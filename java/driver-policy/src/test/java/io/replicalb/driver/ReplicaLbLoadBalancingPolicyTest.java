package io.replicalb.driver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.ProgrammaticDriverConfigLoaderBuilder;
import com.datastax.oss.driver.api.core.connection.ClosedConnectionException;
import com.datastax.oss.driver.api.core.cql.Statement;
import com.datastax.oss.driver.api.core.loadbalancing.NodeDistance;
import com.datastax.oss.driver.api.core.metadata.Node;
import com.datastax.oss.driver.api.core.metadata.NodeState;
import com.datastax.oss.driver.api.core.servererrors.InvalidQueryException;
import com.datastax.oss.driver.api.core.servererrors.OverloadedException;
import com.datastax.oss.driver.api.core.servererrors.ReadTimeoutException;
import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import com.datastax.oss.driver.internal.core.metadata.DefaultNode;
import com.datastax.oss.driver.internal.core.metadata.TestNodes;
import io.replicalb.core.client.Failure;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class ReplicaLbLoadBalancingPolicyTest {
    private FakeCluster cluster;

    @AfterEach
    void close() {
        if (cluster != null) {
            cluster.close();
        }
    }

    private TestLbPolicy policy(FakeCluster c) {
        this.cluster = c;
        return c.init(new TestLbPolicy(c.context(), new TestPolicy()));
    }

    /**
     * The options of these tests: one {@link TestPolicy} behind one shard (one exact, shared
     * view: the decisions and callbacks these tests assert are a single policy's); the shards
     * are ShardedPolicyTest's.
     */
    private static Consumer<ProgrammaticDriverConfigLoaderBuilder> options(Consumer<ProgrammaticDriverConfigLoaderBuilder> more) {
        return b -> {
            b.withString(ReplicaLbOption.POLICY, "test").withInt(ReplicaLbOption.SHARDS, 1);
            more.accept(b);
        };
    }

    private static final Consumer<ProgrammaticDriverConfigLoaderBuilder> PLAIN = options(b -> {});

    private static List<Node> drain(Queue<Node> plan) {
        List<Node> out = new ArrayList<>();
        for (Node n = plan.poll(); n != null; n = plan.poll()) {
            out.add(n);
        }
        return out;
    }

    /** The node the policy calls {@code id}. */
    private Node node(ReplicaLbLoadBalancingPolicy p, int id) {
        return cluster.nodes.stream().filter(n -> p.nodeId(n) == id).findFirst().orElseThrow();
    }

    private Statement<?> read(String key) {
        return FakeCluster.read(key);
    }

    @Test
    void the_plan_is_the_policys_order_of_the_replicas_then_the_other_local_nodes() {
        TestLbPolicy p = policy(FakeCluster.oneDc(6, 3, 3, PLAIN));
        // Prefer higher ids.
        for (int i = 0; i < 6; i++) {
            p.test.rank[i] = i;
        }
        for (String key : List.of("a", "b", "c", "d", "e")) {
            Set<Node> replicas = cluster.replicas(key);
            assertEquals(3, replicas.size());
            List<Node> plan = drain(p.newQueryPlan(read(key), cluster.session));
            assertEquals(6, plan.size(), "every local node once: " + plan);
            assertEquals(6, new HashSet<>(plan).size());
            // The policy was offered exactly the replicas...
            Set<Node> offered = new HashSet<>();
            for (int id : p.test.lastCandidates) {
                offered.add(node(p, id));
            }
            assertEquals(replicas, offered, key);
            // ...and the plan starts with them in its order.
            assertEquals(replicas, new HashSet<>(plan.subList(0, 3)), key);
            for (int i = 1; i < 3; i++) {
                assertTrue(p.nodeId(plan.get(i - 1)) > p.nodeId(plan.get(i)), "ordered by the policy: " + plan);
            }
        }
        // Dense ids, one per node.
        assertEquals(Set.of(0, 1, 2, 3, 4, 5), cluster.nodes.stream().map(p::nodeId).collect(Collectors.toSet()));
        Counters c = p.counters();
        assertEquals(5, c.picks());
        assertEquals(5, c.open());
        assertEquals(0, c.overridden());
    }

    @Test
    void a_request_without_routing_information_offers_every_live_local_node() {
        TestLbPolicy p = policy(FakeCluster.oneDc(5, 1, 3, PLAIN));
        List<Node> plan = drain(p.newQueryPlan(FakeCluster.unrouted(), cluster.session));
        assertEquals(5, p.test.lastCandidates.length);
        assertEquals(new HashSet<>(cluster.nodes), new HashSet<>(plan));
        // The driver's own plans (no statement) do not ask the policy nor open a ticket.
        assertFalse(p.newQueryPlan(null, null).isEmpty());
        assertEquals(1, p.counters().picks());
    }

    @Test
    void nodes_of_other_datacenters_are_ignored_and_never_planned() {
        TestLbPolicy p = policy(new FakeCluster(2, 3, 1, 3, PLAIN));
        for (DefaultNode n : cluster.nodes) {
            NodeDistance d = cluster.distances.get(n);
            assertEquals(n.getDatacenter().equals("dc1") ? NodeDistance.LOCAL : NodeDistance.IGNORED, d, n.toString());
        }
        for (String key : List.of("a", "b", "c", "d")) {
            assertEquals(6, cluster.replicas(key).size(), "3 per datacenter");
            List<Node> plan = drain(p.newQueryPlan(read(key), cluster.session));
            assertEquals(3, plan.size());
            assertTrue(plan.stream().allMatch(n -> n.getDatacenter().equals("dc1")), plan.toString());
            for (int id : p.test.lastCandidates) {
                assertEquals("dc1", node(p, id).getDatacenter());
            }
        }
        drain(p.newQueryPlan(FakeCluster.unrouted(), cluster.session));
        assertEquals(3, p.test.lastCandidates.length);
        // Zones are the local racks (one rack: zone 0); other datacenters' nodes have none.
        assertEquals(6, p.test.zones.length);
        for (int id = 0; id < 6; id++) {
            assertEquals(node(p, id).getDatacenter().equals("dc1") ? 0 : -1, p.test.zones[id]);
        }
        assertEquals(-1, p.test.localZone);
    }

    @Test
    void down_nodes_are_skipped_until_they_come_back() {
        TestLbPolicy p = policy(FakeCluster.oneDc(6, 3, 3, PLAIN));
        assertEquals(6, p.test.log.stream().filter(l -> l.startsWith("up ")).count(), "every node starts up");
        Node down = cluster.replicas("k").iterator().next();
        TestNodes.setState((DefaultNode) down, NodeState.DOWN);
        p.onDown(down);
        assertTrue(p.test.log.contains("down " + p.nodeId(down)));
        for (int i = 0; i < 20; i++) {
            List<Node> plan = drain(p.newQueryPlan(read("k"), cluster.session));
            assertFalse(plan.contains(down), plan.toString());
            assertEquals(2, p.test.lastCandidates.length);
            assertEquals(5, plan.size());
        }
        TestNodes.setState((DefaultNode) down, NodeState.UP);
        p.onUp(down);
        assertEquals("up " + p.nodeId(down), p.test.log.get(p.test.log.size() - 1));
        assertTrue(drain(p.newQueryPlan(read("k"), cluster.session)).contains(down));
        // A removed node is forgotten; a new one gets the next id and is live once up.
        p.onRemove(down);
        assertFalse(drain(p.newQueryPlan(read("k"), cluster.session)).contains(down));
        assertEquals(-1, p.nodeId(down));
    }

    @Test
    void zones_are_racks_and_the_local_rack_is_the_local_zone() {
        TestLbPolicy p = policy(FakeCluster.oneDc(6, 3, 3, options(b -> b.withString(ReplicaLbOption.LOCAL_RACK, "r2"))));
        // r2 first (zone 0), then r1, r3 as met.
        assertEquals(0, p.test.localZone);
        for (DefaultNode n : cluster.nodes) {
            int expected = switch (n.getRack()) {
                case "r2" -> 0;
                case "r1" -> 1;
                default -> 2;
            };
            assertEquals(expected, p.test.zones[p.nodeId(n)], n.getRack());
        }
    }

    @Test
    void success_and_error_close_the_plans_ticket_with_its_outcome() {
        TestLbPolicy p = policy(FakeCluster.oneDc(6, 3, 3, PLAIN));
        Statement<?> r = read("x");
        Node first = p.newQueryPlan(r, cluster.session).poll();
        int id = p.nodeId(first);
        assertEquals(1, p.openTickets(first));
        p.onNodeSuccess(r, 1_000, null, first, "t");
        assertEquals(0, p.openTickets(first));
        Node again = p.newQueryPlan(r, cluster.session).poll();
        p.onNodeError(r, new ReadTimeoutException(again, ConsistencyLevel.ONE, 0, 1, false), 2_000, null, again, "t");
        Node third = p.newQueryPlan(r, cluster.session).poll();
        p.onNodeError(r, new InvalidQueryException(third, "bad"), 2_000, null, third, "t");
        List<String> ends = p.test.log.stream().filter(l -> !l.startsWith("up") && !l.equals("topology")).toList();
        assertEquals(List.of("send " + id, "reply " + id, "send " + p.nodeId(again), "failure " + p.nodeId(again) + " TIMEOUT",
                "send " + p.nodeId(third), "reply " + p.nodeId(third)), ends, "an invalid query is a healthy node's answer");
        Counters c = p.counters();
        assertEquals(3, c.picks());
        assertEquals(3, c.matched());
        assertEquals(0, c.untracked());
        assertEquals(0, c.open());
        assertEquals(0, p.test.inFlight);
    }

    @Test
    void failures_map_as_the_rust_adapters() {
        Node n = null;
        assertNull(ReplicaLbLoadBalancingPolicy.failureOf(new InvalidQueryException(n, "x")));
        assertEquals(Failure.TIMEOUT, ReplicaLbLoadBalancingPolicy.failureOf(new ReadTimeoutException(n, ConsistencyLevel.ONE, 0, 1, false)));
        assertEquals(Failure.CONNECTION_LOST, ReplicaLbLoadBalancingPolicy.failureOf(new ClosedConnectionException("gone")));
        assertEquals(Failure.ERROR, ReplicaLbLoadBalancingPolicy.failureOf(new OverloadedException(n)));
        assertEquals(Failure.ERROR, ReplicaLbLoadBalancingPolicy.failureOf(new IllegalStateException()));
    }

    @Test
    void a_speculative_or_retried_attempt_is_untracked_and_the_lost_ticket_expires() throws Exception {
        TestLbPolicy p = policy(FakeCluster.oneDc(6, 3, 3, options(b -> b.withDuration(ReplicaLbOption.TICKET_TTL, Duration.ofMillis(100)))));
        Statement<?> r = read("spec");
        Queue<Node> plan = p.newQueryPlan(r, cluster.session);
        Node first = plan.poll();
        // The speculative execution goes to the next node and wins; the first is cancelled and
        // never reported.
        Node second = plan.poll();
        p.onNodeSuccess(r, 500_000, null, second, "t|1");
        Counters c = p.counters();
        assertEquals(1, c.untracked());
        assertEquals(1, c.open(), "the first attempt's ticket is still open");
        assertEquals(1, p.test.inFlight);
        assertTrue(p.test.log.containsAll(List.of("send " + p.nodeId(second), "reply " + p.nodeId(second))));
        // A client-side time-out reports no node either: the same expiry ends it.
        Thread.sleep(150);
        p.expireNow();
        c = p.counters();
        assertEquals(1, c.expired());
        assertEquals(0, c.open());
        assertEquals(0, p.test.inFlight);
        assertEquals("failure " + p.nodeId(first) + " TIMEOUT", p.test.log.get(p.test.log.size() - 1));
        // A late end of the expired attempt counts as untracked, once.
        p.onNodeSuccess(r, 200_000_000, null, first, "t");
        assertEquals(2, p.counters().untracked());
        assertEquals(0, p.test.inFlight);
    }

    @Test
    void expiry_also_happens_on_the_request_path() throws Exception {
        TestLbPolicy p = policy(FakeCluster.oneDc(3, 1, 3, options(b -> b
                .withDuration(ReplicaLbOption.TICKET_TTL, Duration.ofMillis(30))
                .withDuration(ReplicaLbOption.TICKET_MATCH_WINDOW, Duration.ofMillis(10)))));
        for (int i = 0; i < 10; i++) {
            p.newQueryPlan(read("k" + i), cluster.session);
        }
        assertEquals(10, p.counters().open());
        Thread.sleep(60);
        p.newQueryPlan(read("later"), cluster.session);
        Counters c = p.counters();
        assertEquals(10, c.expired());
        assertEquals(1, c.open());
    }

    @Test
    void the_per_node_bound_pushes_out_the_oldest_ticket() {
        TestLbPolicy p = policy(FakeCluster.oneDc(3, 1, 3, options(b -> b.withInt(ReplicaLbOption.MAX_OPEN_TICKETS_PER_NODE, 2))));
        p.test.rank[0] = 10;
        for (int i = 0; i < 5; i++) {
            assertEquals(0, p.nodeId(p.newQueryPlan(read("k"), cluster.session).peek()));
        }
        Counters c = p.counters();
        assertEquals(3, c.expired());
        assertEquals(2, c.open());
        assertEquals(2, p.test.inFlight);
    }

    @Test
    void a_plan_the_policy_gets_wrong_is_served_in_candidate_order_and_counted() {
        TestLbPolicy p = policy(FakeCluster.oneDc(6, 3, 3, PLAIN));
        p.test.broken = true;
        List<Node> plan = drain(p.newQueryPlan(read("k"), cluster.session));
        assertEquals(6, plan.size());
        assertEquals(p.test.lastCandidates[0], p.nodeId(plan.get(0)));
        assertEquals(1, p.counters().overridden());
        assertEquals(1, p.openTickets(plan.get(0)));
    }

    @Test
    void the_pollers_own_reads_are_not_attempts() {
        TestLbPolicy p = policy(FakeCluster.oneDc(3, 1, 3, PLAIN));
        Node n = cluster.nodes.get(0);
        Statement<?> poll = SimpleStatement.newInstance(HitRatePoller.QUERY).setNode(n);
        p.onNodeSuccess(poll, 1_000, null, n, "t");
        p.onNodeError(poll, new InvalidQueryException(n, "no table"), 1_000, null, n, "t");
        assertEquals(0, p.counters().untracked());
        // The same text from the user, not pinned by the poller, is an attempt like any other.
        p.onNodeSuccess(SimpleStatement.newInstance("SELECT hit_rate FROM replica_lb_hwlb.node"), 1_000, null, n, "t");
        assertEquals(1, p.counters().untracked());
    }

    @Test
    void hit_rates_reach_the_policy_in_range_only() {
        TestLbPolicy p = policy(FakeCluster.oneDc(3, 1, 3, PLAIN));
        Node n = node(p, 1);
        assertTrue(p.recordHitRate(n, 0.25));
        assertFalse(p.recordHitRate(n, 1.5));
        assertFalse(p.recordHitRate(n, Double.NaN));
        assertEquals(1, p.test.log.stream().filter(l -> l.startsWith("rate ")).count());
        assertTrue(p.test.log.contains("rate 1 0.25"));
    }

    @Test
    void the_tracker_is_the_policy_and_counts_stay_balanced_under_threads() throws Exception {
        // A window as long as the TTL: a thread descheduled between its plan and its end (a
        // loaded test machine) still finds its ticket.
        TestLbPolicy p = policy(FakeCluster.oneDc(6, 3, 3, options(b -> b
                .withDuration(ReplicaLbOption.TICKET_TTL, Duration.ofSeconds(60))
                .withDuration(ReplicaLbOption.TICKET_MATCH_WINDOW, Duration.ofSeconds(60)))));
        assertEquals(p, p.getRequestTracker().orElseThrow());
        int threads = 4;
        int each = 20_000;
        CountDownLatch go = new CountDownLatch(1);
        List<Thread> ts = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int seed = t;
            Thread th = new Thread(() -> {
                try {
                    go.await();
                } catch (InterruptedException e) {
                    return;
                }
                for (int i = 0; i < each; i++) {
                    Statement<?> r = read("k" + (seed * each + i) % 1000);
                    Node first = p.newQueryPlan(r, cluster.session).poll();
                    p.onNodeSuccess(r, 0, null, first, "t");
                }
            });
            th.start();
            ts.add(th);
        }
        go.countDown();
        for (Thread th : ts) {
            th.join();
        }
        Counters c = p.counters();
        assertEquals((long) threads * each, c.picks());
        assertEquals(c.picks(), c.matched());
        assertEquals(0, c.untracked());
        assertEquals(0, c.open());
        assertEquals(0, c.expired());
        assertEquals(0, p.test.inFlight);
        assertNotNull(p.policyName());
    }

    @Test
    void the_driver_builds_it_and_its_request_tracker_reaches_it() {
        FakeCluster c = FakeCluster.oneDc(3, 1, 3, b -> b
                .withString(DefaultDriverOption.LOAD_BALANCING_POLICY_CLASS, ConfiguredTestLbPolicy.class.getName())
                .withString(ReplicaLbOption.POLICY, "test")
                .withInt(ReplicaLbOption.SHARDS, 1));
        this.cluster = c;
        ConfiguredTestLbPolicy p = (ConfiguredTestLbPolicy) c.context().getLoadBalancingPolicy("default");
        c.init(p);
        assertEquals(p, ReplicaLbLoadBalancingPolicy.of(c.session, "default").orElseThrow());
        Statement<?> r = read("k");
        Node first = p.newQueryPlan(r, c.session).poll();
        // The session's tracker, as the driver's request handler calls it.
        c.context().getRequestTracker().onNodeSuccess(r, 1_000, c.context().getConfig().getDefaultProfile(), first, "t");
        Counters counters = p.counters();
        assertEquals(1, counters.matched());
        assertEquals(0, counters.open());
        assertEquals(0, p.test.inFlight);
    }

    @Test
    void the_driver_builds_it_from_its_configuration() {
        // Through the driver's own reflection, as application.conf names it: the registry has
        // no policy called 'nonesuch', and the error names the option and the value.
        FakeCluster c = FakeCluster.oneDc(3, 1, 3, b -> b
                .withString(DefaultDriverOption.LOAD_BALANCING_POLICY_CLASS, ReplicaLbLoadBalancingPolicy.class.getName())
                .withString(ReplicaLbOption.POLICY, "nonesuch"));
        this.cluster = c;
        IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> new ReplicaLbLoadBalancingPolicy(c.context(), "default"));
        assertTrue(e.getMessage().startsWith("datastax-java-driver.advanced.replica-lb.policy: "), e.getMessage());
        assertTrue(e.getMessage().contains("'nonesuch'"), e.getMessage());
        assertFalse(e.getMessage().contains("\n"));
    }
}
