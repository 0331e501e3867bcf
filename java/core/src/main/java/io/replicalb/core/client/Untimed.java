package io.replicalb.core.client;

import io.replicalb.core.Rng;

/**
 * {@code unified}'s ranking of nodes whose replies carry no service time, as a driver sees
 * them (the Rust {@code policy::unified::untimed}): {@code score = floor + (1 + n x
 * outstanding)^b x excess}, with {@code floor} the lowest response time seen (rising by
 * {@code floor_drift} per sample), {@code excess} the pessimistic response time
 * {@code R + k x D} above it (slow EWMAs), excesses within {@code equal_within} of the lowest
 * counted as equal, an average restarted after {@code outlier_count} outliers in a row, and,
 * while requests of ours are in flight to a node, the wait for its answer a lower bound on its
 * response time: a node that stopped answering falls behind within about the others' response
 * time. Nodes never heard from score 0, unless requests of ours are in flight there: then the
 * wait counts as for a node that stopped answering; ties are drawn uniformly.
 */
final class Untimed {
    /** The ranking's parameters (the Rust {@code UntimedRanking}). */
    record Ranking(
            double concurrencyWeight,
            double queueExponent,
            double ewmaWeight,
            double deviationWeight,
            double floorDrift,
            double equalWithin,
            double outlierFactor,
            long outlierCount) {}

    private final Ranking r;
    private final boolean[] known = new boolean[ClientPolicy.MAX_NODES];
    private final int[] outstanding = new int[ClientPolicy.MAX_NODES];
    private final double[] responseNs = new double[ClientPolicy.MAX_NODES];
    private final double[] deviationNs = new double[ClientPolicy.MAX_NODES];
    private final double[] floorNs = new double[ClientPolicy.MAX_NODES];
    private final int[] outliers = new int[ClientPolicy.MAX_NODES];
    private final boolean[] waiting = new boolean[ClientPolicy.MAX_NODES];
    private final long[] waitingSinceNs = new long[ClientPolicy.MAX_NODES];
    private final double[] scores = new double[Order.MAX_CANDIDATES];

    Untimed(Ranking ranking) {
        this.r = ranking;
    }

    /** Whether this ranking decides: at least one candidate answered (else C3's ranking does). */
    boolean applies(int[] candidates, int count) {
        for (int i = 0; i < count; i++) {
            if (known[candidates[i]]) {
                return true;
            }
        }
        return false;
    }

    private double pessimisticNs(int node) {
        return responseNs[node] + r.deviationWeight() * deviationNs[node];
    }

    /** How long we have waited for an answer from {@code node}, ns (0 with nothing in flight). */
    private double waitedNs(int node, long nowNs) {
        return waiting[node] ? (double) Order.elapsedNs(waitingSinceNs[node], nowNs) : 0.0;
    }

    /** The excess over the floor: the pessimistic estimate's, at least the wait for an answer. */
    private double excessNs(int node, long nowNs) {
        return Math.max(Math.max(pessimisticNs(node), waitedNs(node, nowNs)) - floorNs[node], 0.0);
    }

    /** {@code (1 + n x outstanding)^b}. */
    private double penalty(int outstanding) {
        double q = 1.0 + r.concurrencyWeight() * outstanding;
        return r.queueExponent() == 1.0 ? q : Math.pow(q, r.queueExponent());
    }

    /** Plans one target: the best-scored candidate (ties at random), the next best, the others. */
    void plan(int[] candidates, int count, long nowNs, Rng rng, int[] out) {
        double lowest = Double.POSITIVE_INFINITY;
        for (int i = 0; i < count; i++) {
            int c = candidates[i];
            if (known[c]) {
                lowest = Math.min(lowest, excessNs(c, nowNs));
            }
        }
        double line = lowest * (1.0 + r.equalWithin());
        Order.rotation(candidates, count, rng, out);
        for (int i = 0; i < count; i++) {
            int x = out[i];
            if (known[x]) {
                scores[i] = floorNs[x] + penalty(outstanding[x]) * Math.max(excessNs(x, nowNs), line);
            } else if (outstanding[x] > 0) {
                // Never answered but waited for: the wait counts, as for a node that stopped answering.
                scores[i] = penalty(outstanding[x]) * Math.max(waitedNs(x, nowNs), line);
            } else {
                scores[i] = 0.0;
            }
        }
        pickLowest(out, scores, 0, count, rng);
        Order.selectBest(out, scores, 1, count, 1);
    }

    /** Moves the lowest-scored of {@code order[from..n)} to its front, drawn among equals. */
    private static void pickLowest(int[] order, double[] scores, int from, int n, Rng rng) {
        double best = Double.POSITIVE_INFINITY;
        for (int i = from; i < n; i++) {
            best = Math.min(best, scores[i]);
        }
        int ties = 0;
        for (int i = from; i < n; i++) {
            if (scores[i] <= best) {
                ties++;
            }
        }
        int skip = ties > 1 ? rng.below(ties) : 0;
        for (int i = from; i < n; i++) {
            if (scores[i] <= best) {
                if (skip == 0) {
                    Order.swap(order, scores, from, i);
                    return;
                }
                skip--;
            }
        }
    }

    /** A request was sent to {@code node} at {@code nowNs}. */
    void sent(int node, long nowNs) {
        if (outstanding[node] == 0) {
            waiting[node] = true;
            waitingSinceNs[node] = nowNs;
        }
        if (outstanding[node] < Integer.MAX_VALUE) {
            outstanding[node]++;
        }
    }

    /** One of our requests to {@code node} ended, {@code answered} or not. */
    private void ended(int node, boolean answered, long nowNs) {
        outstanding[node] = Math.max(0, outstanding[node] - 1);
        if (outstanding[node] == 0) {
            waiting[node] = false;
        } else if (answered) {
            waitingSinceNs[node] = nowNs;
        }
    }

    /** {@code node} answered after {@code latencyNs}, at {@code nowNs}. */
    void replied(int node, long latencyNs, long nowNs) {
        ended(node, true, nowNs);
        double sample = latencyNs;
        if (!known[node]) {
            known[node] = true;
            responseNs[node] = sample;
            floorNs[node] = sample;
            return;
        }
        floorNs[node] = Math.min(sample, floorNs[node] * (1.0 + r.floorDrift()));
        if (sample > r.outlierFactor() * pessimisticNs(node)) {
            outliers[node]++;
        } else {
            outliers[node] = 0;
        }
        if (r.outlierCount() > 0 && outliers[node] >= r.outlierCount()) {
            outliers[node] = 0;
            responseNs[node] = sample;
            return;
        }
        double w = r.ewmaWeight();
        deviationNs[node] = w * Math.abs(sample - responseNs[node]) + (1.0 - w) * deviationNs[node];
        responseNs[node] = w * sample + (1.0 - w) * responseNs[node];
    }

    /** A request to {@code node} ended without a reply; {@code answered}: with an error. */
    void failed(int node, boolean answered, long nowNs) {
        ended(node, answered, nowNs);
    }
}
