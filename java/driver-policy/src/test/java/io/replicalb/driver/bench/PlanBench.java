package io.replicalb.driver.bench;

import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.DriverExecutionProfile;
import com.datastax.oss.driver.api.core.cql.Statement;
import com.datastax.oss.driver.api.core.loadbalancing.LoadBalancingPolicy;
import com.datastax.oss.driver.api.core.metadata.Node;
import com.datastax.oss.driver.api.core.tracker.RequestTracker;
import com.datastax.oss.driver.internal.core.loadbalancing.DefaultLoadBalancingPolicy;
import com.datastax.oss.driver.api.core.context.DriverContext;
import io.replicalb.core.Rng;
import io.replicalb.core.client.ClientPolicies;
import io.replicalb.core.client.ClientPolicy;
import io.replicalb.core.client.Event;
import io.replicalb.driver.FakeCluster;
import io.replicalb.driver.ReplicaLbLoadBalancingPolicy;
import io.replicalb.driver.ReplicaLbOption;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What one request costs a load-balancing policy in the Java driver: {@code newQueryPlan} for a
 * token-aware read (a routing keyspace and key, as a bound prepared statement carries), the
 * plan's first node taken, and the request tracker's {@code onNodeSuccess} for it: the calls the
 * driver makes per request that answers at once. The same cluster metadata for every policy
 * ({@link FakeCluster}: 6 nodes on 3 racks, one datacenter, RF 3, the driver's real token map;
 * no connection pools, so the default policy reads every in-flight count as 0), keys drawn from
 * 1,024, at 1 and 2 threads. {@code policy} is {@code default} (the driver's
 * DefaultLoadBalancingPolicy, which pays a CAS and a lock per plan) or a registered replica-lb
 * client policy through {@link ReplicaLbLoadBalancingPolicy} (with {@code shards} shards: by
 * default one per core). {@link BenchMain} runs it.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xms256m", "-Xmx256m"})
public class PlanBench {
    /**
     * The policy: {@code default}, a registered client policy's name, or {@link #FLOOR} (the
     * adapter over a policy that keeps the candidates' order: what the adapter itself costs).
     */
    @Param({"default"})
    public String policy;

    /**
     * The adapter's {@code shards} ({@link ReplicaLbOption#SHARDS}); 0: its default, one per
     * core. Ignored by {@code default}.
     */
    @Param({"0"})
    public int shards;

    /** The adapter's own cost: {@link ReplicaLbLoadBalancingPolicy} over {@link InOrder}. */
    public static final String FLOOR = "adapter-floor";

    /** A client policy that keeps the candidates' order and ignores every callback. */
    static final class InOrder implements ClientPolicy {
        @Override
        public int plan(int[] candidates, int count, long nowNs, Rng rng, int[] out) {
            System.arraycopy(candidates, 0, out, 0, count);
            return count;
        }

        @Override
        public void observe(Event event, int node, long latencyNs, double hitRate, long nowNs) {}
    }

    /** The adapter over {@link InOrder}. */
    static final class Floor extends ReplicaLbLoadBalancingPolicy {
        Floor(DriverContext context) {
            super(context, "default", s -> new InOrder());
        }
    }

    private FakeCluster cluster;
    private LoadBalancingPolicy lbp;
    private RequestTracker tracker;
    private DriverExecutionProfile profile;
    private final Statement<?>[] reads = new Statement<?>[1024];

    /** One thread's position in the keys. */
    @State(Scope.Thread)
    public static class Cursor {
        int next;
    }

    /** The cluster and the policy, initialised as the driver does once connected. */
    @Setup(Level.Trial)
    public void setup() {
        boolean dflt = policy.equals("default");
        boolean floor = policy.equals(FLOOR);
        if (!dflt && !floor && !BenchMain.registered(policy)) {
            throw new IllegalStateException("policy '" + policy + "' is not registered in replica-lb-core yet (registered: "
                    + String.join(", ", ClientPolicies.names()) + ")");
        }
        cluster = FakeCluster.oneDc(6, 3, 3, b -> {
            if (!dflt) {
                b.withString(ReplicaLbOption.POLICY, policy).withString(ReplicaLbOption.HIT_RATE_POLL_INTERVAL, "0");
                if (shards > 0) {
                    b.withInt(ReplicaLbOption.SHARDS, shards);
                }
            }
        });
        lbp = dflt ? new DefaultLoadBalancingPolicy(cluster.context(), "default")
                : floor ? new Floor(cluster.context())
                : new ReplicaLbLoadBalancingPolicy(cluster.context(), "default");
        cluster.init(lbp);
        tracker = lbp.getRequestTracker().orElseThrow(() -> new IllegalStateException(policy + " tracks no requests"));
        profile = cluster.context().getConfig().getDefaultProfile();
        if (!profile.getString(DefaultDriverOption.LOAD_BALANCING_LOCAL_DATACENTER).equals("dc1")) {
            throw new IllegalStateException("the benchmark's cluster lost its local datacenter");
        }
        for (int i = 0; i < reads.length; i++) {
            reads[i] = FakeCluster.read("key-" + i);
        }
    }

    /** Closes the policy and the driver's context. */
    @TearDown(Level.Trial)
    public void tearDown() {
        lbp.close();
        cluster.close();
    }

    private Node request(Cursor c) {
        Statement<?> r = reads[c.next++ & (reads.length - 1)];
        Node first = lbp.newQueryPlan(r, cluster.session).poll();
        tracker.onNodeSuccess(r, 250_000, profile, first, "bench");
        return first;
    }

    /** One request, one thread. */
    @Benchmark
    @Threads(1)
    public Node oneThread(Cursor c) {
        return request(c);
    }

    /** One request, two threads at once (each thread's time per request). */
    @Benchmark
    @Threads(2)
    public Node twoThreads(Cursor c) {
        return request(c);
    }
}
