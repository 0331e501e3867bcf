package io.replicalb.driver;

import com.datastax.oss.driver.api.core.config.DriverOption;

/**
 * The options of {@link ReplicaLbLoadBalancingPolicy}, under {@code advanced.replica-lb} of the
 * driver's configuration (application.conf, or the programmatic loader's
 * {@code withString(ReplicaLbOption.POLICY, "unified")}). Like the driver's own options they
 * can differ per execution profile. docs/java-driver.md describes each with its default.
 */
public enum ReplicaLbOption implements DriverOption {
    /** The client policy's registered name (required), e.g. {@code unified}. */
    POLICY("advanced.replica-lb.policy"),
    /** The policy's parameters by their Rust names (a map; optional): the published defaults otherwise. */
    PARAMS("advanced.replica-lb.params"),
    /** The seed of the policy's random stream (a long; default 0): the same seed and events give the same choices. */
    SEED("advanced.replica-lb.seed"),
    /** The client's own rack in the local datacenter (optional): the policies' local zone. */
    LOCAL_RACK("advanced.replica-lb.local-rack"),
    /** How often every local node's hit rate is read off the request path (default 1 second; 0 turns it off). */
    HIT_RATE_POLL_INTERVAL("advanced.replica-lb.hit-rate-poll-interval"),
    /** How long one node's hit-rate read may take (default 1 second). */
    HIT_RATE_POLL_TIMEOUT("advanced.replica-lb.hit-rate-poll-timeout"),
    /** How long a planned attempt counts as in flight when its end is never reported (default: the request time-out plus 1 second). */
    TICKET_TTL("advanced.replica-lb.ticket-ttl"),
    /** How long before an attempt started its plan may have been made to count as that plan's (default 50 ms). */
    TICKET_MATCH_WINDOW("advanced.replica-lb.ticket-match-window"),
    /** Open tickets per node at most (default 4096); beyond it the oldest ends as a time-out. */
    MAX_OPEN_TICKETS_PER_NODE("advanced.replica-lb.max-open-tickets-per-node"),
    /**
     * Independent copies of the policy (an integer in [1, 256]; default the number of cores):
     * threads decide without contending; 1 gives every request one shared view.
     */
    SHARDS("advanced.replica-lb.shards");

    private final String path;

    ReplicaLbOption(String path) {
        this.path = path;
    }

    /** The option's path in the driver's configuration. */
    @Override
    public String getPath() {
        return path;
    }
}
