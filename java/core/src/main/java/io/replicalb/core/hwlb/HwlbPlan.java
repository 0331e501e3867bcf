package io.replicalb.core.hwlb;

import java.util.Arrays;

/**
 * A complete HWLB plan for one replica set: whether HWLB is active, the target shares and every
 * coordinator's row (a port of {@code crates/policy/src/hwlb/plan.rs}). The plan depends only
 * on (hit rates, k), so every coordinator computes the same one and takes its own row.
 */
public final class HwlbPlan
{
    /** Replicas per request. */
    public final int k;
    /** {@code null} when HWLB is active, else why it stepped aside. */
    public final StepAside stepAside;
    /** P_j after cap and clipping (uniform 1/N when inactive). */
    private final double[] shares;
    /** Row-major N x N: rows[c * n + j] = fraction of coordinator c's reads sent to replica j. */
    private final double[] rows;

    private HwlbPlan(int k, StepAside stepAside, double[] shares, double[] rows)
    {
        this.k = k;
        this.stepAside = stepAside;
        this.shares = shares;
        this.rows = rows;
    }

    /**
     * Computes the plan for {@code hitRates} (each in [0, 1]) and {@code k} replicas per
     * request ({@code 1 <= k <= n}); rates are capped here.
     */
    public static HwlbPlan compute(double[] hitRates, int k, PlanConfig config)
    {
        int n = hitRates.length;
        if (n < 1 || k < 1 || k > n)
            throw new IllegalArgumentException("a plan needs 1 <= k <= n (n=" + n + ", k=" + k + ")");
        for (double h : hitRates)
            if (!(h >= 0.0 && h <= 1.0))
                throw new IllegalArgumentException("hit rates must be in [0, 1]: " + Arrays.toString(hitRates));
        if (k >= n)
            return inactive(n, k, StepAside.NO_CHOICE);
        double max = -Double.MAX_VALUE;
        double min = Double.MAX_VALUE;
        for (double h : hitRates)
        {
            double capped = Math.min(h, config.hitRateCap());
            max = Math.max(max, capped);
            min = Math.min(min, capped);
        }
        // A tolerance so that a spread of exactly min_spread in decimal (0.81 - 0.80) counts.
        if (max - min <= config.minSpread() + 1e-12)
            return inactive(n, k, StepAside.EQUALLY_WARM);
        double[] shares = Shares.of(hitRates, config.hitRateCap(), k);
        double[] rows;
        try
        {
            rows = Redistribution.redistribute(shares, k);
        }
        catch (Infeasible e)
        {
            // Not seen for any input tried. Every coordinator using P itself still meets the
            // shares and the 1/k cap, giving up only locality.
            rows = new double[n * n];
            for (int c = 0; c < n; c++)
                System.arraycopy(shares, 0, rows, c * n, n);
        }
        return new HwlbPlan(k, null, shares, rows);
    }

    /**
     * The plain policy's plan: uniform shares; each coordinator reads locally and picks the
     * other k-1 replicas uniformly (rows[c][c] = 1/k, (1 - 1/k)/(N - 1) elsewhere).
     */
    public static HwlbPlan inactive(int n, int k, StepAside why)
    {
        double own = 1.0 / k;
        double other = n > 1 ? (1.0 - own) / (n - 1) : 0.0;
        double[] rows = new double[n * n];
        for (int i = 0; i < n * n; i++)
            rows[i] = i / n == i % n ? own : other;
        double[] shares = new double[n];
        Arrays.fill(shares, 1.0 / n);
        return new HwlbPlan(k, why, shares, rows);
    }

    /** Whether HWLB is active. */
    public boolean active()
    {
        return stepAside == null;
    }

    /** The number of replicas. */
    public int n()
    {
        return shares.length;
    }

    /** A copy of the target shares P. */
    public double[] shares()
    {
        return shares.clone();
    }

    /** A copy of coordinator c's row. */
    public double[] row(int c)
    {
        int n = n();
        return Arrays.copyOfRange(rows, c * n, (c + 1) * n);
    }

    /** The cell rows[c][j]. */
    public double cell(int c, int j)
    {
        return rows[c * n() + j];
    }
}
