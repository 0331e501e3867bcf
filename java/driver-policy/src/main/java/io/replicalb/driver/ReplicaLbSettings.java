package io.replicalb.driver;

import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.DriverExecutionProfile;
import java.time.Duration;
import java.util.Map;

/**
 * {@link ReplicaLbLoadBalancingPolicy}'s options ({@link ReplicaLbOption}) read from one
 * execution profile and checked once, when the driver builds the policy: a bad value is an
 * {@link IllegalArgumentException} whose one-line message names the option and the value.
 *
 * @param policy the client policy's registered name
 * @param params its parameters (Rust names, text values), sorted
 * @param seed the seed of its random stream
 * @param localRack the client's rack, or null
 * @param hitRatePollIntervalNs how often every local node's hit rate is read; 0: never
 * @param hitRatePollTimeoutNs how long one read may take
 * @param ticketTtlNs how long a ticket stays open when its end is never reported
 * @param ticketMatchWindowNs how long before an attempt's start its plan may have been made
 * @param maxOpenTicketsPerNode open tickets per node (in each shard) at most
 * @param shards independent copies of the client policy (see {@link ReplicaLbLoadBalancingPolicy}),
 *     in [1, {@link #MAX_SHARDS}]
 */
public record ReplicaLbSettings(
        String policy,
        Map<String, String> params,
        long seed,
        String localRack,
        long hitRatePollIntervalNs,
        long hitRatePollTimeoutNs,
        long ticketTtlNs,
        long ticketMatchWindowNs,
        int maxOpenTicketsPerNode,
        int shards) {

    /** Default {@link ReplicaLbOption#HIT_RATE_POLL_INTERVAL}. */
    public static final Duration DEFAULT_HIT_RATE_POLL_INTERVAL = Duration.ofSeconds(1);
    /** Default {@link ReplicaLbOption#HIT_RATE_POLL_TIMEOUT}. */
    public static final Duration DEFAULT_HIT_RATE_POLL_TIMEOUT = Duration.ofSeconds(1);
    /** What {@link ReplicaLbOption#TICKET_TTL} adds by default to the profile's request time-out. */
    public static final Duration TICKET_TTL_MARGIN = Duration.ofSeconds(1);
    /** Default {@link ReplicaLbOption#TICKET_MATCH_WINDOW}. */
    public static final Duration DEFAULT_TICKET_MATCH_WINDOW = Duration.ofMillis(50);
    /** Default {@link ReplicaLbOption#MAX_OPEN_TICKETS_PER_NODE}. */
    public static final int DEFAULT_MAX_OPEN_TICKETS_PER_NODE = 4096;
    /** {@link ReplicaLbOption#SHARDS} at most (as the Rust adapter's {@code MAX_SHARDS}). */
    public static final int MAX_SHARDS = 256;

    /** The options of {@code profile}, checked. */
    public static ReplicaLbSettings of(DriverExecutionProfile profile) {
        ProfileReader in = new ProfileReader(profile);
        String policy = in.policy();
        Map<String, String> params = in.params();
        long seed = in.read(ReplicaLbOption.SEED, () -> profile.getLong(ReplicaLbOption.SEED, 0L));
        String rack = in.localRack();
        Duration poll = in.hitRatePollInterval(DEFAULT_HIT_RATE_POLL_INTERVAL);
        Duration pollTimeout = in.positive(in.duration(ReplicaLbOption.HIT_RATE_POLL_TIMEOUT, DEFAULT_HIT_RATE_POLL_TIMEOUT), ReplicaLbOption.HIT_RATE_POLL_TIMEOUT);
        Duration requestTimeout = in.read(DefaultDriverOption.REQUEST_TIMEOUT, () -> profile.getDuration(DefaultDriverOption.REQUEST_TIMEOUT, Duration.ofSeconds(2)));
        Duration ttl = in.positive(in.duration(ReplicaLbOption.TICKET_TTL, requestTimeout.plus(TICKET_TTL_MARGIN)), ReplicaLbOption.TICKET_TTL);
        Duration window = in.ticketMatchWindow(DEFAULT_TICKET_MATCH_WINDOW, ttl);
        int maxOpen = in.maxOpenTicketsPerNode(DEFAULT_MAX_OPEN_TICKETS_PER_NODE);
        int shards = in.shards(defaultShards(), MAX_SHARDS);
        return new ReplicaLbSettings(policy.strip(), Map.copyOf(params), seed, rack, poll.toNanos(), pollTimeout.toNanos(),
                ttl.toNanos(), window.toNanos(), maxOpen, shards);
    }

    /** Default {@link ReplicaLbOption#SHARDS}: one per core the JVM may use, at most {@link #MAX_SHARDS}. */
    public static int defaultShards() {
        return Math.max(1, Math.min(Runtime.getRuntime().availableProcessors(), MAX_SHARDS));
    }

    /** {@code message} on one line. */
    static String oneLine(String message) {
        String s = message == null ? "" : message.replaceAll("[\\r\\n\\t]+", " ").strip();
        return s.isEmpty() ? "(no message)" : s;
    }
}
