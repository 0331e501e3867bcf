package io.replicalb.cassandra.hwlb;

import java.util.Map;

import org.apache.cassandra.locator.InetAddressAndPort;

/**
 * An immutable snapshot of what the coordinator knows of the nodes, read by the request path
 * without a lock: node ids, effective rates (staleness applied; NaN = no plug-in), liveness
 * and datacenter. {@link PeerDirectory} publishes a new one, with a higher {@link #version},
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

    PeerView(long version, int localId, Map<InetAddressAndPort, Integer> ids, double[] effective, boolean[] live, boolean[] localDc,
             boolean[] notUnderstood)
    {
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

    /** The number of ids handed out. */
    public int size()
    {
        return effective.length;
    }
}
