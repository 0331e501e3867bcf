package io.replicalb.cassandra.hwlb;

import java.util.Locale;

/**
 * The consistency level HWLB plans reads for ({@code replica_lb.hwlb.read_cl}): Cassandra
 * contacts the first blockFor replicas of the order the snitch returns, and the snitch is not
 * told the level of the read, so k comes from this setting and the replica count.
 */
public enum ReadConsistency
{
    /** One replica. */
    ONE(false),
    /** Two replicas. */
    TWO(false),
    /** Three replicas. */
    THREE(false),
    /** A majority of all replicas: n/2 + 1. */
    QUORUM(false),
    /** A majority of the local datacenter's replicas; only those are planned. */
    LOCAL_QUORUM(true),
    /** One replica of the local datacenter; only those are planned. */
    LOCAL_ONE(true),
    /** Every replica (HWLB then never has a choice). */
    ALL(false);

    /** Whether only the local datacenter's replicas take part (as Cassandra filters them). */
    public final boolean localDcOnly;

    ReadConsistency(boolean localDcOnly)
    {
        this.localDcOnly = localDcOnly;
    }

    /**
     * k: how many of {@code replicas} (the natural replicas in scope, live or not, as
     * Cassandra's blockFor counts them) a read at this level contacts; at least 1.
     */
    public int blockFor(int replicas)
    {
        switch (this)
        {
            case ONE:
            case LOCAL_ONE:
                return 1;
            case TWO:
                return 2;
            case THREE:
                return 3;
            case QUORUM:
            case LOCAL_QUORUM:
                return replicas / 2 + 1;
            case ALL:
            default:
                return Math.max(replicas, 1);
        }
    }

    /** The allowed values, for error messages. */
    public static String allowed()
    {
        return "ONE, TWO, THREE, QUORUM, LOCAL_QUORUM, LOCAL_ONE, ALL";
    }

    /**
     * Parses a level (case-insensitive).
     *
     * @throws IllegalArgumentException naming the bad value and the allowed ones
     */
    public static ReadConsistency parse(String what, String text)
    {
        String t = text == null ? "" : text.trim().toUpperCase(Locale.ROOT);
        for (ReadConsistency cl : values())
            if (cl.name().equals(t))
                return cl;
        throw new IllegalArgumentException(what + " '" + text + "' is not allowed; use one of " + allowed());
    }
}
