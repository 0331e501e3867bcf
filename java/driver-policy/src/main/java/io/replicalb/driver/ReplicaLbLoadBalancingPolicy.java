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
import io.replicalb.core.client.Failure;
import java.util.Arrays;
import java.util.Map;
import java.util.Optional;
import java.util.Queue;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
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
 * <p>Feedback: the policy registers itself as a {@link RequestTracker} (as the driver's
 * default policy does, through {@link #getRequestTracker()}) and hears every attempt's latency
 * and outcome. In-flight counts cannot drift: each plan opens a ticket on its first node, an
 * attempt's end closes the matching ticket, an end without one (a retry, a speculative
 * execution) counts as a send ended at once, and a ticket whose end never comes (a time-out, a
 * lost speculative execution, no connection) expires after {@code ticket-ttl} as a time-out
 * ({@link Tickets}). Node ids are dense, given once per node ({@link NodeTable}); zones are
 * racks.
 *
 * <p>Hit rates ({@code hwlb-client}): once the session is ready (the tracker's
 * {@link #onSessionReady}) every live local node's {@code replica_lb_hwlb.node.hit_rate} is read
 * every {@code hit-rate-poll-interval} on the driver's admin executor, off the request path,
 * and told the policy; nodes without the plug-in's table are skipped quietly (counted).
 * {@link #recordHitRate} feeds rates from any other source.
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

    /** Outcome codes of a queued end: a reply, or a {@link Failure} by its ordinal plus one. */
    private static final int REPLY = 0;
    private static final Failure[] FAILURES = Failure.values();

    /** One thread's scratch arrays for a plan (no allocation per request). */
    private static final class Scratch {
        final int[] candidates = new int[MAX_CANDIDATES];
        final int[] order = new int[MAX_CANDIDATES];
    }

    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

    private final ReplicaLbSettings settings;
    private final long epochNs = System.nanoTime();
    private final AtomicInteger rotation = new AtomicInteger();
    private volatile NodeTable nodes;
    private final HitRatePoller poller;

    /** Attempt ends that found the lock taken (applied by its next holder first). */
    private final PendingEnds pending = new PendingEnds();
    private final PendingEnds.Sink applyEnd = this::endLocked;
    /** Guards everything below: held only for a decision or a callback's bookkeeping. */
    private final ReentrantLock lock = new ReentrantLock();
    private final ClientPolicy policy;
    private final Rng rng;
    private final Tickets tickets;
    private long lastNowNs;
    private long nextSweepNs;
    private long sweepNowNs;
    private long picks;
    private long matched;
    private long untracked;
    private long expired;
    private long overridden;
    private long unknownNodes;
    private final IntConsumer onExpired = this::expiredLocked;

    /**
     * Built by the driver from {@code basic.load-balancing-policy.class} for the execution
     * profile {@code profileName}; its options are that profile's {@code advanced.replica-lb},
     * the policy the registered one named by {@code advanced.replica-lb.policy}.
     *
     * @throws IllegalArgumentException with a one-line message naming a bad option or value
     */
    public ReplicaLbLoadBalancingPolicy(DriverContext context, String profileName) {
        this(context, profileName, s -> ClientPolicies.create(s.policy(), s.params()));
    }

    /**
     * For a subclass that brings its own policy (one not in the registry, or a test's):
     * {@code factory} builds it from the checked options.
     *
     * @throws IllegalArgumentException with a one-line message naming a bad option or value
     */
    protected ReplicaLbLoadBalancingPolicy(DriverContext context, String profileName, Function<ReplicaLbSettings, ClientPolicy> factory) {
        super(context, profileName);
        this.settings = ReplicaLbSettings.of(profile);
        try {
            this.policy = factory.apply(settings);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("datastax-java-driver." + ReplicaLbOption.POLICY.getPath() + ": "
                    + ReplicaLbSettings.oneLine(e.getMessage()), e);
        }
        this.rng = Rng.seedFromU64(settings.seed());
        this.tickets = new Tickets(settings.ticketTtlNs(), settings.ticketMatchWindowNs(), settings.maxOpenTicketsPerNode());
        this.nodes = new NodeTable(null, settings.localRack());
        this.poller = settings.hitRatePollIntervalNs() > 0 ? new HitRatePoller(this, this.context, settings) : null;
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

    /** The client policy's registered name. */
    public String policyName() {
        lockAndDrain();
        try {
            return policy.name();
        } finally {
            lock.unlock();
        }
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

    /** The driver's nodes once connected: each gets its id; the policy hears the zones and the live ones. */
    @Override
    public void init(Map<UUID, Node> nodes, DistanceReporter distanceReporter) {
        super.init(nodes, distanceReporter);
        NodeTable table = new NodeTable(getLocalDatacenter(), settings.localRack());
        for (Node node : nodes.values()) {
            table.add(node, computeNodeDistance(node) != NodeDistance.IGNORED && node.getState() != NodeState.DOWN);
        }
        this.nodes = table;
        NodeTable.Topology topology = table.topology();
        long now = nowNs();
        lockAndDrain();
        try {
            now = clockLocked(now);
            policy.onTopology(topology.zoneOfNode(), topology.localZone());
            for (NodeTable.Entry e : table.entries()) {
                if (e.local && e.live) {
                    policy.onNodeUp(e.id, now);
                }
            }
        } finally {
            lock.unlock();
        }
    }

    /** A node joined: it gets its id (not live until it is up) and the policy the new topology. */
    @Override
    public void onAdd(Node node) {
        super.onAdd(node);
        addNode(node);
    }

    /** Gives {@code node} an id (not live yet) and tells the policy the new topology. */
    private void addNode(Node node) {
        NodeTable table = nodes;
        if (table.add(node, false) != null) {
            NodeTable.Topology topology = table.topology();
            lockAndDrain();
            try {
                policy.onTopology(topology.zoneOfNode(), topology.localZone());
            } finally {
                lock.unlock();
            }
        }
    }

    /** A node is up: a local one is a candidate again and the policy hears it. */
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
            long now = nowNs();
            lockAndDrain();
            try {
                policy.onNodeUp(e.id, clockLocked(now));
            } finally {
                lock.unlock();
            }
        }
    }

    /** A node is down: no longer a candidate, and the policy hears it. */
    @Override
    public void onDown(Node node) {
        super.onDown(node);
        NodeTable.Entry e = nodes.setLive(node, false);
        if (e != null && e.local) {
            long now = nowNs();
            lockAndDrain();
            try {
                policy.onNodeDown(e.id, clockLocked(now));
            } finally {
                lock.unlock();
            }
        }
    }

    /** A node left: forgotten (its id is not reused); the policy hears it down and the new topology. */
    @Override
    public void onRemove(Node node) {
        super.onRemove(node);
        NodeTable table = nodes;
        NodeTable.Entry e = table.remove(node);
        if (e != null) {
            NodeTable.Topology topology = table.topology();
            long now = nowNs();
            lockAndDrain();
            try {
                now = clockLocked(now);
                if (e.local) {
                    policy.onNodeDown(e.id, now);
                }
                policy.onTopology(topology.zoneOfNode(), topology.localZone());
            } finally {
                lock.unlock();
            }
        }
    }

    /**
     * The plan of one request: the candidates in the client policy's order (its first node's
     * ticket opened), then the other live local nodes; the driver's own for anything but a
     * statement.
     */
    @Override
    public Queue<Node> newQueryPlan(Request request, Session session) {
        if (!(request instanceof Statement)) {
            // The driver's own plans (control connection, prepare on every node): round-robin.
            return super.newQueryPlan(request, session);
        }
        NodeTable table = nodes;
        Scratch s = SCRATCH.get();
        int[] cands = s.candidates;
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
        int[] order = s.order;
        boolean planned;
        int first;
        lockAndDrain();
        try {
            // Read under the lock: the ticket's stamp is never later than the attempt's start
            // (the driver starts it after this returns), however long this thread waited here.
            long now = clockLocked(nowNs());
            if (now >= nextSweepNs) {
                sweepLocked(now);
            }
            boolean valid;
            try {
                valid = policy.plan(cands, c, now, rng, order) == c && isOrderOf(order, cands, c);
            } catch (RuntimeException e) {
                valid = false;
            }
            planned = valid;
            if (valid) {
                first = order[0];
            } else {
                overridden++;
                first = cands[0];
            }
            policy.onSend(first, now);
            picks++;
            if (tickets.opened(first, now)) {
                expired++;
                policy.onFailure(first, Failure.TIMEOUT, now);
            }
        } finally {
            lock.unlock();
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
            ended(node, latencyNanos, null);
        }
    }

    /** An attempt failed: the failure ({@link #failureOf}) reaches the policy (the poller's reads excepted). */
    @Override
    public void onNodeError(
            Request request, Throwable error, long latencyNanos, DriverExecutionProfile executionProfile, Node node, String requestLogPrefix) {
        if (!HitRatePoller.isPoll(request)) {
            ended(node, latencyNanos, failureOf(error));
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
     * An attempt on {@code node} that took {@code latencyNs} ended: a reply ({@code failure}
     * null) or a failure. Applied now if the lock is free, else queued for the lock's next
     * holder ({@link PendingEnds}): an end never waits for a plan.
     */
    private void ended(Node node, long latencyNs, Failure failure) {
        NodeTable.Entry e = nodes.get(node);
        int outcome = failure == null ? REPLY : failure.ordinal() + 1;
        long latency = Math.max(0, latencyNs);
        long now = nowNs();
        if (e == null) {
            lock.lock();
        } else if (!lock.tryLock()) {
            if (pending.offer(e.id, outcome, latency, now)) {
                return;
            }
            lock.lock();
        }
        try {
            pending.drain(applyEnd);
            if (e == null) {
                unknownNodes++;
            } else {
                endLocked(e.id, outcome, latency, now);
            }
        } finally {
            lock.unlock();
        }
    }

    /** Applies one end (the lock held): it closes its ticket, or counts as a send ended at once. */
    private void endLocked(int node, int outcome, long latency, long seenNs) {
        long now = clockLocked(seenNs);
        if (now >= nextSweepNs) {
            sweepLocked(now);
        }
        if (tickets.take(node, now - latency)) {
            matched++;
        } else {
            untracked++;
            policy.onSend(node, now);
        }
        if (outcome == REPLY) {
            policy.onReply(node, latency, Double.NaN, now);
        } else {
            policy.onFailure(node, FAILURES[outcome - 1], now);
        }
    }

    /** The lock, and every queued end applied. */
    private void lockAndDrain() {
        lock.lock();
        pending.drain(applyEnd);
    }

    /**
     * Tells the policy {@code node}'s cache hit rate in [0, 1], measured off the request path
     * (the poller does for {@code hwlb-client}; any other source may too). Returns false, doing
     * nothing, for a rate outside [0, 1] or a node without an id.
     */
    public boolean recordHitRate(Node node, double hitRate) {
        NodeTable.Entry e = nodes.get(node);
        if (e == null || !(hitRate >= 0.0 && hitRate <= 1.0)) {
            return false;
        }
        long now = nowNs();
        lockAndDrain();
        try {
            policy.onHitRate(e.id, hitRate, clockLocked(now));
        } finally {
            lock.unlock();
        }
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
     * Ends the tickets older than the TTL now, rather than at the next call (for a check at
     * quiescence: every count back to zero).
     */
    public void expireNow() {
        long now = nowNs();
        lockAndDrain();
        try {
            now = clockLocked(now);
            sweepLocked(now);
            while (nextSweepNs == now) {
                sweepLocked(now);
            }
        } finally {
            lock.unlock();
        }
    }

    /** What it did so far. */
    public Counters counters() {
        long polls = poller == null ? 0 : poller.polls();
        long missing = poller == null ? 0 : poller.missing();
        long failed = poller == null ? 0 : poller.failed();
        lockAndDrain();
        try {
            return new Counters(picks, matched, untracked, expired, tickets.open(), overridden, unknownNodes + nodes.unmapped(), polls, missing,
                    failed);
        } finally {
            lock.unlock();
        }
    }

    /** Open tickets of {@code node} now (0 for a node without an id). */
    public int openTickets(Node node) {
        NodeTable.Entry e = nodes.get(node);
        if (e == null) {
            return 0;
        }
        lockAndDrain();
        try {
            return tickets.openFor(e.id);
        } finally {
            lock.unlock();
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

    /** A clock that never goes back (threads read it in any order). */
    private long clockLocked(long now) {
        if (now > lastNowNs) {
            lastNowNs = now;
        }
        return lastNowNs;
    }

    private void sweepLocked(long now) {
        sweepNowNs = now;
        boolean more = tickets.expire(now, EXPIRE_BATCH, onExpired);
        nextSweepNs = more ? now : now + SWEEP_EVERY_NS;
    }

    private void expiredLocked(int node) {
        expired++;
        policy.onFailure(node, Failure.TIMEOUT, sweepNowNs);
    }
}
