package io.replicalb.core.hwlb;

/**
 * Warm-up reads (a port of {@code crates/policy/src/hwlb/warmup.rs}): a replica that came back
 * with a cold cache serves no reads of its own while enough warm replicas can, and fills its
 * cache from background reads no request waits for, at the pace that gives it the warm
 * replicas' cache misses per second (HWLB's rule, kept off the request path).
 */
public final class Warmup
{
    /** A warming replica whose rate is below the warmest's by more than this is cold. */
    public static final double WARM_WITHIN = 0.05;

    private Warmup()
    {
    }

    /**
     * A read's candidates split while some warm.
     *
     * @param coldMask the cold candidates (bit j = candidate j)
     * @param coldest the coldest candidate's index (the first of equals), warmed in the background
     * @param warm how many candidates are warm
     */
    public record ColdSplit(long coldMask, int coldest, int warm)
    {
    }

    /**
     * Which of the first {@code n} candidates (hit rates {@code rates}, {@code warming[j]}: came
     * up recently) are cold; {@code null} when none is or fewer than {@code k} are warm.
     */
    public static ColdSplit splitCold(double[] rates, boolean[] warming, int n, int k)
    {
        if (n > 64)
            throw new IllegalArgumentException("at most 64 candidates, got " + n);
        double warmest = Double.NEGATIVE_INFINITY;
        for (int j = 0; j < n; j++)
            warmest = Math.max(warmest, rates[j]);
        long mask = 0L;
        int coldest = -1;
        int warm = 0;
        for (int j = 0; j < n; j++)
        {
            if (warming[j] && rates[j] < warmest - WARM_WITHIN)
            {
                mask |= 1L << j;
                if (coldest < 0 || rates[j] < rates[coldest])
                    coldest = j;
            }
            else
            {
                warm++;
            }
        }
        if (coldest < 0 || warm < k)
            return null;
        return new ColdSplit(mask, coldest, warm);
    }

    /**
     * A warm replica's expected cache misses per read under {@code plan} over replicas with hit
     * rates {@code rates}: the mean of k x share x miss rate, rates capped as the plan caps them.
     */
    public static double missesPerRead(HwlbPlan plan, double[] rates, PlanConfig config)
    {
        int n = rates.length;
        if (plan.n() != n)
            throw new IllegalArgumentException("the plan is over " + plan.n() + " replicas, not " + n);
        double[] shares = plan.shares();
        double total = 0.0;
        for (int j = 0; j < n; j++)
            total += plan.k * shares[j] * (1.0 - Math.min(rates[j], config.hitRateCap()));
        return total / n;
    }

    /**
     * {@link #missesPerRead} of a plan with uniform shares (HWLB stepped aside: no choice, or
     * all equally warm) over the first {@code n} of {@code rates}, without building it: the
     * request path's case when exactly k warm replicas are left. Allocates nothing.
     */
    public static double uniformMissesPerRead(double[] rates, int n, int k, PlanConfig config)
    {
        double share = 1.0 / n;
        double total = 0.0;
        for (int j = 0; j < n; j++)
            total += k * share * (1.0 - Math.min(rates[j], config.hitRateCap()));
        return total / n;
    }

    /**
     * The slow start of the warm-up pace: the fraction of it a cold replica gets {@code sinceUpNs}
     * after it came up, rising linearly from 0 to 1 over {@code rampNs} (0 = the whole pace at
     * once), so the node's first seconds back are not also loaded with misses.
     */
    public static double slowStart(long sinceUpNs, long rampNs)
    {
        if (rampNs <= 0L || sinceUpNs >= rampNs)
            return 1.0;
        return Math.max(0L, sinceUpNs) / (double) rampNs;
    }

    /**
     * The chance that a read also reads the key from the cold replica (rate {@code coldRate}) in
     * the background: {@code share} x warm misses per read / its miss rate, at most 1.
     */
    public static double backgroundChance(double share, double warmMissesPerRead, double coldRate, PlanConfig config)
    {
        double coldMisses = 1.0 - Math.min(coldRate, config.hitRateCap());
        if (coldMisses <= 0.0)
            return 0.0;
        return Math.max(0.0, Math.min(1.0, share * warmMissesPerRead / coldMisses));
    }
}
