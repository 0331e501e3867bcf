package io.replicalb.cassandra.hwlb;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.cassandra.db.SinglePartitionReadCommand;

/**
 * Warm-up reads inside Cassandra, for {@code unified}: while a replica that came up recently
 * is cold ({@link io.replicalb.core.hwlb.Warmup}), {@link ReplicaRouter} leaves it out of the
 * replicas a read contacts and may ask for a background read of the key from it; after the
 * statement succeeded, {@link HwlbQueryHandler} sends that read through a {@link Transport}
 * and nobody waits for it. The cold replica's cache fills at its warm peers' misses per second
 * while no request meets its misses.
 *
 * <p>The snitch is not told which key a read is for, so the request's thread carries the ask
 * from the router to the handler ({@link #arm}, {@link #offer}, {@link #take}): only a
 * statement run by the handler is armed, and only one whose read was ordered exactly once (a
 * single partition) sends. Without the handler nothing is armed and a cold replica takes its
 * HWLB share, as in {@code hwlb}.
 *
 * <p>A node counts as warming for {@code warmup_window_s} after gossip saw it come up (alive
 * again, or restarted), and every node, this one included, for that long after the plug-in
 * started: a node that starts sees every other as just up, and its own cache is empty.
 */
public final class WarmupReads
{
    /** Sends a background read; a failure must not reach the request. */
    public interface Transport
    {
        /**
         * Reads {@code command} at node {@code id}, calling {@code done} exactly once when it
         * answered, failed or expired (or at once when it could not be sent).
         */
        void read(SinglePartitionReadCommand command, int id, Runnable done);
    }

    /**
     * The ask of the statement running on a thread: whether the query handler armed it, how
     * many reads the router ordered in it and the cold replica the last one asked to warm.
     */
    static final class Ask
    {
        private boolean armed;
        private int target = -1;
        private int orders;

        /** Whether the thread runs a statement that can send a background read. */
        boolean armed()
        {
            return armed;
        }

        /** The router ordered a read; {@code id} is the cold replica to warm, or -1. */
        void offer(int id)
        {
            if (!armed)
                return;
            orders++;
            target = id;
        }
    }

    private static final ThreadLocal<Ask> ASK = ThreadLocal.withInitial(Ask::new);
    /** The instance of the running plug-in (null before it starts), for the query handler. */
    private static volatile WarmupReads installed;

    private final double share;
    private final int maxInFlight;
    private final long windowNs;
    private final long rampNs;
    /** How background reads go out (null until the plug-in runs inside Cassandra: none sent). */
    private volatile Transport transport;
    /** When the plug-in started, ns: every node counts as up then ({@link Long#MIN_VALUE}: never). */
    private volatile long startedNs;
    /** Per node id: when gossip last saw it come up, ns. */
    private final ConcurrentHashMap<Integer, Long> upAtNs = new ConcurrentHashMap<>();
    /** Per node id: this coordinator's background reads to it (unanswered, sent). */
    private final ConcurrentHashMap<Integer, Target> targets = new ConcurrentHashMap<>();

    /** One node's background reads: the unanswered ones and every one sent (their sum is {@link #sent()}). */
    private static final class Target
    {
        final AtomicInteger inFlight = new AtomicInteger();
        final AtomicLong sent = new AtomicLong();
    }
    private final AtomicLong skippedBusy = new AtomicLong();
    private final AtomicLong failures = new AtomicLong();
    private final FallbackLog failureLog = new FallbackLog("a warm-up read could not be sent; the request was not affected (counted in warmup_failures)");

    /** Warm-up reads as {@code config} says, for a plug-in started at {@code startedNs}. */
    public WarmupReads(WarmupConfig config, long startedNs)
    {
        this.share = config.share();
        this.maxInFlight = config.maxInFlight();
        this.windowNs = config.windowNs();
        this.rampNs = config.rampNs();
        this.startedNs = startedNs;
    }

    /**
     * Makes {@code w} the running plug-in's, sending through {@code transport} (the query
     * handler finds it here).
     */
    static void install(WarmupReads w, Transport transport)
    {
        w.transport = transport;
        installed = w;
    }

    /** Makes {@code w} (null: none) the running plug-in's as it is (tests restoring the state). */
    static void setInstalled(WarmupReads w)
    {
        installed = w;
    }

    /** The running plug-in's, or null. */
    static WarmupReads installed()
    {
        return installed;
    }

    /** The share of the levelling pace (0 = off). */
    public double share()
    {
        return share;
    }

    /** Whether warm-up reads are on. */
    public boolean on()
    {
        return share > 0.0;
    }

    /** Gossip saw node {@code id} come up at {@code nowNs}. */
    public void cameUp(int id, long nowNs)
    {
        upAtNs.put(id, nowNs);
    }

    /** Counts no node as warming unless seen coming up (tests replaying traces that start long after the plug-in). */
    void startedLongAgo()
    {
        startedNs = Long.MIN_VALUE;
    }

    /**
     * When node {@code id} last came up, ns: when gossip saw it, else when the plug-in started
     * ({@link Long#MIN_VALUE}: never).
     */
    private long upAt(int id)
    {
        Long up = upAtNs.get(id);
        return up != null ? up : startedNs;
    }

    /** Whether node {@code id} came up less than the window before {@code nowNs}. */
    public boolean warming(int id, long nowNs)
    {
        long at = upAt(id);
        if (at == Long.MIN_VALUE || at > nowNs)
            return false;
        return nowNs - at < windowNs;
    }

    /**
     * The warm-up pace for node {@code id} at {@code nowNs}: {@link #share()} times the slow
     * start since it came up ({@link io.replicalb.core.hwlb.Warmup#slowStart}).
     */
    public double pace(int id, long nowNs)
    {
        long at = upAt(id);
        if (rampNs == 0L || at == Long.MIN_VALUE)
            return share;
        return share * io.replicalb.core.hwlb.Warmup.slowStart(nowNs - at, rampNs);
    }

    /** Sends through {@code transport} (tests; {@link #install} inside Cassandra). */
    void connect(Transport transport)
    {
        this.transport = transport;
    }

    /** Arms the current thread: a statement the handler runs may ask for a background read. */
    static void arm()
    {
        Ask a = ASK.get();
        a.armed = true;
        a.target = -1;
        a.orders = 0;
    }

    /** Disarms the current thread, forgetting any ask. */
    static void disarm()
    {
        Ask a = ASK.get();
        a.armed = false;
        a.target = -1;
        a.orders = 0;
    }

    /** The current thread's ask (one thread-local read; the router keeps it for the read). */
    static Ask current()
    {
        return ASK.get();
    }

    /**
     * The node to read the statement's key from in the background, or -1: none asked, or the
     * statement ordered more than one read (several partitions: which key went where is not
     * known). Clears the ask.
     */
    static int take()
    {
        Ask a = ASK.get();
        int target = a.orders == 1 ? a.target : -1;
        a.target = -1;
        a.orders = 0;
        return target;
    }

    /**
     * Sends {@code command}'s background read to node {@code id}, unless {@code maxInFlight} of
     * this coordinator's are unanswered there already or there is no transport.
     *
     * @return whether it was sent
     */
    boolean send(SinglePartitionReadCommand command, int id)
    {
        Transport transport = this.transport;
        if (transport == null)
            return false;
        Target t = targets.computeIfAbsent(id, x -> new Target());
        AtomicInteger n = t.inFlight;
        if (n.incrementAndGet() > maxInFlight)
        {
            n.decrementAndGet();
            skippedBusy.incrementAndGet();
            return false;
        }
        transport.read(command, id, n::decrementAndGet);
        t.sent.incrementAndGet();
        return true;
    }

    /** A background read could not be built or sent: counted and logged (rate-limited). */
    void failed(Throwable e)
    {
        failures.incrementAndGet();
        failureLog.report(e);
    }

    /** Background reads that could not be built or sent. */
    public long failures()
    {
        return failures.get();
    }

    /** Background reads sent (to every node). */
    public long sent()
    {
        long sum = 0;
        for (Target t : targets.values())
            sum += t.sent.get();
        return sum;
    }

    /** Background reads sent to node {@code id}. */
    public long sentTo(int id)
    {
        Target t = targets.get(id);
        return t == null ? 0L : t.sent.get();
    }

    /** Background reads skipped because this many were unanswered at the cold replica. */
    public long skippedBusy()
    {
        return skippedBusy.get();
    }

    /** Background reads now unanswered at node {@code id}. */
    int inFlight(int id)
    {
        Target t = targets.get(id);
        return t == null ? 0 : t.inFlight.get();
    }
}
