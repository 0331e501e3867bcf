package io.replicalb.cassandra.hwlb;

/**
 * Why {@code unified}'s coordinator rule ({@link CoordinatorHealth}) passed a replica over, as
 * the rule names it; each passed-over replica of a read is counted under the first reason that
 * holds, in this order (the order the rule checks them). {@link #SLOW} includes a replica on
 * trial (judged by its aged-out average while its trial read is unanswered).
 */
public enum PassOverReason
{
    /** Busy and fewer than min_responses replies within the response window. */
    SILENT("Silent"),
    /** Its latest reply-or-expiry is an expiry younger than expiry_memory. */
    EXPIRED("Expired"),
    /** A read of ours has waited more than overdue_factor times its usual time. */
    OVERDUE("Overdue"),
    /** Its latency average well above the fastest not-colder replica's (or on trial). */
    SLOW("Slow");

    /** The number of reasons. */
    public static final int COUNT = values().length;

    private final String label;

    PassOverReason(String label)
    {
        this.label = label;
    }

    /** The reason in a metric name ({@code PassedOverSilent}, ...): capitalised. */
    public String label()
    {
        return label;
    }
}
