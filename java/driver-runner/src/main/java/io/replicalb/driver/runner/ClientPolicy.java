package io.replicalb.driver.runner;

import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.DriverExecutionProfile;
import com.datastax.oss.driver.api.core.config.ProgrammaticDriverConfigLoaderBuilder;
import com.datastax.oss.driver.api.core.session.Session;
import io.replicalb.core.client.ClientPolicies;
import io.replicalb.driver.ReplicaLbLoadBalancingPolicy;
import io.replicalb.driver.ReplicaLbOption;
import java.time.Duration;
import java.util.Map;

/**
 * The load-balancing policy the Java driver runs in the load generator, by the name the parent
 * gives ({@code bench --driver java --client-policy NAME}, experiment items {@code java:NAME}):
 * {@value #DEFAULT}, the driver's own DefaultLoadBalancingPolicy (what a Java application runs
 * today), or any client policy registered in replica-lb-core through
 * {@link ReplicaLbLoadBalancingPolicy} (java/driver-policy), configured with the driver's options
 * as an application would.
 *
 * @param policyName {@value #DEFAULT} or a registered client policy's name
 * @param params the policy's parameters (their Rust names), none for {@value #DEFAULT}
 * @param seed the seed of the policy's random stream (an unsigned 64-bit value)
 * @param hitRatePollMs how often each node's hit rate is read off the request path, ms (0: never)
 */
public record ClientPolicy(String policyName, Map<String, String> params, long seed, long hitRatePollMs) {
    /**
     * The name of the driver's DefaultLoadBalancingPolicy: token-aware, the local datacenter's
     * replicas first, shuffled, with its slow-replica avoidance (in-flight counts and response
     * times).
     */
    public static final String DEFAULT = "default";

    /**
     * The policy {@code name} with {@code params}, checked: a name that is neither
     * {@value #DEFAULT} nor registered, or a bad parameter, is refused with replica-lb-core's
     * one-line message.
     */
    public static ClientPolicy parse(String name, Map<String, String> params, long seed, long hitRatePollMs) throws Protocol.ProtocolException {
        if (DEFAULT.equals(name)) {
            if (!params.isEmpty()) {
                throw new Protocol.ProtocolException("hello: the driver's default policy takes no parameters, got " + String.join(", ", params.keySet()));
            }
            return new ClientPolicy(name, Map.of(), seed, hitRatePollMs);
        }
        try {
            ClientPolicies.create(name, params);
        } catch (IllegalArgumentException e) {
            throw new Protocol.ProtocolException("the Java driver's client policy: " + e.getMessage() + " (or " + DEFAULT + ")");
        }
        return new ClientPolicy(name, Map.copyOf(params), seed, hitRatePollMs);
    }

    /** Whether it is the driver's own DefaultLoadBalancingPolicy. */
    public boolean isDriverDefault() {
        return DEFAULT.equals(policyName);
    }

    /** Sets the driver's load-balancing options for this policy in datacenter {@code localDc}. */
    void configure(ProgrammaticDriverConfigLoaderBuilder config, String localDc) {
        config.withString(DefaultDriverOption.LOAD_BALANCING_LOCAL_DATACENTER, localDc);
        if (isDriverDefault()) {
            config.withString(DefaultDriverOption.LOAD_BALANCING_POLICY_CLASS, "DefaultLoadBalancingPolicy");
            return;
        }
        config.withString(DefaultDriverOption.LOAD_BALANCING_POLICY_CLASS, ReplicaLbLoadBalancingPolicy.class.getName())
                .withString(ReplicaLbOption.POLICY, policyName)
                .withStringMap(ReplicaLbOption.PARAMS, params)
                .withLong(ReplicaLbOption.SEED, seed)
                .withDuration(ReplicaLbOption.HIT_RATE_POLL_INTERVAL, Duration.ofMillis(hitRatePollMs));
    }

    /** The policy's counters at the end of a run (none for the driver's own policy). */
    Map<String, Long> counters(Session session) {
        return ReplicaLbLoadBalancingPolicy.of(session, DriverExecutionProfile.DEFAULT_NAME)
                .map(p -> {
                    p.expireNow();
                    return p.counters().asMap();
                })
                .orElse(Map.of());
    }
}
