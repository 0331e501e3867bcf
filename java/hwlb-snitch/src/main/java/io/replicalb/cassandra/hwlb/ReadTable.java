package io.replicalb.cassandra.hwlb;

import java.util.UUID;

import org.apache.cassandra.cql3.CQLStatement;
import org.apache.cassandra.cql3.statements.ModificationStatement;
import org.apache.cassandra.cql3.statements.SelectStatement;
import org.apache.cassandra.schema.TableId;
import org.apache.cassandra.schema.TableMetadata;

/**
 * Which table the request running on this thread reads, for the snitch, which Cassandra does
 * not tell: {@link HwlbQueryHandler} sets it before a CQL statement runs and clears it after;
 * the coordinator's read path (StorageProxy.read, ReplicaPlans.forRead, the snitch's
 * sortedByProximity) runs synchronously on that thread, so {@link ReplicaRouter} plans the read
 * with that table's hit rates.
 *
 * <p>A table is named by its key: a 32-bit hash of its {@link TableId} (the same on every node
 * of a cluster), never {@link #NONE}. Two tables whose keys collide (about one chance in 4
 * billion per pair) share rates, which only makes their balance node-wide-like.
 */
public final class ReadTable
{
    /** The key meaning "no table": plan with the node-wide rates. */
    public static final int NONE = 0;

    /** Per thread: the key of the table being read (a mutable cell, set without allocating). */
    private static final ThreadLocal<int[]> CURRENT = ThreadLocal.withInitial(() -> new int[1]);

    private ReadTable()
    {
    }

    /** The key of the table the current thread's request reads, or {@link #NONE}. */
    public static int current()
    {
        return CURRENT.get()[0];
    }

    /** Records that the current thread's request reads table {@code key} ({@link #NONE}: none). */
    public static void set(int key)
    {
        CURRENT.get()[0] = key;
    }

    /** Forgets the current thread's table. */
    public static void clear()
    {
        CURRENT.get()[0] = NONE;
    }

    /** The key of table {@code id}: a hash of its UUID, never {@link #NONE}. */
    public static int key(TableId id)
    {
        UUID u = id.asUUID();
        return key(u.getMostSignificantBits(), u.getLeastSignificantBits());
    }

    /** The key of a table whose id has these bits (the hash {@link #key(TableId)} uses). */
    public static int key(long msb, long lsb)
    {
        long h = msb * 0x9E3779B97F4A7C15L + lsb;
        h ^= h >>> 33;
        h *= 0xFF51AFD7ED558CCDL;
        h ^= h >>> 33;
        int k = (int) (h ^ (h >>> 32));
        return k == NONE ? 1 : k;
    }

    /**
     * The key of the table {@code statement} reads: a SELECT's table, or the table of an
     * INSERT, UPDATE or DELETE (which read before writing for conditions and list operations);
     * {@link #NONE} for any other statement (a batch, DDL, USE...), planned node-wide.
     */
    public static int keyOf(CQLStatement statement)
    {
        TableMetadata t = null;
        if (statement instanceof SelectStatement)
            t = ((SelectStatement) statement).table;
        else if (statement instanceof ModificationStatement)
            t = ((ModificationStatement) statement).metadata;
        return t == null ? NONE : key(t.id);
    }

    /** {@code key} as eight lower-case hex digits (its form in gossip and the tables). */
    public static String hex(int key)
    {
        String s = Integer.toHexString(key);
        return "00000000".substring(s.length()) + s;
    }
}
