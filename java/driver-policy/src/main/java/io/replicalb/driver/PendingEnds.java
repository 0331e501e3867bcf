package io.replicalb.driver;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Attempt ends that found the policy's lock taken, waiting for its next holder, in order: a
 * bounded multi-producer queue (Vyukov's: a sequence per slot, one CAS to claim a slot, no
 * allocation). The driver's I/O threads report ends; instead of waiting for a lock held by a
 * thread that is planning (or was descheduled while planning), an end is queued and applied by
 * whoever holds the lock next, before anything else, so the policy still hears every end in
 * order and before its next decision. Full (a holder stalled for {@link #CAPACITY} ends), the
 * caller takes the lock instead.
 */
final class PendingEnds {
    /** Slots (a power of two). */
    static final int CAPACITY = 1024;
    private static final int MASK = CAPACITY - 1;

    /** What one queued end carries; applied by the lock holder. */
    interface Sink {
        /** An end: {@code node}, {@code outcome} (see {@link ReplicaLbLoadBalancingPolicy}), its latency, when it was seen and its request. */
        void ended(int node, int outcome, long latencyNs, long nowNs, Object request);
    }

    private final AtomicLongArray sequence = new AtomicLongArray(CAPACITY);
    private final long[] nodeAndOutcome = new long[CAPACITY];
    private final long[] latencyNs = new long[CAPACITY];
    private final long[] nowNs = new long[CAPACITY];
    /** Each end's request (released when drained). */
    private final Object[] requests = new Object[CAPACITY];
    private final AtomicLong tail = new AtomicLong();
    /** The next slot to drain: only the lock holder reads and writes it. */
    private long head;

    PendingEnds() {
        for (int i = 0; i < CAPACITY; i++) {
            sequence.set(i, i);
        }
    }

    /** Queues an end; false when full (nothing queued). Any thread. */
    boolean offer(int node, int outcome, long latency, long now, Object request) {
        long t;
        int i;
        for (;;) {
            t = tail.get();
            i = (int) t & MASK;
            long s = sequence.get(i);
            if (s == t) {
                if (tail.compareAndSet(t, t + 1)) {
                    break;
                }
            } else if (s < t) {
                return false;
            }
        }
        nodeAndOutcome[i] = (long) node << 8 | outcome;
        latencyNs[i] = latency;
        nowNs[i] = now;
        requests[i] = request;
        // Publishes the slot's fields (written above) to the drainer.
        sequence.set(i, t + 1);
        return true;
    }

    /** Applies every published end to {@code sink}, oldest first. The lock holder only. */
    void drain(Sink sink) {
        for (;;) {
            int i = (int) head & MASK;
            if (sequence.get(i) != head + 1) {
                return;
            }
            long no = nodeAndOutcome[i];
            long latency = latencyNs[i];
            long now = nowNs[i];
            Object request = requests[i];
            requests[i] = null;
            sequence.set(i, head + CAPACITY);
            head++;
            sink.ended((int) (no >>> 8), (int) (no & 0xff), latency, now, request);
        }
    }
}
