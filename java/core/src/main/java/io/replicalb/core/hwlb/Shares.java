package io.replicalb.core.hwlb;

/**
 * Target shares P_j: every replica should see the same cache misses per second (a port of
 * {@code crates/policy/src/hwlb/shares.rs}).
 *
 * <p>With hit rates H_i (capped at {@code cap}, 0.95 published), r_i = 1 / (1 - H_i) and
 * P_i = r_i / sum r, so P_i (1 - H_i) is equal for all i. With k &gt; 1 replicas per request a
 * replica can take at most 1/k of the reads, so shares above 1/k are clipped to exactly 1/k and
 * the remainder re-normalised over the others in proportion to r, repeated until none exceeds
 * 1/k. The check follows every rescale, so the result never exceeds 1/k (the published code
 * checked before rescaling and could overshoot).
 */
public final class Shares
{
    private Shares()
    {
    }

    /**
     * Fills {@code shares} with the clipped shares for {@code hitRates} (each in [0, 1]) and
     * {@code k} replicas per request; the steps and their order are those of the Rust code, so
     * the results agree to the last bits.
     *
     * @param hitRates the replicas' hit rates
     * @param cap rates above this count as this
     * @param k replicas per request, {@code 1 <= k <= n}
     * @param shares output, same length as {@code hitRates}
     */
    public static void compute(double[] hitRates, double cap, int k, double[] shares)
    {
        int n = hitRates.length;
        if (n < 1 || k < 1 || k > n)
            throw new IllegalArgumentException("shares need 1 <= k <= n (k=" + k + ", n=" + n + ")");
        if (shares.length != n)
            throw new IllegalArgumentException("shares has " + shares.length + " slots for " + n + " rates");
        double limit = 1.0 / k;
        // shares[i] < 0 marks "not clipped yet": it holds -r_i until the loop settles it.
        for (int i = 0; i < n; i++)
            shares[i] = -weight(Math.min(hitRates[i], cap));
        while (true)
        {
            int clipped = 0;
            for (double s : shares)
                if (s >= 0.0)
                    clipped++;
            double freeWeight = 0.0;
            for (double s : shares)
                if (s < 0.0)
                    freeWeight += -s;
            double room = 1.0 - clipped * limit;
            // Any free share that would exceed 1/k after this rescale is clipped now; re-normalise.
            boolean changed = false;
            for (int i = 0; i < n; i++)
            {
                if (shares[i] < 0.0 && -shares[i] / freeWeight * room > limit)
                {
                    shares[i] = limit;
                    changed = true;
                }
            }
            if (!changed)
            {
                for (int i = 0; i < n; i++)
                    if (shares[i] < 0.0)
                        shares[i] = -shares[i] / freeWeight * room;
                break;
            }
        }
        assert Math.abs(sum(shares) - 1.0) < 1e-9 : "shares sum to 1";
        assert allAtMost(shares, limit + 1e-12) : "no share exceeds 1/k";
    }

    /** The clipped shares as a new array; see {@link #compute(double[], double, int, double[])}. */
    public static double[] of(double[] hitRates, double cap, int k)
    {
        double[] shares = new double[hitRates.length];
        compute(hitRates, cap, k, shares);
        return shares;
    }

    /** r = 1 / (1 - H): proportional to the reads a replica can take for one unit of misses. */
    static double weight(double hitRate)
    {
        return 1.0 / (1.0 - hitRate);
    }

    static double sum(double[] xs)
    {
        double s = 0.0;
        for (double x : xs)
            s += x;
        return s;
    }

    private static boolean allAtMost(double[] xs, double limit)
    {
        for (double x : xs)
            if (x > limit)
                return false;
        return true;
    }
}
