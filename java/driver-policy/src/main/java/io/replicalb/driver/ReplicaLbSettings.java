package io.replicalb.driver;

import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.DriverExecutionProfile;
import com.datastax.oss.driver.api.core.config.DriverOption;
import io.replicalb.core.client.ClientPolicies;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Supplier;

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

    private static final Duration HOUR = Duration.ofHours(1);

    /** The options of {@code profile}, checked. */
    public static ReplicaLbSettings of(DriverExecutionProfile profile) {
        String policy = read(profile, ReplicaLbOption.POLICY, () -> profile.isDefined(ReplicaLbOption.POLICY) ? profile.getString(ReplicaLbOption.POLICY) : null);
        if (policy == null || policy.isBlank()) {
            throw new IllegalArgumentException(path(ReplicaLbOption.POLICY) + " is not set: name a client policy (registered: "
                    + String.join(", ", ClientPolicies.names()) + ")");
        }
        Map<String, String> params = params(profile);
        long seed = read(profile, ReplicaLbOption.SEED, () -> profile.getLong(ReplicaLbOption.SEED, 0L));
        String rack = read(profile, ReplicaLbOption.LOCAL_RACK, () -> profile.getString(ReplicaLbOption.LOCAL_RACK, null));
        if (rack != null && rack.isBlank()) {
            throw new IllegalArgumentException(path(ReplicaLbOption.LOCAL_RACK) + " '" + rack + "' is empty: name the client's rack or leave it out");
        }
        Duration poll = duration(profile, ReplicaLbOption.HIT_RATE_POLL_INTERVAL, DEFAULT_HIT_RATE_POLL_INTERVAL);
        if (!poll.isZero() && (poll.compareTo(Duration.ofMillis(10)) < 0 || poll.compareTo(HOUR) > 0)) {
            throw new IllegalArgumentException(path(ReplicaLbOption.HIT_RATE_POLL_INTERVAL) + " " + poll.toMillis()
                    + " ms: must be 0 (off) or within [10 ms, 1 hour]");
        }
        Duration pollTimeout = positive(duration(profile, ReplicaLbOption.HIT_RATE_POLL_TIMEOUT, DEFAULT_HIT_RATE_POLL_TIMEOUT), ReplicaLbOption.HIT_RATE_POLL_TIMEOUT);
        Duration requestTimeout = read(profile, DefaultDriverOption.REQUEST_TIMEOUT, () -> profile.getDuration(DefaultDriverOption.REQUEST_TIMEOUT, Duration.ofSeconds(2)));
        Duration ttl = positive(duration(profile, ReplicaLbOption.TICKET_TTL, requestTimeout.plus(TICKET_TTL_MARGIN)), ReplicaLbOption.TICKET_TTL);
        Duration window = duration(profile, ReplicaLbOption.TICKET_MATCH_WINDOW, DEFAULT_TICKET_MATCH_WINDOW);
        if (window.isNegative() || window.compareTo(ttl) > 0) {
            throw new IllegalArgumentException(path(ReplicaLbOption.TICKET_MATCH_WINDOW) + " " + window.toMillis()
                    + " ms: must be within [0, ticket-ttl " + ttl.toMillis() + " ms]");
        }
        int maxOpen = read(profile, ReplicaLbOption.MAX_OPEN_TICKETS_PER_NODE,
                () -> profile.getInt(ReplicaLbOption.MAX_OPEN_TICKETS_PER_NODE, DEFAULT_MAX_OPEN_TICKETS_PER_NODE));
        if (maxOpen < 1 || maxOpen > 1 << 20) {
            throw new IllegalArgumentException(path(ReplicaLbOption.MAX_OPEN_TICKETS_PER_NODE) + " " + maxOpen + ": must be within [1, 1048576]");
        }
        int dfltShards = defaultShards();
        int shards = read(profile, ReplicaLbOption.SHARDS, () -> profile.getInt(ReplicaLbOption.SHARDS, dfltShards));
        Object rawShards = raw(profile, ReplicaLbOption.SHARDS.getPath());
        if (rawShards instanceof Number num && num.doubleValue() != Math.rint(num.doubleValue())) {
            // The driver's reader would truncate it.
            throw new IllegalArgumentException(path(ReplicaLbOption.SHARDS) + " '" + rawShards + "': must be a whole number within [1, "
                    + MAX_SHARDS + "]");
        }
        if (shards < 1 || shards > MAX_SHARDS) {
            throw new IllegalArgumentException(path(ReplicaLbOption.SHARDS) + " " + shards + ": must be within [1, " + MAX_SHARDS
                    + "] (default: the number of cores, " + dfltShards + "; 1: one shared view)");
        }
        return new ReplicaLbSettings(policy.strip(), Map.copyOf(params), seed, rack, poll.toNanos(), pollTimeout.toNanos(),
                ttl.toNanos(), window.toNanos(), maxOpen, shards);
    }

    /** Default {@link ReplicaLbOption#SHARDS}: one per core the JVM may use, at most {@link #MAX_SHARDS}. */
    public static int defaultShards() {
        return Math.max(1, Math.min(Runtime.getRuntime().availableProcessors(), MAX_SHARDS));
    }

    private static String path(DriverOption option) {
        return "datastax-java-driver." + option.getPath();
    }

    /**
     * Reads one option; the driver's own error (a wrong type, ...) becomes one line naming the
     * option and the value.
     */
    private static <T> T read(DriverExecutionProfile profile, DriverOption option, Supplier<T> get) {
        try {
            return get.get();
        } catch (RuntimeException e) {
            Object raw = raw(profile, option.getPath());
            String value = raw == null ? "" : " '" + raw + "'";
            throw new IllegalArgumentException(path(option) + value + ": " + oneLine(e.getMessage()), e);
        }
    }

    /** The value at {@code path} as written, or null. */
    private static Object raw(DriverExecutionProfile profile, String path) {
        try {
            for (Map.Entry<String, Object> e : profile.entrySet()) {
                if (e.getKey().equals(path)) {
                    return e.getValue();
                }
            }
        } catch (RuntimeException e) {
            // Only for the message.
        }
        return null;
    }

    /**
     * {@code params}: every entry under it, its value as text whatever its type (the driver's
     * own string-map reader drops numbers and switches).
     */
    private static Map<String, String> params(DriverExecutionProfile profile) {
        String prefix = ReplicaLbOption.PARAMS.getPath();
        Map<String, String> out = new TreeMap<>();
        for (Map.Entry<String, Object> e : read(profile, ReplicaLbOption.PARAMS, profile::entrySet)) {
            String key = e.getKey();
            if (key.equals(prefix)) {
                throw new IllegalArgumentException(path(ReplicaLbOption.PARAMS) + " '" + e.getValue()
                        + "': must be a map of parameters, e.g. params { concurrency_weight = 4 }");
            }
            if (key.startsWith(prefix + ".")) {
                String name = key.substring(prefix.length() + 1);
                if (e.getValue() instanceof Map || e.getValue() instanceof List || name.contains(".")) {
                    throw new IllegalArgumentException(path(ReplicaLbOption.PARAMS) + "." + name + ": must be a plain value (a number, true/false or a word)");
                }
                out.put(name, String.valueOf(e.getValue()));
            }
        }
        return out;
    }

    private static Duration duration(DriverExecutionProfile profile, DriverOption option, Duration dflt) {
        return read(profile, option, () -> profile.getDuration(option, dflt));
    }

    private static Duration positive(Duration d, DriverOption option) {
        if (d.isZero() || d.isNegative() || d.compareTo(HOUR) > 0) {
            throw new IllegalArgumentException(path(option) + " " + d.toMillis() + " ms: must be within (0, 1 hour]");
        }
        return d;
    }

    /** {@code message} on one line. */
    static String oneLine(String message) {
        String s = message == null ? "" : message.replaceAll("[\\r\\n\\t]+", " ").strip();
        return s.isEmpty() ? "(no message)" : s;
    }
}
