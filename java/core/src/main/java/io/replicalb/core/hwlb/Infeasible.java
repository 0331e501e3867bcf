package io.replicalb.core.hwlb;

/**
 * No set of rows satisfies the redistribution invariants (a port of Rust's
 * {@code Infeasible}); {@link HwlbPlan} then gives every coordinator P itself as its row.
 */
public final class Infeasible extends Exception
{
    private static final long serialVersionUID = 1L;

    /** How much of the total off-diagonal flow could not be placed within the 1/k cap. */
    public final double shortfall;

    /** An infeasible transport that left {@code shortfall} unplaced. */
    public Infeasible(double shortfall)
    {
        super(String.format(java.util.Locale.ROOT,
                            "no redistribution exists: %e of the forwarded reads cannot be placed within the 1/k cap",
                            shortfall));
        this.shortfall = shortfall;
    }
}
