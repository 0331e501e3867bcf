package io.replicalb.cassandra.hwlb;

import java.util.concurrent.TimeUnit;

import org.apache.cassandra.locator.InetAddressAndPort;
import org.apache.cassandra.net.LatencySubscribers;

/**
 * Feeds {@link CoordinatorHealth} from Cassandra's latency feed
 * ({@code MessagingService.instance().latencySubscribers}, the one DynamicEndpointSnitch uses):
 * the latency of every reply to a request whose callback tracks latency (reads), and every
 * expired such request with its time-out as the latency. A sample at or above
 * {@code expiryNs} (the read time-out) is therefore an expiry, the others replies.
 */
public final class LatencyFeed implements LatencySubscribers.Subscriber
{
    private final PeerDirectory directory;
    private final CoordinatorHealth health;
    private final long expiryNs;

    /**
     * A feed into {@code health}, node ids from {@code directory}.
     *
     * @param expiryNs samples at or above this are expiries (Cassandra's read time-out, ns)
     */
    public LatencyFeed(PeerDirectory directory, CoordinatorHealth health, long expiryNs)
    {
        if (expiryNs <= 0)
            throw new IllegalArgumentException("the expiry threshold must be positive: " + expiryNs);
        this.directory = directory;
        this.health = health;
        this.expiryNs = expiryNs;
    }

    @Override
    public void receiveTiming(InetAddressAndPort address, long latency, TimeUnit unit)
    {
        long now = System.nanoTime();
        int id = directory.view().id(address);
        if (id < 0)
            id = directory.idOf(address, now);
        long ns = unit.toNanos(latency);
        if (ns >= expiryNs)
            health.expired(id, now);
        else
            health.replied(id, ns, now);
    }
}
