package io.replicalb.core.client;

import io.replicalb.core.Rng;
import java.util.Map;

/**
 * {@code p2c}: power of d choices on requests in flight (the Rust
 * {@code policy::baselines::p2c}): d distinct candidates drawn uniformly at random, the one
 * with the fewest of this client's requests in flight first (ties: the first drawn), the
 * others after them. Cheap, and it avoids the herd a full least-outstanding scan causes.
 */
public final class P2c extends OrderingPolicy {
    /** The name it is registered under. */
    public static final String NAME = "p2c";

    static final Params.Spec[] PARAMS = {Params.whole("choices", 2, 1, 64)};

    private final int choices;
    private final int[] inFlight = new int[MAX_NODES];
    private final double[] scores = new double[Order.MAX_CANDIDATES];

    /** Built from the Rust parameters ({@code choices}, default 2). */
    public P2c(Map<String, String> params) {
        super();
        choices = (int) Params.resolve(NAME, PARAMS, params).whole("choices");
    }

    @Override
    void order(int[] candidates, int count, long nowNs, Rng rng, int[] out) {
        Order.copy(candidates, count, out);
        int d = Math.min(Math.max(choices, 1), count);
        Order.shufflePrefix(out, 0, d, count, rng);
        for (int i = 0; i < d; i++) {
            scores[i] = inFlight[out[i]];
        }
        Order.sortByScore(out, scores, d);
    }

    @Override
    public void observe(Event event, int node, long latencyNs, double hitRate, long nowNs) {
        switch (event) {
            case SENT -> inFlight[Order.node(node)]++;
            case REPLY, ERROR, TIMEOUT, CONNECTION_LOST -> {
                int i = Order.node(node);
                inFlight[i] = Math.max(0, inFlight[i] - 1);
            }
            default -> {}
        }
    }
}
