package io.replicalb.driver;

import com.datastax.oss.driver.api.core.config.DriverExecutionProfile;
import com.datastax.oss.driver.api.core.connection.BusyConnectionException;
import com.datastax.oss.driver.api.core.connection.ClosedConnectionException;
import com.datastax.oss.driver.api.core.connection.HeartbeatException;
import com.datastax.oss.driver.api.core.context.DriverContext;
import com.datastax.oss.driver.api.core.cql.Statement;
import com.datastax.oss.driver.api.core.loadbalancing.LoadBalancingPolicy;
import com.datastax.oss.driver.api.core.loadbalancing.NodeDistance;
import com.datastax.oss.driver.api.core.metadata.Node;
import com.datastax.oss.driver.api.core.metadata.NodeState;
import com.datastax.oss.driver.api.core.servererrors.FunctionFailureException;
import com.datastax.oss.driver.api.core.servererrors.QueryValidationException;
import com.datastax.oss.driver.api.core.servererrors.ReadTimeoutException;
import com.datastax.oss.driver.api.core.servererrors.WriteTimeoutException;
import com.datastax.oss.driver.api.core.session.Request;
import com.datastax.oss.driver.api.core.session.Session;
import com.datastax.oss.driver.api.core.tracker.RequestTracker;
import com.datastax.oss.driver.internal.core.loadbalancing.BasicLoadBalancingPolicy;
import com.datastax.oss.driver.internal.core.loadbalancing.helper.MandatoryLocalDcHelper;
import com.datastax.oss.driver.internal.core.util.collection.QueryPlan;
import com.datastax.oss.driver.internal.core.util.collection.SimpleQueryPlan;
import io.replicalb.core.Rng;
import io.replicalb.core.client.ClientPolicies;
import io.replicalb.core.client.ClientPolicy;
import io.replicalb.core.client.Event;
import io.replicalb.core.client.Failure;
import java.util.Arrays;
import java.util.Map;
import java.util.Optional;
import java.util.Queue;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.IntConsumer;

/**
 * Any replica-lb client policy ({@code unified}, {@code c3}, {@code hwlb-client},
 * {@code weighted-least-loaded}, {@code peak-ewma}, {@code p2c}) as a load-balancing policy of
 * the Apache Cassandra Java driver 4.x. Name it in application.conf:
 *
 * <pre>
 * datastax-java-driver {
 *   basic.load-balancing-policy {
 *     class = io.replicalb.driver.ReplicaLbLoadBalancingPolicy
 *     local-datacenter = dc1
 *   }
 *   advanced.replica-lb { policy = unified, params { }, seed = 7 }
 * }
 * </pre>
 *
 * <p>What it does per request: the candidates are the token's replicas from the driver's token
 * map (the request's routing keyspace and key or token, as the driver's own policies find
 * them) that are up and in the local datacenter, or every live local node for a request
 * without routing information; nodes of other datacenters are ignored, as by the driver's
 * {@code DefaultLoadBalancingPolicy} (its remote-datacenter failover options still apply once
 * every local node has been tried). The client policy orders the candidates under a short lock
 * (the decision and its bookkeeping only), and the plan is that order followed, lazily, by the
 * other live local nodes. Statements only: the driver's internal plans (control connection,
 * prepare) are the driver's round-robin.
 *
 * <p>Concurrency (the design of the Rust adapter, crates/driver/src/policy.rs): the driver
 * plans from every application thread and reports ends from its I/O threads at once. The state
 * is split into {@code shards} (default one per core, {@link ReplicaLbOption#SHARDS}), each a
 * whole client policy with its own random stream (seed {@code seed + shard * 0x9e3779b97f4a7c15}),
 * lock, tickets, queue of pending ends and counters, on its own cache lines. A thread always
 * plans in the same home shard (given on its first call), so a lock is uncontended unless
 * there are more threads than shards; when its home shard is busy, a free other one is taken,
 * else it waits for its home. Each shard is thus an independent client of the cluster, with its
 * own in-flight counts and latency estimates, as separate application instances would be;
 * {@code shards = 1} gives every request one exact, shared view at the cost of a contended lock.
 * Node events and hit rates reach every shard; {@link #counters()} sums them.
 *
 * <p>Feedback: the policy registers itself as a {@link RequestTracker} (as the driver's
 * default policy does, through {@link #getRequestTracker()}) and hears every attempt's latency
 * and outcome. In-flight counts cannot drift: each plan opens a ticket on its first node in the
 * shard that planned it, an attempt's end closes the matching ticket in the shard that holds it
 * (the ending thread's home shard is looked at first, then the others), an end without one (a
 * retry, a speculative execution) counts as a send ended at once, and a ticket whose end never
 * comes (a time-out, a lost speculative execution, no connection) expires after
 * {@code ticket-ttl} as a time-out ({@link Tickets}). An end never waits for a plan when it
 * does not have to: a busy shard that is the last place its ticket can be gets the end queued
 * ({@link PendingEnds}), applied by the shard's next holder before anything else. Node ids are
 * dense, given once per node and shared by the shards ({@link NodeTable}); zones are racks.
 *
 * <p>Hit rates ({@code hwlb-client}): once the session is ready (the tracker's
 * {@link #onSessionReady}) every live local node's {@code replica_lb_hwlb.node.hit_rate} is read
 * every {@code hit-rate-poll-interval} on the driver's admin executor, off the request path,
 * and told every shard's policy; nodes without the plug-in's table are skipped quietly
 * (counted). {@link #recordHitRate} feeds rates from any other source.
 *
 * <p>Counters: {@link #counters()}, or {@link #of(Session, String)} to find the policy of a
 * session's profile.
 */
public class ReplicaLbLoadBalancingPolicy extends BasicLoadBalancingPolicy implements RequestTracker {
    /** The most candidates one plan offers the policy (the core's bound). */
    public static final int MAX_CANDIDATES = io.replicalb.core.client.ClientPolicy.MAX_CANDIDATES;
    /** How often open tickets are checked for expiry, ns. */
    static final long SWEEP_EVERY_NS = 10_000_000;
    /** Tickets expired per check at most (the rest at the next call). */
    static final int EXPIRE_BATCH = 64;
    /** What each shard adds to the seed of the one before (the Rust adapter's step, 2^64 / phi). */
    static final long SHARD_SEED_STEP = 0x9e3779b97f4a7c15L;

    /** Outcome codes of a queued end: a reply, or a {@link Failure} by its ordinal plus one. */
    private static final int REPLY = 0;
    private static final Failure[] FAILURES = Failure.values();

    /** The next thread's number (threads are numbered on their first call, in every policy). */
    private static final AtomicInteger NEXT_THREAD = new AtomicInteger();

    /** One thread's number and scratch arrays (no allocation per request). */
    private static final class Scratch {
        final int[] candidates = new int[MAX_CANDIDATES];
        final int[] order = new int[MAX_CANDIDATES];
        /** The shards an end found busy. */
        final int[] busy = new int[ReplicaLbSettings.MAX_SHARDS];
        /** This thread's number, non-negative: its home shard is this modulo the shard count. */
        int thread = NEXT_THREAD.getAndIncrement() & Integer.MAX_VALUE;
    }

    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

    private final ReplicaLbSettings settings;
    private final long epochNs = System.nanoTime();
    private final AtomicInteger rotation = new AtomicInteger();
    private volatile NodeTable nodes;
    private final HitRatePoller poller;
    /** The independent copies of the policy (at least one). */
    private final Shard[] shards;
    /** {@code shards.length - 1} when that is a power of two, else -1 (a modulo then). */
    private final int shardMask;
    /** Ends reported on nodes without an id (the table was full). */
    private final AtomicLong unknownNodes = new AtomicLong();

    /**
     * Built by the driver from {@code basic.load-balancing-policy.class} for the execution
     * profile {@code profileName}; its options are that profile's {@code advanced.replica-lb},
     * each shard's policy the registered one named by {@code advanced.replica-lb.policy}.
     *
     * @throws IllegalArgumentException with a one-line message naming a bad option or value
     */
    public ReplicaLbLoadBalancingPolicy(DriverContext context, String profileName) {
        this(context, profileName, s -> ClientPolicies.create(s.policy(), s.params()));
    }

    /**
     * For a subclass that brings its own policy (one not in the registry, or a test's):
     * {@code factory} builds one from the checked options for each shard, shard 0 first; every
     * call must return a new instance (a policy is not thread-safe, and each shard uses its own
     * under its own lock), unless {@code shards} is 1.
     *
     * @throws IllegalArgumentException with a one-line message naming a bad option or value, or
     *     when {@code factory} returned one instance for two shards
     */
    protected ReplicaLbLoadBalancingPolicy(DriverContext context, String profileName, Function<ReplicaLbSettings, ClientPolicy> factory) {
        super(context, profileName);
        this.settings = ReplicaLbSettings.of(profile);
        int n = settings.shards();
        this.shards = new Shard[n];
        for (int i = 0; i < n; i++) {
            // The shard is allocated before its parts (the policy's state, the lock, the
            // tickets), so its leading padding keeps them off the previous shard's lines.
            shards[i] = new Shard(create(factory, i), seedOf(settings.seed(), i), settings);
        }
        this.shardMask = Integer.bitCount(n) == 1 ? n - 1 : -1;
        this.nodes = new NodeTable(null, settings.localRack());
        this.poller = settings.hitRatePollIntervalNs() > 0 ? new HitRatePoller(this, this.context, settings) : null;
    }

    /** Shard {@code i}'s policy from {@code factory}, checked to be its own. */
    private ClientPolicy create(Function<ReplicaLbSettings, ClientPolicy> factory, int i) {
        ClientPolicy p;
        try {
            p = factory.apply(settings);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("datastax-java-driver." + ReplicaLbOption.POLICY.getPath() + ": "
                    + ReplicaLbSettings.oneLine(e.getMessage()), e);
        }
        for (int j = 0; j < i; j++) {
            if (shards[j].policy == p) {
                throw new IllegalArgumentException("datastax-java-driver." + ReplicaLbOption.SHARDS.getPath() + " " + settings.shards()
                        + ": the policy factory returned one instance for shards " + j + " and " + i
                        + "; each shard needs its own (or set shards = 1)");
            }
        }
        return p;
    }

    /** The seed of shard {@code shard}'s random stream: shard 0 has {@code seed} itself. */
    static long seedOf(long seed, int shard) {
        return seed + shard * SHARD_SEED_STEP;
    }

    /** The policy of {@code session}'s execution profile {@code profileName}, if it is one of these. */
    public static Optional<ReplicaLbLoadBalancingPolicy> of(Session session, String profileName) {
        LoadBalancingPolicy p = session.getContext().getLoadBalancingPolicy(profileName);
        return p instanceof ReplicaLbLoadBalancingPolicy r ? Optional.of(r) : Optional.empty();
    }

    /** The options in force. */
    public ReplicaLbSettings settings() {
        return settings;
    }

    /** How many shards (independent copies of the client policy) there are. */
    public int shards() {
        return shards.length;
    }

    /** The client policy's registered name (the registry's, as configured). */
    public String policyName() {
        return settings.policy();
    }

    /** The local datacenter is required, as for the driver's DefaultLoadBalancingPolicy. */
    @Override
    protected Optional<String> discoverLocalDc(Map<UUID, Node> nodes) {
        return new MandatoryLocalDcHelper(context, profile, logPrefix).discoverLocalDc(nodes);
    }

    /** Tracks every attempt's end, as the driver's default policy does. */
    @Override
    public Optional<RequestTracker> getRequestTracker() {
        return Optional.of(this);
    }

    /** The driver's nodes once connected: each gets its id; every shard's policy hears the zones and the live ones. */
    @Override
    public void init(Map<UUID, Node> nodes, DistanceReporter distanceReporter) {
        super.init(nodes, distanceReporter);
        NodeTable table = new NodeTable(getLocalDatacenter(), settings.localRack());
        for (Node node : nodes.values()) {
            table.add(node, computeNodeDistance(node) != NodeDistance.IGNORED && node.getState() != NodeState.DOWN);
        }
        this.nodes = table;
        NodeTable.Topology topology = table.topology();
        long seen = nowNs();
        everyShard(s -> {
            long now = s.clock(seen);
            s.policy.onTopology(topology.zoneOfNode(), topology.localZone());
            for (NodeTable.Entry e : table.entries()) {
                if (e.local && e.live) {
                    s.policy.observe(Event.UP, e.id, 0, Double.NaN, now);
                }
            }
        });
    }

    /** A node joined: it gets its id (not live until it is up) and every shard's policy the new topology. */
    @Override
    public void onAdd(Node node) {
        super.onAdd(node);
        addNode(node);
    }

    /** Gives {@code node} an id (not live yet) and tells every shard's policy the new topology. */
    private void addNode(Node node) {
        NodeTable table = nodes;
        if (table.add(node, false) != null) {
            NodeTable.Topology topology = table.topology();
            everyShard(s -> s.policy.onTopology(topology.zoneOfNode(), topology.localZone()));
        }
    }

    /** A node is up: a local one is a candidate again and every shard's policy hears it. */
    @Override
    public void onUp(Node node) {
        super.onUp(node);
        if (computeNodeDistance(node) == NodeDistance.IGNORED) {
            return;
        }
        NodeTable table = nodes;
        if (table.get(node) == null) {
            addNode(node);
        }
        NodeTable.Entry e = table.setLive(node, true);
        if (e != null && e.local) {
            long seen = nowNs();
            everyShard(s -> s.policy.observe(Event.UP, e.id, 0, Double.NaN, s.clock(seen)));
        }
    }

    /** A node is down: no longer a candidate, and every shard's policy hears it. */
    @Override
    public void onDown(Node node) {
        super.onDown(node);
        NodeTable.Entry e = nodes.setLive(node, false);
        if (e != null && e.local) {
            long seen = nowNs();
            everyShard(s -> s.policy.observe(Event.DOWN, e.id, 0, Double.NaN, s.clock(seen)));
        }
    }

    /** A node left: forgotten (its id is not reused); every shard's policy hears it down and the new topology. */
    @Override
    public void onRemove(Node node) {
        super.onRemove(node);
        NodeTable table = nodes;
        NodeTable.Entry e = table.remove(node);
        if (e != null) {
            NodeTable.Topology topology = table.topology();
            long seen = nowNs();
            everyShard(s -> {
                if (e.local) {
                    s.policy.observe(Event.DOWN, e.id, 0, Double.NaN, s.clock(seen));
                }
                s.policy.onTopology(topology.zoneOfNode(), topology.localZone());
            });
        }
    }

    /**
     * The plan of one request: the candidates in the client policy's order (its first node's
     * ticket opened in the shard that decided), then the other live local nodes; the driver's
     * own for anything but a statement.
     */
    @Override
    public Queue<Node> newQueryPlan(Request request, Session session) {
        if (!(request instanceof Statement)) {
            // The driver's own plans (control connection, prepare on every node): round-robin.
            return super.newQueryPlan(request, session);
        }
        NodeTable table = nodes;
        Scratch scratch = SCRATCH.get();
        int[] cands = scratch.candidates;
        int c = 0;
        for (Node replica : getReplicas(request, session)) {
            NodeTable.Entry e = table.get(replica);
            if (e != null && e.local && e.live) {
                cands[c++] = e.id;
                if (c == MAX_CANDIDATES) {
                    break;
                }
            }
        }
        if (c == 0) {
            // No routing information, or no replica up here: every live local node.
            int[] live = table.liveLocal();
            int n = live.length;
            c = Math.min(n, MAX_CANDIDATES);
            int start = n > MAX_CANDIDATES ? Math.floorMod(rotation.getAndAdd(MAX_CANDIDATES), n) : 0;
            for (int i = 0; i < c; i++) {
                cands[i] = live[(start + i) % n];
            }
            if (c == 0) {
                return super.newQueryPlan(request, session);
            }
        }
        int[] order = scratch.order;
        boolean planned;
        int first;
        Shard s = lockForPlan(scratch);
        try {
            // Read under the lock: the ticket's stamp is never later than the attempt's start
            // (the driver starts it after this returns), however long this thread waited here.
            long now = s.clock(nowNs());
            s.sweep(now);
            boolean valid;
            try {
                valid = s.policy.plan(cands, c, now, s.rng, order) == c && isOrderOf(order, cands, c);
            } catch (RuntimeException e) {
                valid = false;
            }
            planned = valid;
            if (valid) {
                first = order[0];
            } else {
                s.overridden++;
                first = cands[0];
            }
            s.policy.observe(Event.SENT, first, 0, Double.NaN, now);
            s.picks++;
            if (s.tickets.opened(first, now, request)) {
                s.expired++;
                s.policy.observe(Event.TIMEOUT, first, 0, Double.NaN, now);
            }
        } finally {
            s.lock.unlock();
        }
        Node[] head = new Node[c];
        int n = 0;
        if (planned) {
            for (int i = 0; i < c; i++) {
                n = put(head, n, table.byId(order[i]));
            }
        } else {
            n = put(head, n, table.byId(first));
            for (int i = 0; i < c; i++) {
                if (cands[i] != first) {
                    n = put(head, n, table.byId(cands[i]));
                }
            }
        }
        if (n < c) {
            // A candidate was removed from the cluster meanwhile.
            head = Arrays.copyOf(head, n);
        }
        return new ReplicaLbQueryPlan(head, this, request);
    }

    /** The home shard of the thread of {@code scratch}. */
    private int home(Scratch scratch) {
        int mask = shardMask;
        return mask >= 0 ? scratch.thread & mask : scratch.thread % shards.length;
    }

    /** A shard to plan in, locked and its queued ends applied: the home shard, else a free other one, else the home shard when it frees. */
    private Shard lockForPlan(Scratch scratch) {
        Shard[] all = shards;
        int home = home(scratch);
        Shard s = all[home];
        if (!s.lock.tryLock()) {
            s = lockOther(all, home);
        }
        s.pending.drain(s.applyEnd);
        return s;
    }

    /** The home shard is busy: the first free other one, else the home shard (waiting). */
    private static Shard lockOther(Shard[] all, int home) {
        int n = all.length;
        for (int k = 1; k < n; k++) {
            int i = home + k;
            Shard s = all[i < n ? i : i - n];
            if (s.lock.tryLock()) {
                return s;
            }
        }
        Shard s = all[home];
        s.lock.lock();
        return s;
    }

    /** Appends {@code e}'s node at {@code head[n]} unless it is gone; returns the new count. */
    private static int put(Node[] head, int n, NodeTable.Entry e) {
        if (e == null) {
            return n;
        }
        head[n] = e.node;
        return n + 1;
    }

    private static boolean contains(int[] a, int n, int x) {
        for (int i = 0; i < n; i++) {
            if (a[i] == x) {
                return true;
            }
        }
        return false;
    }

    /** Whether {@code order[0..n)} is a permutation of {@code cands[0..n)} (distinct ids). */
    private static boolean isOrderOf(int[] order, int[] cands, int n) {
        for (int i = 0; i < n; i++) {
            if (!contains(cands, n, order[i])) {
                return false;
            }
            for (int j = 0; j < i; j++) {
                if (order[j] == order[i]) {
                    return false;
                }
            }
        }
        return true;
    }

    /**
     * The rest of a plan after its candidates {@code head}: the other live local nodes,
     * round-robin, then the driver's remote-datacenter failover (if configured).
     */
    Queue<Node> tailPlan(Request request, Node[] head) {
        Object[] live = getLiveNodes().dc(getLocalDatacenter()).toArray();
        Object[] rest = new Object[live.length];
        int n = 0;
        for (Object node : live) {
            boolean planned = false;
            for (Node h : head) {
                planned |= h == node;
            }
            if (!planned) {
                rest[n++] = node;
            }
        }
        Object[] ordered = new Object[n];
        int start = n == 0 ? 0 : Math.floorMod(roundRobinAmount.getAndIncrement(), n);
        for (int i = 0; i < n; i++) {
            ordered[i] = rest[(start + i) % n];
        }
        QueryPlan local = n == 0 ? QueryPlan.EMPTY : new SimpleQueryPlan(ordered);
        return maybeAddDcFailover(request, local);
    }

    /** An attempt answered: its latency and the reply reach the policy (the poller's reads excepted). */
    @Override
    public void onNodeSuccess(Request request, long latencyNanos, DriverExecutionProfile executionProfile, Node node, String requestLogPrefix) {
        if (!HitRatePoller.isPoll(request)) {
            ended(node, latencyNanos, null, request);
        }
    }

    /** An attempt failed: the failure ({@link #failureOf}) reaches the policy (the poller's reads excepted). */
    @Override
    public void onNodeError(
            Request request, Throwable error, long latencyNanos, DriverExecutionProfile executionProfile, Node node, String requestLogPrefix) {
        if (!HitRatePoller.isPoll(request)) {
            ended(node, latencyNanos, failureOf(error), request);
        }
    }

    /**
     * How an attempt's error counts for the policy (as the Rust adapter's {@code outcome_of}):
     * null for an answer about the request itself (invalid, unauthorised, a function's failure:
     * the node is healthy), a time-out for the coordinator's read and write time-outs, a lost
     * connection for a broken one, an error otherwise (overloaded, unavailable, bootstrapping,
     * server errors).
     */
    public static Failure failureOf(Throwable error) {
        if (error instanceof QueryValidationException || error instanceof FunctionFailureException) {
            return null;
        }
        if (error instanceof ReadTimeoutException || error instanceof WriteTimeoutException) {
            return Failure.TIMEOUT;
        }
        if (error instanceof ClosedConnectionException || error instanceof HeartbeatException || error instanceof BusyConnectionException) {
            return Failure.CONNECTION_LOST;
        }
        return Failure.ERROR;
    }

    /**
     * An attempt of {@code request} on {@code node} that took {@code latencyNs} ended: a reply
     * ({@code failure} null) or a failure. It closes its ticket (the one {@code request}'s plan
     * opened on the node, else one matched by time) in the shard that holds it: the ending thread's
     * home shard is looked at first, then the others (each free one at once; the busy ones
     * after, waiting for all but the last, which gets the end queued). An end no shard matches
     * counts, in the home shard, as a send ended at once (untracked).
     */
    private void ended(Node node, long latencyNs, Failure failure, Request request) {
        NodeTable.Entry e = nodes.get(node);
        if (e == null) {
            unknownNodes.incrementAndGet();
            return;
        }
        int outcome = failure == null ? REPLY : failure.ordinal() + 1;
        long latency = Math.max(0, latencyNs);
        long now = nowNs();
        Shard[] all = shards;
        int n = all.length;
        if (n == 1) {
            // One shared view: the ticket is here or nowhere.
            all[0].deliver(e.id, outcome, latency, now, request);
            return;
        }
        Scratch scratch = SCRATCH.get();
        int home = home(scratch);
        int[] busy = scratch.busy;
        int b = 0;
        for (int k = 0; k < n; k++) {
            int i = home + k < n ? home + k : home + k - n;
            Shard s = all[i];
            if (!s.lock.tryLock()) {
                busy[b++] = i;
                continue;
            }
            try {
                if (s.drainedAndMatchedLocked(e.id, outcome, latency, now, request)) {
                    return;
                }
            } finally {
                s.lock.unlock();
            }
        }
        if (b == 0) {
            // No shard holds its ticket: untracked, at home.
            all[home].deliver(e.id, outcome, latency, now, request);
            return;
        }
        for (int j = 0; j < b - 1; j++) {
            Shard s = all[busy[j]];
            s.lock.lock();
            try {
                if (s.drainedAndMatchedLocked(e.id, outcome, latency, now, request)) {
                    return;
                }
            } finally {
                s.lock.unlock();
            }
        }
        // The last place its ticket can be: matched there, else untracked there.
        all[busy[b - 1]].deliver(e.id, outcome, latency, now, request);
    }

    /**
     * Tells every shard's policy {@code node}'s cache hit rate in [0, 1], measured off the
     * request path (the poller does for {@code hwlb-client}; any other source may too).
     * Returns false, doing nothing, for a rate outside [0, 1] or a node without an id.
     */
    public boolean recordHitRate(Node node, double hitRate) {
        NodeTable.Entry e = nodes.get(node);
        if (e == null || !(hitRate >= 0.0 && hitRate <= 1.0)) {
            return false;
        }
        long seen = nowNs();
        everyShard(s -> s.policy.observe(Event.HIT_RATE, e.id, 0, hitRate, s.clock(seen)));
        return true;
    }

    /** Starts the hit-rate poller on this session (the driver calls it once the session is ready). */
    @Override
    public void onSessionReady(Session session) {
        if (poller != null) {
            poller.start(session);
        }
    }

    /**
     * Ends the tickets older than the TTL now, in every shard, rather than at the next call (for
     * a check at quiescence: every count back to zero).
     */
    public void expireNow() {
        long seen = nowNs();
        everyShard(s -> {
            long now = s.clock(seen);
            s.sweepNow(now);
            while (s.nextSweepNs == now) {
                s.sweepNow(now);
            }
        });
    }

    /** What it did so far, summed over the shards (each read under its own lock, one after the other). */
    public Counters counters() {
        long polls = poller == null ? 0 : poller.polls();
        long missing = poller == null ? 0 : poller.missing();
        long failed = poller == null ? 0 : poller.failed();
        long picks = 0;
        long matched = 0;
        long untracked = 0;
        long expired = 0;
        long open = 0;
        long overridden = 0;
        for (int i = 0; i < shards.length; i++) {
            Counters c = shardCounters(i);
            picks += c.picks();
            matched += c.matched();
            untracked += c.untracked();
            expired += c.expired();
            open += c.open();
            overridden += c.overridden();
        }
        return new Counters(picks, matched, untracked, expired, open, overridden, unknownNodes.get() + nodes.unmapped(), polls, missing,
                failed);
    }

    /** Shard {@code i}'s own counters (its plans and ends; no hit-rate polls, no unmapped nodes). */
    Counters shardCounters(int i) {
        Shard s = shards[i];
        s.lockAndDrain();
        try {
            return new Counters(s.picks, s.matched, s.untracked, s.expired, s.tickets.open(), s.overridden, 0, 0, 0, 0);
        } finally {
            s.lock.unlock();
        }
    }

    /** Open tickets of {@code node} now, over the shards (0 for a node without an id). */
    public int openTickets(Node node) {
        NodeTable.Entry e = nodes.get(node);
        if (e == null) {
            return 0;
        }
        int open = 0;
        for (int i = 0; i < shards.length; i++) {
            open += openTickets(e.id, i);
        }
        return open;
    }

    /** Open tickets of node id {@code id} in shard {@code i}. */
    int openTickets(int id, int i) {
        Shard s = shards[i];
        s.lockAndDrain();
        try {
            return s.tickets.openFor(id);
        } finally {
            s.lock.unlock();
        }
    }

    /** The dense id the policy knows {@code node} by, or -1. */
    public int nodeId(Node node) {
        NodeTable.Entry e = nodes.get(node);
        return e == null ? -1 : e.id;
    }

    /** The hit-rate poller, or null when polling is off. */
    HitRatePoller poller() {
        return poller;
    }

    /** The live local nodes, for the poller. */
    NodeTable table() {
        return nodes;
    }

    /** The calling thread's home shard in this policy. */
    int homeShard() {
        return home(SCRATCH.get());
    }

    /**
     * Gives the calling thread the number {@code number} (its home shard is {@code number}
     * modulo the shard count), as if it had been numbered so on its first call: for tests that
     * place plans and ends on chosen shards.
     */
    static void pinThread(int number) {
        SCRATCH.get().thread = number & Integer.MAX_VALUE;
    }

    /** Stops the hit-rate poller. */
    @Override
    public void close() {
        if (poller != null) {
            poller.stop();
        }
        super.close();
    }

    private long nowNs() {
        return System.nanoTime() - epochNs;
    }

    /** Runs {@code f} on every shard in turn, each locked and its queued ends applied first. */
    private void everyShard(Consumer<Shard> f) {
        for (Shard s : shards) {
            s.lockAndDrain();
            try {
                f.accept(s);
            } finally {
                s.lock.unlock();
            }
        }
    }

    /** 128 bytes before a shard's fields: off the previous shard's cache lines (and their adjacent-line prefetch). */
    @SuppressWarnings("unused")
    private abstract static class ShardPadBefore {
        long p00, p01, p02, p03, p04, p05, p06, p07, p08, p09, p10, p11, p12, p13, p14, p15;
    }

    /**
     * One shard's state: an independent client policy with its random stream, its lock, the
     * ends waiting for the lock, its tickets and counters. Everything but the lock and the
     * queue is guarded by the lock, held only for a decision or a callback's bookkeeping.
     */
    private abstract static class ShardFields extends ShardPadBefore {
        /** Guards everything below. */
        final ReentrantLock lock = new ReentrantLock();
        /** Attempt ends that found the lock taken (applied by its next holder first). */
        final PendingEnds pending = new PendingEnds();
        final ClientPolicy policy;
        final Rng rng;
        final Tickets tickets;
        long lastNowNs;
        long nextSweepNs;
        long sweepNowNs;
        long picks;
        long matched;
        long untracked;
        long expired;
        long overridden;

        ShardFields(ClientPolicy policy, long seed, ReplicaLbSettings settings) {
            this.policy = policy;
            this.rng = Rng.seedFromU64(seed);
            this.tickets = new Tickets(settings.ticketTtlNs(), settings.ticketMatchWindowNs(), settings.maxOpenTicketsPerNode());
        }
    }

    /** A shard with 128 bytes after its fields too. */
    @SuppressWarnings("unused")
    private static final class Shard extends ShardFields {
        long q00, q01, q02, q03, q04, q05, q06, q07, q08, q09, q10, q11, q12, q13, q14, q15;
        final PendingEnds.Sink applyEnd = this::endLocked;
        final IntConsumer onExpired = this::expiredLocked;

        Shard(ClientPolicy policy, long seed, ReplicaLbSettings settings) {
            super(policy, seed, settings);
        }

        /** The lock, and every queued end applied. */
        void lockAndDrain() {
            lock.lock();
            pending.drain(applyEnd);
        }

        /**
         * Applies an end here: at once if the lock is free, else queued for its next holder
         * ({@link PendingEnds}; an end never waits for a plan), or, the queue full, waiting.
         */
        void deliver(int node, int outcome, long latency, long seenNs, Object request) {
            if (!lock.tryLock()) {
                if (pending.offer(node, outcome, latency, seenNs, request)) {
                    return;
                }
                lock.lock();
            }
            try {
                pending.drain(applyEnd);
                endLocked(node, outcome, latency, seenNs, request);
            } finally {
                lock.unlock();
            }
        }

        /** Applies one end (the lock held): it closes its ticket here, or counts as a send ended at once. */
        void endLocked(int node, int outcome, long latency, long seenNs, Object request) {
            if (!matchedLocked(node, outcome, latency, seenNs, request)) {
                long now = lastNowNs;
                untracked++;
                policy.observe(Event.SENT, node, 0, Double.NaN, now);
                feed(node, outcome, latency, now);
            }
        }

        /**
         * With the lock held: applies the ends queued here first, then this end if its ticket
         * is here; false: none matches here.
         */
        boolean drainedAndMatchedLocked(int node, int outcome, long latency, long seenNs, Object request) {
            pending.drain(applyEnd);
            return matchedLocked(node, outcome, latency, seenNs, request);
        }

        /** Applies one end (the lock held) if its ticket is here; false: none matches here, nothing done. */
        boolean matchedLocked(int node, int outcome, long latency, long seenNs, Object request) {
            long now = clock(seenNs);
            sweep(now);
            if (!tickets.take(node, now - latency, request)) {
                return false;
            }
            matched++;
            feed(node, outcome, latency, now);
            return true;
        }

        private void feed(int node, int outcome, long latency, long now) {
            if (outcome == REPLY) {
                policy.observe(Event.REPLY, node, latency, Double.NaN, now);
            } else {
                policy.observe(Event.of(FAILURES[outcome - 1]), node, 0, Double.NaN, now);
            }
        }

        /** A clock that never goes back (threads read it in any order). */
        long clock(long now) {
            if (now > lastNowNs) {
                lastNowNs = now;
            }
            return lastNowNs;
        }

        /** Expires old tickets when a check is due. */
        void sweep(long now) {
            if (now >= nextSweepNs) {
                sweepNow(now);
            }
        }

        void sweepNow(long now) {
            sweepNowNs = now;
            boolean more = tickets.expire(now, EXPIRE_BATCH, onExpired);
            nextSweepNs = more ? now : now + SWEEP_EVERY_NS;
        }

        private void expiredLocked(int node) {
            expired++;
            policy.observe(Event.TIMEOUT, node, 0, Double.NaN, sweepNowNs);
        }
    }
}
