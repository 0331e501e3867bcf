package io.replicalb.driver;

import com.datastax.oss.driver.api.core.CqlIdentifier;
import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.DriverConfigLoader;
import com.datastax.oss.driver.api.core.config.ProgrammaticDriverConfigLoaderBuilder;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import com.datastax.oss.driver.api.core.cql.Statement;
import com.datastax.oss.driver.api.core.loadbalancing.LoadBalancingPolicy;
import com.datastax.oss.driver.api.core.loadbalancing.NodeDistance;
import com.datastax.oss.driver.api.core.metadata.Node;
import com.datastax.oss.driver.api.core.metadata.schema.KeyspaceMetadata;
import com.datastax.oss.driver.api.core.metadata.token.Token;
import com.datastax.oss.driver.api.core.session.ProgrammaticArguments;
import com.datastax.oss.driver.internal.core.context.DefaultDriverContext;
import com.datastax.oss.driver.internal.core.metadata.DefaultMetadata;
import com.datastax.oss.driver.internal.core.metadata.DefaultNode;
import com.datastax.oss.driver.internal.core.metadata.MetadataManager;
import com.datastax.oss.driver.internal.core.metadata.TestNodes;
import com.datastax.oss.driver.internal.core.metadata.schema.DefaultKeyspaceMetadata;
import com.datastax.oss.driver.internal.core.metadata.token.DefaultReplicationStrategyFactory;
import com.datastax.oss.driver.internal.core.metadata.token.DefaultTokenMap;
import com.datastax.oss.driver.internal.core.metadata.token.Murmur3TokenFactory;
import com.datastax.oss.driver.internal.core.session.DefaultSession;
import com.datastax.oss.driver.internal.core.session.PoolManager;
import java.lang.reflect.Field;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

/**
 * A cluster's metadata without a cluster, for the tests and the benchmark: the driver's real
 * context (built from a programmatic configuration, never connected), real {@link DefaultNode}s
 * with their datacenters, racks and tokens, a keyspace {@code ks} and the driver's real token
 * map over them, and a {@link DefaultSession} shell (no connection pool: every node's in-flight
 * count reads 0) that the driver's DefaultLoadBalancingPolicy can take. The load-balancing
 * policies see what they would see in a connected driver; nothing is mocked.
 */
public final class FakeCluster implements AutoCloseable {
    /** The keyspace whose replicas the token map knows. */
    public static final String KEYSPACE = "ks";

    private final Context context;
    /** The nodes, datacenter by datacenter, racks round-robin within each. */
    public final List<DefaultNode> nodes = new ArrayList<>();
    /** The nodes by host id, as the driver hands them to a policy's init. */
    public final Map<UUID, Node> byHostId = new LinkedHashMap<>();
    /** The distances policies reported, as the driver's distance reporter records them. */
    public final Map<Node, NodeDistance> distances = new ConcurrentHashMap<>();
    /** A session a policy's plan and the driver's default policy can take. */
    public final DefaultSession session;

    /** The driver's context with the given metadata manager. */
    private static final class Context extends DefaultDriverContext {
        volatile DefaultMetadata metadata;
        volatile Set<DefaultNode> contactPoints = Set.of();

        Context(DriverConfigLoader loader) {
            super(loader, ProgrammaticArguments.builder().build());
        }

        @Override
        protected MetadataManager buildMetadataManager() {
            return new MetadataManager(this, metadata) {
                @Override
                public Set<DefaultNode> getContactPoints() {
                    return contactPoints;
                }
            };
        }
    }

    /**
     * {@code dcs} datacenters ({@code dc1}, {@code dc2}, ...) of {@code perDc} nodes on
     * {@code racks} racks each, keyspace {@code ks} with NetworkTopologyStrategy {@code rf}
     * replicas per datacenter; {@code config} adds options to the driver's configuration
     * (the local datacenter is {@code dc1}).
     */
    public FakeCluster(int dcs, int perDc, int racks, int rf, Consumer<ProgrammaticDriverConfigLoaderBuilder> config) {
        ProgrammaticDriverConfigLoaderBuilder b = DriverConfigLoader.programmaticBuilder()
                .withString(DefaultDriverOption.LOAD_BALANCING_LOCAL_DATACENTER, "dc1")
                .withString(DefaultDriverOption.SESSION_NAME, "fake");
        config.accept(b);
        this.context = new Context(b.build());
        Murmur3TokenFactory tokens = new Murmur3TokenFactory();
        int total = dcs * perDc;
        int k = 0;
        for (int d = 1; d <= dcs; d++) {
            for (int i = 0; i < perDc; i++, k++) {
                // Evenly spaced tokens.
                long token = Long.MIN_VALUE + Long.divideUnsigned(-1L, total + 1) * (k + 1);
                InetSocketAddress a = new InetSocketAddress("127.0." + d + "." + (i + 1), 9042);
                DefaultNode n = TestNodes.node(context, a, "dc" + d, "r" + (i % racks + 1), token, new UUID(d, i + 1));
                nodes.add(n);
                byHostId.put(n.getHostId(), n);
            }
        }
        Map<String, String> replication = new LinkedHashMap<>();
        replication.put("class", "org.apache.cassandra.locator.NetworkTopologyStrategy");
        for (int d = 1; d <= dcs; d++) {
            replication.put("dc" + d, Integer.toString(rf));
        }
        KeyspaceMetadata ks = new DefaultKeyspaceMetadata(
                CqlIdentifier.fromInternal(KEYSPACE), true, false, replication, Map.of(), Map.of(), Map.of(), Map.of(), Map.of());
        DefaultTokenMap tokenMap = DefaultTokenMap.build(
                List.copyOf(byHostId.values()), List.of(ks), tokens, new DefaultReplicationStrategyFactory(context), "fake");
        context.metadata = new DefaultMetadata(Map.copyOf(byHostId), Map.of(ks.getName(), ks), tokenMap, "fake") {};
        context.contactPoints = Set.of(nodes.get(0));
        this.session = sessionShell(context);
    }

    /** One datacenter of {@code n} nodes on {@code racks} racks, {@code rf} replicas, no extra options. */
    public static FakeCluster oneDc(int n, int racks, int rf, Consumer<ProgrammaticDriverConfigLoaderBuilder> config) {
        return new FakeCluster(1, n, racks, rf, config);
    }

    /** The driver's context (what the driver hands a policy's constructor). */
    public DefaultDriverContext context() {
        return context;
    }

    /** {@code policy} initialised with every node, as the driver does once connected. */
    public <P extends LoadBalancingPolicy> P init(P policy) {
        policy.init(new LinkedHashMap<>(byHostId), distances::put);
        return policy;
    }

    /** A read of {@code key} with routing information, as a bound prepared statement carries. */
    public static Statement<?> read(String key) {
        return SimpleStatement.builder("SELECT v FROM ks.kv WHERE k = ?")
                .setRoutingKeyspace(KEYSPACE)
                .setRoutingKey(routingKey(key))
                .build();
    }

    /** A read without routing information (an unprepared statement). */
    public static Statement<?> unrouted() {
        return SimpleStatement.newInstance("SELECT v FROM ks.kv");
    }

    /** The routing key of {@code key}. */
    public static ByteBuffer routingKey(String key) {
        return ByteBuffer.wrap(key.getBytes(StandardCharsets.UTF_8));
    }

    /** The replicas of {@code key} in keyspace {@code ks}, every datacenter. */
    public Set<Node> replicas(String key) {
        return context.getMetadataManager().getMetadata().getTokenMap().orElseThrow().getReplicas(KEYSPACE, routingKey(key));
    }

    /** The token of {@code key}. */
    public Token token(String key) {
        return context.getMetadataManager().getMetadata().getTokenMap().orElseThrow().newToken(routingKey(key));
    }

    /** A {@link DefaultSession} without connections: built without its constructor, its pools empty. */
    private static DefaultSession sessionShell(DefaultDriverContext context) {
        try {
            Field f = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
            f.setAccessible(true);
            sun.misc.Unsafe unsafe = (sun.misc.Unsafe) f.get(null);
            PoolManager pools = (PoolManager) unsafe.allocateInstance(PoolManager.class);
            set(PoolManager.class, pools, "pools", new ConcurrentHashMap<>());
            DefaultSession session = (DefaultSession) unsafe.allocateInstance(DefaultSession.class);
            set(DefaultSession.class, session, "poolManager", pools);
            set(DefaultSession.class, session, "context", context);
            return session;
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot build the session shell: " + e, e);
        }
    }

    private static void set(Class<?> type, Object target, String field, Object value) throws ReflectiveOperationException {
        Field f = type.getDeclaredField(field);
        f.setAccessible(true);
        f.set(target, value);
    }

    @Override
    public void close() {
        context.getNettyOptions().onClose();
    }
}
