package io.replicalb.core.client;

import io.replicalb.core.Rng;
import java.util.Map;

/**
 * {@code c3}'s ranking (Suresh et al., NSDI 2015; the Rust {@code policy::c3} with
 * {@code rate_control = false}, as the Rust driver runs it): per node, EWMAs (weight
 * {@code ewma_new_weight} 0.9 on a new sample) of the queue it reports, its service time and
 * the response time above it; the score is {@code (R - 1/mu) + (1 + os x n + q)^b x 1/mu} with
 * {@code os} this client's requests in flight there, {@code n} = {@code concurrency_weight},
 * {@code b} = {@code queue_exponent}. A driver's replies carry no service time and no queue,
 * so, as the Rust code does for such replies, the response time stands in for {@code 1/mu}
 * and the queue counts as 0. A node never heard from scores 0 (tried first). The best node
 * goes first, the next best second, the others after them; ties go by a random rotation.
 *
 * <p>No rate control: a driver needs its query plan at once and cannot hold a request back,
 * so {@code rate_control} must stay false (true is refused, as by the Rust driver); the rate
 * parameters are accepted and checked, as in Rust, and have no effect without it.
 */
public final class C3 extends OrderingPolicy {
    /** The name it is registered under. */
    public static final String NAME = "c3";

    static final Params.Spec[] PARAMS = {
        Params.real("concurrency_weight", 1.0, 0.0, 1e6),
        Params.real("queue_exponent", 3.0, 0.0, 16.0),
        Params.real("ewma_new_weight", 0.9, 0.0, 1.0),
        Params.flag("rate_control", false),
        Params.real("rate_interval_ms", 20.0, 0.001, 3_600_000.0),
        Params.real("initial_rate", 10.0, 0.001, 1e9),
        Params.real("max_tokens", 10.0, 1.0, 1e9),
        Params.real("cubic_c_per_ms3", 4e-6, 1e-15, 1e6),
        Params.real("max_step", 10.0, 0.001, 1e9),
        Params.real("beta", 0.2, 0.001, 1.0),
        Params.real("hysteresis", 2.0, 0.0, 1e6),
        Params.real("min_rate", 0.01, 1e-9, 1e9),
        Params.real("receive_rate_weight", 0.1, 0.0, 1.0),
        Params.real("congestion_margin", 1.0, 0.0, 1e9),
    };

    /** C3's ranking parameters: {@code n}, {@code b} and the EWMAs' weight of a new sample. */
    record Ranking(double concurrencyWeight, double queueExponent, double ewmaNewWeight) {}

    private final Ranking ranking;
    private final boolean[] known = new boolean[MAX_NODES];
    private final double[] queue = new double[MAX_NODES];
    private final double[] serviceNs = new double[MAX_NODES];
    private final double[] waitNs = new double[MAX_NODES];
    private final int[] outstanding = new int[MAX_NODES];
    private final double[] scores = new double[Order.MAX_CANDIDATES];

    /** Built from the Rust parameters; {@code rate_control=true} is refused. */
    public C3(Map<String, String> params) {
        super();
        Params p = Params.resolve(NAME, PARAMS, params);
        Params.refuseRateControl(NAME, p, "rate_control");
        ranking = new Ranking(p.real("concurrency_weight"), p.real("queue_exponent"), p.real("ewma_new_weight"));
    }

    /** C3 scoring with {@code ranking} (how {@code unified} ranks nodes nothing is known of yet). */
    C3(Ranking ranking) {
        super();
        this.ranking = ranking;
    }

    @Override
    void order(int[] candidates, int count, long nowNs, Rng rng, int[] out) {
        Order.rotation(candidates, count, rng, out);
        for (int i = 0; i < count; i++) {
            scores[i] = score(out[i]);
        }
        Order.selectBest(out, scores, 0, count, 2);
    }

    /** The score of {@code node} (lower is better; 0 without feedback). */
    double score(int node) {
        if (!known[node]) {
            return 0.0;
        }
        double qHat = 1.0 + outstanding[node] * ranking.concurrencyWeight() + queue[node];
        double penalty = ranking.queueExponent() == 3.0 ? qHat * qHat * qHat : Math.pow(qHat, ranking.queueExponent());
        return waitNs[node] + penalty * serviceNs[node];
    }

    @Override
    public void observe(Event event, int node, long latencyNs, double hitRate, long nowNs) {
        switch (event) {
            case SENT -> {
                int i = Order.node(node);
                if (outstanding[i] < Integer.MAX_VALUE) {
                    outstanding[i]++;
                }
            }
            case REPLY -> replied(Order.node(node), latencyNs);
            case ERROR, TIMEOUT, CONNECTION_LOST -> {
                int i = Order.node(node);
                outstanding[i] = Math.max(0, outstanding[i] - 1);
            }
            default -> {}
        }
    }

    /** A reply from node {@code i}: one less outstanding, its averages updated. */
    private void replied(int i, long latencyNs) {
        outstanding[i] = Math.max(0, outstanding[i] - 1);
        // No service time in a driver's reply: the response time stands in for it, no queue.
        double responseNs = latencyNs;
        double service = responseNs;
        double q = 0.0;
        double wait = Math.max(responseNs - service, 0.0);
        if (!known[i]) {
            known[i] = true;
            queue[i] = q;
            serviceNs[i] = service;
            waitNs[i] = wait;
            return;
        }
        double w = ranking.ewmaNewWeight();
        queue[i] = w * q + (1.0 - w) * queue[i];
        serviceNs[i] = w * service + (1.0 - w) * serviceNs[i];
        waitNs[i] = w * wait + (1.0 - w) * waitNs[i];
    }
}
