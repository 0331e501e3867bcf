package io.replicalb.driver;

import java.util.Arrays;
import java.util.function.IntConsumer;

/**
 * Attempts in flight without a "request started" hook: tickets matched by start time, and
 * expiry (the Java port of crates/driver/src/inflight.rs).
 *
 * <p>The driver asks for a query plan, sends to the plan's first node, and later reports the
 * attempt's end to the request tracker with the node and the attempt's latency, but no request
 * identity. It reports nothing when the send never happens or its end is never seen: no
 * connection could be had, a speculative execution lost and was cancelled, the request timed
 * out on the client. A count taken at plan time and given back in the callbacks would leak in
 * those cases and drift up for ever; and retries and speculative executions end attempts that
 * no plan counted.
 *
 * <p>The rule: every plan opens a ticket on its first node, stamped with the plan time and owned
 * by the plan's request. The driver reports an attempt's end with the request it sent (the same
 * object for the first attempt), so an end of a request that owns an open ticket of the node
 * ends that ticket: an exact pairing, whatever the clocks say (by time alone, an end could take
 * another request's ticket, for instance in a shard that held only another request's older
 * ticket of the node; the robbed request's end then matched none, and the robber's own ticket
 * stayed open, a request stuck at the node until the TTL). By time, for ends and tickets without an owner (or an end
 * whose request owns none, such as a retry with a changed statement): an
 * attempt's end is matched to the node's latest open ticket stamped no later than the attempt
 * started ({@code now - latency}) and no earlier than {@code matchWindowNs} before it (else the
 * first stamped up to {@link #SKEW_NS} after it, for clock readings a little apart). An end that
 * matches none is untracked (the caller counts it as a send ended at once). A ticket nobody
 * ends expires {@code ttlNs} after its plan and ends as a time-out; a node keeps at most
 * {@code maxPerNode} open tickets, beyond that the oldest ends as a time-out at once. So an
 * in-flight count is wrong only for tickets younger than the TTL, and at quiescence every count
 * is zero.
 *
 * <p>Not thread-safe: the policy calls it under its lock. Times are non-negative nanoseconds
 * on one monotonic clock, never earlier than the previous call's. Owners are compared by
 * identity and released when their ticket ends.
 */
final class Tickets {
    /** How far back from an attempt's start a ticket is searched (entries skipped), at most. */
    static final int MAX_SCAN = 64;
    /** A ticket stamped at most this long after an attempt's computed start still matches it. */
    static final long SKEW_NS = 1_000_000;

    /**
     * One node's tickets in stamp order, in a ring: a stamp {@code t >= 0} is open, {@code ~t}
     * (negative) is ended (kept while an older open one is still in front of it).
     */
    private static final class Ring {
        long[] buf = new long[8];
        /** Each entry's owner (null: none, or ended), at the same index as its stamp. */
        Object[] owners = new Object[8];
        int head;
        int size;

        long at(int i) {
            return buf[(head + i) & (buf.length - 1)];
        }

        Object ownerAt(int i) {
            return owners[(head + i) & (buf.length - 1)];
        }

        /** Ends entry {@code i}: its stamp turns negative, its owner is released. */
        void end(int i) {
            int j = (head + i) & (buf.length - 1);
            buf[j] = ~buf[j];
            owners[j] = null;
        }

        void pushBack(long v, Object owner) {
            if (size == buf.length) {
                long[] grown = new long[buf.length * 2];
                Object[] grownOwners = new Object[buf.length * 2];
                for (int i = 0; i < size; i++) {
                    grown[i] = at(i);
                    grownOwners[i] = ownerAt(i);
                }
                buf = grown;
                owners = grownOwners;
                head = 0;
            }
            int j = (head + size) & (buf.length - 1);
            buf[j] = v;
            owners[j] = owner;
            size++;
        }

        long popFront() {
            long v = buf[head];
            owners[head] = null;
            head = (head + 1) & (buf.length - 1);
            size--;
            return v;
        }

        void trimEnded() {
            while (size > 0 && at(size - 1) < 0) {
                size--;
            }
            while (size > 0 && buf[head] < 0) {
                popFront();
            }
        }
    }

    private Ring[] perNode = new Ring[0];
    private long open;
    private final long ttlNs;
    private final long matchWindowNs;
    private final int maxPerNode;

    /** No open tickets; a ticket expires after {@code ttlNs}, matches within {@code matchWindowNs}, at most {@code maxPerNode} open per node. */
    Tickets(long ttlNs, long matchWindowNs, int maxPerNode) {
        this.ttlNs = ttlNs;
        this.matchWindowNs = matchWindowNs;
        this.maxPerNode = Math.max(1, maxPerNode);
    }

    /** Tickets not ended yet, over all nodes. */
    long open() {
        return open;
    }

    /** Tickets of {@code node} not ended yet. */
    int openFor(int node) {
        if (node >= perNode.length || perNode[node] == null) {
            return 0;
        }
        Ring r = perNode[node];
        int n = 0;
        for (int i = 0; i < r.size; i++) {
            if (r.at(i) >= 0) {
                n++;
            }
        }
        return n;
    }

    /**
     * Opens a ticket on {@code node} stamped {@code nowNs}, owned by {@code owner} (the plan's
     * request; null: none). Returns whether the per-node bound pushed out an older open
     * ticket, which the caller ends as a time-out.
     */
    boolean opened(int node, long nowNs, Object owner) {
        if (node >= perNode.length) {
            perNode = Arrays.copyOf(perNode, Math.max(node + 1, perNode.length * 2));
        }
        Ring r = perNode[node];
        if (r == null) {
            r = new Ring();
            perNode[node] = r;
        }
        boolean evicted = false;
        if (r.size >= maxPerNode) {
            while (r.size > 0) {
                if (r.popFront() >= 0) {
                    open--;
                    evicted = true;
                    break;
                }
            }
        }
        r.pushBack(nowNs, owner);
        open++;
        return evicted;
    }

    /**
     * Ends the ticket of an attempt on {@code node} that started at {@code startedNs}, of the
     * request {@code owner} (null: unknown); false: none matches (untracked).
     */
    boolean take(int node, long startedNs, Object owner) {
        if (node >= perNode.length || perNode[node] == null) {
            return false;
        }
        Ring r = perNode[node];
        if (r.size == 0) {
            return false;
        }
        // The common case: the node's latest plan is this attempt's (the same request; or,
        // without one, open and stamped before it started, within the window).
        int lastAt = r.size - 1;
        long last = r.at(lastAt);
        boolean own = owner != null ? r.ownerAt(lastAt) == owner : last <= startedNs && last >= startedNs - matchWindowNs;
        if (last >= 0 && own) {
            r.end(lastAt);
            r.trimEnded();
            open--;
            return true;
        }
        return takeSlow(r, startedNs, owner);
    }

    private static long stamp(long v) {
        return v < 0 ? ~v : v;
    }

    /** Whether the open entry {@code i} may be taken by an end of {@code owner} by time: any for an end without one, else only those without an owner. */
    private static boolean takesByTime(Ring r, int i, Object owner) {
        return r.at(i) >= 0 && (owner == null || r.ownerAt(i) == null);
    }

    private boolean takeSlow(Ring r, long startedNs, Object owner) {
        int found = -1;
        if (owner != null) {
            // This request's latest open ticket of the node, however many plans came since.
            for (int i = r.size - 1; i >= 0; i--) {
                if (r.at(i) >= 0 && r.ownerAt(i) == owner) {
                    found = i;
                    break;
                }
            }
        }
        if (found < 0) {
            found = byTime(r, startedNs, owner);
        }
        if (found < 0) {
            return false;
        }
        r.end(found);
        open--;
        r.trimEnded();
        return true;
    }

    /** The entry an end of {@code owner} that started at {@code startedNs} takes by time, or -1. */
    private int byTime(Ring r, long startedNs, Object owner) {
        // The first entry stamped after the start.
        int lo = 0;
        int hi = r.size;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (stamp(r.at(mid)) <= startedNs) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        int end = lo;
        long oldest = startedNs - matchWindowNs;
        // The latest open ticket stamped before the attempt started, within the window...
        for (int i = end - 1, k = 0; i >= 0 && k < MAX_SCAN; i--, k++) {
            if (stamp(r.at(i)) < oldest) {
                break;
            }
            if (takesByTime(r, i, owner)) {
                return i;
            }
        }
        // ...else the first stamped just after it.
        long latest = startedNs + SKEW_NS;
        for (int i = end, k = 0; i < r.size && k < MAX_SCAN; i++, k++) {
            if (stamp(r.at(i)) > latest) {
                break;
            }
            if (takesByTime(r, i, owner)) {
                return i;
            }
        }
        return -1;
    }

    /**
     * Ends the tickets stamped at or before {@code nowNs - ttlNs}, handing each one's node to
     * {@code expired}, at most {@code max} of them; returns whether more are due.
     */
    boolean expire(long nowNs, int max, IntConsumer expired) {
        if (nowNs < ttlNs) {
            return false;
        }
        long limit = nowNs - ttlNs;
        int handed = 0;
        for (int node = 0; node < perNode.length; node++) {
            Ring r = perNode[node];
            if (r == null) {
                continue;
            }
            while (r.size > 0) {
                long v = r.at(0);
                if (v >= 0 && v > limit) {
                    break;
                }
                if (v >= 0 && handed == max) {
                    return true;
                }
                r.popFront();
                if (v >= 0) {
                    open--;
                    handed++;
                    expired.accept(node);
                }
            }
        }
        return false;
    }
}
