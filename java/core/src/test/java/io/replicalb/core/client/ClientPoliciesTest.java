package io.replicalb.core.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.replicalb.core.Rng;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The registry, the parameters' checks and the allocation-free request path. */
class ClientPoliciesTest {
    private static final List<String> NAMES = List.of("c3", "hwlb-client", "p2c", "peak-ewma", "unified", "weighted-least-loaded");

    private static String refused(String policy, Map<String, String> params) {
        String message = assertThrows(IllegalArgumentException.class, () -> ClientPolicies.create(policy, params)).getMessage();
        assertFalse(message.contains("\n"), "one line: " + message);
        return message;
    }

    @Test
    void the_six_client_policies_are_registered_under_the_rust_names() {
        List<String> names = new ArrayList<>();
        ClientPolicies.names().forEach(names::add);
        assertEquals(NAMES, names);
        for (String name : NAMES) {
            assertTrue(ClientPolicies.create(name, Map.of()) != null, name);
            assertTrue(ClientPolicies.create(name, null) != null, name);
        }
        String e = refused("hwlb", Map.of());
        assertTrue(e.contains("'hwlb'") && e.contains("hwlb-client, p2c"), e);
    }

    @Test
    void bad_parameters_are_refused_with_what_is_allowed() {
        String e = refused("p2c", Map.of("choice", "2"));
        assertTrue(e.contains("'choice'") && e.contains("its parameters: choices"), e);
        e = refused("p2c", Map.of("choices", "0"));
        assertTrue(e.contains("'choices' = '0'") && e.contains("an integer in [1, 64]"), e);
        e = refused("p2c", Map.of("choices", "2.5"));
        assertTrue(e.contains("'2.5'") && e.contains("an integer"), e);
        e = refused("peak-ewma", Map.of("tau_ms", "soon"));
        assertTrue(e.contains("'tau_ms' = 'soon'") && e.contains("a number in [0.001, 86400000]"), e);
        e = refused("peak-ewma", Map.of("tau_ms", "NaN"));
        assertTrue(e.contains("a number"), e);
        e = refused("hwlb-client", Map.of("extra_replica", "yes"));
        assertTrue(e.contains("'extra_replica' = 'yes'") && e.contains("true or false"), e);
        e = refused("c3", Map.of("rate_control", "true"));
        assertTrue(e.contains("'rate_control'") && e.contains("allowed: false"), e);
        e = refused("unified", Map.of("rate_control", "true"));
        assertTrue(e.contains("'rate_control'") && e.contains("allowed: false"), e);
        e = refused("hwlb-client", Map.of("warmup_reads", "0.5"));
        assertTrue(e.contains("'warmup_reads'") && e.contains("allowed: 0"), e);
        e = refused("weighted-least-loaded", Map.of("ramp_min_s", "50"));
        assertTrue(e.contains("'ramp_max_s'") && e.contains("at least ramp_min_s"), e);
        // Good values in the Rust spelling are taken (an integer for a real number too).
        ClientPolicies.create("unified", Map.of("untimed_equal_within", "1", "heat", "false", "untimed_outlier_count", "0"));
        ClientPolicies.create("c3", Map.of("rate_control", "false", "concurrency_weight", "4.5"));
    }

    @Test
    void a_plan_is_a_permutation_and_too_many_candidates_are_refused() {
        int[] candidates = {5, 3, 9, 0, 7};
        int[] out = new int[ClientPolicy.MAX_CANDIDATES];
        Rng rng = Rng.seedFromU64(3);
        for (String name : NAMES) {
            ClientPolicy p = ClientPolicies.create(name, Map.of());
            assertEquals(0, p.plan(candidates, 0, 0, rng, out), name);
            for (int i = 0; i < 50; i++) {
                assertEquals(5, p.plan(candidates, 5, i * 1_000_000L, rng, out), name);
                int[] sorted = java.util.Arrays.copyOf(out, 5);
                java.util.Arrays.sort(sorted);
                assertEquals("[0, 3, 5, 7, 9]", java.util.Arrays.toString(sorted), name);
                p.observe(Event.SENT, out[0], 0, Double.NaN, i * 1_000_000L);
                p.observe(Event.REPLY, out[0], 500_000, 0.5 + out[0] / 20.0, i * 1_000_000L + 500_000);
            }
            int[] many = new int[ClientPolicy.MAX_CANDIDATES + 1];
            int[] big = new int[many.length];
            assertThrows(IllegalArgumentException.class, () -> p.plan(many, many.length, 0, rng, big), name);
            assertThrows(IllegalArgumentException.class, () -> p.observe(Event.SENT, ClientPolicy.MAX_NODES, 0, Double.NaN, 0), name);
        }
    }

    @Test
    void the_request_path_allocates_nothing() {
        com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long self = Thread.currentThread().getId();
        int[] candidates = {0, 1, 2, 3, 4, 5};
        int[] out = new int[ClientPolicy.MAX_CANDIDATES];
        for (String name : NAMES) {
            ClientPolicy p = ClientPolicies.create(name, Map.of());
            Rng rng = Rng.seedFromU64(8);
            for (int n = 0; n < candidates.length; n++) {
                p.observe(Event.UP, n, 0, Double.NaN, 0);
                p.observe(Event.HIT_RATE, n, 0, 0.5 + 0.08 * n, 0);
            }
            long now = 0;
            for (int round = 0; round < 2; round++) {
                long before = mx.getThreadAllocatedBytes(self);
                for (int i = 0; i < 20_000; i++) {
                    now += 10_000;
                    p.plan(candidates, candidates.length, now, rng, out);
                    p.observe(Event.SENT, out[0], 0, Double.NaN, now);
                    if (i % 7 == 0) {
                        p.observe(Event.TIMEOUT, out[0], 0, Double.NaN, now + 5_000);
                    } else {
                        p.observe(Event.REPLY, out[0], 5_000, Double.NaN, now + 5_000);
                    }
                }
                long allocated = mx.getThreadAllocatedBytes(self) - before;
                // The first round warms up (class loading, the hwlb-client plan computed once).
                if (round == 1) {
                    assertTrue(allocated < 4_096, name + ": " + allocated + " bytes allocated in 20,000 requests");
                }
            }
        }
    }
}
