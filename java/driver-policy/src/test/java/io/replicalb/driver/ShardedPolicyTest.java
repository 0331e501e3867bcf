package io.replicalb.driver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.config.ProgrammaticDriverConfigLoaderBuilder;
import com.datastax.oss.driver.api.core.context.DriverContext;
import com.datastax.oss.driver.api.core.cql.Statement;
import com.datastax.oss.driver.api.core.metadata.Node;
import com.datastax.oss.driver.api.core.metadata.NodeState;
import com.datastax.oss.driver.internal.core.metadata.DefaultNode;
import com.datastax.oss.driver.internal.core.metadata.TestNodes;
import io.replicalb.core.Rng;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The shards of {@link ReplicaLbLoadBalancingPolicy}: each its own {@link TestPolicy} (the
 * factory is called once per shard), with its own seed; plans and ends placed on chosen shards
 * by numbering the calling thread ({@link ReplicaLbLoadBalancingPolicy#pinThread}), so every
 * test but the last is deterministic.
 */
class ShardedPolicyTest {
    private static final long SEED = 7;

    private FakeCluster cluster;

    @AfterEach
    void close() {
        if (cluster != null) {
            cluster.close();
        }
    }

    /** The adapter over a new {@link TestPolicy} per shard, kept in shard order. */
    static final class Sharded extends ReplicaLbLoadBalancingPolicy {
        final List<TestPolicy> made;

        Sharded(DriverContext context) {
            this(context, new ArrayList<>());
        }

        private Sharded(DriverContext context, List<TestPolicy> made) {
            super(context, "default", s -> {
                TestPolicy t = new TestPolicy();
                made.add(t);
                return t;
            });
            this.made = made;
        }

        TestPolicy shard(int i) {
            return made.get(i);
        }
    }

    private Sharded policy(int shards, Consumer<ProgrammaticDriverConfigLoaderBuilder> more) {
        cluster = FakeCluster.oneDc(6, 3, 3, b -> {
            b.withString(ReplicaLbOption.POLICY, "test")
                    .withInt(ReplicaLbOption.SHARDS, shards)
                    .withLong(ReplicaLbOption.SEED, SEED)
                    .withString(ReplicaLbOption.HIT_RATE_POLL_INTERVAL, "0");
            more.accept(b);
        });
        return cluster.init(new Sharded(cluster.context()));
    }

    private Sharded policy(int shards) {
        return policy(shards, b -> {});
    }

    /** Runs {@code body} on a new thread numbered {@code number}, and waits for it. */
    private static void onThread(int number, Runnable body) throws InterruptedException {
        Throwable[] failed = new Throwable[1];
        Thread t = new Thread(() -> {
            try {
                ReplicaLbLoadBalancingPolicy.pinThread(number);
                body.run();
            } catch (Throwable e) {
                failed[0] = e;
            }
        });
        t.start();
        t.join(TimeUnit.SECONDS.toMillis(30));
        assertFalse(t.isAlive(), "the thread did not finish");
        if (failed[0] != null) {
            throw new AssertionError(failed[0]);
        }
    }

    /** The callbacks of requests in {@code log}: sends, replies and failures. */
    private static List<String> ends(TestPolicy t) {
        return t.log.stream().filter(l -> l.startsWith("send ") || l.startsWith("reply ") || l.startsWith("failure ")).toList();
    }

    @Test
    void the_factory_is_called_once_per_shard_and_each_shard_has_its_own_seed() throws Exception {
        int shards = 4;
        Sharded p = policy(shards);
        assertEquals(shards, p.shards());
        assertEquals(shards, p.made.size(), "one policy per shard");
        assertEquals(shards, new HashSet<>(p.made).size(), "distinct instances");
        Set<Long> firsts = new HashSet<>();
        for (int i = 0; i < shards; i++) {
            int shard = i;
            onThread(shard, () -> {
                assertEquals(shard, p.homeShard());
                p.newQueryPlan(FakeCluster.read("k"), cluster.session);
            });
            long expected = Rng.seedFromU64(SEED + i * 0x9e3779b97f4a7c15L).nextLong();
            assertEquals(List.of(expected), p.shard(i).draws, "shard " + i + " planned once, from its own stream");
            firsts.add(expected);
        }
        assertEquals(shards, firsts.size(), "distinct streams");
        // Shard 0 has the seed itself: one shard is the policy as it was.
        assertEquals(SEED, ReplicaLbLoadBalancingPolicy.seedOf(SEED, 0));
        assertEquals(SEED + 0x9e3779b97f4a7c15L, ReplicaLbLoadBalancingPolicy.seedOf(SEED, 1));
        assertEquals(shards, p.counters().picks());
        for (int i = 0; i < shards; i++) {
            assertEquals(1, p.shardCounters(i).picks());
        }
    }

    @Test
    void one_shard_is_one_policy_with_the_seed_itself() throws Exception {
        Sharded p = policy(1);
        assertEquals(1, p.made.size());
        for (int thread : new int[] {0, 1, 5}) {
            onThread(thread, () -> p.newQueryPlan(FakeCluster.read("k"), cluster.session));
        }
        Rng rng = Rng.seedFromU64(SEED);
        assertEquals(List.of(rng.nextLong(), rng.nextLong(), rng.nextLong()), p.shard(0).draws, "every thread plans in the one shard");
    }

    @Test
    void a_factory_that_returns_one_instance_for_every_shard_is_refused() {
        cluster = FakeCluster.oneDc(3, 1, 3, b -> b.withString(ReplicaLbOption.POLICY, "test").withInt(ReplicaLbOption.SHARDS, 2));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new TestLbPolicy(cluster.context(), new TestPolicy()));
        assertTrue(e.getMessage().startsWith("datastax-java-driver.advanced.replica-lb.shards 2: "), e.getMessage());
        assertTrue(e.getMessage().contains("shards 0 and 1"), e.getMessage());
        assertFalse(e.getMessage().contains("\n"));
    }

    @Test
    void an_end_on_a_thread_whose_home_shard_does_not_hold_the_pick_reaches_the_right_shard() throws Exception {
        for (int shards : new int[] {2, 3}) {
            Sharded p = policy(shards);
            Statement<?> r = FakeCluster.read("x");
            for (int planner = 0; planner < shards; planner++) {
                for (int ender = 0; ender < shards; ender++) {
                    Node[] first = new Node[1];
                    onThread(planner, () -> first[0] = p.newQueryPlan(r, cluster.session).poll());
                    int id = p.nodeId(first[0]);
                    assertEquals(1, p.openTickets(id, planner));
                    onThread(ender, () -> p.onNodeSuccess(r, 1_000, null, first[0], "t"));
                    assertEquals(0, p.openTickets(first[0]), "shards " + shards + ", planned in " + planner + ", ended in " + ender);
                    assertEquals(List.of("send " + id, "reply " + id), ends(p.shard(planner)).subList(ends(p.shard(planner)).size() - 2,
                            ends(p.shard(planner)).size()));
                }
            }
            for (int i = 0; i < shards; i++) {
                Counters c = p.shardCounters(i);
                assertEquals(shards, c.picks(), "shard " + i);
                assertEquals(shards, c.matched(), "shard " + i + ": every end of its picks, from every thread");
                assertEquals(0, c.untracked());
                assertEquals(0, p.shard(i).inFlight);
            }
            Counters total = p.counters();
            assertEquals((long) shards * shards, total.picks());
            assertEquals(total.picks(), total.matched());
            assertEquals(0, total.open());
            cluster.close();
        }
    }

    @Test
    void an_end_no_shard_holds_is_untracked_in_the_ending_threads_home_shard() throws Exception {
        Sharded p = policy(3);
        Node[] first = new Node[1];
        onThread(0, () -> first[0] = p.newQueryPlan(FakeCluster.read("y"), cluster.session).poll());
        // A node without a ticket anywhere.
        Node n = cluster.nodes.stream().filter(x -> x != first[0]).findFirst().orElseThrow();
        int id = p.nodeId(n);
        onThread(2, () -> p.onNodeSuccess(FakeCluster.read("z"), 1_000, null, n, "t"));
        assertEquals(1, p.shardCounters(2).untracked());
        assertEquals(List.of("send " + id, "reply " + id), ends(p.shard(2)));
        assertEquals(0, p.shard(2).inFlight);
        assertEquals(0, p.shardCounters(1).untracked());
        assertEquals(List.of(), ends(p.shard(1)));
        assertEquals(1, p.counters().untracked());
        assertEquals(1, p.counters().open(), "the plan's own ticket is still open");
    }

    @Test
    void a_busy_home_shard_sends_a_plan_to_a_free_one_and_an_end_for_a_busy_shard_is_queued_there() throws Exception {
        Sharded p = policy(2);
        Statement<?> r = FakeCluster.read("q");
        // A pick in shard 0, whose end comes later.
        Node[] first = new Node[1];
        onThread(0, () -> first[0] = p.newQueryPlan(r, cluster.session).poll());
        int id = p.nodeId(first[0]);
        // Shard 0 busy: a thread of shard 0 holds it, inside its policy's plan.
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        p.shard(0).beforePlan = () -> {
            p.shard(0).beforePlan = null;
            inside.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        };
        Thread holder = new Thread(() -> {
            ReplicaLbLoadBalancingPolicy.pinThread(0);
            p.newQueryPlan(FakeCluster.read("other"), cluster.session);
        });
        holder.start();
        assertTrue(inside.await(30, TimeUnit.SECONDS));
        try {
            // Another thread of shard 0 plans meanwhile: in shard 1, without waiting.
            onThread(2, () -> p.newQueryPlan(FakeCluster.read("k"), cluster.session));
            assertEquals(1, p.shard(1).draws.size(), "planned in the free shard");
            assertEquals(1, p.shard(0).draws.size(), "the holder's plan has not drawn yet");
            // The first pick's end, on a thread of shard 1: not there, shard 0 busy and the last
            // place it can be: queued there, without waiting.
            onThread(1, () -> p.onNodeSuccess(r, 1_000, null, first[0], "t"));
            assertTrue(holder.isAlive(), "shard 0 was busy all along");
            assertEquals(0, p.shardCounters(1).matched());
            assertEquals(0, p.shardCounters(1).untracked());
        } finally {
            release.countDown();
            holder.join(TimeUnit.SECONDS.toMillis(30));
        }
        assertFalse(holder.isAlive());
        // Applied by shard 0's next holder.
        Counters c0 = p.shardCounters(0);
        assertEquals(2, c0.picks());
        assertEquals(1, c0.matched());
        assertEquals(0, c0.untracked());
        assertEquals(1, c0.open(), "the holder's plan");
        assertTrue(ends(p.shard(0)).contains("reply " + id), ends(p.shard(0)).toString());
        assertEquals(1, p.shard(0).inFlight);
        assertEquals(1, p.shard(1).inFlight);
        assertFalse(ends(p.shard(1)).stream().anyMatch(l -> l.startsWith("reply")));
    }

    @Test
    void node_events_and_hit_rates_reach_every_shard() throws Exception {
        int shards = 3;
        Sharded p = policy(shards, b -> b.withString(ReplicaLbOption.LOCAL_RACK, "r2"));
        for (TestPolicy t : p.made) {
            assertEquals(6, t.log.stream().filter(l -> l.startsWith("up ")).count(), "every node starts up in every shard");
            assertTrue(t.log.contains("topology"));
            assertEquals(0, t.localZone);
            assertEquals(6, t.zones.length);
        }
        DefaultNode down = cluster.nodes.get(1);
        int id = p.nodeId(down);
        TestNodes.setState(down, NodeState.DOWN);
        p.onDown(down);
        for (TestPolicy t : p.made) {
            assertEquals("down " + id, t.log.get(t.log.size() - 1));
        }
        TestNodes.setState(down, NodeState.UP);
        p.onUp(down);
        for (TestPolicy t : p.made) {
            assertEquals("up " + id, t.log.get(t.log.size() - 1));
        }
        assertTrue(p.recordHitRate(down, 0.5));
        for (TestPolicy t : p.made) {
            assertEquals("rate " + id + " 0.5", t.log.get(t.log.size() - 1));
        }
        // A new node: every shard hears the topology, then the node up.
        DefaultNode added = TestNodes.node(cluster.context(), new InetSocketAddress("127.0.1.7", 9042), "dc1", "r4", 42L, new UUID(1, 7));
        p.onAdd(added);
        int addedId = p.nodeId(added);
        assertEquals(6, addedId);
        for (TestPolicy t : p.made) {
            assertEquals("topology", t.log.get(t.log.size() - 1));
            assertEquals(7, t.zones.length);
            assertEquals(3, t.zones[addedId], "a fourth rack");
        }
        p.onUp(added);
        for (TestPolicy t : p.made) {
            assertEquals("up " + addedId, t.log.get(t.log.size() - 1));
        }
        // A node leaves: down, and the topology, everywhere.
        p.onRemove(added);
        for (TestPolicy t : p.made) {
            assertEquals(List.of("down " + addedId, "topology"), t.log.subList(t.log.size() - 2, t.log.size()));
        }
        assertEquals(-1, p.nodeId(added));
    }

    @Test
    void expiry_reaches_every_shard() throws Exception {
        int shards = 2;
        Sharded p = policy(shards, b -> b
                .withDuration(ReplicaLbOption.TICKET_TTL, Duration.ofMillis(50))
                .withDuration(ReplicaLbOption.TICKET_MATCH_WINDOW, Duration.ofMillis(10)));
        for (int i = 0; i < shards; i++) {
            onThread(i, () -> p.newQueryPlan(FakeCluster.read("lost"), cluster.session));
        }
        assertEquals(shards, p.counters().open());
        Thread.sleep(100);
        p.expireNow();
        for (int i = 0; i < shards; i++) {
            Counters c = p.shardCounters(i);
            assertEquals(1, c.expired(), "shard " + i);
            assertEquals(0, c.open());
            assertEquals(0, p.shard(i).inFlight);
        }
        assertEquals(shards, p.counters().expired());
    }

    @Test
    void counts_balance_in_every_shard_under_threads() throws Exception {
        // More threads than shards: plans move to a free shard, ends look for theirs. An end may
        // close another plan's ticket on the same node (the match is by node and time, as with
        // one shard); whatever is left open expires, so at quiescence every count is zero.
        Duration ttl = Duration.ofMillis(300);
        Sharded p = policy(2, b -> b.withDuration(ReplicaLbOption.TICKET_TTL, ttl).withDuration(ReplicaLbOption.TICKET_MATCH_WINDOW, ttl));
        assertNotSame(p.shard(0), p.shard(1));
        int threads = 4;
        int each = 10_000;
        CountDownLatch go = new CountDownLatch(1);
        List<Thread> ts = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int number = t;
            Thread th = new Thread(() -> {
                ReplicaLbLoadBalancingPolicy.pinThread(number);
                try {
                    go.await();
                } catch (InterruptedException e) {
                    return;
                }
                for (int i = 0; i < each; i++) {
                    Statement<?> r = FakeCluster.read("k" + (number * each + i) % 1000);
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
        Thread.sleep(ttl.toMillis() + 50);
        p.expireNow();
        Counters c = p.counters();
        assertEquals((long) threads * each, c.picks());
        assertEquals(c.picks(), c.matched() + c.untracked(), "every end counted once");
        assertEquals(c.picks(), c.matched() + c.expired(), "every pick matched or expired");
        assertEquals(0, c.open());
        long picks = 0;
        for (int i = 0; i < 2; i++) {
            Counters s = p.shardCounters(i);
            picks += s.picks();
            assertEquals(0, s.open());
            assertEquals(0, p.shard(i).inFlight, "shard " + i + ": in-flight back to zero");
        }
        assertEquals(c.picks(), picks);
    }
}
