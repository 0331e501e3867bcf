package io.replicalb.core.client;

import io.replicalb.core.Rng;

/**
 * What every client policy of this package shares: the checks and the empty case of
 * {@link ClientPolicy#plan}, so that each policy writes only its ordering ({@link #order}).
 */
public abstract class OrderingPolicy implements ClientPolicy {
    OrderingPolicy() {}

    @Override
    public final int plan(int[] candidates, int count, long nowNs, Rng rng, int[] out) {
        Order.check(candidates, count, out);
        if (count > 0) {
            order(candidates, count, nowNs, rng, out);
        }
        return count;
    }

    /**
     * Writes a permutation of {@code candidates[0..count)}, best first, into {@code out}
     * ({@code count} is at least 1 and within the bounds {@link Order#check} verified).
     */
    abstract void order(int[] candidates, int count, long nowNs, Rng rng, int[] out);
}
