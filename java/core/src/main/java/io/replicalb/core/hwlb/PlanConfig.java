package io.replicalb.core.hwlb;

/**
 * The knobs of the plan computation (Rust's {@code PlanConfig}).
 *
 * @param hitRateCap hit rates above this count as this (published 0.95: a higher cap starves
 *                   cold nodes and slows their warm-up)
 * @param minSpread max H - min H at or below this (after the cap) means "all equally warm"
 */
public record PlanConfig(double hitRateCap, double minSpread)
{
    /** The published cap on hit rates. */
    public static final double DEFAULT_HIT_RATE_CAP = 0.95;
    /** The spread at or below which HWLB steps aside. */
    public static final double DEFAULT_MIN_SPREAD = 0.01;
    /** The published defaults. */
    public static final PlanConfig DEFAULT = new PlanConfig(DEFAULT_HIT_RATE_CAP, DEFAULT_MIN_SPREAD);

    /** Checks the ranges the Rust policy accepts: cap in [0, 0.999], spread in [0, 1]. */
    public PlanConfig
    {
        if (!(hitRateCap >= 0.0 && hitRateCap <= 0.999))
            throw new IllegalArgumentException("hit_rate_cap " + hitRateCap + ": must be in [0, 0.999]");
        if (!(minSpread >= 0.0 && minSpread <= 1.0))
            throw new IllegalArgumentException("min_spread " + minSpread + ": must be in [0, 1]");
    }
}
