package io.replicalb.cassandra.hwlb;

import java.util.List;
import java.util.function.LongSupplier;

import org.apache.cassandra.locator.InetAddressAndPort;

/**
 * Off the request path (the {@code hwlb-tick} thread, every {@code probe_interval_ms}): samples
 * the messages pending on the outbound connection to each live peer, and probes a live peer
 * that has not replied for {@code probe_interval_ms} with one ECHO request, its answer
 * recorded as one ({@link CoordinatorHealth#answered}: alive, but no read latency); a probe unanswered for {@code probe_timeout_ms} is recorded as an
 * expiry. At most one probe per peer is outstanding.
 */
public final class HealthProber
{
    /** How probes go out and pending counts are read (Cassandra's messaging, or a fake in tests). */
    public interface Transport
    {
        /** Messages pending on the outbound connections to {@code peer} (0 without a connection). */
        int pending(InetAddressAndPort peer);

        /** Sends one probe to {@code peer}; {@code onReply} runs when it is answered. */
        void probe(InetAddressAndPort peer, Runnable onReply);
    }

    private final PeerDirectory directory;
    private final CoordinatorHealth health;
    private final Transport transport;
    private final HwlbCounters counters;
    private final long intervalNs;
    private final long timeoutNs;
    private final LongSupplier clock;
    /** Per node id: when its outstanding probe went out, or Long.MIN_VALUE (guarded by this). */
    private long[] outstandingNs = new long[0];
    /** Per node id: a counter making late answers of an abandoned probe harmless (guarded by this). */
    private long[] probeSeq = new long[0];

    /** A prober over {@code transport}, counting into {@code counters}. */
    public HealthProber(PeerDirectory directory, CoordinatorHealth health, Transport transport, HwlbCounters counters,
                        CoordinatorRule rule, LongSupplier clock)
    {
        this.directory = directory;
        this.health = health;
        this.transport = transport;
        this.counters = counters;
        this.intervalNs = rule.probeIntervalMs() * 1_000_000L;
        this.timeoutNs = rule.probeTimeoutMs() * 1_000_000L;
        this.clock = clock;
    }

    /** One round over the live peers. */
    public void tick()
    {
        long now = clock.getAsLong();
        List<PeerDirectory.PeerInfo> peers = directory.describe(now);
        int local = directory.localId();
        for (PeerDirectory.PeerInfo p : peers)
        {
            if (p.id() == local || !p.live())
                continue;
            int id = p.id();
            health.pending(id, transport.pending(p.endpoint()));
            maybeProbe(id, p.endpoint(), now);
        }
    }

    private void maybeProbe(int id, InetAddressAndPort peer, long now)
    {
        long seq;
        synchronized (this)
        {
            ensure(id);
            long out = outstandingNs[id];
            if (out != Long.MIN_VALUE)
            {
                if (now - out < timeoutNs)
                    return;
                // Unanswered for probe_timeout: an expiry; the probe is abandoned.
                outstandingNs[id] = Long.MIN_VALUE;
                probeSeq[id]++;
                health.expired(id, now);
                return;
            }
            long last = health.lastReplyNs(id);
            if (last != Long.MIN_VALUE && now - last < intervalNs)
                return;
            outstandingNs[id] = now;
            seq = ++probeSeq[id];
        }
        counters.probed();
        transport.probe(peer, () -> answered(id, seq));
    }

    private void answered(int id, long seq)
    {
        long now = clock.getAsLong();
        synchronized (this)
        {
            if (probeSeq[id] != seq || outstandingNs[id] == Long.MIN_VALUE)
                return; // abandoned (already counted as an expiry)
            outstandingNs[id] = Long.MIN_VALUE;
        }
        health.answered(id, now);
    }

    private void ensure(int id)
    {
        if (id < outstandingNs.length)
            return;
        int n = Math.max(id + 1, outstandingNs.length * 2);
        long[] o = java.util.Arrays.copyOf(outstandingNs, n);
        for (int i = outstandingNs.length; i < n; i++)
            o[i] = Long.MIN_VALUE;
        outstandingNs = o;
        probeSeq = java.util.Arrays.copyOf(probeSeq, n);
    }
}
