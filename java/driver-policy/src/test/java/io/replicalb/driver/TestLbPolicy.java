package io.replicalb.driver;

import com.datastax.oss.driver.api.core.context.DriverContext;

/**
 * The adapter over one {@link TestPolicy}, as a subclass brings its own policy: one instance,
 * so its options must say {@code shards = 1} (ShardedPolicyTest builds one per shard).
 */
final class TestLbPolicy extends ReplicaLbLoadBalancingPolicy {
    final TestPolicy test;

    TestLbPolicy(DriverContext context, TestPolicy test) {
        super(context, "default", s -> test);
        this.test = test;
    }
}
