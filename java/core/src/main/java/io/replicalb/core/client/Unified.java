package io.replicalb.core.client;

import io.replicalb.core.Rng;
import java.util.Map;

/**
 * {@code unified} at a client (the Rust {@code policy::unified} deciding without a local node):
 * once any candidate has answered, the ranking of nodes without a service time
 * ({@link Untimed}: response time above the floor, weighed by this client's requests in
 * flight, the wait for an answer a lower bound on a silent node's response time); before that,
 * C3's ranking with the same weights (every node scores 0 then: a random rotation).
 *
 * <p>It takes every Rust parameter with its published default. Those of the coordinator side
 * ({@code heat}, {@code warmup_reads}, the passing-over rule's) shape nothing at a client, as in
 * Rust; {@code rate_control} must stay false (a driver cannot hold a request back).
 */
public final class Unified extends OrderingPolicy {
    /** The name it is registered under. */
    public static final String NAME = "unified";

    static final Params.Spec[] PARAMS = {
        Params.real("concurrency_weight", 1000.0, 0.0, 1e6),
        Params.real("untimed_concurrency_weight", 1.0, 0.0, 1e6),
        Params.real("untimed_queue_exponent", 1.0, 0.0, 16.0),
        Params.real("untimed_ewma_weight", 0.02, 0.0, 1.0),
        Params.real("untimed_deviation_weight", 2.0, 0.0, 1e6),
        Params.real("untimed_floor_drift", 0.01, 0.0, 1.0),
        Params.real("untimed_equal_within", 0.6, 0.0, 1e6),
        Params.real("untimed_outlier_factor", 3.0, 1.0, 1e6),
        Params.whole("untimed_outlier_count", 3, 0, 1_000_000),
        Params.flag("rate_control", false),
        Params.flag("heat", true),
        Params.real("warmup_reads", 2.0, 0.0, 10.0),
        Params.real("warmup_ramp_s", 0.0, 0.0, 3_600.0),
        Params.whole("in_flight_threshold", 10, 1, 1_000_000),
        Params.whole("min_responses", 2, 1, 8),
        Params.real("response_window_ms", 200.0, 0.001, 3_600_000.0),
        Params.real("latency_ewma_weight", 0.05, 1e-6, 1.0),
        Params.real("slow_factor", 3.0, 1.0, 1e6),
        Params.real("slow_margin_ms", 5.0, 0.0, 3_600_000.0),
        Params.real("latency_memory_ms", 2000.0, 0.001, 3_600_000.0),
        Params.real("stall_ms", 1000.0, 0.001, 3_600_000.0),
        Params.real("expiry_memory_ms", 2000.0, 0.0, 3_600_000.0),
        Params.real("overdue_factor", 1.0, 0.0, 1e6),
        Params.whole("heat_weight", 1, 0, 8),
        Params.real("stale_after_ms", 30_000.0, 0.001, 86_400_000.0),
        Params.real("cold_hit_rate_gap", 0.1, 0.0, 1.0),
    };

    /** C3's weight of a new sample, which {@code unified} does not change. */
    private static final double C3_EWMA_NEW_WEIGHT = 0.9;

    private final Untimed untimed;
    private final C3 c3;

    /** Built from the Rust parameters; {@code rate_control=true} is refused. */
    public Unified(Map<String, String> params) {
        super();
        Params p = Params.resolve(NAME, PARAMS, params);
        Params.refuseRateControl(NAME, p, "rate_control");
        double n = p.real("untimed_concurrency_weight");
        double b = p.real("untimed_queue_exponent");
        c3 = new C3(new C3.Ranking(n, b, C3_EWMA_NEW_WEIGHT));
        untimed = new Untimed(new Untimed.Ranking(
                n,
                b,
                p.real("untimed_ewma_weight"),
                p.real("untimed_deviation_weight"),
                p.real("untimed_floor_drift"),
                p.real("untimed_equal_within"),
                p.real("untimed_outlier_factor"),
                p.whole("untimed_outlier_count")));
    }

    @Override
    void order(int[] candidates, int count, long nowNs, Rng rng, int[] out) {
        if (untimed.applies(candidates, count)) {
            untimed.plan(candidates, count, nowNs, rng, out);
            return;
        }
        c3.order(candidates, count, nowNs, rng, out);
    }

    @Override
    public void observe(Event event, int node, long latencyNs, double hitRate, long nowNs) {
        switch (event) {
            case SENT -> untimed.sent(Order.node(node), nowNs);
            case REPLY -> untimed.replied(Order.node(node), latencyNs, nowNs);
            // An error is an answer (the Java driver's rule); a time-out or a lost connection is not.
            case ERROR, TIMEOUT, CONNECTION_LOST -> untimed.failed(Order.node(node), event == Event.ERROR, nowNs);
            default -> {
                return;
            }
        }
        c3.observe(event, node, latencyNs, hitRate, nowNs);
    }
}
