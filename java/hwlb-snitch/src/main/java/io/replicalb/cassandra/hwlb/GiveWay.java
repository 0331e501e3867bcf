package io.replicalb.cassandra.hwlb;

/**
 * Load inside HWLB's draw (a port of {@code crates/policy/src/unified/give_way.rs}; the shared
 * traces check both make the same choices): a drawn replica gives way to one that costs less.
 *
 * <p>Every candidate has an expected time for one more read
 * ({@link CoordinatorHealth#expectedNs}). A target {@code t} gives way to the eligible
 * non-target {@code j} with the lowest {@code expected(j) x heat(t, j)} when that is below
 * {@code expected(t)}, where {@code heat = (misses(colder) / misses(warmer))^heatWeight} and
 * {@code misses = 1 - min(rate, cap)} (1 when a rate is unknown). The coordinator's own replica
 * ({@code keep}) keeps its place: HWLB keeps work local on purpose. Targets are visited from the
 * most expensive (ties: the earlier target), candidates in the given order; the comparisons are
 * strict, so equal costs keep the draw. The power is taken by repeated multiplication, as in
 * Rust, so both make bit-identical comparisons. No allocation.
 */
final class GiveWay
{
    /** The largest heat weight. */
    static final int MAX_HEAT_WEIGHT = 8;

    private GiveWay()
    {
    }

    /** {@code (misses(colder) / misses(warmer))^heatWeight} for rates {@code a} and {@code b} (NaN: unknown, which gives 1). */
    static double heat(double a, double b, int heatWeight, double cap)
    {
        if (Double.isNaN(a) || Double.isNaN(b))
            return 1.0;
        double ma = 1.0 - Math.min(a, cap);
        double mb = 1.0 - Math.min(b, cap);
        double ratio = Math.max(ma, mb) / Math.min(ma, mb);
        double factor = 1.0;
        for (int i = 0; i < heatWeight; i++)
            factor *= ratio;
        return factor;
    }

    /**
     * Applies the step over {@code n} candidates ({@code expectedNs} and {@code rates} by
     * candidate, {@code eligible} a bit mask of those that may take a read) to the {@code k}
     * targets (candidate indices, in order), replacing in place each one that gives way; writes
     * the ones that gave way to {@code gaveWay} and returns how many did. Targets in {@code keep}
     * (a bit mask) never give way. {@code slots} is scratch space of at least k entries.
     */
    static int apply(double[] expectedNs, double[] rates, long eligible, long keep, int n, int heatWeight, double cap, int[] targets, int k,
                     int[] gaveWay, int[] slots)
    {
        assert n <= 64 && k <= n && heatWeight >= 0 && heatWeight <= MAX_HEAT_WEIGHT;
        // The slots from the most expensive target (stable: ties keep the target order).
        for (int i = 0; i < k; i++)
        {
            int slot = i;
            int b = i - 1;
            while (b >= 0 && expectedNs[targets[slots[b]]] < expectedNs[targets[slot]])
            {
                slots[b + 1] = slots[b];
                b--;
            }
            slots[b + 1] = slot;
        }
        int swaps = 0;
        for (int s = 0; s < k; s++)
        {
            int slot = slots[s];
            int t = targets[slot];
            if ((keep & (1L << t)) != 0)
                continue;
            int best = -1;
            double bestNs = expectedNs[t];
            for (int j = 0; j < n; j++)
            {
                if ((eligible & (1L << j)) == 0 || contains(targets, k, j))
                    continue;
                double weightedNs = expectedNs[j] * heat(rates[t], rates[j], heatWeight, cap);
                if (weightedNs < bestNs)
                {
                    best = j;
                    bestNs = weightedNs;
                }
            }
            if (best >= 0)
            {
                targets[slot] = best;
                gaveWay[swaps++] = t;
            }
        }
        return swaps;
    }

    private static boolean contains(int[] a, int k, int x)
    {
        for (int i = 0; i < k; i++)
            if (a[i] == x)
                return true;
        return false;
    }
}
