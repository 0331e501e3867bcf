package io.replicalb.cassandra.hwlb;

import java.util.Map;

import org.apache.cassandra.locator.InetAddressAndPort;

/**
 * An immutable snapshot of what the coordinator knows of the nodes, read by the request path
 * without a lock: node ids, effective rates (staleness applied; NaN = no plug-in), liveness
 * and datacenter, and per table the effective rates a read of that table is planned with
 * ({@link #tableSlot}: only tables some node reported a rate for; any other table is planned
 * with the node-wide rates). {@link PeerDirectory} publishes a new one, with a higher {@link #version},
 * whenever anything a plan depends on changed.
 */
public final class PeerView
{
    /** Changes with every published change; a cached plan checked at this version still holds. */
    public final long version;
    /** This node's id. */
    public final int localId;
    private final Map<InetAddressAndPort, Integer> ids;
    private final double[] effective;
    private final boolean[] live;
    private final boolean[] localDc;
    private final boolean[] notUnderstood;
    /** Open addressing over table keys (ReadTable.NONE: an empty slot); a power of two long. */
    private final int[] tableKeys;
    /** Per slot of {@link #tableKeys}: the effective rate of every node for that table. */
    private final double[][] tableEffective;
    private final int tableCount;

    PeerView(long version, int localId, Map<InetAddressAndPort, Integer> ids, double[] effective, boolean[] live, boolean[] localDc,
             boolean[] notUnderstood)
    {
        this(version, localId, ids, effective, live, localDc, notUnderstood, new int[0], new double[0][]);
    }

    /**
     * A view with per-table rates: {@code keys[t]} (distinct, not ReadTable.NONE) has
     * effective rates {@code perTable[t]} (one per node id).
     */
    PeerView(long version, int localId, Map<InetAddressAndPort, Integer> ids, double[] effective, boolean[] live, boolean[] localDc,
             boolean[] notUnderstood, int[] keys, double[][] perTable)
    {
        int capacity = 2;
        while (capacity < keys.length * 2)
            capacity *= 2;
        this.tableKeys = new int[capacity];
        this.tableEffective = new double[capacity][];
        for (int t = 0; t < keys.length; t++)
        {
            int i = mix(keys[t]) & (capacity - 1);
            while (tableKeys[i] != ReadTable.NONE)
                i = (i + 1) & (capacity - 1);
            tableKeys[i] = keys[t];
            tableEffective[i] = perTable[t];
        }
        this.tableCount = keys.length;
        this.notUnderstood = notUnderstood;
        this.version = version;
        this.localId = localId;
        this.ids = ids;
        this.effective = effective;
        this.live = live;
        this.localDc = localDc;
    }

    /** The id of {@code endpoint}, or -1 when it was never seen. */
    public int id(InetAddressAndPort endpoint)
    {
        Integer id = ids.get(endpoint);
        return id == null ? -1 : id;
    }

    /** The effective rate of node {@code id} (NaN when it runs without the plug-in). */
    public double effective(int id)
    {
        return effective[id];
    }

    /** Whether node {@code id} is alive as far as the failure detector knows. */
    public boolean live(int id)
    {
        return live[id];
    }

    /** Whether node {@code id} is in this node's datacenter. */
    public boolean localDc(int id)
    {
        return localDc[id];
    }

    /** Whether node {@code id} gossips a value this plug-in does not understand (its rate counts as unknown). */
    public boolean notUnderstood(int id)
    {
        return notUnderstood[id];
    }

    private static int mix(int key)
    {
        return key ^ (key >>> 16);
    }

    /**
     * The slot of table {@code key}'s rates, or -1 when no node reported a rate for it (or
     * {@code key} is ReadTable.NONE): plan with the node-wide rates. No allocation.
     */
    public int tableSlot(int key)
    {
        if (key == ReadTable.NONE || tableCount == 0)
            return -1;
        int mask = tableKeys.length - 1;
        int i = mix(key) & mask;
        while (true)
        {
            int k = tableKeys[i];
            if (k == key)
                return i;
            if (k == ReadTable.NONE)
                return -1;
            i = (i + 1) & mask;
        }
    }

    /** The effective rates (by node id) for the table in slot {@code slot}; -1: the node-wide ones. Do not modify. */
    double[] rates(int slot)
    {
        return slot < 0 ? effective : tableEffective[slot];
    }

    /** The table key in slot {@code slot} ({@link #tableSlot}), or ReadTable.NONE for -1. */
    public int tableKey(int slot)
    {
        return slot < 0 ? ReadTable.NONE : tableKeys[slot];
    }

    /** How many tables have rates of their own. */
    public int tables()
    {
        return tableCount;
    }

    /** The number of ids handed out. */
    public int size()
    {
        return effective.length;
    }
}
