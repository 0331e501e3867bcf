package io.replicalb.driver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.cql.Statement;
import com.datastax.oss.driver.api.core.metadata.Node;
import com.datastax.oss.driver.api.core.servererrors.OverloadedException;
import io.replicalb.core.client.ClientPolicies;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Queue;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Every client policy registered in replica-lb-core, built by the driver from its configuration
 * and driven through the adapter, with one shard (one shared view) and with two: plans are
 * orders of the key's local replicas, and every count balances once each plan's attempt ended.
 * Skipped while the registry is empty.
 */
class RegisteredPoliciesTest {
    @Test
    void every_registered_policy_plans_the_replicas_and_balances_its_counts() throws Exception {
        List<String> names = new ArrayList<>();
        ClientPolicies.names().forEach(names::add);
        assumeTrue(!names.isEmpty(), "no client policy registered in replica-lb-core yet");
        for (String name : names) {
            run(name, 1);
            run(name, 2);
        }
    }

    /**
     * {@code name} with {@code shards} shards, two threads. With one shard every end finds its
     * own plan's ticket (a window as long as the TTL: a thread descheduled between its plan and
     * its end, on a loaded test machine, still finds it). With more, an end may close another
     * plan's ticket on the same node in a shard it looks at first, leaving its own open until it
     * expires: a short TTL then, and the expiry is awaited.
     */
    private static void run(String name, int shards) throws Exception {
        String ttl = shards == 1 ? "60 seconds" : "300 milliseconds";
        String label = name + " (" + shards + " shards)";
        try (FakeCluster c = new FakeCluster(2, 6, 3, 3, b -> b
                .withString(DefaultDriverOption.LOAD_BALANCING_POLICY_CLASS, ReplicaLbLoadBalancingPolicy.class.getName())
                .withString(ReplicaLbOption.POLICY, name)
                .withInt(ReplicaLbOption.SHARDS, shards)
                .withString(ReplicaLbOption.HIT_RATE_POLL_INTERVAL, "0")
                .withString(ReplicaLbOption.TICKET_TTL, ttl)
                .withString(ReplicaLbOption.TICKET_MATCH_WINDOW, ttl))) {
            ReplicaLbLoadBalancingPolicy p = (ReplicaLbLoadBalancingPolicy) c.context().getLoadBalancingPolicy("default");
            c.init(p);
            assertEquals(name, p.policyName());
            assertEquals(shards, p.shards());
            List<Thread> threads = new ArrayList<>();
            List<Throwable> failures = new ArrayList<>();
            for (int t = 0; t < 2; t++) {
                int seed = t;
                Thread th = new Thread(() -> {
                    try {
                        for (int i = 0; i < 2_000; i++) {
                            String key = "k" + (seed * 7919 + i) % 500;
                            Statement<?> r = FakeCluster.read(key);
                            Queue<Node> plan = p.newQueryPlan(r, c.session);
                            // The driver starts the attempt (and its latency) after the plan.
                            long sent = System.nanoTime();
                            Set<Node> local = new HashSet<>();
                            for (Node n : c.replicas(key)) {
                                if (n.getDatacenter().equals("dc1")) {
                                    local.add(n);
                                }
                            }
                            Node first = plan.poll();
                            assertTrue(local.contains(first), label + ": " + first + " is not a local replica of " + key);
                            long latency = System.nanoTime() - sent;
                            if (i % 10 == 0) {
                                p.onNodeError(r, new OverloadedException(first), latency, null, first, "t");
                            } else {
                                p.onNodeSuccess(r, latency, null, first, "t");
                            }
                        }
                    } catch (Throwable e) {
                        synchronized (failures) {
                            failures.add(e);
                        }
                    }
                });
                th.start();
                threads.add(th);
            }
            for (Thread th : threads) {
                th.join();
            }
            assertTrue(failures.isEmpty(), label + ": " + failures);
            if (shards > 1) {
                Thread.sleep(400);
                p.expireNow();
            }
            Counters counters = p.counters();
            assertEquals(4_000, counters.picks(), label);
            assertEquals(0, counters.open(), label);
            assertEquals(0, counters.overridden(), label + " answered orders of the candidates");
            assertEquals(counters.picks(), counters.matched() + counters.untracked(), label + ": every end counted once");
            assertEquals(counters.picks(), counters.matched() + counters.expired(), label + ": every pick matched or expired");
        }
    }
}
