package io.replicalb.core.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import io.replicalb.core.Rng;
import io.replicalb.core.TraceFile;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The shared decision traces ({@code testdata/client-policy-traces.json}, written by the Rust
 * test {@code crates/policy/tests/client_policy_traces.rs}): every case's events replayed through
 * the Java policy of the same name and parameters, with a generator of the same seed; every
 * plan must give exactly the order the Rust policy gave.
 */
class ClientTracesTest {
    private static final Set<String> POLICIES =
            Set.of("unified", "c3", "hwlb-client", "weighted-least-loaded", "peak-ewma", "p2c");

    @Test
    void every_plan_gives_the_rust_order() throws Exception {
        JsonNode cases = TraceFile.read().get("cases");
        assertTrue(cases != null && cases.size() > 0, "the traces hold cases");
        Set<String> policies = new HashSet<>();
        int plans = 0;
        for (JsonNode cs : cases) {
            String name = cs.get("name").asText();
            String policyName = cs.get("policy").asText();
            Map<String, String> params = new HashMap<>();
            for (Map.Entry<String, JsonNode> e : cs.get("params").properties()) {
                params.put(e.getKey(), e.getValue().asText());
            }
            ClientPolicy policy = ClientPolicies.create(policyName, params);
            policies.add(policyName);
            Rng rng = Rng.seedFromU64(Long.parseUnsignedLong(cs.get("seed").asText()));
            int[] out = new int[ClientPolicy.MAX_CANDIDATES];
            int step = 0;
            for (JsonNode e : cs.get("events")) {
                step++;
                long nowNs = e.get("t_us").asLong() * 1000;
                String event = e.get("event").asText();
                switch (event) {
                    case "send" -> policy.observe(Event.SENT, e.get("node").asInt(), 0, Double.NaN, nowNs);
                    case "reply" -> policy.observe(
                            Event.REPLY,
                            e.get("node").asInt(),
                            e.get("latency_us").asLong() * 1000,
                            e.has("hit_rate") ? e.get("hit_rate").asDouble() : Double.NaN,
                            nowNs);
                    case "failure" -> policy.observe(
                            Event.of(failure(e.get("kind").asText())), e.get("node").asInt(), 0, Double.NaN, nowNs);
                    case "hit_rate" -> policy.observe(Event.HIT_RATE, e.get("node").asInt(), 0, e.get("hit_rate").asDouble(), nowNs);
                    case "up" -> policy.observe(Event.UP, e.get("node").asInt(), 0, Double.NaN, nowNs);
                    case "down" -> policy.observe(Event.DOWN, e.get("node").asInt(), 0, Double.NaN, nowNs);
                    case "topology" -> policy.onTopology(ints(e.get("zones")), e.get("local_zone").asInt());
                    case "plan" -> {
                        int[] candidates = ints(e.get("candidates"));
                        int n = policy.plan(candidates, candidates.length, nowNs, rng, out);
                        int[] expect = ints(e.get("expect"));
                        assertEquals(
                                Arrays.toString(expect),
                                Arrays.toString(Arrays.copyOf(out, n)),
                                name + ", event " + step + " at " + e.get("t_us").asLong() + " us");
                        plans++;
                    }
                    default -> fail(name + ": unknown event " + event);
                }
            }
        }
        assertEquals(POLICIES, policies, "every client policy is traced");
        System.out.println("client traces: " + plans + " plans in " + cases.size() + " cases agree with Rust");
    }

    private static Failure failure(String kind) {
        return switch (kind) {
            case "error" -> Failure.ERROR;
            case "timeout" -> Failure.TIMEOUT;
            case "connection_lost" -> Failure.CONNECTION_LOST;
            default -> throw new IllegalArgumentException("failure kind " + kind);
        };
    }

    private static int[] ints(JsonNode list) {
        int[] xs = new int[list.size()];
        for (int i = 0; i < xs.length; i++) {
            xs[i] = list.get(i).asInt();
        }
        return xs;
    }
}
