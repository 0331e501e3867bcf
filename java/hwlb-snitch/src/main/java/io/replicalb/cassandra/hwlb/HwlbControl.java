package io.replicalb.cassandra.hwlb;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.cassandra.locator.InetAddressAndPort;

/**
 * The plug-in's control surface shared by the virtual tables and the MBean: the switch, the
 * counters, what is known of the peers, and the writable settings with their validation.
 */
public final class HwlbControl implements HwlbControlMBean
{
    /** Settings that can be written at run time. */
    public static final List<String> WRITABLE = List.of("policy", "enabled", "read_cl", "reset_counters");

    private final HwlbSettings settings;
    private final HwlbSwitch control;
    private final HwlbCounters counters;
    private final PeerDirectory directory;
    private final InetAddressAndPort local;
    private final AtomicLong resets = new AtomicLong();
    private volatile LocalRate localRate;
    private volatile CoordinatorHealth health;
    private volatile WarmupReads warmup;
    private volatile String tableMode = TABLE_MODE_NOT_STARTED;

    /** {@link #getTableRates()} when per-table rates are on. */
    public static final String PER_TABLE = "per-table";
    private static final String TABLE_MODE_NOT_STARTED = "node-wide: the plug-in has not started";

    /** The control surface over the given parts ({@link #attach} adds the local rate once running). */
    public HwlbControl(HwlbSettings settings, HwlbSwitch control, HwlbCounters counters, PeerDirectory directory, InetAddressAndPort local)
    {
        this.settings = settings;
        this.control = control;
        this.counters = counters;
        this.directory = directory;
        this.local = local;
    }

    /** Attaches the local rate (it exists once the node is up). */
    public void attach(LocalRate rate)
    {
        this.localRate = rate;
    }

    /** Attaches unified's coordinator signals (shown in the peers table). */
    public void attach(CoordinatorHealth h)
    {
        this.health = h;
    }

    /** Attaches unified's warm-up reads (counted in the status table). */
    public void attach(WarmupReads w)
    {
        this.warmup = w;
    }

    /** Records whether reads are planned per table ({@link #PER_TABLE}) or node-wide, and why. */
    public void setTableMode(String mode)
    {
        this.tableMode = mode;
    }

    @Override
    public String getTableRates()
    {
        return tableMode;
    }

    @Override
    public long getTableReads()
    {
        return counters.totals().get(HwlbCounters.TABLE_RATES);
    }

    /** This node's per-table measurements, hottest first (empty before start or when off). */
    public List<TableRates.Info> localTables()
    {
        LocalRate r = localRate;
        return r == null ? List.of() : r.tables();
    }

    /** Every node's rate for every table some node reported, now. */
    public List<PeerDirectory.TableRateInfo> tableRates()
    {
        return directory.describeTables(System.nanoTime());
    }

    /** The name of table {@code key} if this node measures it, else its key in hex. */
    public String tableName(int key)
    {
        for (TableRates.Info t : localTables())
            if (t.key() == key)
                return t.name();
        return ReadTable.hex(key);
    }

    /** Unified's coordinator signals, or null. */
    public CoordinatorHealth health()
    {
        return health;
    }

    /** This node's address. */
    public InetAddressAndPort localEndpoint()
    {
        return local;
    }

    /** This node's address as shown in the tables (no port). */
    public String nodeName()
    {
        return name(local);
    }

    /** An address as shown in the tables: the IP alone. */
    public static String name(InetAddressAndPort endpoint)
    {
        return endpoint.getHostAddress(false);
    }

    /** The counters. */
    public HwlbCounters counters()
    {
        return counters;
    }

    /** What is known of each present node now. */
    public List<PeerDirectory.PeerInfo> peers()
    {
        return directory.describe(System.nanoTime());
    }

    /** Every setting and its current value, for the settings table. */
    public Map<String, String> settingsNow()
    {
        Map<String, String> m = new LinkedHashMap<>(settings.asMap());
        HwlbSwitch.Mode mode = control.mode();
        m.put("policy", mode.policy().label());
        m.put("enabled", Boolean.toString(mode.enabled()));
        m.put("read_cl", mode.readCl().name());
        m.put("cache", getCache());
        m.put("reset_counters", Long.toString(resets.get()));
        return m;
    }

    /**
     * Writes setting {@code name}.
     *
     * @throws IllegalArgumentException naming the bad name or value and what is allowed
     */
    public void write(String name, String value)
    {
        switch (name)
        {
            case "policy":
                control.setPolicy(CoordinatorPolicy.parse("policy", value));
                return;
            case "enabled":
                control.setEnabled(HwlbProperties.parseBool("enabled", value));
                return;
            case "read_cl":
                control.setReadCl(ReadConsistency.parse("read_cl", value));
                return;
            case "reset_counters":
                resetCounters();
                return;
            default:
                if (settings.asMap().containsKey(name))
                    throw new IllegalArgumentException("setting '" + name + "' is read-only (set it with -D" + HwlbSettings.PREFIX + name
                                                       + " at start); writable: " + String.join(", ", WRITABLE));
                throw new IllegalArgumentException("no setting '" + name + "'; writable: " + String.join(", ", WRITABLE));
        }
    }

    @Override
    public boolean isEnabled()
    {
        return control.mode().enabled();
    }

    @Override
    public void setEnabled(boolean enabled)
    {
        control.setEnabled(enabled);
    }

    @Override
    public String getPolicy()
    {
        return control.mode().policy().label();
    }

    @Override
    public void setPolicy(String policy)
    {
        control.setPolicy(CoordinatorPolicy.parse("policy", policy));
    }

    @Override
    public long getFallbacks()
    {
        return counters.totals().get(HwlbCounters.FALLBACKS);
    }

    @Override
    public long getPassedOver()
    {
        return counters.totals().get(HwlbCounters.PASSED_OVER);
    }

    @Override
    public long getProbes()
    {
        return counters.probes();
    }

    @Override
    public long getColdLeftOut()
    {
        return counters.totals().get(HwlbCounters.COLD_LEFT_OUT);
    }

    @Override
    public long getWarmupReads()
    {
        return ofWarmup(WarmupReads::sent);
    }

    @Override
    public long getWarmupSkipped()
    {
        return ofWarmup(WarmupReads::skippedBusy);
    }

    @Override
    public long getWarmupFailures()
    {
        return ofWarmup(WarmupReads::failures);
    }

    /** A warm-up counter, 0 before the warm-up is attached. */
    private long ofWarmup(java.util.function.ToLongFunction<WarmupReads> counter)
    {
        WarmupReads w = warmup;
        return w == null ? 0L : counter.applyAsLong(w);
    }

    @Override
    public String getReadCl()
    {
        return control.mode().readCl().name();
    }

    @Override
    public void setReadCl(String readCl)
    {
        control.setReadCl(ReadConsistency.parse("read_cl", readCl));
    }

    @Override
    public String getCache()
    {
        LocalRate r = localRate;
        return r == null ? settings.cache().label() : r.cache().label();
    }

    @Override
    public double getHitRate()
    {
        LocalRate r = localRate;
        return r == null ? 0.0 : r.hitRate();
    }

    @Override
    public double getPublishedRate()
    {
        LocalRate r = localRate;
        return r == null ? Double.NaN : r.publishedRate();
    }

    @Override
    public long getCacheHits()
    {
        LocalRate r = localRate;
        return r == null ? 0 : r.cacheHits();
    }

    @Override
    public long getCacheMisses()
    {
        LocalRate r = localRate;
        return r == null ? 0 : r.cacheMisses();
    }

    @Override
    public long getReadsCoordinated()
    {
        return counters.totals().get(HwlbCounters.COORDINATED);
    }

    @Override
    public long getLocalReads()
    {
        return counters.totals().get(HwlbCounters.LOCAL_READS);
    }

    @Override
    public long getRemoteReads()
    {
        return counters.totals().get(HwlbCounters.REMOTE_READS);
    }

    @Override
    public long getDraws()
    {
        return counters.totals().get(HwlbCounters.DRAWS);
    }

    @Override
    public long getSteppedAside()
    {
        return counters.totals().get(HwlbCounters.STEPPED_ASIDE);
    }

    @Override
    public long getPlanRecomputes()
    {
        return counters.totals().planRecomputes();
    }

    @Override
    public void resetCounters()
    {
        counters.resetPeers();
        resets.incrementAndGet();
    }
}
