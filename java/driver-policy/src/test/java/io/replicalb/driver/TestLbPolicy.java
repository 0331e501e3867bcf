package io.replicalb.driver;

import com.datastax.oss.driver.api.core.context.DriverContext;

/** The adapter over a {@link TestPolicy}, as a subclass brings its own policy. */
final class TestLbPolicy extends ReplicaLbLoadBalancingPolicy {
    final TestPolicy test;

    TestLbPolicy(DriverContext context, TestPolicy test) {
        super(context, "default", s -> test);
        this.test = test;
    }
}
