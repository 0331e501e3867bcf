package io.replicalb.core.hwlb;

import java.util.Arrays;

/**
 * The coordinator's table of nodes' hit rates with the published rules (a port of
 * {@code crates/policy/src/hwlb/peers.rs}, nodes indexed by small integer ids):
 * <ul>
 * <li>a rate whose peer was last heard from more than {@code staleAfterNs} ago, or that the
 *     failure detector calls down, counts as {@code staleRate} (0.95), so the peer gets traffic;</li>
 * <li>a peer with no known rate (just restarted) counts as 0.0;</li>
 * <li>a dropped or removed peer is forgotten (back to "no known rate");</li>
 * <li>a peer without the plug-in is unsupported: {@link #effective} is NaN and HWLB steps aside;</li>
 * <li>the local node's rate is always live;</li>
 * <li>a node may also report per-table rates ({@link #record(int, double, int[], double[], long, long)}):
 *     for a table it reported, a fresh node counts with the table's rate, for any other table
 *     with its node-wide rate; the rules above (stale, unknown, unsupported) apply to every
 *     table alike.</li>
 * </ul>
 * In Cassandra a rate is republished only on change, so its age is the time since the peer was
 * last heard alive through gossip (its heartbeat, {@link #heard}), not since its publication.
 * Not thread-safe: its owner serialises the writers (the plug-in's {@code PeerDirectory}, the client policy {@code hwlb-client}'s caller).
 */
public final class PeerRates
{
    private static final byte NOTHING = 0;
    private static final byte UNSUPPORTED = 1;
    private static final byte RATE = 2;

    private final long staleAfterNs;
    private final double staleRate;
    private byte[] kind = new byte[0];
    private double[] rate = new double[0];
    private long[] heardNs = new long[0];
    private boolean[] down = new boolean[0];
    private static final int[] NO_KEYS = new int[0];
    private static final double[] NO_RATES = new double[0];
    /** Per node: the keys of the tables it reported rates for, and those rates. */
    private int[][] tableKeys = new int[0][];
    private double[][] tableRates = new double[0][];
    private int local = -1;
    /** Bumped whenever an effective rate may have changed other than by ageing. */
    private long version;

    /** An empty table: rates older than {@code staleAfterNs} count as {@code staleRate}. */
    public PeerRates(long staleAfterNs, double staleRate)
    {
        if (staleAfterNs <= 0)
            throw new IllegalArgumentException("stale_after must be positive: " + staleAfterNs + " ns");
        if (!(staleRate >= 0.0 && staleRate <= 1.0))
            throw new IllegalArgumentException("stale_rate " + staleRate + ": must be in [0, 1]");
        this.staleAfterNs = staleAfterNs;
        this.staleRate = staleRate;
    }

    private void ensure(int id)
    {
        if (id < 0)
            throw new IllegalArgumentException("node id " + id);
        if (id >= kind.length)
        {
            int size = Math.max(id + 1, kind.length * 2);
            kind = Arrays.copyOf(kind, size);
            rate = Arrays.copyOf(rate, size);
            heardNs = Arrays.copyOf(heardNs, size);
            down = Arrays.copyOf(down, size);
            int from = tableKeys.length;
            tableKeys = Arrays.copyOf(tableKeys, size);
            tableRates = Arrays.copyOf(tableRates, size);
            for (int i = from; i < size; i++)
            {
                tableKeys[i] = NO_KEYS;
                tableRates[i] = NO_RATES;
            }
        }
    }

    /**
     * Records {@code hitRate} reported by {@code id}, which was heard alive at {@code heardNs}
     * ({@code nowNs} is the present). Rates outside [0, 1] or NaN are ignored: a peer's bad
     * value must not poison the plan; so are rates of an unsupported peer.
     */
    public void record(int id, double hitRate, long heardNs, long nowNs)
    {
        record(id, hitRate, NO_KEYS, NO_RATES, heardNs, nowNs);
    }

    /**
     * Records the node-wide {@code hitRate} and the per-table rates ({@code keys[i]},
     * {@code rates[i]}; they replace the ones reported before) of {@code id}, heard alive at
     * {@code heardNs}. Ignored like {@link #record(int, double, long, long)}; a table rate
     * outside [0, 1] is left out.
     */
    public void record(int id, double hitRate, int[] keys, double[] rates, long heardNs, long nowNs)
    {
        if (!(hitRate >= 0.0 && hitRate <= 1.0))
            return;
        ensure(id);
        if (kind[id] == UNSUPPORTED)
            return;
        double before = effective(id, nowNs);
        byte kindBefore = kind[id];
        kind[id] = RATE;
        rate[id] = hitRate;
        this.heardNs[id] = heardNs;
        int[] k = keys.length == 0 ? NO_KEYS : keys.clone();
        double[] r = rates.length == 0 ? NO_RATES : rates.clone();
        for (int i = 0; i < r.length; i++)
            if (!(r[i] >= 0.0 && r[i] <= 1.0))
                r[i] = hitRate;
        boolean tablesChanged = !Arrays.equals(k, tableKeys[id]) || !Arrays.equals(r, tableRates[id]);
        tableKeys[id] = k;
        tableRates[id] = r;
        if (kindBefore != RATE || tablesChanged || Double.compare(before, effective(id, nowNs)) != 0)
            version++;
    }

    /** The peer {@code id} was heard alive (a newer heartbeat) at {@code heardNs}. */
    public void heard(int id, long heardNs, long nowNs)
    {
        ensure(id);
        if (kind[id] != RATE || heardNs <= this.heardNs[id])
            return;
        double before = effective(id, nowNs);
        this.heardNs[id] = heardNs;
        if (Double.compare(before, effective(id, nowNs)) != 0)
            version++;
    }

    /** Whether the failure detector calls {@code id} down (its rate then counts as stale). */
    public void setDown(int id, boolean isDown)
    {
        ensure(id);
        if (down[id] != isDown)
        {
            down[id] = isDown;
            if (kind[id] == RATE && id != local)
                version++;
        }
    }

    /** Declares which node runs this coordinator (its rate is never stale). */
    public void setLocal(int id)
    {
        ensure(id);
        if (local != id)
        {
            local = id;
            version++;
        }
    }

    /** Forgets what is known of {@code id}'s rate (it was removed, or it restarted). */
    public void forget(int id)
    {
        ensure(id);
        if (kind[id] == RATE)
        {
            kind[id] = NOTHING;
            version++;
        }
        tableKeys[id] = NO_KEYS;
        tableRates[id] = NO_RATES;
    }

    /** Marks whether {@code id} reports rates at all (runs the plug-in). */
    public void setSupported(int id, boolean supported)
    {
        ensure(id);
        byte next = !supported ? UNSUPPORTED : kind[id] == UNSUPPORTED ? NOTHING : kind[id];
        if (next != kind[id])
        {
            kind[id] = next;
            version++;
        }
    }

    /** Changes whenever an effective rate may have changed other than by ageing. */
    public long version()
    {
        return version;
    }

    /**
     * Until when {@code id}'s effective rate cannot change by ageing alone: the moment a fresh
     * peer rate turns stale; {@code Long.MAX_VALUE} for the local node, unknown peers and rates
     * already stale (only news can change those, and news bumps the version).
     */
    public long fixedUntilNs(int id, long nowNs)
    {
        if (id < 0 || id >= kind.length || kind[id] != RATE || id == local || down[id])
            return Long.MAX_VALUE;
        long turnsStaleNs = saturatingAdd(heardNs[id], staleAfterNs);
        return nowNs - turnsStaleNs <= 0 ? turnsStaleNs : Long.MAX_VALUE;
    }

    /** The rate to use for {@code id} in a request at {@code nowNs}; NaN if it reports no rates. */
    public double effective(int id, long nowNs)
    {
        if (id < 0 || id >= kind.length)
            return 0.0;
        switch (kind[id])
        {
            case UNSUPPORTED:
                return Double.NaN;
            case RATE:
                return isStale(id, nowNs) ? staleRate : rate[id];
            default:
                return 0.0;
        }
    }

    /**
     * The rate to use for {@code id} when planning a read of table {@code tableKey}: the
     * table's rate when {@code id} reported one and its rate counts as fresh, else
     * {@link #effective(int, long)}.
     */
    public double effective(int id, int tableKey, long nowNs)
    {
        if (id < 0 || id >= kind.length || kind[id] != RATE || isStale(id, nowNs))
            return effective(id, nowNs);
        double t = knownTableRate(id, tableKey);
        return Double.isNaN(t) ? rate[id] : t;
    }

    /** The rate {@code id} reported for table {@code tableKey}, NaN if none. */
    public double knownTableRate(int id, int tableKey)
    {
        if (id < 0 || id >= kind.length || kind[id] != RATE)
            return Double.NaN;
        int[] keys = tableKeys[id];
        for (int i = 0; i < keys.length; i++)
            if (keys[i] == tableKey)
                return tableRates[id][i];
        return Double.NaN;
    }

    /** The keys of the tables {@code id} reported rates for (do not modify). */
    public int[] tableKeys(int id)
    {
        return id >= 0 && id < kind.length && kind[id] == RATE ? tableKeys[id] : NO_KEYS;
    }

    private boolean isStale(int id, long nowNs)
    {
        return id != local && (down[id] || nowNs - heardNs[id] > staleAfterNs);
    }

    /** What is known of {@code id} at {@code nowNs}, for the peers table. */
    public PeerState state(int id, long nowNs)
    {
        if (id == local)
            return PeerState.LOCAL;
        if (id < 0 || id >= kind.length)
            return PeerState.UNKNOWN;
        switch (kind[id])
        {
            case UNSUPPORTED:
                return PeerState.UNSUPPORTED;
            case RATE:
                return isStale(id, nowNs) ? PeerState.STALE : PeerState.RATE;
            default:
                return PeerState.UNKNOWN;
        }
    }

    /** The last rate heard from {@code id} (before the staleness rules), NaN if none. */
    public double knownRate(int id)
    {
        return id >= 0 && id < kind.length && kind[id] == RATE ? rate[id] : Double.NaN;
    }

    /** When {@code id} was last heard alive with a rate, ns, or {@code Long.MIN_VALUE} if never. */
    public long heardNs(int id)
    {
        return id >= 0 && id < kind.length && kind[id] == RATE ? heardNs[id] : Long.MIN_VALUE;
    }

    /** Whether {@code id} is marked down. */
    public boolean isDown(int id)
    {
        return id >= 0 && id < down.length && down[id];
    }

    private static long saturatingAdd(long a, long b)
    {
        long r = a + b;
        return ((a ^ r) & (b ^ r)) < 0 ? Long.MAX_VALUE : r;
    }
}
