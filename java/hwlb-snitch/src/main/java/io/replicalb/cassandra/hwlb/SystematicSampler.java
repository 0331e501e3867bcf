package io.replicalb.cassandra.hwlb;

/**
 * Systematic sampling of k distinct replicas with inclusion probabilities exactly k * pp[j]
 * (a port of {@code crates/policy/src/hwlb/sampling.rs}).
 *
 * <p>One u uniform in [0, 1/k); for i in 0..k the point u + i/k selects the replica whose
 * cumulative interval of pp contains it. Since pp[j] &lt;= 1/k no interval holds two points, so
 * the k are distinct. (Pick, remove and renormalise does not give these marginals.) One random
 * number per request; nothing is allocated per draw.
 */
public final class SystematicSampler
{
    /** upper[j] = pp[0] + ... + pp[j]; from the last positive entry on, +infinity. */
    private final double[] upper;

    /**
     * Prepares {@code row} (non-negative, summing to 1, each at most 1/k for the k it is used
     * with).
     */
    public SystematicSampler(double[] row)
    {
        if (row.length == 0)
            throw new IllegalArgumentException("a sampling row needs at least one replica");
        upper = new double[row.length];
        double acc = 0.0;
        int lastPositive = 0;
        for (int j = 0; j < row.length; j++)
        {
            double p = row[j];
            if (!(p >= 0.0))
                throw new IllegalArgumentException("negative probability " + p);
            acc += p;
            upper[j] = acc;
            if (p > 0.0)
                lastPositive = j;
        }
        // Rounding can never push a point past the last positive interval onto a zero one.
        for (int j = lastPositive; j < row.length; j++)
            upper[j] = Double.POSITIVE_INFINITY;
    }

    /** The number of replicas in the row. */
    public int size()
    {
        return upper.length;
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
        int n = upper.length;
        assert k >= 1 && k <= n && n <= 64;
        double step = 1.0 / k;
        double u = unit * step;
        long mask = 0L;
        int j = 0;
        for (int i = 0; i < k; i++)
        {
            double point = u + i * step;
            while (point >= upper[j])
                j++;
            mask |= 1L << j;
            // The next point lies at least 1/k further on and pp[j] <= 1/k: it belongs to a
            // later interval. Starting there also guards against rounding at 1e-16 scale.
            j = Math.min(j + 1, n - 1);
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
        int n = upper.length;
        assert k >= 1 && k <= n;
        double step = 1.0 / k;
        double u = unit * step;
        int j = 0;
        for (int i = 0; i < k; i++)
        {
            double point = u + i * step;
            while (point >= upper[j])
                j++;
            out[i] = j;
            j = Math.min(j + 1, n - 1);
        }
    }
}
