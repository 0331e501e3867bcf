package io.replicalb.driver.runner;

import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.ProgrammaticDriverConfigLoaderBuilder;
import com.datastax.oss.driver.api.core.session.Session;
import java.util.Arrays;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * The load-balancing policies the Java driver runs in the load generator, by the name the
 * parent gives ({@code bench --driver java --client-policy NAME}, experiment items
 * {@code java:NAME}). For now the driver's own {@code DefaultLoadBalancingPolicy}, what a Java
 * application runs today; the project's policies come as Java classes later.
 */
public enum ClientPolicy {
    /**
     * The driver's DefaultLoadBalancingPolicy: token-aware, the local datacenter's replicas
     * first, shuffled, with its slow-replica avoidance (in-flight counts and response times).
     */
    DEFAULT("default");

    private final String policyName;

    ClientPolicy(String name) {
        this.policyName = name;
    }

    /** Its name, as the parent gives it. */
    public String policyName() {
        return policyName;
    }

    /** The policy named {@code name}; the message of an unknown one lists the names allowed. */
    public static ClientPolicy parse(String name) throws Protocol.ProtocolException {
        for (ClientPolicy p : values()) {
            if (p.policyName.equals(name)) {
                return p;
            }
        }
        throw new Protocol.ProtocolException("the Java driver's client policy '" + name + "' is not implemented; allowed: " + names());
    }

    /** The names, comma-separated. */
    public static String names() {
        return Arrays.stream(values()).map(ClientPolicy::policyName).collect(Collectors.joining(", "));
    }

    /** Sets the driver's load-balancing options for this policy in datacenter {@code localDc}. */
    void configure(ProgrammaticDriverConfigLoaderBuilder config, String localDc) {
        switch (this) {
            case DEFAULT:
                config.withString(DefaultDriverOption.LOAD_BALANCING_POLICY_CLASS, "DefaultLoadBalancingPolicy")
                        .withString(DefaultDriverOption.LOAD_BALANCING_LOCAL_DATACENTER, localDc);
                break;
            default:
                throw new AssertionError(this);
        }
    }

    /** The policy's counters at the end of a run (none for the driver's own policy). */
    Map<String, Long> counters(Session session) {
        switch (this) {
            case DEFAULT:
                return Map.of();
            default:
                throw new AssertionError(this);
        }
    }
}
