package io.replicalb.cassandra.hwlb;

import org.apache.cassandra.locator.InetAddressAndPort;
import org.apache.cassandra.net.Message;
import org.apache.cassandra.net.MessagingService;
import org.apache.cassandra.net.NoPayload;
import org.apache.cassandra.net.OutboundConnections;
import org.apache.cassandra.net.RequestCallback;
import org.apache.cassandra.net.Verb;

/**
 * {@link HealthProber.Transport} over Cassandra's messaging: pending counts from the outbound
 * connections (small, large and urgent, {@code OutboundConnection.pendingCount()}), probes as
 * {@code ECHO_REQ} with a callback that does not feed the snitch latency (its round trip goes
 * to the plug-in only).
 */
public final class CassandraProbes implements HealthProber.Transport
{
    @Override
    public int pending(InetAddressAndPort peer)
    {
        OutboundConnections c = MessagingService.instance().channelManagers.get(peer);
        return c == null ? 0 : c.small.pendingCount() + c.large.pendingCount() + c.urgent.pendingCount();
    }

    @Override
    public void probe(InetAddressAndPort peer, Runnable onReply)
    {
        Message<NoPayload> echo = Message.out(Verb.ECHO_REQ, NoPayload.noPayload);
        MessagingService.instance().sendWithCallback(echo, peer, new RequestCallback<NoPayload>()
        {
            @Override
            public void onResponse(Message<NoPayload> msg)
            {
                onReply.run();
            }
        });
    }
}
