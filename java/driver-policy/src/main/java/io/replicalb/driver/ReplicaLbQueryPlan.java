package io.replicalb.driver;

import com.datastax.oss.driver.api.core.metadata.Node;
import com.datastax.oss.driver.api.core.session.Request;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.AbstractQueue;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Queue;

/**
 * One request's query plan: the candidates in the policy's order, then (computed only if the
 * driver gets that far: retries, speculative executions, no connection) the other live local
 * nodes round-robin and the driver's remote-datacenter failover. Thread-safe: the driver polls a
 * plan from its event loop and from the speculative-execution timer. One allocation beyond its
 * array of candidates; {@link #poll} takes no lock on the common path.
 */
final class ReplicaLbQueryPlan extends AbstractQueue<Node> {
    private static final VarHandle NEXT;

    static {
        try {
            NEXT = MethodHandles.lookup().findVarHandle(ReplicaLbQueryPlan.class, "next", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final Node[] head;
    private final ReplicaLbLoadBalancingPolicy owner;
    private final Request request;
    @SuppressWarnings("unused") // through NEXT
    private volatile int next;
    private volatile Queue<Node> tail;

    ReplicaLbQueryPlan(Node[] head, ReplicaLbLoadBalancingPolicy owner, Request request) {
        this.head = head;
        this.owner = owner;
        this.request = request;
    }

    /** The next node to try, or null at the end; thread-safe. */
    @Override
    public Node poll() {
        int i = (int) NEXT.getAndAdd(this, 1);
        if (i < head.length) {
            return head[i];
        }
        return tail().poll();
    }

    private Queue<Node> tail() {
        Queue<Node> t = tail;
        if (t == null) {
            synchronized (this) {
                t = tail;
                if (t == null) {
                    t = owner.tailPlan(request, head);
                    tail = t;
                }
            }
        }
        return t;
    }

    /** Unsupported: a plan is only consumed. */
    @Override
    public boolean offer(Node node) {
        throw new UnsupportedOperationException("a query plan is read-only");
    }

    /** The next node without taking it. */
    @Override
    public Node peek() {
        int i = (int) NEXT.getVolatile(this);
        return i < head.length ? head[i] : tail().peek();
    }

    /** The nodes not taken yet (a copy). */
    @Override
    public Iterator<Node> iterator() {
        return remaining().iterator();
    }

    /** How many nodes are not taken yet. */
    @Override
    public int size() {
        return remaining().size();
    }

    private List<Node> remaining() {
        List<Node> out = new ArrayList<>();
        for (int i = Math.max(0, (int) NEXT.getVolatile(this)); i < head.length; i++) {
            out.add(head[i]);
        }
        tail().forEach(out::add);
        return out;
    }
}
