package io.replicalb.cassandra.hwlb;

import java.lang.reflect.Field;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.apache.cassandra.config.DatabaseDescriptor;
import org.apache.cassandra.db.Keyspace;
import org.apache.cassandra.locator.DynamicEndpointSnitch;
import org.apache.cassandra.locator.IEndpointSnitch;
import org.apache.cassandra.net.MessagingService;
import org.apache.cassandra.schema.Schema;

/**
 * {@link SnitchInstaller}'s node slot and DynamicEndpointSnitch operations on a real Cassandra
 * 5.0 node.
 *
 * <p>Install: {@code DatabaseDescriptor.setEndpointSnitch} and every keyspace's replication
 * strategy's {@code snitch}, as {@code StorageService.updateSnitch}. A DynamicEndpointSnitch
 * subscribes itself to the latency feed on its first score update and 5.0's
 * {@code LatencySubscribers} cannot unsubscribe; so the plug-in subscribes one relay once and
 * marks each DynamicEndpointSnitch it creates as subscribed (its private {@code registered}
 * flag), feeding it through the relay while it is installed. If that flag cannot be set the
 * snitch subscribes itself, and after close it keeps receiving timings (as after Cassandra's own
 * {@code updateSnitch}); this is logged.
 */
public final class CassandraSnitches implements SnitchInstaller.NodeSnitch, SnitchInstaller.DesOps
{
    private static final Logger logger = LoggerFactory.getLogger(CassandraSnitches.class);

    private final DesRelay relay = new DesRelay();
    private boolean relaySubscribed;

    @Override
    public IEndpointSnitch current()
    {
        return DatabaseDescriptor.getEndpointSnitch();
    }

    @Override
    public void install(IEndpointSnitch snitch)
    {
        DatabaseDescriptor.setEndpointSnitch(snitch);
        for (String ks : Schema.instance.getKeyspaces())
            Keyspace.open(ks).getReplicationStrategy().snitch = snitch;
    }

    @Override
    public boolean isDes(IEndpointSnitch snitch)
    {
        return snitch instanceof DynamicEndpointSnitch;
    }

    @Override
    public IEndpointSnitch wrapped(IEndpointSnitch des)
    {
        return ((DynamicEndpointSnitch) des).subsnitch;
    }

    @Override
    public synchronized IEndpointSnitch create(IEndpointSnitch inner)
    {
        DynamicEndpointSnitch des = new DynamicEndpointSnitch(inner);
        if (markSubscribed(des))
        {
            if (!relaySubscribed)
            {
                MessagingService.instance().latencySubscribers.subscribe(relay);
                relaySubscribed = true;
            }
            relay.target = des;
        }
        return des;
    }

    @Override
    public synchronized void close(IEndpointSnitch des)
    {
        if (relay.target == des)
            relay.target = null;
        ((DynamicEndpointSnitch) des).close();
    }

    private static boolean markSubscribed(DynamicEndpointSnitch des)
    {
        try
        {
            Field f = DynamicEndpointSnitch.class.getDeclaredField("registered");
            f.setAccessible(true);
            f.setBoolean(des, true);
            return true;
        }
        catch (ReflectiveOperationException | RuntimeException e)
        {
            logger.warn("HWLB: cannot route DynamicEndpointSnitch's timings through the relay ({}); it subscribes itself and stays subscribed after close", e.toString());
            return false;
        }
    }

    /** Forwards the latency feed to the installed DynamicEndpointSnitch, if any. */
    private static final class DesRelay implements org.apache.cassandra.net.LatencySubscribers.Subscriber
    {
        volatile DynamicEndpointSnitch target;

        @Override
        public void receiveTiming(org.apache.cassandra.locator.InetAddressAndPort address, long latency, java.util.concurrent.TimeUnit unit)
        {
            DynamicEndpointSnitch t = target;
            if (t != null)
                t.receiveTiming(address, latency, unit);
        }
    }
}
