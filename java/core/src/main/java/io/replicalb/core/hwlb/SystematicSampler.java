package io.replicalb.core.hwlb;

import java.util.Arrays;

/**
 * Systematic sampling of k distinct replicas with inclusion probabilities exactly k * pp[j]
 * (a port of {@code crates/policy/src/hwlb/sampling.rs}).
 *
 * <p>One u uniform in [0, 1/k); for i in 0..k the point u + i/k selects the replica whose
 * cumulative interval of pp contains it. Since pp[j] &lt;= 1/k no interval holds two points, so
 * the k are distinct. (Pick, remove and renormalise does not give these marginals.) One random
 * number per request; nothing is allocated per draw. Only positive entries are candidates, and
 * point i goes no further than the (m - k + i)-th of the m candidates, which keeps the k distinct
 * and positive when a point rounds across a bound (as the Rust code; the shared vectors
 * {@code testdata/hwlb-component-vectors.json} hold such draws).
 */
public final class SystematicSampler
{
    /** The row's length. */
    private final int size;
    /** The candidates' indices in the row, increasing: the positive entries (all if none is). */
    private final int[] index;
    /** upper[q] = pp[0] + ... + pp[index[q]]; the last is +infinity. */
    private final double[] upper;

    /**
     * Prepares {@code row} (non-negative, summing to 1, each at most 1/k for the k it is used
     * with).
     */
    public SystematicSampler(double[] row)
    {
        if (row.length == 0)
            throw new IllegalArgumentException("a sampling row needs at least one replica");
        size = row.length;
        int[] idx = new int[row.length];
        double[] up = new double[row.length];
        int candidates = 0;
        double acc = 0.0;
        for (int j = 0; j < row.length; j++)
        {
            double p = row[j];
            if (!(p >= 0.0))
                throw new IllegalArgumentException("negative probability " + p);
            acc += p;
            if (p > 0.0)
            {
                idx[candidates] = j;
                up[candidates] = acc;
                candidates++;
            }
        }
        if (candidates == 0)
        {
            // No positive entry: every replica is a candidate, the first k are drawn.
            candidates = row.length;
            for (int j = 0; j < candidates; j++)
                idx[j] = j;
        }
        // Rounding can never push a point past the last candidate.
        up[candidates - 1] = Double.POSITIVE_INFINITY;
        index = Arrays.copyOf(idx, candidates);
        upper = Arrays.copyOf(up, candidates);
    }

    /** The number of replicas in the row. */
    public int size()
    {
        return size;
    }

    /**
     * Draws k distinct indices, in increasing order, as a bit mask (bit j = replica j chosen);
     * rows of at most 64 replicas.
     *
     * @param k replicas to draw, {@code 1 <= k <= size()}
     * @param unit a uniform number in [0, 1)
     */
    public long sampleMask(int k, double unit)
    {
        int m = upper.length;
        assert k >= 1 && k <= size && size <= 64;
        double step = 1.0 / k;
        double u = unit * step;
        long mask = 0L;
        int q = 0;
        for (int i = 0; i < k; i++)
        {
            double point = u + i * step;
            // Point i lies no further than candidate m - k + i, so the later points still have a
            // candidate each. With exact arithmetic that never binds; it catches a point that
            // rounds across a bound (unit 1 - 2^-53, pp = {1/4, 1/4, 1/4, 1/4}, k = 4 would
            // otherwise draw the last replica twice).
            int last = Math.max(m - k + i, 0);
            while (q < last && point >= upper[q])
                q++;
            mask |= 1L << index[q];
            // The next point belongs to a later interval; zero entries are no candidates.
            q = Math.min(q + 1, m - 1);
        }
        return mask;
    }

    /**
     * Writes k distinct indices to {@code out[0..k)}, in increasing order.
     *
     * @param unit a uniform number in [0, 1)
     */
    public void sample(int k, double unit, int[] out)
    {
        int m = upper.length;
        assert k >= 1 && k <= size;
        double step = 1.0 / k;
        double u = unit * step;
        int q = 0;
        for (int i = 0; i < k; i++)
        {
            double point = u + i * step;
            int last = Math.max(m - k + i, 0);
            while (q < last && point >= upper[q])
                q++;
            out[i] = index[q];
            q = Math.min(q + 1, m - 1);
        }
    }
}
