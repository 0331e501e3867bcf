package io.replicalb.cassandra.hwlb;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;

/**
 * {@code unified}'s coordinator rule: which replicas a coordinator passes over (a port of
 * {@code crates/policy/src/unified/coordinator.rs}; the shared traces
 * {@code testdata/unified-coordinator-traces.json} check both give the same orders).
 *
 * <p>Signals per node id: sends (a replica put among the first k), read replies with their
 * latency and expiries (Cassandra's latency feed, {@link LatencyFeed}), probe answers and
 * unanswered probes ({@link HealthProber}: alive or expired, no latency), messages pending on the
 * outbound connection, down/up (all forgotten).
 * The coordinator's own reads are in the same feed ({@code LocalReadRunnable} adds their
 * latency under the node's own address), so its own replica is judged slow by the same rule:
 * a coordinator whose disk turned slow reads the other replicas, as the dynamic snitch does. It
 * is never judged silent or expired (those rules weigh sends against replies, and a local read
 * Cassandra drops adds no sample). A live replica is passed over when it is
 * <ul>
 * <li><b>silent</b>: {@code max(unanswered, pending) >= in_flight_threshold}, where
 * {@code unanswered} counts the sends since its last reply (a reply sets it to 0, so it cannot
 * drift), and fewer than {@code min_responses} replies within {@code response_window_ms};</li>
 * <li><b>expired</b>: its latest reply-or-expiry is an expiry younger than {@code expiry_memory_ms};</li>
 * <li><b>slow</b>: its latency EWMA (restarted when older than {@code latency_memory_ms}; a
 * reply slower than {@code stall_ms} counts as an answer but not in it) is
 * measured and above {@code slow_factor} times the fastest other measured candidate's among
 * those not colder than it (hit rate not below its own by more than {@code cold_hit_rate_gap})
 * and above it by more than {@code slow_margin_ms}, unless it is <b>cold</b> (hit rate below
 * the warmest candidate's by more than {@code cold_hit_rate_gap});</li>
 * <li><b>overdue</b>: a read of ours has waited for more than {@code overdue_factor} times its
 * usual time ({@link #usualNs}: its own average, at least every replica's pooled average plus
 * four deviations) and less than {@code latency_memory_ms}: one read is evidence, whatever the
 * count, which a coordinator of a large cluster needs (it rarely has two reads out to one
 * replica);</li>
 * <li><b>on trial</b>: its average aged out (no sample for {@code latency_memory_ms}), the last
 * one would be slow by the rule above, and a read sent to it since its last reply, less than
 * {@code latency_memory_ms} ago, is unanswered. A slow verdict does not fade by time alone:
 * the replica takes one read and that read's answer clears or renews it. A probe's answer
 * ({@link #answered}) proves the replica alive but, an ECHO touching no disk, never feeds the
 * average.</li>
 * </ul>
 *
 * <p>Thread safety: the request path reads volatile fields and increments {@code unanswered}
 * atomically, with no lock and no allocation; replies, expiries and resets of one node take
 * that node's monitor (uncontended: one node's replies arrive on its connection's thread).
 */
public final class CoordinatorHealth
{
    private static final VarHandle UNANSWERED;
    private static final VarHandle PASSED_OVER = MethodHandles.arrayElementVarHandle(long[].class);
    private static final VarHandle LAST_RESORT;

    static
    {
        try
        {
            UNANSWERED = MethodHandles.lookup().findVarHandle(Signals.class, "unanswered", int.class);
            LAST_RESORT = MethodHandles.lookup().findVarHandle(Signals.class, "lastResortCount", long.class);
        }
        catch (ReflectiveOperationException e)
        {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** One node's signals. */
    static final class Signals
    {
        volatile int unanswered;
        volatile int pending;
        volatile double latencyEwmaNs;
        /** A reply fed the average (not a stall); when the last did. */
        volatile boolean sampled;
        volatile long lastSampleNs;
        /** Any reply; when the last came. */
        volatile boolean replied;
        volatile long lastReplyNs;
        volatile boolean expired;
        volatile long lastExpiryNs;
        /**
         * The first read sent since the last read reply (renewed by a send once older than the
         * latency memory), or {@code Long.MIN_VALUE}: the trial of a replica whose slow average
         * aged out. Cleared by a read reply, not by a probe's answer.
         */
        volatile long firstUnansweredSendNs = Long.MIN_VALUE;
        /** The last min_responses reply times, a ring; {@code seen} replies so far. */
        final long[] replyTimes;
        volatile long seen;
        /** Diagnostics (the peers table): replies, expiries, resets, reads passing it over. */
        volatile long replies;
        volatile long expiries;
        volatile long resets;
        /** Reads that passed it over, by {@link PassOverReason} (ordinal). */
        final long[] passedOverBy = new long[PassOverReason.COUNT];
        volatile long lastResortCount;

        Signals(int minResponses)
        {
            replyTimes = new long[minResponses];
        }
    }

    private final CoordinatorRule rule;
    private final long windowNs;
    private final long latencyMemoryNs;
    private final long stallNs;
    private final long expiryMemoryNs;
    private final double slowMarginNs;
    private volatile Signals[] nodes = new Signals[0];
    /**
     * Every other replica's read latencies pooled (average and mean deviation, ns; 0 before the
     * first sample): the usual time of a replica this coordinator reads too rarely to have an
     * average of its own. The coordinator's own reads cross no network and stay out: they would
     * make a replica it never reads look as quick as a local read. Replies of many connections
     * update it without a lock: a lost update only delays an average by one sample.
     */
    private volatile double pooledMeanNs;
    private volatile double pooledDeviationNs;
    /** Weight of a new sample in the pooled averages (as the Rust rule). */
    private static final double POOLED_EWMA_WEIGHT = 0.02;

    /** The coordinator's own node id (-1: unknown): its reads stay out of the pooled average. */
    private final int localId;

    /** Nothing known yet, at a coordinator whose own id is unknown. */
    public CoordinatorHealth(CoordinatorRule rule)
    {
        this(rule, -1);
    }

    /** Nothing known yet, at coordinator {@code localId}. */
    public CoordinatorHealth(CoordinatorRule rule, int localId)
    {
        this.localId = localId;
        this.rule = rule;
        this.windowNs = rule.responseWindowNs();
        this.latencyMemoryNs = rule.latencyMemoryNs();
        this.stallNs = rule.stallNs();
        this.expiryMemoryNs = rule.expiryMemoryNs();
        this.slowMarginNs = rule.slowMarginNs();
    }

    /** The rule's parameters. */
    public CoordinatorRule rule()
    {
        return rule;
    }

    private Signals of(int id)
    {
        Signals[] a = nodes;
        if (id < a.length)
        {
            Signals s = a[id];
            if (s != null)
                return s;
        }
        return grow(id);
    }

    private synchronized Signals grow(int id)
    {
        Signals[] a = nodes;
        if (id >= a.length)
            a = Arrays.copyOf(a, Math.max(id + 1, a.length * 2));
        else
            a = a.clone();
        for (int i = 0; i < a.length; i++)
            if (a[i] == null)
                a[i] = new Signals(rule.minResponses());
        nodes = a;
        return a[id];
    }

    /**
     * Node {@code id} was put among the first k of a read at {@code nowNs} (the request path:
     * one atomic add, and a write when it starts a trial).
     */
    public void sent(int id, long nowNs)
    {
        Signals s = of(id);
        if ((int) UNANSWERED.getAndAdd(s, 1) == Integer.MAX_VALUE)
            s.unanswered = Integer.MAX_VALUE; // saturate, as the Rust rule
        // A send unanswered for latency_memory no longer holds a trial: this one does.
        long first = s.firstUnansweredSendNs;
        if (first == Long.MIN_VALUE || nowNs - first >= latencyMemoryNs)
            s.firstUnansweredSendNs = nowNs;
    }

    /**
     * Node {@code id} answered a probe at {@code nowNs}: alive and answering (what a reply tells
     * of that), but a probe's round trip touches no disk, so it is no read latency.
     */
    public void answered(int id, long nowNs)
    {
        Signals s = of(id);
        synchronized (s)
        {
            answeredLocked(s, nowNs);
        }
    }

    private static void answeredLocked(Signals s, long nowNs)
    {
        s.unanswered = 0;
        s.replies++;
        long seen = s.seen;
        s.replyTimes[(int) (seen % s.replyTimes.length)] = nowNs;
        s.seen = seen + 1;
        s.lastReplyNs = nowNs;
        s.replied = true;
    }

    /** Node {@code id} replied to a read after {@code latencyNs}, at {@code nowNs}. */
    public void replied(int id, long latencyNs, long nowNs)
    {
        Signals s = of(id);
        synchronized (s)
        {
            answeredLocked(s, nowNs);
            s.firstUnansweredSendNs = Long.MIN_VALUE;
            // A stall (slower than stall_ms) is an answer, not a measure of ordinary slowness.
            if (latencyNs > stallNs)
                return;
            double sample = (double) latencyNs;
            if (id != localId)
                pooledSample(sample);
            if (s.sampled && nowNs - s.lastSampleNs < latencyMemoryNs)
                s.latencyEwmaNs = s.latencyEwmaNs + rule.latencyEwmaWeight() * (sample - s.latencyEwmaNs);
            else
                s.latencyEwmaNs = sample;
            s.lastSampleNs = nowNs;
            s.sampled = true;
        }
    }

    private void pooledSample(double sample)
    {
        double mean = pooledMeanNs;
        if (mean == 0.0)
        {
            pooledMeanNs = Math.max(sample, 1.0);
            return;
        }
        pooledDeviationNs = pooledDeviationNs + POOLED_EWMA_WEIGHT * (Math.abs(sample - mean) - pooledDeviationNs);
        pooledMeanNs = mean + POOLED_EWMA_WEIGHT * (sample - mean);
    }

    /**
     * What a read at node {@code id} usually takes at {@code nowNs}: the larger of its own
     * average (when measured) and every replica's pooled average plus four deviations (TCP's
     * retransmission time-out), ns; NaN before any reply.
     */
    public double usualNs(int id, long nowNs)
    {
        double mean = pooledMeanNs;
        if (mean <= 0.0)
            return Double.NaN;
        double pooled = mean + 4.0 * pooledDeviationNs;
        double own = latencyNs(id, nowNs);
        return Double.isNaN(own) ? pooled : Math.max(own, pooled);
    }

    /** How long the oldest read of ours still unanswered at node {@code id} has waited at {@code nowNs}, ns (0: none). */
    public long waitedNs(int id, long nowNs)
    {
        Signals s = of(id);
        long first = s.firstUnansweredSendNs;
        if (s.unanswered <= 0 || first == Long.MIN_VALUE)
            return 0L;
        return Math.max(0L, nowNs - first);
    }

    /** Overdue: a read of ours at node {@code id} has waited more than overdue_factor times its usual time, and less than latency_memory. */
    public boolean overdue(int id, long nowNs)
    {
        double waited = (double) waitedNs(id, nowNs);
        if (rule.overdueFactor() <= 0.0 || waited <= 0.0 || waited >= (double) latencyMemoryNs)
            return false;
        double usual = usualNs(id, nowNs);
        return !Double.isNaN(usual) && waited > rule.overdueFactor() * usual;
    }

    /**
     * The expected time of one more read at node {@code id}, ns: its latency average (the pooled
     * one when it has none of its own; 0 before any reply), at least the wait of its oldest
     * unanswered read, times one plus its unanswered reads.
     */
    public double expectedNs(int id, long nowNs)
    {
        double own = latencyNs(id, nowNs);
        double average = Double.isNaN(own) ? pooledMeanNs : own;
        return Math.max(average, (double) waitedNs(id, nowNs)) * (1.0 + of(id).unanswered);
    }

    /** A request to node {@code id} expired (timed out) at {@code nowNs}. */
    public void expired(int id, long nowNs)
    {
        Signals s = of(id);
        synchronized (s)
        {
            s.lastExpiryNs = nowNs;
            s.expired = true;
            s.expiries++;
        }
    }

    /** {@code count} messages are pending on the outbound connection to node {@code id}. */
    public void pending(int id, int count)
    {
        of(id).pending = Math.max(0, count);
    }

    /** Node {@code id} went down or came up: everything known of it is forgotten. */
    public void reset(int id)
    {
        Signals s = of(id);
        synchronized (s)
        {
            s.unanswered = 0;
            s.pending = 0;
            s.latencyEwmaNs = 0.0;
            s.sampled = false;
            s.lastSampleNs = 0;
            s.replied = false;
            s.lastReplyNs = 0;
            s.expired = false;
            s.lastExpiryNs = 0;
            s.firstUnansweredSendNs = Long.MIN_VALUE;
            Arrays.fill(s.replyTimes, 0L);
            s.seen = 0;
            s.resets++;
        }
    }

    /** Node {@code id}, passed over, was among the first k all the same (fewer than k healthy). */
    public void lastResort(int id)
    {
        LAST_RESORT.getAndAdd(of(id), 1L);
    }

    /** Diagnostics of node {@code id} for the peers table, at {@code nowNs}. */
    public record Snapshot(int unanswered, int pending, double latencyMs, boolean silent, boolean expired, long replies,
                           long expiries, long resets, long passedOver, long lastResort, long lastReplyAgoMs)
    {
    }

    /** What is known of node {@code id} now (diagnostics, off the request path). */
    public Snapshot snapshot(int id, long nowNs)
    {
        Signals s = of(id);
        double lat = latencyNs(id, nowNs);
        long passed = 0;
        for (PassOverReason why : PassOverReason.values())
            passed += passedOverCount(id, why);
        return new Snapshot(s.unanswered, s.pending, Double.isNaN(lat) ? Double.NaN : lat / 1e6, silent(id, nowNs), expiredRecently(id, nowNs),
                            s.replies, s.expiries, s.resets, passed, s.lastResortCount, s.replied ? (nowNs - s.lastReplyNs) / 1_000_000L : -1L);
    }

    /** Reads that passed node {@code id} over for reason {@code why}, since start (never reset). */
    public long passedOverCount(int id, PassOverReason why)
    {
        return (long) PASSED_OVER.getVolatile(of(id).passedOverBy, why.ordinal());
    }

    /** Reads that left node {@code id}, passed over, among the first k all the same, since start. */
    public long lastResortCount(int id)
    {
        return of(id).lastResortCount;
    }

    private void countPassedOver(int id, PassOverReason why)
    {
        PASSED_OVER.getAndAdd(of(id).passedOverBy, why.ordinal(), 1L);
    }

    /** Why node {@code id} cannot answer at {@code nowNs} (silent, expired, overdue, in that order), or null. */
    private PassOverReason unableReason(int id, long nowNs)
    {
        if (silent(id, nowNs))
            return PassOverReason.SILENT;
        if (expiredRecently(id, nowNs))
            return PassOverReason.EXPIRED;
        return overdue(id, nowNs) ? PassOverReason.OVERDUE : null;
    }

    /** Silent: busy and fewer than min_responses replies within the window ending at {@code nowNs}. */
    public boolean silent(int id, long nowNs)
    {
        Signals s = of(id);
        int busy = Math.max(s.unanswered, s.pending);
        if (busy < rule.inFlightThreshold())
            return false;
        long seen = s.seen;
        int m = s.replyTimes.length;
        if (seen < m)
            return true;
        // The m-th most recent reply: the slot the next reply overwrites.
        long oldest = s.replyTimes[(int) (seen % m)];
        return nowNs - oldest > windowNs;
    }

    /** Expired: the latest reply-or-expiry is an expiry younger than expiry_memory. */
    public boolean expiredRecently(int id, long nowNs)
    {
        Signals s = of(id);
        if (!s.expired)
            return false;
        long e = s.lastExpiryNs;
        boolean after = !s.replied || e > s.lastReplyNs;
        return after && Math.max(0, nowNs - e) < expiryMemoryNs;
    }

    /** The latency average of node {@code id} when measured recently, ns; NaN otherwise. */
    public double latencyNs(int id, long nowNs)
    {
        Signals s = of(id);
        if (!s.sampled || Math.max(0, nowNs - s.lastSampleNs) >= latencyMemoryNs)
            return Double.NaN;
        return s.latencyEwmaNs;
    }

    /**
     * The last latency average of node {@code id} once it aged out (no sample for
     * latency_memory) while a read sent to it since its last reply, less than latency_memory
     * ago, is unanswered: the average a trial read is judged by; NaN otherwise.
     */
    private double onTrialNs(int id, long nowNs)
    {
        Signals s = of(id);
        long first = s.firstUnansweredSendNs;
        if (!s.sampled || first == Long.MIN_VALUE)
            return Double.NaN;
        boolean aged = Math.max(0, nowNs - s.lastSampleNs) >= latencyMemoryNs;
        boolean trial = Math.max(0, nowNs - first) < latencyMemoryNs;
        return aged && trial ? s.latencyEwmaNs : Double.NaN;
    }

    /** When node {@code id} last replied, ns, or {@code Long.MIN_VALUE} (for the prober). */
    public long lastReplyNs(int id)
    {
        Signals s = of(id);
        return s.replied ? s.lastReplyNs : Long.MIN_VALUE;
    }

    /**
     * Which of the {@code n} live replicas {@code ids} (with their hit rates, NaN when unknown)
     * are passed over at {@code nowNs} for a read of {@code k} replicas, as a bit mask over their
     * positions. The coordinator's own replica ({@code localId}) is judged slow like the others
     * (its reads feed the same latency signal), never silent or expired. Silent and expired
     * replicas are; a slow one only
     * when it is not cold and at least k of the others that can answer are not colder than it
     * (passing it over must not force a colder replica into the read). {@code latency} is
     * scratch space of at least n entries. Each replica passed over is counted under its reason
     * ({@link #passedOverCount}). No allocation.
     */
    public long passedOver(int[] ids, double[] rates, int n, int localId, int k, long nowNs, double[] latency)
    {
        assert n <= 64 && ids.length >= n && rates.length >= n && latency.length >= n;
        double warmest = Double.NEGATIVE_INFINITY;
        long unable = 0L;
        for (int j = 0; j < n; j++)
        {
            latency[j] = latencyNs(ids[j], nowNs);
            if (!Double.isNaN(rates[j]))
                warmest = Math.max(warmest, rates[j]);
            PassOverReason why = ids[j] != localId ? unableReason(ids[j], nowNs) : null;
            if (why != null)
            {
                unable |= 1L << j;
                countPassedOver(ids[j], why);
            }
        }
        long mask = unable;
        for (int j = 0; j < n; j++)
        {
            if ((unable & (1L << j)) != 0)
                continue;
            boolean cold = !Double.isNaN(rates[j]) && rates[j] < warmest - rule.coldHitRateGap();
            // Measured now, or aged out with its trial read unanswered.
            double judged = Double.isNaN(latency[j]) ? onTrialNs(ids[j], nowNs) : latency[j];
            if (!cold && slow(j, judged, latency, rates, n) && servableWithout(j, unable, rates, n, k))
            {
                mask |= 1L << j;
                countPassedOver(ids[j], PassOverReason.SLOW);
            }
        }
        return mask;
    }

    /** Whether replica {@code i} is not colder than replica {@code j} by more than the gap (unknown rates count as not colder). */
    private boolean notColder(double[] rates, int i, int j)
    {
        return Double.isNaN(rates[i]) || Double.isNaN(rates[j]) || rates[i] >= rates[j] - rule.coldHitRateGap();
    }

    /**
     * Slow: replica {@code j}'s average {@code mine} (NaN: not measured) well above the fastest
     * other measured one's among those not colder than it: a warm replica that HWLB loads while
     * another warms is not passed over for the cold one.
     */
    private boolean slow(int j, double mine, double[] latency, double[] rates, int n)
    {
        if (Double.isNaN(mine))
            return false;
        double best = Double.POSITIVE_INFINITY;
        for (int i = 0; i < n; i++)
        {
            if (i != j && notColder(rates, i, j) && !Double.isNaN(latency[i]))
                best = Math.min(best, latency[i]);
        }
        return best != Double.POSITIVE_INFINITY && mine > rule.slowFactor() * best && mine - best > slowMarginNs;
    }

    /**
     * Whether a read of {@code k} replicas can do without replica {@code j} and take none colder
     * than it: at least k of the others can answer (not in {@code unable}) and are not colder.
     */
    private boolean servableWithout(int j, long unable, double[] rates, int n, int k)
    {
        int others = 0;
        for (int i = 0; i < n; i++)
            if (i != j && (unable & (1L << i)) == 0 && notColder(rates, i, j))
                others++;
        return others >= k;
    }
}
