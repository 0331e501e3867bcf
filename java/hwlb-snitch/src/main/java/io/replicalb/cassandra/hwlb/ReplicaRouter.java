package io.replicalb.cassandra.hwlb;

import io.replicalb.core.hwlb.PlanConfig;
import io.replicalb.core.hwlb.Warmup;

import java.lang.reflect.Method;
import java.util.Comparator;
import java.util.concurrent.ThreadLocalRandom;

import org.apache.cassandra.locator.AbstractEndpointSnitch;
import org.apache.cassandra.locator.IEndpointSnitch;
import org.apache.cassandra.locator.InetAddressAndPort;
import org.apache.cassandra.locator.Replica;
import org.apache.cassandra.locator.ReplicaCollection;
import org.apache.cassandra.locator.SimpleSnitch;

/**
 * The request path: orders a read's replicas so that the first k (the ones Cassandra contacts)
 * are drawn from this coordinator's HWLB row, the rest after them in the inner snitch's order;
 * for unified, replicas passed over by {@link CoordinatorHealth} are left out of the draw and
 * put last, and inside a statement the query handler runs, a cold replica that came up recently
 * is left out too (after the others, before the passed-over) and may be asked for a background
 * read ({@link WarmupReads}).
 *
 * <p>Per call: one volatile read of the switch and one of the {@link PeerView}; the replicas'
 * ids from the view; the live replicas in scope sorted by id (the canonical order); the plan
 * from the {@link PlanTable} (recomputed only when the view changed and an input rate differs);
 * one uniform number for the systematic draw; counting into this thread's stripe; and one
 * sort of the collection with a reused comparator, which allocates the returned collection and
 * nothing else. No lock is taken. The rates are the read's own table's when
 * {@link HwlbQueryHandler} named the table ({@link ReadTable}) and some node reported a rate for
 * it, else the node-wide ones; plans are cached per replica set, k and table.
 */
public final class ReplicaRouter
{
    /** Replica sets larger than this are left to the inner snitch (the draw uses a 64-bit mask). */
    public static final int MAX_REPLICAS = 64;

    private final IEndpointSnitch inner;
    private final boolean innerSortsByComparator;
    private final InetAddressAndPort local;
    private final HwlbSwitch control;
    private final PeerDirectory directory;
    private final PlanConfig config;
    private final HwlbCounters counters;
    private final CoordinatorHealth health;
    private final WarmupReads warmup;
    private final FallbackLog fallbackLog = new FallbackLog("ordering failed, the inner snitch's order is used (counted in fallbacks)");
    private final PlanTable plans = new PlanTable();
    private final ThreadLocal<Scratch> scratch;

    /**
     * A router for coordinator {@code local} in front of {@code inner}.
     *
     * @param inner the snitch whose order applies when HWLB steps aside, and to the rest
     * @param local this node's broadcast address
     * @param control the run-time switch
     * @param directory what is known of the nodes
     * @param config the plan's cap and minimum spread
     * @param counters where calls are counted
     * @param health unified's coordinator rule and its signals (sends are counted into it)
     * @param warmup unified's warm-up reads: which nodes warm, and the ask for a background read
     */
    public ReplicaRouter(IEndpointSnitch inner, InetAddressAndPort local, HwlbSwitch control, PeerDirectory directory,
                         PlanConfig config, HwlbCounters counters, CoordinatorHealth health, WarmupReads warmup)
    {
        this.health = health;
        this.warmup = warmup;
        this.inner = inner;
        this.innerSortsByComparator = sortsByComparator(inner);
        this.local = local;
        this.control = control;
        this.directory = directory;
        this.config = config;
        this.counters = counters;
        this.scratch = ThreadLocal.withInitial(() -> new Scratch(counters.newStripe(), inner, innerSortsByComparator));
    }

    /**
     * Whether {@code snitch}'s order is a stable sort by its {@code compareEndpoints} (its
     * sortedByProximity is AbstractEndpointSnitch's, or SimpleSnitch's identity, which equals a
     * stable sort by its all-equal comparator): then one sort by "drawn first, else the inner
     * comparator" gives exactly the inner order for the rest, with a single allocation.
     */
    static boolean sortsByComparator(IEndpointSnitch snitch)
    {
        try
        {
            Method m = snitch.getClass().getMethod("sortedByProximity", InetAddressAndPort.class, ReplicaCollection.class);
            Class<?> owner = m.getDeclaringClass();
            return owner == AbstractEndpointSnitch.class || owner == SimpleSnitch.class;
        }
        catch (NoSuchMethodException e)
        {
            return false;
        }
    }

    /** Per-thread reusable arrays, the comparator and the thread's counter stripe. */
    /**
     * What the caller of an order gives besides the replicas: k (-1: the consistency level's),
     * the draw's and the warm-up's uniform numbers (NaN: random), the time, whether the first k
     * count as sends (unified's rule), and whether a background read can be sent.
     */
    private static final class Read
    {
        int kGiven;
        double unit;
        double backgroundUnit;
        long nowNs;
        boolean countSends;
        boolean canWarm;

        Read set(int kGiven, double unit, double backgroundUnit, long nowNs, boolean countSends, boolean canWarm)
        {
            this.kGiven = kGiven;
            this.unit = unit;
            this.backgroundUnit = backgroundUnit;
            this.nowNs = nowNs;
            this.countSends = countSends;
            this.canWarm = canWarm;
            return this;
        }
    }

    private static final class Scratch
    {
        final HwlbCounters.Stripe stripe;
        final ChosenFirst comparator;
        Replica[] replicas = new Replica[8];
        int[] idAt = new int[8];
        boolean[] inScope = new boolean[8];
        boolean[] chosenAt = new boolean[8];
        boolean[] backAt = new boolean[8];
        /** A cold warming replica left out of the draw (after the others, before the passed-over). */
        boolean[] coldAt = new boolean[8];
        boolean[] warming = new boolean[8];
        /** The node this read asks to warm in the background (-1: none); set by each order. */
        int background = -1;
        /** A passed-over replica's last reply, ns (Long.MIN_VALUE: none since its reset). */
        long[] lastReplyAt = new long[8];
        int[] cand = new int[8];
        int[] candPos = new int[8];
        double[] candRate = new double[8];
        double[] latency = new double[8];
        /** The load step's inputs and outputs, by position in the call's collection. */
        double[] expectedAt = new double[8];
        double[] rateAt = new double[8];
        int[] targets = new int[8];
        int[] gaveWay = new int[8];
        int[] slots = new int[8];
        int size;
        /** The read being ordered: what its caller gave (reused, so ordering allocates nothing). */
        final Read read = new Read();
        /** Candidates in {@code cand}, {@code candPos}, {@code candRate} (the live replicas in scope). */
        int live;
        /** Replicas in the read's scope (its consistency level's datacenters). */
        int scoped;
        /** Whether HWLB may plan the read (every replica known and full). */
        boolean plannable;
        /** Whether a live replica's rate was not understood. */
        boolean garbled;
        /** A cold warming replica left out of the draw (-1: none), and its rate. */
        int coldId;
        double coldRate;
        /**
         * Endpoint to id, by identity, direct-mapped: Cassandra hands out the same endpoint
         * objects call after call, and an id never changes once given, so a hit skips the
         * view's hash lookup.
         */
        final InetAddressAndPort[] memoEndpoint = new InetAddressAndPort[16];
        final int[] memoId = new int[16];

        int id(PeerView view, InetAddressAndPort endpoint)
        {
            int slot = System.identityHashCode(endpoint) & 15;
            if (memoEndpoint[slot] == endpoint)
                return memoId[slot];
            int id = view.id(endpoint);
            if (id >= 0)
            {
                memoEndpoint[slot] = endpoint;
                memoId[slot] = id;
            }
            return id;
        }

        Scratch(HwlbCounters.Stripe stripe, IEndpointSnitch inner, boolean tieByInner)
        {
            this.stripe = stripe;
            this.comparator = new ChosenFirst(this, inner, tieByInner);
        }

        void ensure(int n)
        {
            if (n > replicas.length)
            {
                replicas = new Replica[n];
                idAt = new int[n];
                inScope = new boolean[n];
                chosenAt = new boolean[n];
                backAt = new boolean[n];
                coldAt = new boolean[n];
                warming = new boolean[n];
                lastReplyAt = new long[n];
                cand = new int[n];
                candPos = new int[n];
                candRate = new double[n];
                latency = new double[n];
                expectedAt = new double[n];
                rateAt = new double[n];
                targets = new int[n];
                gaveWay = new int[n];
                slots = new int[n];
            }
        }

        /** The position of {@code r} in the call's collection (identity), or -1. */
        int positionOf(Replica r)
        {
            for (int i = 0; i < size; i++)
                if (replicas[i] == r)
                    return i;
            return -1;
        }

        void clear()
        {
            for (int i = 0; i < size; i++)
            {
                replicas[i] = null;
                chosenAt[i] = false;
                backAt[i] = false;
                coldAt[i] = false;
            }
            size = 0;
        }
    }

    /**
     * Drawn replicas first, then the others, then cold ones left out for warming, passed-over
     * ones last; among equals, the inner snitch's comparator (or the given order).
     */
    private static final class ChosenFirst implements Comparator<Replica>
    {
        private final Scratch s;
        private final IEndpointSnitch inner;
        private final boolean tieByInner;
        InetAddressAndPort address;

        ChosenFirst(Scratch s, IEndpointSnitch inner, boolean tieByInner)
        {
            this.s = s;
            this.inner = inner;
            this.tieByInner = tieByInner;
        }

        @Override
        public int compare(Replica a, Replica b)
        {
            int pa = s.positionOf(a);
            int pb = s.positionOf(b);
            int ra = rank(pa);
            int rb = rank(pb);
            if (ra != rb)
                return ra < rb ? -1 : 1;
            // The last resorts: the one that replied most recently first, never replied last.
            if (ra == 3 && s.lastReplyAt[pa] != s.lastReplyAt[pb])
                return s.lastReplyAt[pa] > s.lastReplyAt[pb] ? -1 : 1;
            return tieByInner ? inner.compareEndpoints(address, a, b) : 0;
        }

        private int rank(int pos)
        {
            if (pos < 0)
                return 1;
            return s.chosenAt[pos] ? 0 : s.backAt[pos] ? 3 : s.coldAt[pos] ? 2 : 1;
        }
    }

    /**
     * The order for {@code replicas} as seen from {@code address}: the inner snitch's when
     * {@code address} is not this node, the policy is naive or dynamic-snitch, or HWLB steps
     * aside; for hwlb k replicas drawn from this coordinator's row first (in the inner order
     * among themselves), the rest after in the inner order; for unified the same draw over the
     * replicas {@link CoordinatorHealth} does not pass over, the passed-over ones last. Any
     * exception inside the plug-in's ordering gives the inner order, counted in
     * {@code fallbacks}.
     */
    public <C extends ReplicaCollection<? extends C>> C sortedByProximity(InetAddressAndPort address, C replicas)
    {
        if (!local.equals(address))
            return inner.sortedByProximity(address, replicas);
        // One replica (local system tables) leaves nothing to balance: not counted.
        if (replicas.size() < 2)
            return inner.sortedByProximity(address, replicas);
        HwlbSwitch.Mode mode = control.mode();
        if (!mode.policy().pluginOrders())
            return inner.sortedByProximity(address, replicas);
        Scratch s = scratch.get();
        try
        {
            // The clock is read, and sends counted, only where the rule needs them (unified).
            // The warm-up's ask too: one thread-local read, for unified only.
            boolean unified = mode.policy() == CoordinatorPolicy.UNIFIED;
            long nowNs = unified ? System.nanoTime() : 0L;
            WarmupReads.Ask ask = unified ? WarmupReads.current() : null;
            s.read.set(-1, Double.NaN, Double.NaN, nowNs, unified, ask != null && ask.armed());
            C ordered = order(address, replicas, mode, s);
            if (ask != null)
                ask.offer(s.background);
            return ordered;
        }
        catch (RuntimeException | AssertionError e)
        {
            s.clear();
            if (control.mode().policy() == CoordinatorPolicy.UNIFIED)
                WarmupReads.current().offer(-1);
            s.stripe.count(HwlbCounters.FALLBACKS);
            fallbackLog.report(e);
            return inner.sortedByProximity(address, replicas);
        }
    }

    /**
     * The order with k, the draw's uniform number and the warm-up's given, at {@code nowNs}, as
     * inside a statement the query handler runs (tests replaying the shared traces): no send is
     * counted, nothing is caught; {@link #lastBackground} tells the background read asked for.
     */
    <C extends ReplicaCollection<? extends C>> C orderFor(InetAddressAndPort address, C replicas, int k, double unit, double backgroundUnit,
                                                          long nowNs)
    {
        Scratch s = scratch.get();
        s.read.set(k, unit, backgroundUnit, nowNs, false, true);
        return order(address, replicas, control.mode(), s);
    }

    /** The node this thread's last order asked to read in the background, or -1. */
    int lastBackground()
    {
        return scratch.get().background;
    }

    /** The order of {@code replicas} for the read {@code s.read} (see {@link #sortedByProximity}). */
    private <C extends ReplicaCollection<? extends C>> C order(InetAddressAndPort address, C replicas, HwlbSwitch.Mode mode, Scratch s)
    {
        Read read = s.read;
        s.background = -1;
        HwlbCounters.Stripe stripe = s.stripe;
        stripe.count(HwlbCounters.COORDINATED);
        if (replicas.size() > MAX_REPLICAS)
        {
            if (mode.enabled())
                stripe.count(HwlbCounters.STEPPED_ASIDE);
            return inner.sortedByProximity(address, replicas);
        }
        PeerView view = directory.view();
        // The read's own table's rates when the query handler named it and some node reported
        // a rate for it; else the node-wide rates.
        int tableSlot = view.tableSlot(ReadTable.current());
        double[] rates = view.rates(tableSlot);
        if (tableSlot >= 0)
            stripe.count(HwlbCounters.TABLE_RATES);
        ReadConsistency cl = mode.readCl();
        collect(replicas, view, rates, cl.localDcOnly, s);
        int k = read.kGiven >= 0 ? read.kGiven : Math.min(cl.blockFor(s.scoped), Math.max(s.scoped, 1));
        boolean unified = mode.policy() == CoordinatorPolicy.UNIFIED;
        // unified's load step applies where there is a choice among the live replicas and every
        // live replica's rate is known (a node without the plug-in, or a value not understood,
        // keeps the inner order).
        boolean giveWay = unified && mode.enabled() && s.plannable && !s.garbled && candRatesKnown(s) && k >= 1 && s.live > k;
        // unified: pass over the silent, expired and slow (not cold) live replicas.
        long passed = unified && s.live > 0 ? passOver(s, view, k, read.nowNs) : 0L;
        // unified, inside a statement that can send a background read (or a test): a cold
        // warming replica leaves the draw, and this read may warm it.
        s.coldId = -1;
        s.coldRate = Double.NaN;
        if (unified && mode.enabled() && s.plannable && warmup.on() && read.canWarm && k >= 1 && s.live > k)
            leaveColdOut(s, k, read.nowNs);
        boolean reordered = passed != 0L || s.coldId >= 0;
        if (!mode.enabled() || !s.plannable || k >= s.live)
        {
            if (mode.enabled())
                stripe.count(s.garbled ? HwlbCounters.FALLBACKS : HwlbCounters.STEPPED_ASIDE);
            if (s.coldId >= 0)
                askWarmUp(s, s.coldId, s.coldRate, Warmup.uniformMissesPerRead(s.candRate, s.live, k, config), read.backgroundUnit, read.nowNs);
            return undrawnOrder(address, replicas, s, view, k, read.countSends, read.nowNs, reordered, giveWay, rates);
        }
        sortCanonical(s);
        PlanState plan = planFor(s, view, tableSlot, k, rates);
        if (s.coldId >= 0)
            askWarmUp(s, s.coldId, s.coldRate, plan.missesPerRead, read.backgroundUnit, read.nowNs);
        if (!plan.active())
        {
            stripe.count(s.garbled ? HwlbCounters.FALLBACKS : HwlbCounters.STEPPED_ASIDE);
            return undrawnOrder(address, replicas, s, view, k, read.countSends, read.nowNs, reordered, giveWay, rates);
        }
        drawFirstK(s, view, plan, k, giveWay, rates);
        ChosenFirst cmp = s.comparator;
        cmp.address = address;
        try
        {
            return innerSortsByComparator
                   ? replicas.sorted(cmp)
                   : inner.sortedByProximity(address, replicas).sorted(cmp);
        }
        finally
        {
            cmp.address = null;
            s.clear();
        }
    }

    /**
     * Reads {@code replicas} into {@code s}: each one's id (a replica gossip has not told of yet
     * gets one for next time, and the read is not plannable), whether it is in scope, and the
     * live ones in scope as the candidates with their rates.
     */
    private <C extends ReplicaCollection<? extends C>> void collect(C replicas, PeerView view, double[] rates, boolean localDcOnly, Scratch s)
    {
        int size = replicas.size();
        s.ensure(size);
        s.size = size;
        s.plannable = true;
        s.garbled = false;
        s.scoped = 0;
        s.live = 0;
        for (int i = 0; i < size; i++)
        {
            Replica r = replicas.get(i);
            s.replicas[i] = r;
            int id = s.id(view, r.endpoint());
            s.idAt[i] = id;
            s.inScope[i] = false;
            if (id < 0)
            {
                // First meeting (gossip has not told of it yet): give it an id for next time.
                directory.idOf(r.endpoint(), System.nanoTime());
                s.plannable = false;
                continue;
            }
            if (!r.isFull())
                s.plannable = false; // transient replication: leave it to Cassandra's own rules
            if (localDcOnly && !view.localDc(id))
                continue;
            s.inScope[i] = true;
            s.scoped++;
            if (!view.live(id))
                continue;
            if (view.notUnderstood(id))
                s.garbled = true;
            s.cand[s.live] = id;
            s.candPos[s.live] = i;
            s.candRate[s.live] = rates[id];
            s.live++;
        }
    }

    /** Whether every candidate's rate is known. */
    private static boolean candRatesKnown(Scratch s)
    {
        boolean ratesKnown = true;
        for (int j = 0; j < s.live; j++)
            ratesKnown &= !Double.isNaN(s.candRate[j]);
        return ratesKnown;
    }

    /**
     * unified: takes the candidates {@link CoordinatorHealth} passes over out of the draw,
     * marking them to go last with their last reply; the mask of those passed over.
     */
    private long passOver(Scratch s, PeerView view, int k, long nowNs)
    {
        long passed = health.passedOver(s.cand, s.candRate, s.live, view.localId, k, nowNs, s.latency);
        if (passed == 0L)
            return passed;
        s.stripe.count(HwlbCounters.PASSED_OVER);
        int h = 0;
        for (int j = 0; j < s.live; j++)
        {
            if ((passed & (1L << j)) != 0)
            {
                s.backAt[s.candPos[j]] = true;
                s.lastReplyAt[s.candPos[j]] = health.lastReplyNs(s.cand[j]);
                continue;
            }
            s.cand[h] = s.cand[j];
            s.candPos[h] = s.candPos[j];
            s.candRate[h] = s.candRate[j];
            h++;
        }
        s.live = h;
        return passed;
    }

    /**
     * unified's warm-up: a cold warming candidate leaves the draw (marked to go after the warm
     * ones); the coldest one is kept in {@code s.coldId} and {@code s.coldRate}.
     */
    private void leaveColdOut(Scratch s, int k, long nowNs)
    {
        int live = s.live;
        boolean known = true;
        double warmest = Double.NEGATIVE_INFINITY;
        for (int j = 0; j < live; j++)
        {
            if (Double.isNaN(s.candRate[j]))
                known = false;
            warmest = Math.max(warmest, s.candRate[j]);
        }
        // When a node came up is looked up only for a replica colder than the margin (the
        // only ones whose warming the split reads).
        for (int j = 0; j < live; j++)
            s.warming[j] = s.candRate[j] < warmest - Warmup.WARM_WITHIN && warmup.warming(s.cand[j], nowNs);
        Warmup.ColdSplit split = known ? Warmup.splitCold(s.candRate, s.warming, live, k) : null;
        if (split == null)
            return;
        s.coldId = s.cand[split.coldest()];
        s.coldRate = s.candRate[split.coldest()];
        s.stripe.count(HwlbCounters.COLD_LEFT_OUT);
        int w = 0;
        for (int j = 0; j < live; j++)
        {
            if ((split.coldMask() & (1L << j)) != 0)
            {
                s.coldAt[s.candPos[j]] = true;
                continue;
            }
            s.cand[w] = s.cand[j];
            s.candPos[w] = s.candPos[j];
            s.candRate[w] = s.candRate[j];
            w++;
        }
        assert w == split.warm() : "the split keeps the warm candidates";
        s.live = w;
    }

    /** Canonical order of the candidates: by node id (the coordinator's is 0; insertion sort, a handful of replicas). */
    private static void sortCanonical(Scratch s)
    {
        int[] cand = s.cand;
        int[] candPos = s.candPos;
        for (int a = 1; a < s.live; a++)
        {
            int id = cand[a];
            int pos = candPos[a];
            int b = a - 1;
            while (b >= 0 && cand[b] > id)
            {
                cand[b + 1] = cand[b];
                candPos[b + 1] = candPos[b];
                b--;
            }
            cand[b + 1] = id;
            candPos[b + 1] = pos;
        }
    }

    /** The plan for the candidates (in canonical order), k and the read's table, from the cache (revalidated when the view changed). */
    private PlanState planFor(Scratch s, PeerView view, int tableSlot, int k, double[] rates)
    {
        int planTable = view.tableKey(tableSlot);
        long key = PlanTable.key(s.cand, s.live, k, planTable);
        PlanSlot slot = plans.get(key, s.cand, s.live, k, planTable);
        if (slot == null)
            slot = plans.add(key, s.cand, s.live, k, planTable);
        PlanState plan = slot.state;
        if (plan == null || plan.checkedVersion != view.version)
            plan = revalidate(slot, plan, view, rates);
        return plan;
    }

    /**
     * Draws the first k with {@code plan} (marked in {@code s.chosenAt}); for unified
     * ({@code giveWay}) they may give way to replicas that cost less. Counts the draw, the
     * expected reads and the first k (sends, for unified's rule; local and remote reads).
     */
    private void drawFirstK(Scratch s, PeerView view, PlanState plan, int k, boolean giveWay, double[] rates)
    {
        Read read = s.read;
        HwlbCounters.Stripe stripe = s.stripe;
        double u = Double.isNaN(read.unit) ? ThreadLocalRandom.current().nextDouble() : read.unit;
        long mask = plan.sampler.sampleMask(k, u);
        assert Long.bitCount(mask) == k : "the draw gives k distinct replicas";
        stripe.count(HwlbCounters.DRAWS);
        int localId = view.localId;
        long localReads = 0;
        double[] kTimesRow = plan.kTimesRow;
        for (int j = 0; j < s.live; j++)
        {
            stripe.expected(s.cand[j], kTimesRow[j]);
            if ((mask & (1L << j)) != 0)
                s.chosenAt[s.candPos[j]] = true;
        }
        if (giveWay)
        {
            int t = 0;
            for (int i = 0; i < s.size; i++)
                if (s.chosenAt[i])
                    s.targets[t++] = i;
            giveWayTo(s, view, rates, k, read.nowNs);
        }
        for (int i = 0; i < s.size; i++)
        {
            if (!s.chosenAt[i])
                continue;
            int id = s.idAt[i];
            stripe.chosen(id);
            stripe.firstK(id);
            if (read.countSends)
                health.sent(id, read.nowNs);
            if (id == localId)
                localReads++;
        }
        stripe.add(HwlbCounters.LOCAL_READS, localReads);
        stripe.add(HwlbCounters.REMOTE_READS, k - localReads);
    }

    /**
     * Asks for a background read of the cold replica {@code coldId} (rate {@code coldRate}) when
     * the warm-up's uniform number ({@code backgroundUnit}, or a random one) falls below the
     * chance that gives it the warm replicas' misses per second ({@code warmMissesPerRead}), at
     * the pace of its slow start at {@code nowNs}.
     */
    private void askWarmUp(Scratch s, int coldId, double coldRate, double warmMissesPerRead, double backgroundUnit, long nowNs)
    {
        double u = Double.isNaN(backgroundUnit) ? ThreadLocalRandom.current().nextDouble() : backgroundUnit;
        if (u < Warmup.backgroundChance(warmup.pace(coldId, nowNs), warmMissesPerRead, coldRate, config))
            s.background = coldId;
    }

    /**
     * The order when HWLB does not draw: the inner order (with passed-over and cold replicas
     * ranked after the others when {@code reordered}); for unified ({@code giveWay}) its first k
     * may give way to replicas that cost less, and the order is then ranked with the new first k
     * first. Counts its first k.
     */
    private <C extends ReplicaCollection<? extends C>> C undrawnOrder(InetAddressAndPort address, C replicas, Scratch s, PeerView view, int k,
                                                                      boolean countSends, long nowNs, boolean reordered, boolean giveWay,
                                                                      double[] rates)
    {
        if (!giveWay)
            return reordered ? rankedOrder(address, replicas, s, view, k, countSends, nowNs) : innerOrder(address, replicas, s, view, k, countSends, nowNs);
        C ordered = reordered ? sortRanked(address, replicas, s) : inner.sortedByProximity(address, replicas);
        int t = 0;
        for (int i = 0; i < ordered.size() && t < k; i++)
        {
            int pos = s.positionOf(ordered.get(i));
            if (pos >= 0 && s.inScope[pos] && view.live(s.idAt[pos]))
                s.targets[t++] = pos;
        }
        if (t == k && giveWayTo(s, view, rates, k, nowNs))
            ordered = sortRanked(address, replicas, s);
        countFirstK(ordered, s, view, k, countSends, nowNs);
        return ordered;
    }

    /**
     * unified's load step ({@link GiveWay}) on the k targets in {@code s.targets} (positions):
     * every live replica in scope that is not passed over may take a target's place. When one
     * gives way, {@code s.chosenAt} marks the new targets (and nothing else), a background read
     * asked of a replica that is now a target is dropped, and it is counted. Returns whether one
     * did.
     */
    private boolean giveWayTo(Scratch s, PeerView view, double[] rates, int k, long nowNs)
    {
        int n = s.size;
        long eligible = 0L;
        long keep = 0L;
        for (int i = 0; i < n; i++)
        {
            int id = s.idAt[i];
            if (id >= 0 && id == view.localId)
                keep |= 1L << i;
            boolean known = id >= 0;
            s.expectedAt[i] = known ? health.expectedNs(id, nowNs) : 0.0;
            s.rateAt[i] = known ? rates[id] : Double.NaN;
            if (known && s.inScope[i] && view.live(id) && !s.backAt[i])
                eligible |= 1L << i;
        }
        int swaps = GiveWay.apply(s.expectedAt, s.rateAt, eligible, keep, n, health.rule().heatWeight(), config.hitRateCap(), s.targets, k, s.gaveWay,
                                  s.slots);
        if (swaps == 0)
            return false;
        for (int i = 0; i < n; i++)
            s.chosenAt[i] = false;
        for (int t = 0; t < k; t++)
        {
            int pos = s.targets[t];
            s.chosenAt[pos] = true;
            if (s.idAt[pos] == s.background)
                s.background = -1;
        }
        s.stripe.count(HwlbCounters.GAVE_WAY);
        return true;
    }

    /** The collection sorted by the ranks of {@link ChosenFirst}. */
    private <C extends ReplicaCollection<? extends C>> C sortRanked(InetAddressAndPort address, C replicas, Scratch s)
    {
        ChosenFirst cmp = s.comparator;
        cmp.address = address;
        try
        {
            return innerSortsByComparator
                   ? replicas.sorted(cmp)
                   : inner.sortedByProximity(address, replicas).sorted(cmp);
        }
        finally
        {
            cmp.address = null;
        }
    }

    /** The inner snitch's order, counting its first k live replicas in scope. */
    private <C extends ReplicaCollection<? extends C>> C innerOrder(InetAddressAndPort address, C replicas, Scratch s, PeerView view, int k,
                                                                    boolean countSends, long nowNs)
    {
        C ordered = inner.sortedByProximity(address, replicas);
        countFirstK(ordered, s, view, k, countSends, nowNs);
        return ordered;
    }

    /** The inner order with the passed-over replicas last (no draw), counting its first k. */
    private <C extends ReplicaCollection<? extends C>> C rankedOrder(InetAddressAndPort address, C replicas, Scratch s, PeerView view, int k,
                                                                     boolean countSends, long nowNs)
    {
        C ordered = sortRanked(address, replicas, s);
        countFirstK(ordered, s, view, k, countSends, nowNs);
        return ordered;
    }

    private void countFirstK(ReplicaCollection<?> ordered, Scratch s, PeerView view, int k, boolean countSends, long nowNs)
    {
        HwlbCounters.Stripe stripe = s.stripe;
        int counted = 0;
        int n = ordered.size();
        for (int i = 0; i < n && counted < k; i++)
        {
            int pos = s.positionOf(ordered.get(i));
            if (pos < 0 || !s.inScope[pos])
                continue;
            int id = s.idAt[pos];
            if (!view.live(id))
                continue;
            counted++;
            stripe.firstK(id);
            if (s.backAt[pos])
                health.lastResort(id);
            if (countSends)
                health.sent(id, nowNs);
            stripe.count(id == view.localId ? HwlbCounters.LOCAL_READS : HwlbCounters.REMOTE_READS);
        }
        s.clear();
    }

    /**
     * Checks a slot's plan against {@code view} and its rates for the slot's table
     * ({@code rates}): kept if they still hold, else recomputed.
     */
    private PlanState revalidate(PlanSlot slot, PlanState plan, PeerView view, double[] rates)
    {
        PlanState next;
        boolean recomputed;
        if (plan != null && plan.sameRates(slot.ids, rates))
        {
            next = plan.checkedAt(view.version);
            recomputed = false;
        }
        else
        {
            next = PlanState.compute(slot.ids, slot.k, rates, view.localId, view.version, config);
            recomputed = true;
        }
        if (slot.swap(plan, next))
        {
            if (recomputed)
                counters.planRecomputed();
            return next;
        }
        PlanState current = slot.state;
        return current != null ? current : next;
    }

    /** The inner snitch. */
    public IEndpointSnitch inner()
    {
        return inner;
    }

    /** How many replica sets have a cached plan. */
    public int cachedPlans()
    {
        return plans.size();
    }
}
