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
 * and driven through the adapter: plans are orders of the key's local replicas, and every
 * count balances once each plan's attempt ended. Skipped while the registry is empty.
 */
class RegisteredPoliciesTest {
    @Test
    void every_registered_policy_plans_the_replicas_and_balances_its_counts() throws Exception {
        List<String> names = new ArrayList<>();
        ClientPolicies.names().forEach(names::add);
        assumeTrue(!names.isEmpty(), "no client policy registered in replica-lb-core yet");
        for (String name : names) {
            try (FakeCluster c = new FakeCluster(2, 6, 3, 3, b -> b
                    .withString(DefaultDriverOption.LOAD_BALANCING_POLICY_CLASS, ReplicaLbLoadBalancingPolicy.class.getName())
                    .withString(ReplicaLbOption.POLICY, name)
                    .withString(ReplicaLbOption.HIT_RATE_POLL_INTERVAL, "0")
                    // A thread descheduled between its plan and its end (a loaded test machine)
                    // still finds its ticket.
                    .withString(ReplicaLbOption.TICKET_TTL, "60 seconds")
                    .withString(ReplicaLbOption.TICKET_MATCH_WINDOW, "60 seconds"))) {
                ReplicaLbLoadBalancingPolicy p = (ReplicaLbLoadBalancingPolicy) c.context().getLoadBalancingPolicy("default");
                c.init(p);
                assertEquals(name, p.policyName());
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
                                assertTrue(local.contains(first), name + ": " + first + " is not a local replica of " + key);
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
                assertTrue(failures.isEmpty(), name + ": " + failures);
                Counters counters = p.counters();
                assertEquals(4_000, counters.picks(), name);
                assertEquals(0, counters.open(), name);
                assertEquals(0, counters.overridden(), name + " answered orders of the candidates");
                assertEquals(counters.picks(), counters.matched() + counters.untracked() - counters.expired(), name);
            }
        }
    }
}
