package io.replicalb.cassandra.hwlb;

import java.util.HashMap;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.ToDoubleFunction;

import com.codahale.metrics.Gauge;

import org.apache.cassandra.locator.InetAddressAndPort;
import org.apache.cassandra.metrics.CassandraMetricsRegistry;

/**
 * The plug-in's decisions in Cassandra's own metrics registry
 * ({@code org.apache.cassandra.metrics:type=ReplicaLb,...}, see {@link MetricGroup}): node-wide
 * (no scope) the counters of the MBean {@code io.replicalb:type=HwlbSnitch}; per peer (scope: its
 * address and port as Cassandra's {@code Connection} metrics spell it, e.g.
 * {@code 127.0.0.22_7000}) its reads, share, effective rate, passed-over counts by
 * {@link PassOverReason} and warm-up reads; per table (scope {@code keyspace.table}) its rates.
 *
 * <p>Every metric is a gauge over a count the plug-in keeps anyway ({@link HwlbCounters},
 * {@link CoordinatorHealth}, {@link WarmupReads}, {@link PeerDirectory}, {@link LocalRate}): the
 * request path does nothing more for them. Peers and tables come and go: {@link #sync()} (off
 * the request path, on the plug-in's tick thread) registers the ones first seen and removes the
 * ones gone; {@link #close()} removes everything.
 */
public final class ReplicaLbMetrics
{
    private final CassandraMetricsRegistry registry;
    private final HwlbControl surface;
    private final HwlbCounters counters;
    private final PeerDirectory directory;
    private final CoordinatorHealth health;
    private final WarmupReads warmup;
    private MetricGroup node;
    private final Map<InetAddressAndPort, MetricGroup> peers = new HashMap<>();
    private final Map<String, MetricGroup> tables = new HashMap<>();
    /** This node's tables by name as of the last sync (read by the table gauges). */
    private volatile Map<String, TableRates.Info> tableInfo = Map.of();
    private boolean closed;

    /**
     * The metrics of the plug-in made of these parts, to be registered in {@code registry}
     * (Cassandra's {@link CassandraMetricsRegistry#Metrics}) by {@link #sync()}.
     */
    public ReplicaLbMetrics(CassandraMetricsRegistry registry, HwlbControl surface, PeerDirectory directory, CoordinatorHealth health,
                            WarmupReads warmup)
    {
        this.registry = registry;
        this.surface = surface;
        this.counters = surface.counters();
        this.directory = directory;
        this.health = health;
        this.warmup = warmup;
    }

    /** The scope of peer {@code endpoint}'s metrics: address and port, ':' replaced as Cassandra's own per-peer metrics do. */
    public static String scope(InetAddressAndPort endpoint)
    {
        return endpoint.getHostAddressAndPortForJMX();
    }

    /**
     * Registers the node-wide metrics (once), and those of the peers and tables first seen since
     * the last call; removes those of peers no longer present and tables no longer measured.
     * Does nothing once closed.
     */
    public synchronized void sync()
    {
        if (closed)
            return;
        if (node == null)
            node = nodeMetrics();
        syncPeers();
        syncTables();
    }

    /** Removes every metric registered (the plug-in stops); later syncs do nothing. */
    public synchronized void close()
    {
        closed = true;
        if (node != null)
            node.remove();
        node = null;
        peers.values().forEach(MetricGroup::remove);
        peers.clear();
        tables.values().forEach(MetricGroup::remove);
        tables.clear();
    }

    private void syncPeers()
    {
        PeerView view = directory.view();
        Set<InetAddressAndPort> present = new HashSet<>(directory.presentEndpoints());
        for (InetAddressAndPort endpoint : present)
        {
            int id = view.id(endpoint);
            if (id >= 0 && !peers.containsKey(endpoint))
                peers.put(endpoint, peerMetrics(endpoint, id));
        }
        removeGone(peers, present);
    }

    private void syncTables()
    {
        Map<String, TableRates.Info> now = new HashMap<>();
        for (TableRates.Info t : surface.localTables())
            now.put(t.name(), t);
        tableInfo = Map.copyOf(now);
        for (String name : now.keySet())
            if (!tables.containsKey(name))
                tables.put(name, tableMetrics(name));
        removeGone(tables, now.keySet());
    }

    private static <K> void removeGone(Map<K, MetricGroup> registered, Set<K> present)
    {
        for (Iterator<Map.Entry<K, MetricGroup>> it = registered.entrySet().iterator(); it.hasNext(); )
        {
            Map.Entry<K, MetricGroup> e = it.next();
            if (!present.contains(e.getKey()))
            {
                e.getValue().remove();
                it.remove();
            }
        }
    }

    /** The node-wide metrics: the MBean's counters and rates, same names. */
    private MetricGroup nodeMetrics()
    {
        MetricGroup g = new MetricGroup(registry, null);
        nodeCounter(g, "ReadsCoordinated", HwlbCounters.COORDINATED);
        nodeCounter(g, "LocalReads", HwlbCounters.LOCAL_READS);
        nodeCounter(g, "RemoteReads", HwlbCounters.REMOTE_READS);
        nodeCounter(g, "Draws", HwlbCounters.DRAWS);
        nodeCounter(g, "SteppedAside", HwlbCounters.STEPPED_ASIDE);
        nodeCounter(g, "Fallbacks", HwlbCounters.FALLBACKS);
        nodeCounter(g, "PassedOver", HwlbCounters.PASSED_OVER);
        nodeCounter(g, "TableReads", HwlbCounters.TABLE_RATES);
        nodeCounter(g, "ColdLeftOut", HwlbCounters.COLD_LEFT_OUT);
        nodeCounter(g, "GaveWay", HwlbCounters.GAVE_WAY);
        g.gauge("PlanRecomputes", (Gauge<Long>) surface::getPlanRecomputes);
        g.gauge("Probes", (Gauge<Long>) counters::probes);
        g.gauge("WarmupReads", (Gauge<Long>) warmup::sent);
        g.gauge("WarmupSkipped", (Gauge<Long>) warmup::skippedBusy);
        g.gauge("WarmupFailures", (Gauge<Long>) warmup::failures);
        g.gauge("HitRate", (Gauge<Double>) surface::getHitRate);
        g.gauge("PublishedRate", (Gauge<Double>) surface::getPublishedRate);
        return g;
    }

    private void nodeCounter(MetricGroup g, String name, int which)
    {
        g.gauge(name, (Gauge<Long>) () -> counters.node(which));
    }

    /** Peer {@code endpoint}'s (node id {@code id}) metrics. */
    private MetricGroup peerMetrics(InetAddressAndPort endpoint, int id)
    {
        MetricGroup g = new MetricGroup(registry, scope(endpoint));
        g.gauge("FirstK", (Gauge<Long>) () -> counters.firstKSinceStart(id));
        g.gauge("Chosen", (Gauge<Long>) () -> counters.chosenSinceStart(id));
        g.gauge("ReadShare", (Gauge<Double>) () -> counters.firstKShare(id));
        g.gauge("EffectiveRate", (Gauge<Double>) () -> effectiveRate(id));
        for (PassOverReason why : PassOverReason.values())
            g.gauge("PassedOver" + why.label(), (Gauge<Long>) () -> health.passedOverCount(id, why));
        g.gauge("LastResort", (Gauge<Long>) () -> health.lastResortCount(id));
        g.gauge("WarmupReadsSent", (Gauge<Long>) () -> warmup.sentTo(id));
        return g;
    }

    private double effectiveRate(int id)
    {
        PeerView view = directory.view();
        return id < view.size() ? view.effective(id) : Double.NaN;
    }

    /** Table {@code name}'s (keyspace.table) metrics, read from the last sync's measurements. */
    private MetricGroup tableMetrics(String name)
    {
        MetricGroup g = new MetricGroup(registry, name);
        g.gauge("TableHitRate", (Gauge<Double>) () -> ofTable(name, TableRates.Info::hitRate));
        g.gauge("TablePublishedRate", (Gauge<Double>) () -> ofTable(name, TableRates.Info::publishedRate));
        g.gauge("TableReadsPerSecond", (Gauge<Double>) () -> ofTable(name, TableRates.Info::readsPerS));
        return g;
    }

    private double ofTable(String name, ToDoubleFunction<TableRates.Info> value)
    {
        TableRates.Info t = tableInfo.get(name);
        return t == null ? Double.NaN : value.applyAsDouble(t);
    }

    /** The scopes of the peers and tables registered now (tests, diagnostics). */
    public synchronized List<String> scopes()
    {
        List<String> out = new ArrayList<>();
        for (InetAddressAndPort endpoint : peers.keySet())
            out.add(scope(endpoint));
        out.addAll(tables.keySet());
        return out;
    }
}
