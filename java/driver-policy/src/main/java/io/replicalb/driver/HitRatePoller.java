package io.replicalb.driver;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.cql.AsyncResultSet;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import com.datastax.oss.driver.api.core.cql.Statement;
import com.datastax.oss.driver.api.core.metadata.Node;
import com.datastax.oss.driver.api.core.servererrors.InvalidQueryException;
import com.datastax.oss.driver.api.core.session.Request;
import com.datastax.oss.driver.api.core.session.Session;
import com.datastax.oss.driver.internal.core.context.InternalDriverContext;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Every live local node's cache hit rate, read off the request path for {@code hwlb-client}
 * (HWLB at the client): the replica-lb plug-in for Cassandra shows each node's tracker rate in
 * its virtual table {@code replica_lb_hwlb.node} (java/hwlb-snitch, HwlbTables), node-local like
 * every virtual table, so each node is asked with a statement pinned to it
 * ({@link Statement#setNode}). A poll runs every {@code hit-rate-poll-interval} on the driver's
 * admin executor and sends every read asynchronously; each answer is told the policy
 * ({@link ReplicaLbLoadBalancingPolicy#recordHitRate}). A node without the table (no plug-in)
 * is skipped quietly for {@link #MISSING_RETRY_NS} and counted; other failures are counted and
 * the node keeps its last rate (it turns stale in the policy).
 */
final class HitRatePoller {
    /** The read; its identity marks the poller's own requests, which the tracker ignores. */
    static final String QUERY = "SELECT hit_rate FROM replica_lb_hwlb.node";
    /** How long a node without the table is left alone, ns. */
    static final long MISSING_RETRY_NS = TimeUnit.SECONDS.toNanos(60);

    private final ReplicaLbLoadBalancingPolicy policy;
    private final InternalDriverContext context;
    private final long intervalNs;
    private final Duration timeout;
    private final AtomicBoolean started = new AtomicBoolean();
    private final Map<Node, Long> missingUntilNs = new ConcurrentHashMap<>();
    private final AtomicLong polls = new AtomicLong();
    private final AtomicLong missing = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private volatile io.netty.util.concurrent.ScheduledFuture<?> task;

    HitRatePoller(ReplicaLbLoadBalancingPolicy policy, InternalDriverContext context, ReplicaLbSettings settings) {
        this.policy = policy;
        this.context = context;
        this.intervalNs = settings.hitRatePollIntervalNs();
        this.timeout = Duration.ofNanos(settings.hitRatePollTimeoutNs());
    }

    /** Whether {@code request} is one of the poller's reads (pinned to a node, this query). */
    static boolean isPoll(Request request) {
        return request.getNode() != null && request instanceof SimpleStatement s && s.getQuery() == QUERY;
    }

    /** Polls {@code session} every interval from now on (once; later calls do nothing). */
    void start(Session session) {
        if (!started.compareAndSet(false, true)) {
            return;
        }
        task = context.getNettyOptions()
                .adminEventExecutorGroup()
                .next()
                .scheduleWithFixedDelay(() -> pollOnce(session), intervalNs, intervalNs, TimeUnit.NANOSECONDS);
    }

    /** Stops polling. */
    void stop() {
        io.netty.util.concurrent.ScheduledFuture<?> t = task;
        if (t != null) {
            t.cancel(false);
        }
    }

    /** Sends one read to every live local node (answers arrive asynchronously). */
    void pollOnce(Session session) {
        try {
            long now = System.nanoTime();
            for (int id : policy.table().liveLocal()) {
                NodeTable.Entry e = policy.table().byId(id);
                if (e == null) {
                    continue;
                }
                Long until = missingUntilNs.get(e.node);
                if (until != null && now - until < 0) {
                    continue;
                }
                Statement<?> read = SimpleStatement.newInstance(QUERY)
                        .setNode(e.node)
                        .setTimeout(timeout)
                        .setConsistencyLevel(ConsistencyLevel.ONE)
                        .setIdempotent(true);
                session.execute(read, Statement.ASYNC).whenComplete((rs, err) -> answered(e.node, rs, err));
            }
        } catch (RuntimeException e) {
            // The session is closing, or a node went away mid-loop: the next poll starts again.
            failed.incrementAndGet();
        }
    }

    /** One node's answer: its rate told the policy, or why not counted. */
    void answered(Node node, AsyncResultSet rs, Throwable err) {
        if (err != null) {
            Throwable cause = err instanceof CompletionException && err.getCause() != null ? err.getCause() : err;
            if (cause instanceof InvalidQueryException) {
                // No such keyspace or table: the plug-in is not installed there.
                missing.incrementAndGet();
                missingUntilNs.put(node, System.nanoTime() + MISSING_RETRY_NS);
            } else {
                failed.incrementAndGet();
            }
            return;
        }
        Row row = rs == null ? null : rs.one();
        if (row == null || row.isNull("hit_rate")) {
            failed.incrementAndGet();
            return;
        }
        if (policy.recordHitRate(node, row.getDouble("hit_rate"))) {
            missingUntilNs.remove(node);
            polls.incrementAndGet();
        } else {
            failed.incrementAndGet();
        }
    }

    /** Rates read and told the policy. */
    long polls() {
        return polls.get();
    }

    /** Reads of nodes without the table. */
    long missing() {
        return missing.get();
    }

    /** Reads that failed otherwise. */
    long failed() {
        return failed.get();
    }
}
