package io.replicalb.driver;

import com.datastax.oss.driver.api.core.context.DriverContext;

/**
 * The adapter over a {@link TestPolicy} with the constructor the driver calls by reflection
 * (the class named in {@code basic.load-balancing-policy.class}), for the tests that let the
 * driver build and wire the policy itself. One {@link TestPolicy} for every shard: its options
 * must say {@code shards = 1}.
 */
public final class ConfiguredTestLbPolicy extends ReplicaLbLoadBalancingPolicy {
    /** The client policy inside. */
    final TestPolicy test;

    /** As the driver builds it. */
    public ConfiguredTestLbPolicy(DriverContext context, String profileName) {
        this(context, profileName, new TestPolicy());
    }

    private ConfiguredTestLbPolicy(DriverContext context, String profileName, TestPolicy test) {
        super(context, profileName, s -> test);
        this.test = test;
    }
}
