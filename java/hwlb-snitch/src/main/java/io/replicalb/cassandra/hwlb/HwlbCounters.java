package io.replicalb.cassandra.hwlb;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The plug-in's counters. The request path counts into a {@link Stripe} of its own thread with
 * plain (opaque) stores, no atomic instruction and no shared cache line; readers add the
 * stripes up. A reset records the current sums as a baseline, so a test can measure a window
 * without touching other threads' stripes.
 */
public final class HwlbCounters
{
    private static final VarHandle LONGS = MethodHandles.arrayElementVarHandle(long[].class);
    private static final VarHandle DOUBLES = MethodHandles.arrayElementVarHandle(double[].class);

    /** Node counter: sortedByProximity calls for this node (reads coordinated). */
    public static final int COORDINATED = 0;
    /** Node counter: reads of this node's own replica among the first k. */
    public static final int LOCAL_READS = 1;
    /** Node counter: reads of other replicas among the first k. */
    public static final int REMOTE_READS = 2;
    /** Node counter: orders drawn by HWLB. */
    public static final int DRAWS = 3;
    /** Node counter: calls where HWLB was on but stepped aside (the inner order). */
    public static final int STEPPED_ASIDE = 4;
    /** Node counter: reads ordered by the fallback (the inner order) because of an error or a peer value not understood. */
    public static final int FALLBACKS = 5;
    /** Node counter: reads where unified passed over at least one replica. */
    public static final int PASSED_OVER = 6;
    /** Node counter: reads planned with their own table's rates (the query handler named the table, and some node reported a rate for it). */
    public static final int TABLE_RATES = 7;
    /** Node counter: reads that left a cold warming replica out (unified's warm-up reads). */
    public static final int COLD_LEFT_OUT = 8;
    /** Node counter: reads where unified's first k gave way to a replica that costs less ({@link GiveWay}). */
    public static final int GAVE_WAY = 9;
    private static final int NODE_COUNTERS = 10;

    private final CopyOnWriteArrayList<Stripe> stripes = new CopyOnWriteArrayList<>();
    private final AtomicLong planRecomputes = new AtomicLong();
    private final AtomicLong probes = new AtomicLong();
    private volatile Totals baseline = new Totals(new long[NODE_COUNTERS], 0, new long[0], new long[0], new double[0]);

    /** One thread's counters; only its owner writes them. */
    public static final class Stripe
    {
        private final long[] node = new long[NODE_COUNTERS];
        private volatile long[] chosen = new long[8];
        private volatile long[] firstK = new long[8];
        private volatile double[] expected = new double[8];

        /** Adds one to node counter {@code which}. */
        public void count(int which)
        {
            LONGS.setOpaque(node, which, (long) LONGS.getOpaque(node, which) + 1);
        }

        /** Adds {@code delta} to node counter {@code which}. */
        public void add(int which, long delta)
        {
            LONGS.setOpaque(node, which, (long) LONGS.getOpaque(node, which) + delta);
        }

        /** Peer {@code id} was drawn among the first k. */
        public void chosen(int id)
        {
            if (id >= chosen.length)
                grow(id);
            long[] a = chosen;
            LONGS.setOpaque(a, id, (long) LONGS.getOpaque(a, id) + 1);
        }

        /** Peer {@code id} was among the first k of an order (drawn or not). */
        public void firstK(int id)
        {
            if (id >= firstK.length)
                grow(id);
            long[] a = firstK;
            LONGS.setOpaque(a, id, (long) LONGS.getOpaque(a, id) + 1);
        }

        /** Adds k * row[j] to peer {@code id}'s expected count. */
        public void expected(int id, double kTimesRow)
        {
            if (id >= expected.length)
                grow(id);
            double[] a = expected;
            DOUBLES.setOpaque(a, id, (double) DOUBLES.getOpaque(a, id) + kTimesRow);
        }

        /** Makes room for peer {@code id} (only the owner grows its arrays; rare). */
        private void grow(int id)
        {
            int size = Math.max(id + 1, chosen.length * 2);
            expected = Arrays.copyOf(expected, size);
            firstK = Arrays.copyOf(firstK, size);
            chosen = Arrays.copyOf(chosen, size);
        }
    }

    /** A new stripe for one thread, added to the sums. */
    public Stripe newStripe()
    {
        Stripe s = new Stripe();
        stripes.add(s);
        return s;
    }

    /** Counts one plan recomputation (rare: only when an input rate changed). */
    public void planRecomputed()
    {
        planRecomputes.incrementAndGet();
    }

    /** Counts one health probe sent (off the request path). */
    public void probed()
    {
        probes.incrementAndGet();
    }

    /** Health probes sent so far. */
    public long probes()
    {
        return probes.get();
    }

    /**
     * Node counter {@code which} now, summed over the stripes: no allocation, for a gauge read
     * often (the same sum as {@link #totals()}).
     */
    public long node(int which)
    {
        long sum = 0;
        for (Stripe s : stripes)
            sum += (long) LONGS.getOpaque(s.node, which);
        return sum;
    }

    /**
     * Peer {@code id}'s first-k count since the start, never reset (a monotonic count for a
     * gauge; {@link #totals()} gives it since the last {@link #resetPeers()}).
     */
    public long firstKSinceStart(int id)
    {
        long sum = 0;
        for (Stripe s : stripes)
            sum += at(s.firstK, id);
        return sum;
    }

    /** Peer {@code id}'s chosen count (HWLB draws) since the start, never reset. */
    public long chosenSinceStart(int id)
    {
        long sum = 0;
        for (Stripe s : stripes)
            sum += at(s.chosen, id);
        return sum;
    }

    /**
     * Peer {@code id}'s share of the first-k reads since the last {@link #resetPeers()} (as the
     * peers table's {@code first_k} over their sum), in [0, 1]; 0 before any read. Every first-k
     * count is also a local or a remote read, so the sum is those two node counters less the
     * window's baseline: no allocation, no pass over every peer.
     */
    public double firstKShare(int id)
    {
        Totals base = baseline;
        long all = node(LOCAL_READS) + node(REMOTE_READS) - base.firstKSum();
        long mine = firstKSinceStart(id) - base.firstK(id);
        if (all <= 0 || mine <= 0)
            return 0.0;
        return Math.min(1.0, (double) mine / all);
    }

    private static long at(long[] a, int id)
    {
        return id < a.length ? (long) LONGS.getOpaque(a, id) : 0L;
    }

    /** Sums of every counter at one moment (per-peer arrays indexed by node id). */
    public record Totals(long[] node, long planRecomputes, long[] chosen, long[] firstK, double[] expected)
    {
        /** Node counter {@code which}. */
        public long get(int which)
        {
            return node[which];
        }

        /** Peer {@code id}'s chosen count. */
        public long chosen(int id)
        {
            return id < chosen.length ? chosen[id] : 0;
        }

        /** Peer {@code id}'s first-k count. */
        public long firstK(int id)
        {
            return id < firstK.length ? firstK[id] : 0;
        }

        /** The sum of every peer's first-k count. */
        public long firstKSum()
        {
            long sum = 0;
            for (long c : firstK)
                sum += c;
            return sum;
        }

        /** Peer {@code id}'s expected count. */
        public double expected(int id)
        {
            return id < expected.length ? expected[id] : 0.0;
        }
    }

    private Totals raw()
    {
        long[] node = new long[NODE_COUNTERS];
        long[] chosen = new long[0];
        long[] firstK = new long[0];
        double[] expected = new double[0];
        for (Stripe s : stripes)
        {
            for (int i = 0; i < NODE_COUNTERS; i++)
                node[i] += (long) LONGS.getOpaque(s.node, i);
            long[] c = s.chosen;
            long[] f = s.firstK;
            double[] e = s.expected;
            int n = Math.min(c.length, Math.min(f.length, e.length));
            if (n > chosen.length)
            {
                chosen = Arrays.copyOf(chosen, n);
                firstK = Arrays.copyOf(firstK, n);
                expected = Arrays.copyOf(expected, n);
            }
            for (int i = 0; i < n; i++)
            {
                chosen[i] += (long) LONGS.getOpaque(c, i);
                firstK[i] += (long) LONGS.getOpaque(f, i);
                expected[i] += (double) DOUBLES.getOpaque(e, i);
            }
        }
        return new Totals(node, planRecomputes.get(), chosen, firstK, expected);
    }

    /** The counters since the last {@link #resetPeers()} (per-peer) or since the start (node counters). */
    public Totals totals()
    {
        Totals now = raw();
        Totals base = baseline;
        long[] chosen = now.chosen().clone();
        long[] firstK = now.firstK().clone();
        double[] expected = now.expected().clone();
        for (int i = 0; i < chosen.length; i++)
        {
            chosen[i] -= base.chosen(i);
            firstK[i] -= base.firstK(i);
            expected[i] -= base.expected(i);
        }
        return new Totals(now.node(), now.planRecomputes(), chosen, firstK, expected);
    }

    /** Starts a new measuring window for the per-peer counters (chosen, first_k, expected). */
    public synchronized void resetPeers()
    {
        Totals now = raw();
        baseline = new Totals(new long[NODE_COUNTERS], 0, now.chosen(), now.firstK(), now.expected());
    }
}
