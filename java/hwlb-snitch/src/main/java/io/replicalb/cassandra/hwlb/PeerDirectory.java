package io.replicalb.cassandra.hwlb;

import io.replicalb.core.hwlb.PeerRates;
import io.replicalb.core.hwlb.PeerState;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.cassandra.locator.InetAddressAndPort;

/**
 * The nodes this coordinator knows: gives each endpoint a small id, keeps their rates in a
 * {@link PeerRates} and their liveness and datacenter, and publishes a {@link PeerView} for the
 * request path. Writers (gossip events, the poll and the tick) are serialised by this object's
 * monitor; readers take {@link #view()}, one volatile read. A new view (a new version) is
 * published only when an effective rate, a liveness, a datacenter or the membership changed,
 * checked on every write and whenever a fresh rate may have turned stale
 * ({@link PeerRates#fixedUntilNs}).
 */
public final class PeerDirectory
{
    private final PeerRates rates;
    private final Map<InetAddressAndPort, Integer> ids = new HashMap<>();
    private final List<InetAddressAndPort> endpoints = new ArrayList<>();
    private boolean[] live = new boolean[0];
    private boolean[] localDc = new boolean[0];
    private boolean[] present = new boolean[0];
    private boolean[] notUnderstood = new boolean[0];
    /** When each node was last heard alive through gossip, ns (Long.MIN_VALUE: never). */
    private long[] heardNs = new long[0];
    private final int localId;
    private volatile PeerView view;
    private long viewVersion;
    private Map<InetAddressAndPort, Integer> publishedIds;
    /** PeerRates' version when the view was last computed. */
    private long ratesVersionSeen = -1;
    /** Until when the view cannot change by ageing alone, ns. */
    private long validUntilNs = Long.MIN_VALUE;
    private boolean dirty = true;

    /**
     * A directory for the coordinator {@code local}: peers not heard from for
     * {@code staleAfterNs} count as {@code staleRate}.
     */
    public PeerDirectory(InetAddressAndPort local, long staleAfterNs, double staleRate, long nowNs)
    {
        this.rates = new PeerRates(staleAfterNs, staleRate);
        this.localId = register(local);
        rates.setLocal(localId);
        live[localId] = true;
        localDc[localId] = true;
        publish(nowNs);
    }

    /** The current snapshot for the request path. */
    public PeerView view()
    {
        return view;
    }

    /** This node's id. */
    public int localId()
    {
        return localId;
    }

    private int register(InetAddressAndPort endpoint)
    {
        Integer id = ids.get(endpoint);
        if (id != null)
            return id;
        int next = endpoints.size();
        ids.put(endpoint, next);
        endpoints.add(endpoint);
        live = Arrays.copyOf(live, next + 1);
        localDc = Arrays.copyOf(localDc, next + 1);
        present = Arrays.copyOf(present, next + 1);
        present[next] = true;
        notUnderstood = Arrays.copyOf(notUnderstood, next + 1);
        heardNs = Arrays.copyOf(heardNs, next + 1);
        heardNs[next] = Long.MIN_VALUE;
        // A node never heard of counts as supported with no rate (0.0) until gossip says more.
        rates.forget(next);
        dirty = true;
        return next;
    }

    private void noteHeard(int id, long atNs)
    {
        if (heardNs[id] == Long.MIN_VALUE || atNs - heardNs[id] > 0)
            heardNs[id] = atNs;
    }

    /** Gives {@code endpoint} an id if it has none (the request path met it first). */
    public synchronized int idOf(InetAddressAndPort endpoint, long nowNs)
    {
        int id = register(endpoint);
        maybePublish(nowNs);
        return id;
    }

    /** The endpoint with id {@code id}. */
    public synchronized InetAddressAndPort endpoint(int id)
    {
        return endpoints.get(id);
    }

    /** Records this node's own (published) rate: never stale. */
    public synchronized void setLocalRate(double rate, long nowNs)
    {
        setLocalRate(GossipValue.Parsed.nodeWide(rate), nowNs);
    }

    /** Records this node's own (published) node-wide and per-table rates: never stale. */
    public synchronized void setLocalRate(GossipValue.Parsed published, long nowNs)
    {
        rates.record(localId, published.rate(), published.tableKeys(), published.tableRates(), nowNs, nowNs);
        maybePublish(nowNs);
    }

    /** Records a peer's rate, heard alive at {@code heardNs}. */
    public synchronized void recordRate(InetAddressAndPort endpoint, double rate, long heardNs, long nowNs)
    {
        recordRate(endpoint, GossipValue.Parsed.nodeWide(rate), heardNs, nowNs);
    }

    /** Records a peer's node-wide and per-table rates, heard alive at {@code heardNs}. */
    public synchronized void recordRate(InetAddressAndPort endpoint, GossipValue.Parsed value, long heardNs, long nowNs)
    {
        int id = register(endpoint);
        present[id] = true;
        noteHeard(id, heardNs);
        rates.record(id, value.rate(), value.tableKeys(), value.tableRates(), heardNs, nowNs);
        maybePublish(nowNs);
    }

    /**
     * What gossip says of a peer: heard alive at {@code heardNs} (its last heartbeat), whether
     * the failure detector calls it alive, whether it runs the plug-in, whether it is in this
     * node's datacenter.
     */
    public synchronized void observe(InetAddressAndPort endpoint, long heardNs, boolean alive, boolean supported, boolean sameDc, long nowNs)
    {
        observe(endpoint, heardNs, alive, supported, false, sameDc, nowNs);
    }

    /**
     * {@link #observe(InetAddressAndPort, long, boolean, boolean, boolean, long)}, and whether
     * the peer's value is one this plug-in does not understand (then its rate is unknown, as
     * for a peer without the plug-in, and HWLB orders fall back to the inner order).
     */
    public synchronized void observe(InetAddressAndPort endpoint, long heardNs, boolean alive, boolean supported, boolean garbled,
                                     boolean sameDc, long nowNs)
    {
        int id = register(endpoint);
        if (id == localId)
            return;
        present[id] = true;
        noteHeard(id, heardNs);
        rates.setSupported(id, supported && !garbled);
        if (notUnderstood[id] != garbled)
        {
            notUnderstood[id] = garbled;
            dirty = true;
        }
        rates.heard(id, heardNs, nowNs);
        rates.setDown(id, !alive);
        if (live[id] != alive || localDc[id] != sameDc)
        {
            live[id] = alive;
            localDc[id] = sameDc;
            dirty = true;
        }
        maybePublish(nowNs);
    }

    /** Forgets a peer's rate (it restarted: its new rate is not known yet). */
    public synchronized void forget(InetAddressAndPort endpoint, long nowNs)
    {
        Integer id = ids.get(endpoint);
        if (id == null || id == localId)
            return;
        rates.forget(id);
        maybePublish(nowNs);
    }

    /** A peer left the cluster or gossip dropped it: forgotten, and no longer alive. */
    public synchronized void remove(InetAddressAndPort endpoint, long nowNs)
    {
        Integer id = ids.get(endpoint);
        if (id == null || id == localId)
            return;
        rates.forget(id);
        rates.setSupported(id, true);
        if (live[id] || present[id])
        {
            live[id] = false;
            present[id] = false;
            dirty = true;
        }
        maybePublish(nowNs);
    }

    /** Re-checks ageing: publishes a new view if a fresh rate turned stale by {@code nowNs}. */
    public synchronized void refresh(long nowNs)
    {
        maybePublish(nowNs);
    }

    /** The endpoints currently present (this node first), for the peers table. */
    public synchronized List<InetAddressAndPort> presentEndpoints()
    {
        List<InetAddressAndPort> out = new ArrayList<>();
        for (int id = 0; id < endpoints.size(); id++)
            if (present[id])
                out.add(endpoints.get(id));
        return out;
    }

    /** One node's row of the peers table, as known at {@code nowNs}. */
    public record PeerInfo(int id, InetAddressAndPort endpoint, PeerState state, double knownRate, double effectiveRate, long ageMs, boolean live)
    {
    }

    /** What is known of every present node at {@code nowNs}. */
    public synchronized List<PeerInfo> describe(long nowNs)
    {
        List<PeerInfo> out = new ArrayList<>();
        for (int id = 0; id < endpoints.size(); id++)
        {
            if (!present[id])
                continue;
            long heard = heardNs[id];
            long ageMs = id == localId ? 0 : heard == Long.MIN_VALUE ? -1 : Math.max(0, (nowNs - heard) / 1_000_000L);
            out.add(new PeerInfo(id, endpoints.get(id), rates.state(id, nowNs), rates.knownRate(id),
                                 rates.effective(id, nowNs), ageMs, live[id]));
        }
        return out;
    }

    /** One node's rate for one table, for the table_rates table. */
    public record TableRateInfo(int tableKey, int id, InetAddressAndPort endpoint, double knownRate, double effectiveRate)
    {
    }

    /**
     * For every table some present node reported a rate for, every present node's rate for it
     * (NaN when it reported none) and the rate plans of that table use, at {@code nowNs}.
     */
    public synchronized List<TableRateInfo> describeTables(long nowNs)
    {
        List<TableRateInfo> out = new ArrayList<>();
        for (int key : tableUnion())
            for (int id = 0; id < endpoints.size(); id++)
                if (present[id])
                    out.add(new TableRateInfo(key, id, endpoints.get(id), rates.knownTableRate(id, key), rates.effective(id, key, nowNs)));
        return out;
    }

    /** The keys of the tables present nodes reported rates for, ascending. */
    private int[] tableUnion()
    {
        java.util.TreeSet<Integer> keys = new java.util.TreeSet<>();
        for (int id = 0; id < endpoints.size(); id++)
            if (present[id])
                for (int key : rates.tableKeys(id))
                    keys.add(key);
        int[] out = new int[keys.size()];
        int i = 0;
        for (int key : keys)
            out[i++] = key;
        return out;
    }

    private void maybePublish(long nowNs)
    {
        if (!dirty && rates.version() == ratesVersionSeen && nowNs - validUntilNs <= 0)
            return;
        publish(nowNs);
    }

    private void publish(long nowNs)
    {
        int n = endpoints.size();
        double[] effective = new double[n];
        long until = Long.MAX_VALUE;
        for (int id = 0; id < n; id++)
        {
            effective[id] = rates.effective(id, nowNs);
            until = Math.min(until, rates.fixedUntilNs(id, nowNs));
        }
        ratesVersionSeen = rates.version();
        validUntilNs = until;
        dirty = false;
        int[] keys = tableUnion();
        double[][] perTable = new double[keys.length][];
        for (int t = 0; t < keys.length; t++)
        {
            perTable[t] = new double[n];
            for (int id = 0; id < n; id++)
                perTable[t][id] = rates.effective(id, keys[t], nowNs);
        }
        PeerView old = view;
        boolean idsChanged = publishedIds == null || publishedIds.size() != ids.size();
        if (!idsChanged && old != null && sameDoubles(old.rates(-1), effective) && sameTables(old, keys, perTable) && sameFlags(old))
            return;
        if (idsChanged)
            publishedIds = Map.copyOf(ids);
        view = new PeerView(++viewVersion, localId, publishedIds, effective, live.clone(), localDc.clone(), notUnderstood.clone(), keys, perTable);
    }

    private static boolean sameDoubles(double[] old, double[] now)
    {
        if (old.length != now.length)
            return false;
        for (int i = 0; i < now.length; i++)
            if (Double.compare(old[i], now[i]) != 0)
                return false;
        return true;
    }

    private static boolean sameTables(PeerView old, int[] keys, double[][] perTable)
    {
        if (old.tables() != keys.length)
            return false;
        for (int t = 0; t < keys.length; t++)
        {
            int slot = old.tableSlot(keys[t]);
            if (slot < 0 || !sameDoubles(old.rates(slot), perTable[t]))
                return false;
        }
        return true;
    }

    private boolean sameFlags(PeerView old)
    {
        for (int i = 0; i < live.length; i++)
            if (old.live(i) != live[i] || old.localDc(i) != localDc[i] || old.notUnderstood(i) != notUnderstood[i])
                return false;
        return true;
    }
}
