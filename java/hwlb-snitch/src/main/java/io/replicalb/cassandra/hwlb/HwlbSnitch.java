package io.replicalb.cassandra.hwlb;

import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import javax.management.MBeanServer;
import javax.management.ObjectName;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.apache.cassandra.config.DatabaseDescriptor;
import org.apache.cassandra.exceptions.ConfigurationException;
import org.apache.cassandra.gms.ApplicationState;
import org.apache.cassandra.gms.Gossiper;
import org.apache.cassandra.locator.IEndpointSnitch;
import org.apache.cassandra.locator.InetAddressAndPort;
import org.apache.cassandra.locator.Replica;
import org.apache.cassandra.locator.ReplicaCollection;
import org.apache.cassandra.metrics.CassandraMetricsRegistry;
import org.apache.cassandra.metrics.DefaultNameFactory;
import org.apache.cassandra.net.MessagingService;
import org.apache.cassandra.utils.FBUtilities;

/**
 * Heat-weighted load balancing for Cassandra coordinators, as a snitch
 * ({@code endpoint_snitch: io.replicalb.cassandra.hwlb.HwlbSnitch}; {@code dynamic_snitch} may
 * stay on: once started the plug-in puts itself or, for policy {@code dynamic-snitch}, a fresh
 * DynamicEndpointSnitch on the read path, see {@link SnitchInstaller}).
 *
 * <p>Racks, datacenters and everything but the read order come from an inner snitch
 * ({@code replica_lb.hwlb.inner_snitch}). {@link #sortedByProximity} puts first the k replicas
 * drawn from this coordinator's HWLB row, so that every replica sees the same cache misses per
 * second (see {@link ReplicaRouter}); policy {@code unified} (the default) also passes over
 * silent, expired and slow replicas ({@link CoordinatorHealth}); when HWLB is off or steps
 * aside the order is exactly the inner snitch's. Once gossip starts the plug-in publishes its hit rate by gossip, reads the
 * peers', registers the {@code replica_lb} virtual tables, the MBean
 * {@code io.replicalb:type=HwlbSnitch} and its metrics in Cassandra's registry
 * ({@link ReplicaLbMetrics}). Configuration: JVM system properties
 * {@code replica_lb.hwlb.*} ({@link HwlbSettings}).
 */
public class HwlbSnitch implements IEndpointSnitch
{
    private static final Logger logger = LoggerFactory.getLogger(HwlbSnitch.class);
    /** Where the MBean is registered. */
    public static final String MBEAN_NAME = "io.replicalb:type=HwlbSnitch";
    /** How often peers' states are read from the Gossiper, ms (the staleness rule's resolution). */
    public static final long POLL_MS = 100;
    /** How often the metrics of peers and tables that came or went are registered or removed, ms. */
    public static final long METRICS_SYNC_MS = 1000;

    private final HwlbSettings settings;
    private final IEndpointSnitch inner;
    private final InetAddressAndPort local;
    private final HwlbSwitch control;
    private final HwlbCounters counters = new HwlbCounters();
    private final CoordinatorHealth health;
    private final WarmupReads warmup;
    private final PeerDirectory directory;
    private final ReplicaRouter router;
    private final HwlbControl surface;
    private final AtomicBoolean started = new AtomicBoolean();
    private volatile ScheduledExecutorService executor;
    private ReplicaLbMetrics metrics;

    /** The snitch Cassandra constructs: settings from system properties, validated here. */
    public HwlbSnitch()
    {
        this(settingsOrFail(), null, FBUtilities.getBroadcastAddressAndPort());
    }

    /**
     * A snitch with explicit parts (tests, benchmarks).
     *
     * @param settings the configuration
     * @param inner the inner snitch, or null to construct {@code settings.innerSnitch()}
     * @param local this node's broadcast address
     */
    public HwlbSnitch(HwlbSettings settings, IEndpointSnitch inner, InetAddressAndPort local)
    {
        this.settings = settings;
        this.inner = inner != null ? inner : constructInner(settings.innerSnitch());
        this.local = local;
        this.control = new HwlbSwitch(settings.policy(), settings.readCl());
        this.directory = new PeerDirectory(local, settings.staleAfterMs() * 1_000_000L, settings.staleRate(), System.nanoTime());
        this.health = new CoordinatorHealth(settings.rule(), directory.localId());
        this.warmup = new WarmupReads(settings.warmup(), System.nanoTime());
        this.router = new ReplicaRouter(this.inner, local, control, directory, settings.plan(), counters, health, warmup);
        this.surface = new HwlbControl(settings, control, counters, directory, local);
        this.surface.attach(health);
        this.surface.attach(warmup);
        logger.info("HWLB snitch: inner {}, policy {}, read_cl {}, cache {}, tick {} ms, window {} ms, stale after {} ms (rate {}), cap {}, min spread {}, gossip state {}, {}, {}",
                    this.inner.getClass().getName(), settings.policy().label(), settings.readCl(), settings.cache().label(), settings.tickMs(),
                    settings.windowMs(), settings.staleAfterMs(), settings.staleRate(), settings.plan().hitRateCap(),
                    settings.plan().minSpread(), settings.gossipState(), settings.rule(), settings.warmup());
    }

    private static HwlbSettings settingsOrFail()
    {
        try
        {
            return HwlbSettings.fromSystemProperties();
        }
        catch (IllegalArgumentException e)
        {
            throw fail("HWLB snitch: " + e.getMessage(), e);
        }
    }

    private static IEndpointSnitch constructInner(String className)
    {
        Object o;
        try
        {
            o = Class.forName(className).getDeclaredConstructor().newInstance();
        }
        catch (ReflectiveOperationException | LinkageError e)
        {
            Throwable cause = e instanceof java.lang.reflect.InvocationTargetException ? e.getCause() : e;
            throw fail("HWLB snitch: " + HwlbSettings.PREFIX + "inner_snitch '" + className + "' cannot be constructed ("
                       + cause + "); use a snitch class with a public no-argument constructor", cause);
        }
        if (!(o instanceof IEndpointSnitch))
            throw fail("HWLB snitch: " + HwlbSettings.PREFIX + "inner_snitch '" + className + "' is not allowed: it is not an IEndpointSnitch", null);
        return (IEndpointSnitch) o;
    }

    /**
     * An exception Cassandra's snitch construction reports with our message: it rethrows a
     * ConfigurationException found as the cause.
     */
    private static RuntimeException fail(String message, Throwable cause)
    {
        logger.error(message);
        ConfigurationException ce = new ConfigurationException(message);
        if (cause != null)
            ce.initCause(cause);
        return new IllegalStateException(message, ce);
    }

    /** The control surface (tables, MBean). */
    public HwlbControl control()
    {
        return surface;
    }

    /** The request path. */
    public ReplicaRouter router()
    {
        return router;
    }

    /** What is known of the nodes. */
    public PeerDirectory directory()
    {
        return directory;
    }

    /** unified's coordinator rule and its signals. */
    public CoordinatorHealth health()
    {
        return health;
    }

    /** The run-time switch. */
    public HwlbSwitch switchControl()
    {
        return control;
    }

    /**
     * The plug-in's metrics in Cassandra's registry ({@code org.apache.cassandra.metrics:type=ReplicaLb}),
     * made on first use (nothing is registered before {@link ReplicaLbMetrics#sync()}).
     */
    public synchronized ReplicaLbMetrics metrics()
    {
        if (metrics == null)
            metrics = new ReplicaLbMetrics(CassandraMetricsRegistry.Metrics, surface, directory, health, warmup);
        return metrics;
    }

    /** The configuration. */
    public HwlbSettings settings()
    {
        return settings;
    }

    @Override
    public String getRack(InetAddressAndPort endpoint)
    {
        return inner.getRack(endpoint);
    }

    @Override
    public String getLocalRack()
    {
        return inner.getLocalRack();
    }

    @Override
    public String getDatacenter(InetAddressAndPort endpoint)
    {
        return inner.getDatacenter(endpoint);
    }

    @Override
    public String getLocalDatacenter()
    {
        return inner.getLocalDatacenter();
    }

    @Override
    public String getDatacenter(InetSocketAddress endpoint)
    {
        return inner.getDatacenter(endpoint);
    }

    @Override
    public String getDatacenter(Replica replica)
    {
        return inner.getDatacenter(replica);
    }

    @Override
    public <C extends ReplicaCollection<? extends C>> C sortedByProximity(InetAddressAndPort address, C addresses)
    {
        return router.sortedByProximity(address, addresses);
    }

    @Override
    public int compareEndpoints(InetAddressAndPort target, Replica r1, Replica r2)
    {
        return inner.compareEndpoints(target, r1, r2);
    }

    @Override
    public boolean isWorthMergingForRangeQuery(ReplicaCollection<?> merged, ReplicaCollection<?> l1, ReplicaCollection<?> l2)
    {
        return inner.isWorthMergingForRangeQuery(merged, l1, l2);
    }

    @Override
    public boolean validate(Set<String> datacenters, Set<String> racks)
    {
        return inner.validate(datacenters, racks);
    }

    /**
     * Gossip is about to start (the schema is loaded, clients are not served yet): the inner
     * snitch's hook, then the plug-in starts: marker in gossip, subscriber, tick and poll,
     * latency feed and probes, virtual tables, MBean, and the snitch the policy needs on the
     * read path (the DynamicEndpointSnitch Cassandra may have wrapped it in taken out).
     */
    @Override
    public void gossiperStarting()
    {
        inner.gossiperStarting();
        if (!started.compareAndSet(false, true))
            return;
        CacheProbe probe;
        try
        {
            probe = CacheProbe.of(settings.cache());
        }
        catch (IllegalArgumentException e)
        {
            throw fail("HWLB snitch: " + e.getMessage(), e);
        }
        ApplicationState state = ApplicationState.valueOf(settings.gossipState());
        GossipBridge bridge = new GossipBridge(state, directory, inner, local, this::livenessChanged);
        bridge.publish(GossipValue.marker());
        Gossiper.instance.register(bridge);
        WarmupReads.install(warmup, new CassandraWarmup(directory, local));
        long now = System.nanoTime();
        String tableMode = tableMode(probe.kind());
        surface.setTableMode(tableMode);
        TableProbe tables = HwlbControl.PER_TABLE.equals(tableMode) ? TableProbe.rowCache() : TableProbe.NONE;
        LocalRate rate = new LocalRate(settings.tickMs(), settings.windowMs(), probe, tables, settings.maxTables(), bridge::publish, directory, now);
        surface.attach(rate);
        ScheduledExecutorService ex = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "hwlb-tick");
            t.setDaemon(true);
            return t;
        });
        ex.scheduleAtFixedRate(() -> guarded("tick", () -> rate.tick(System.nanoTime())), settings.tickMs(), settings.tickMs(), TimeUnit.MILLISECONDS);
        ex.scheduleWithFixedDelay(() -> guarded("poll", bridge::poll), POLL_MS, POLL_MS, TimeUnit.MILLISECONDS);
        MessagingService.instance().latencySubscribers.subscribe(new LatencyFeed(directory, health, DatabaseDescriptor.getReadRpcTimeout(TimeUnit.NANOSECONDS)));
        HealthProber prober = new HealthProber(directory, health, new CassandraProbes(), counters, settings.rule(), System::nanoTime);
        long probeMs = settings.rule().probeIntervalMs();
        ex.scheduleWithFixedDelay(() -> guarded("probe", prober::tick), probeMs, probeMs, TimeUnit.MILLISECONDS);
        ReplicaLbMetrics m = metrics();
        guarded("metrics", m::sync);
        ex.scheduleWithFixedDelay(() -> guarded("metrics", m::sync), METRICS_SYNC_MS, METRICS_SYNC_MS, TimeUnit.MILLISECONDS);
        executor = ex;
        HwlbTables.register(surface);
        registerMBean();
        CassandraSnitches node = new CassandraSnitches();
        SnitchInstaller installer = new SnitchInstaller(this, inner, node, node);
        control.listen(policy -> guarded("snitch install", () -> installer.apply(policy)));
        logger.info("HWLB snitch started: cache {} measured, rates {}, rate in gossip state {}, virtual keyspace {}, MBean {}, metrics {}:type={}",
                    probe.kind().label(), tableMode, state, HwlbTables.KEYSPACE, MBEAN_NAME, DefaultNameFactory.GROUP_NAME, MetricGroup.TYPE);
    }

    /**
     * Whether reads are planned with their own table's rates ({@link HwlbControl#PER_TABLE}),
     * or node-wide and why: per-table rates need the query handler (which names each read's
     * table), {@code max_tables} above 0 and the row cache measured (Cassandra counts its hits
     * and misses per table; the chunk and key caches have no per-table counts).
     */
    private String tableMode(CacheKind measured)
    {
        if (settings.maxTables() == 0)
            return "node-wide: " + HwlbSettings.PREFIX + "max_tables is 0";
        if (measured != CacheKind.ROW)
            return "node-wide: the " + measured.label() + " cache has no per-table counts (per-table rates need the row cache)";
        boolean hook;
        try
        {
            hook = HwlbQueryHandler.installed();
        }
        catch (RuntimeException | LinkageError e)
        {
            logger.warn("HWLB: cannot tell which query handler Cassandra runs; rates node-wide", e);
            hook = false;
        }
        if (!hook)
            return "node-wide: the query handler is not installed (-Dcassandra.custom_query_handler_class="
                   + HwlbQueryHandler.class.getName() + ")";
        return HwlbControl.PER_TABLE;
    }

    /**
     * A peer went down, or came up ({@code up}: alive again or restarted): unified forgets its
     * signals, and one that came up counts as warming.
     */
    private void livenessChanged(InetAddressAndPort endpoint, boolean up)
    {
        int id = directory.view().id(endpoint);
        if (id < 0)
            return;
        health.reset(id);
        if (up)
            warmup.cameUp(id, System.nanoTime());
    }

    /** unified's warm-up reads. */
    public WarmupReads warmup()
    {
        return warmup;
    }

    private static void guarded(String what, Runnable task)
    {
        try
        {
            task.run();
        }
        catch (Throwable t)
        {
            // A failing tick must not cancel the schedule.
            logger.warn("HWLB {} failed", what, t);
        }
    }

    private void registerMBean()
    {
        try
        {
            MBeanServer server = ManagementFactory.getPlatformMBeanServer();
            ObjectName name = new ObjectName(MBEAN_NAME);
            if (!server.isRegistered(name))
                server.registerMBean(surface, name);
        }
        catch (Exception e)
        {
            logger.warn("HWLB: MBean {} not registered", MBEAN_NAME, e);
        }
    }

    /** Stops the tick and the poll and removes the metrics (tests; a node stops with its JVM). */
    public void stop()
    {
        ScheduledExecutorService ex = executor;
        if (ex != null)
            ex.shutdownNow();
        ReplicaLbMetrics m;
        synchronized (this)
        {
            m = metrics;
        }
        if (m != null)
            m.close();
    }
}
