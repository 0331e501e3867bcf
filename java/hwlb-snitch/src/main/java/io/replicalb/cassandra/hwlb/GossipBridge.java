package io.replicalb.cassandra.hwlb;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.apache.cassandra.gms.ApplicationState;
import org.apache.cassandra.gms.EndpointState;
import org.apache.cassandra.gms.FailureDetector;
import org.apache.cassandra.gms.Gossiper;
import org.apache.cassandra.gms.IEndpointStateChangeSubscriber;
import org.apache.cassandra.gms.VersionGenerator;
import org.apache.cassandra.gms.VersionedValue;
import org.apache.cassandra.locator.IEndpointSnitch;
import org.apache.cassandra.locator.InetAddressAndPort;

/**
 * Carries hit rates (node-wide and per table, {@link GossipValue}) through Cassandra's gossip:
 * publishes this node's value in the chosen X
 * application state, and reads the peers' from the Gossiper's endpoint states into the
 * {@link PeerDirectory}, both on gossip events (a subscriber) and on a short poll (which also
 * catches what events do not report: a heartbeat, i.e. "heard from alive", or a state dropped).
 *
 * <p>Freshness: Cassandra has no per-reply piggy-back here and the rate is republished only on
 * change, so a peer's age is the time since its last heartbeat arrived (EndpointState's update
 * timestamp, which gossip moves when a newer heartbeat is applied); the failure detector's
 * "down" makes it stale at once. A new generation (the peer restarted) forgets its rate; a peer
 * gossip no longer lists is removed; a peer without the state runs no plug-in (unsupported).
 */
public final class GossipBridge implements IEndpointStateChangeSubscriber
{
    private static final Logger logger = LoggerFactory.getLogger(GossipBridge.class);

    private final ApplicationState state;
    private final PeerDirectory directory;
    private final IEndpointSnitch inner;
    private final InetAddressAndPort local;
    private final java.util.function.BiConsumer<InetAddressAndPort, Boolean> livenessChanged;
    /** Per peer: the generation and the state's version last applied (guarded by this). */
    private final Map<InetAddressAndPort, long[]> seen = new HashMap<>();

    /** A bridge for state {@code state} (X1..X10) feeding {@code directory}. */
    public GossipBridge(ApplicationState state, PeerDirectory directory, IEndpointSnitch inner, InetAddressAndPort local)
    {
        this(state, directory, inner, local, (ep, up) -> {});
    }

    /**
     * A bridge that also tells {@code livenessChanged} of a peer marked alive (true) or dead
     * (false), or restarted (true): unified forgets its signals, and warms one that came up.
     */
    public GossipBridge(ApplicationState state, PeerDirectory directory, IEndpointSnitch inner, InetAddressAndPort local,
                        java.util.function.BiConsumer<InetAddressAndPort, Boolean> livenessChanged)
    {
        this.livenessChanged = livenessChanged;
        this.state = state;
        this.directory = directory;
        this.inner = inner;
        this.local = local;
    }

    /** Publishes {@code value} as this node's state (a marker at start, then each rate). */
    public void publish(String value)
    {
        Gossiper.instance.addLocalApplicationState(state, VersionedValue.unsafeMakeVersionedValue(value, VersionGenerator.getNextVersion()));
    }

    /** Reads every peer's state from the Gossiper; peers it no longer lists are removed. */
    public synchronized void poll()
    {
        long now = System.nanoTime();
        Set<InetAddressAndPort> listed = new HashSet<>();
        for (Map.Entry<InetAddressAndPort, EndpointState> e : Gossiper.instance.endpointStateMap.entrySet())
        {
            InetAddressAndPort ep = e.getKey();
            if (ep.equals(local))
                continue;
            listed.add(ep);
            apply(ep, e.getValue(), now);
        }
        for (InetAddressAndPort ep : new HashSet<>(seen.keySet()))
        {
            if (!listed.contains(ep))
            {
                seen.remove(ep);
                directory.remove(ep, now);
            }
        }
        directory.refresh(System.nanoTime());
    }

    private synchronized void refresh(InetAddressAndPort ep)
    {
        if (ep.equals(local))
            return;
        EndpointState es = Gossiper.instance.getEndpointStateForEndpoint(ep);
        long now = System.nanoTime();
        if (es == null)
        {
            seen.remove(ep);
            directory.remove(ep, now);
        }
        else
        {
            apply(ep, es, now);
        }
    }

    private void apply(InetAddressAndPort ep, EndpointState es, long now)
    {
        long generation = es.getHeartBeatState().getGeneration();
        VersionedValue v = es.getApplicationState(state);
        long[] last = seen.get(ep);
        if (last != null && last[0] != generation)
        {
            // A new generation: the peer restarted, its old rate no longer holds.
            directory.forget(ep, now);
            last = null;
        }
        if (last == null)
        {
            last = new long[]{ generation, Long.MIN_VALUE };
            seen.put(ep, last);
        }
        boolean alive = FailureDetector.instance.isAlive(ep);
        long heard = es.getUpdateTimestamp();
        boolean sameDc;
        try
        {
            sameDc = inner.getLocalDatacenter().equals(inner.getDatacenter(ep));
        }
        catch (RuntimeException ex)
        {
            sameDc = false;
        }
        boolean garbled = v != null && !GossipValue.understood(v.value);
        directory.observe(ep, heard, alive, v != null, garbled, sameDc, now);
        if (v != null && v.version != last[1])
        {
            last[1] = v.version;
            if (garbled)
                logger.warn("HWLB: {} gossips '{}', a value this plug-in does not understand: its rate counts as unknown", ep, v.value);
            GossipValue.Parsed parsed = GossipValue.parseFull(v.value);
            if (parsed == null)
                directory.forget(ep, now);
            else
                directory.recordRate(ep, parsed, heard, now);
            if (logger.isDebugEnabled())
                logger.debug("HWLB: {} published {}", ep, v.value);
        }
    }

    @Override
    public void onJoin(InetAddressAndPort endpoint, EndpointState epState)
    {
        refresh(endpoint);
    }

    @Override
    public void onChange(InetAddressAndPort endpoint, ApplicationState changed, VersionedValue value)
    {
        if (changed == state)
            refresh(endpoint);
    }

    @Override
    public void onAlive(InetAddressAndPort endpoint, EndpointState epState)
    {
        refresh(endpoint);
        livenessChanged.accept(endpoint, true);
    }

    @Override
    public void onDead(InetAddressAndPort endpoint, EndpointState epState)
    {
        refresh(endpoint);
        livenessChanged.accept(endpoint, false);
    }

    @Override
    public void onRemove(InetAddressAndPort endpoint)
    {
        synchronized (this)
        {
            seen.remove(endpoint);
        }
        directory.remove(endpoint, System.nanoTime());
    }

    @Override
    public void onRestart(InetAddressAndPort endpoint, EndpointState epState)
    {
        directory.forget(endpoint, System.nanoTime());
        livenessChanged.accept(endpoint, true);
    }
}
