package io.replicalb.core.client;

import io.replicalb.core.Rng;

/**
 * The allocation-free helpers the policies build their orders with, step for step the Rust
 * {@code policy::order} (the same random draws in the same order), working in place on the
 * caller's output array.
 */
final class Order {
    /** The most candidates one plan ranks (the Rust {@code MAX_REPLICAS}). */
    static final int MAX_CANDIDATES = ClientPolicy.MAX_CANDIDATES;

    private Order() {}

    /** Checks a plan's arguments: at most {@link #MAX_CANDIDATES}, room in {@code out}. */
    static void check(int[] candidates, int count, int[] out) {
        if (count < 0 || count > MAX_CANDIDATES || count > candidates.length || count > out.length) {
            throw new IllegalArgumentException("a plan takes 0.." + MAX_CANDIDATES + " candidates with room for them in out; got " + count
                    + " of " + candidates.length + ", out " + out.length);
        }
    }

    /** {@code candidates[0..n)} copied into {@code out}. */
    static void copy(int[] candidates, int n, int[] out) {
        System.arraycopy(candidates, 0, out, 0, n);
    }

    /**
     * {@code candidates[0..n)} into {@code out} rotated left by a uniform random amount (one
     * draw when {@code n > 1}): the Rust {@code scored_rotation}'s order.
     */
    static void rotation(int[] candidates, int n, Rng rng, int[] out) {
        int k = n > 1 ? rng.below(n) : 0;
        for (int i = 0; i < n; i++) {
            out[i] = candidates[(k + i) % n];
        }
    }

    /**
     * Makes {@code order[from..to)} a uniform random selection, in random order, of
     * {@code order[from..n)} (partial Fisher-Yates; Rust's {@code shuffle_prefix}).
     */
    static void shufflePrefix(int[] order, int from, int to, int n, Rng rng) {
        for (int i = from; i < Math.min(to, n); i++) {
            int j = i + rng.below(n - i);
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
    }

    /** Stable insertion sort of {@code order[0..n)} ascending by the parallel scores. */
    static void sortByScore(int[] order, double[] scores, int n) {
        for (int i = 1; i < n; i++) {
            int node = order[i];
            double score = scores[i];
            int j = i;
            while (j > 0 && scores[j - 1] > score) {
                order[j] = order[j - 1];
                scores[j] = scores[j - 1];
                j--;
            }
            order[j] = node;
            scores[j] = score;
        }
    }

    /**
     * Moves the {@code k} lowest-scored of {@code order[from..n)} to its front, lowest first;
     * among equal scores the earliest wins (Rust's {@code select_best}).
     */
    static void selectBest(int[] order, double[] scores, int from, int n, int k) {
        for (int j = from; j < Math.min(from + k, n); j++) {
            int best = j;
            for (int i = j + 1; i < n; i++) {
                if (scores[i] < scores[best]) {
                    best = i;
                }
            }
            swap(order, scores, j, best);
        }
    }

    /** Swaps entries {@code a} and {@code b} of both parallel arrays. */
    static void swap(int[] order, double[] scores, int a, int b) {
        int t = order[a];
        order[a] = order[b];
        order[b] = t;
        double s = scores[a];
        scores[a] = scores[b];
        scores[b] = s;
    }

    /**
     * The pre-HWLB behaviour at a client (no local node): the candidates with a uniform random
     * first and first fallback (Rust's {@code local_first_then_random} for one target).
     */
    static void firstTwoRandom(int[] candidates, int n, Rng rng, int[] out) {
        copy(candidates, n, out);
        shufflePrefix(out, 0, 2, n, rng);
    }

    /** Checks a node id from a callback. */
    static int node(int node) {
        if (node < 0 || node >= ClientPolicy.MAX_NODES) {
            throw new IllegalArgumentException("node id " + node + " is outside 0.." + ClientPolicy.MAX_NODES);
        }
        return node;
    }

    /** {@code toNs - fromNs}, at least 0 (Rust's {@code saturating_sub} on monotonic times). */
    static long elapsedNs(long fromNs, long toNs) {
        return Math.max(0L, toNs - fromNs);
    }
}
