package io.replicalb.cassandra.hwlb;

import java.net.UnknownHostException;
import java.util.Map;

import org.apache.cassandra.dht.Murmur3Partitioner;
import org.apache.cassandra.dht.Token;
import org.apache.cassandra.locator.AbstractEndpointSnitch;
import org.apache.cassandra.locator.EndpointsForToken;
import org.apache.cassandra.locator.InetAddressAndPort;
import org.apache.cassandra.locator.Replica;

/** Endpoints, replica collections and inner snitches for tests and the benchmark. */
final class TestCluster
{
    static final Token TOKEN = new Murmur3Partitioner.LongToken(42);
    private static final Token START = new Murmur3Partitioner.LongToken(0);

    private TestCluster()
    {
    }

    /** 127.0.0.{last}. */
    static InetAddressAndPort ep(int last)
    {
        try
        {
            return InetAddressAndPort.getByName("127.0.0." + last);
        }
        catch (UnknownHostException e)
        {
            throw new IllegalStateException(e);
        }
    }

    /** Full replicas of one token on 127.0.0.{lasts}, in this order. */
    static EndpointsForToken replicas(int... lasts)
    {
        Replica[] rs = new Replica[lasts.length];
        for (int i = 0; i < lasts.length; i++)
            rs[i] = Replica.fullReplica(ep(lasts[i]), START, TOKEN);
        return EndpointsForToken.of(TOKEN, rs);
    }

    /**
     * A comparator snitch like the network-topology ones: the target first, then by a fixed
     * rank per address (so its order is distinguishable from the given order).
     */
    static class RankSnitch extends AbstractEndpointSnitch
    {
        private final Map<Integer, Integer> rank;

        RankSnitch(Map<Integer, Integer> rank)
        {
            this.rank = rank;
        }

        @Override
        public String getRack(InetAddressAndPort endpoint)
        {
            return "rack1";
        }

        @Override
        public String getDatacenter(InetAddressAndPort endpoint)
        {
            return "dc1";
        }

        @Override
        public String getLocalDatacenter()
        {
            return "dc1";
        }

        @Override
        public String getLocalRack()
        {
            return "rack1";
        }

        @Override
        public int compareEndpoints(InetAddressAndPort target, Replica r1, Replica r2)
        {
            if (r1.endpoint().equals(target))
                return r2.endpoint().equals(target) ? 0 : -1;
            if (r2.endpoint().equals(target))
                return 1;
            return Integer.compare(rank.getOrDefault(last(r1), 0), rank.getOrDefault(last(r2), 0));
        }

        static int last(Replica r)
        {
            byte[] b = r.endpoint().getAddress().getAddress();
            return b[b.length - 1] & 0xff;
        }
    }

    /** A snitch with its own sortedByProximity (not a comparator sort): reverses the given order. */
    static final class ReversingSnitch extends RankSnitch
    {
        ReversingSnitch()
        {
            super(Map.of());
        }

        @Override
        public <C extends org.apache.cassandra.locator.ReplicaCollection<? extends C>> C sortedByProximity(InetAddressAndPort address, C replicas)
        {
            int n = replicas.size();
            java.util.IdentityHashMap<Replica, Integer> pos = new java.util.IdentityHashMap<>();
            for (int i = 0; i < n; i++)
                pos.put(replicas.get(i), i);
            return replicas.sorted((a, b) -> Integer.compare(pos.get(b), pos.get(a)));
        }
    }
}
