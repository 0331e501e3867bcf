package io.replicalb.cassandra.hwlb;

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
 * are drawn from this coordinator's HWLB row, the rest after them in the inner snitch's order.
 *
 * <p>Per call: one volatile read of the switch and one of the {@link PeerView}; the replicas'
 * ids from the view; the live replicas in scope sorted by id (the canonical order); the plan
 * from the {@link PlanTable} (recomputed only when the view changed and an input rate differs);
 * one uniform number for the systematic draw; counting into this thread's stripe; and one
 * sort of the collection with a reused comparator, which allocates the returned collection and
 * nothing else. No lock is taken.
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
     */
    public ReplicaRouter(IEndpointSnitch inner, InetAddressAndPort local, HwlbSwitch control, PeerDirectory directory,
                         PlanConfig config, HwlbCounters counters)
    {
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
    private static final class Scratch
    {
        final HwlbCounters.Stripe stripe;
        final ChosenFirst comparator;
        Replica[] replicas = new Replica[8];
        int[] idAt = new int[8];
        boolean[] inScope = new boolean[8];
        boolean[] chosenAt = new boolean[8];
        int[] cand = new int[8];
        int[] candPos = new int[8];
        int size;
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
                cand = new int[n];
                candPos = new int[n];
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
            }
            size = 0;
        }
    }

    /** Drawn replicas first; among equals, the inner snitch's comparator (or the given order). */
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
            boolean ca = pa >= 0 && s.chosenAt[pa];
            boolean cb = pb >= 0 && s.chosenAt[pb];
            if (ca != cb)
                return ca ? -1 : 1;
            return tieByInner ? inner.compareEndpoints(address, a, b) : 0;
        }
    }

    /**
     * The order for {@code replicas} as seen from {@code address}: the inner snitch's when
     * {@code address} is not this node, HWLB is off or steps aside; else k replicas drawn from
     * this coordinator's row first (in the inner order among themselves), the rest after in the
     * inner order.
     */
    public <C extends ReplicaCollection<? extends C>> C sortedByProximity(InetAddressAndPort address, C replicas)
    {
        if (!local.equals(address))
            return inner.sortedByProximity(address, replicas);
        int size = replicas.size();
        // One replica (local system tables) leaves nothing to balance: not counted.
        if (size < 2)
            return inner.sortedByProximity(address, replicas);
        HwlbSwitch.Mode mode = control.mode();
        Scratch s = scratch.get();
        HwlbCounters.Stripe stripe = s.stripe;
        stripe.count(HwlbCounters.COORDINATED);
        if (size > MAX_REPLICAS)
        {
            if (mode.enabled())
                stripe.count(HwlbCounters.STEPPED_ASIDE);
            return inner.sortedByProximity(address, replicas);
        }
        PeerView view = directory.view();
        ReadConsistency cl = mode.readCl();
        s.ensure(size);
        s.size = size;
        boolean plannable = true;
        int inScope = 0;
        int live = 0;
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
                plannable = false;
                continue;
            }
            if (!r.isFull())
                plannable = false; // transient replication: leave it to Cassandra's own rules
            if (cl.localDcOnly && !view.localDc(id))
                continue;
            s.inScope[i] = true;
            inScope++;
            if (!view.live(id))
                continue;
            s.cand[live] = id;
            s.candPos[live] = i;
            live++;
        }
        int k = Math.min(cl.blockFor(inScope), Math.max(inScope, 1));
        if (!mode.enabled() || !plannable || k >= live)
        {
            if (mode.enabled())
                stripe.count(HwlbCounters.STEPPED_ASIDE);
            return innerOrder(address, replicas, s, view, k);
        }
        // Canonical order: by node id (insertion sort; a handful of replicas).
        int[] cand = s.cand;
        int[] candPos = s.candPos;
        for (int a = 1; a < live; a++)
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
        long key = PlanTable.key(cand, live, k);
        PlanSlot slot = plans.get(key, cand, live, k);
        if (slot == null)
            slot = plans.add(key, cand, live, k);
        PlanState plan = slot.state;
        if (plan == null || plan.checkedVersion != view.version)
            plan = revalidate(slot, plan, view);
        if (!plan.active())
        {
            stripe.count(HwlbCounters.STEPPED_ASIDE);
            return innerOrder(address, replicas, s, view, k);
        }
        long mask = plan.sampler.sampleMask(k, ThreadLocalRandom.current().nextDouble());
        stripe.count(HwlbCounters.DRAWS);
        int localId = view.localId;
        long localReads = 0;
        double[] kTimesRow = plan.kTimesRow;
        for (int j = 0; j < live; j++)
        {
            int id = cand[j];
            stripe.expected(id, kTimesRow[j]);
            if ((mask & (1L << j)) != 0)
            {
                s.chosenAt[candPos[j]] = true;
                stripe.chosen(id);
                stripe.firstK(id);
                if (id == localId)
                    localReads++;
            }
        }
        stripe.add(HwlbCounters.LOCAL_READS, localReads);
        stripe.add(HwlbCounters.REMOTE_READS, k - localReads);
        ChosenFirst cmp = s.comparator;
        cmp.address = address;
        C ordered = innerSortsByComparator
                    ? replicas.sorted(cmp)
                    : inner.sortedByProximity(address, replicas).sorted(cmp);
        cmp.address = null;
        s.clear();
        return ordered;
    }

    /** The inner snitch's order, counting its first k live replicas in scope. */
    private <C extends ReplicaCollection<? extends C>> C innerOrder(InetAddressAndPort address, C replicas, Scratch s, PeerView view, int k)
    {
        C ordered = inner.sortedByProximity(address, replicas);
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
            stripe.count(id == view.localId ? HwlbCounters.LOCAL_READS : HwlbCounters.REMOTE_READS);
        }
        s.clear();
        return ordered;
    }

    /** Checks a slot's plan against {@code view}: kept if its rates still hold, else recomputed. */
    private PlanState revalidate(PlanSlot slot, PlanState plan, PeerView view)
    {
        PlanState next;
        boolean recomputed;
        if (plan != null && plan.sameRates(slot.ids, view))
        {
            next = plan.checkedAt(view.version);
            recomputed = false;
        }
        else
        {
            next = PlanState.compute(slot.ids, slot.k, view, config);
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
