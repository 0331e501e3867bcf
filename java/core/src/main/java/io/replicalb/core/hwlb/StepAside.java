package io.replicalb.core.hwlb;

/** Why HWLB is not active for a replica set (then the inner snitch's order applies). */
public enum StepAside
{
    /** k &gt;= the number of live replicas: there is no choice to make. */
    NO_CHOICE,
    /** All replicas are equally warm (spread &lt;= min_spread after the cap). */
    EQUALLY_WARM,
    /** Some replica runs without the plug-in and reports no hit rate. */
    RATE_UNKNOWN
}
