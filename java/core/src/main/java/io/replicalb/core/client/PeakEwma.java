package io.replicalb.core.client;

import io.replicalb.core.Rng;
import java.util.Map;

/**
 * {@code peak-ewma}: power of two choices on a peak-sensitive EWMA of the round-trip time
 * (Finagle's and tower's PeakEwma; the Rust {@code policy::peak_ewma}). A sample above the
 * estimate replaces it at once; a lower one is blended in with weight
 * {@code 1 - exp(-dt / tau)}; reading the estimate decays it toward 0 for the time elapsed.
 * {@code load = cost x (pending + 1)}; a node never measured costs {@code default_rtt_ms}.
 */
public final class PeakEwma extends OrderingPolicy {
    /** The name it is registered under. */
    public static final String NAME = "peak-ewma";

    static final Params.Spec[] PARAMS = {
        Params.real("tau_ms", 10_000.0, 0.001, 86_400_000.0), Params.real("default_rtt_ms", 30.0, 0.0, 3_600_000.0),
    };

    private final double tauNs;
    private final double defaultRttNs;
    private final int[] inFlight = new int[MAX_NODES];
    /** The estimate per node, ns; meaningful where {@link #hasCost} holds. */
    private final double[] costNs = new double[MAX_NODES];
    private final boolean[] hasCost = new boolean[MAX_NODES];
    private final long[] updatedNs = new long[MAX_NODES];
    /**
     * One more than the highest node id sent to or heard from: as in Rust, whose per-node table
     * then holds every lower id too, reading a lower id's load stores its decayed default.
     */
    private int tableLen;
    private final double[] scores = new double[Order.MAX_CANDIDATES];

    /** Built from the Rust parameters ({@code tau_ms} 10 s, {@code default_rtt_ms} 30 ms). */
    public PeakEwma(Map<String, String> params) {
        super();
        Params p = Params.resolve(NAME, PARAMS, params);
        tauNs = p.real("tau_ms") * 1e6;
        defaultRttNs = p.real("default_rtt_ms") * 1e6;
    }

    @Override
    void order(int[] candidates, int count, long nowNs, Rng rng, int[] out) {
        Order.copy(candidates, count, out);
        int d = Math.min(2, count);
        Order.shufflePrefix(out, 0, d, count, rng);
        for (int i = 0; i < d; i++) {
            scores[i] = load(out[i], nowNs);
        }
        Order.sortByScore(out, scores, d);
    }

    /** {@code cost x (pending + 1)} at {@code nowNs}, decaying the stored cost. */
    private double load(int node, long nowNs) {
        double pending = inFlight[node];
        double cost = node < tableLen ? sample(node, 0.0, nowNs) : defaultRttNs;
        return cost * (pending + 1.0);
    }

    /** Folds in a round-trip sample: a peak replaces the estimate, a lower one blends in. */
    private double sample(int node, double rttNs, long nowNs) {
        double current;
        if (!hasCost[node]) {
            updatedNs[node] = nowNs;
            current = defaultRttNs;
        } else {
            current = costNs[node];
        }
        double next;
        if (rttNs > current) {
            next = rttNs;
        } else {
            double w = StrictMath.exp(-(double) Order.elapsedNs(updatedNs[node], nowNs) / tauNs);
            next = current * w + rttNs * (1.0 - w);
        }
        costNs[node] = next;
        hasCost[node] = true;
        if (nowNs - updatedNs[node] > 0) {
            updatedNs[node] = nowNs;
        }
        return next;
    }

    private void seen(int node) {
        tableLen = Math.max(tableLen, node + 1);
    }

    @Override
    public void observe(Event event, int node, long latencyNs, double hitRate, long nowNs) {
        switch (event) {
            case SENT -> {
                inFlight[Order.node(node)]++;
                seen(node);
                if (!hasCost[node]) {
                    sample(node, 0.0, nowNs);
                }
            }
            case REPLY -> {
                int i = Order.node(node);
                inFlight[i] = Math.max(0, inFlight[i] - 1);
                seen(i);
                sample(i, (double) latencyNs, nowNs);
            }
            case ERROR, TIMEOUT, CONNECTION_LOST -> {
                int i = Order.node(node);
                inFlight[i] = Math.max(0, inFlight[i] - 1);
            }
            default -> {}
        }
    }
}
