package io.replicalb.driver;

import com.datastax.oss.driver.api.core.config.DriverExecutionProfile;
import com.datastax.oss.driver.api.core.config.DriverOption;
import io.replicalb.core.client.ClientPolicies;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Supplier;

/**
 * Reads {@link ReplicaLbSettings}' options from one execution profile, one short method per
 * option or group: a value the driver cannot read, or one out of range, is an
 * {@link IllegalArgumentException} whose one-line message names the option and the value.
 */
final class ProfileReader {
    private static final Duration HOUR = Duration.ofHours(1);

    private final DriverExecutionProfile profile;

    ProfileReader(DriverExecutionProfile profile) {
        this.profile = profile;
    }

    /** {@code policy}: a client policy's name, required. */
    String policy() {
        String policy = read(ReplicaLbOption.POLICY, () -> profile.isDefined(ReplicaLbOption.POLICY) ? profile.getString(ReplicaLbOption.POLICY) : null);
        if (policy == null || policy.isBlank()) {
            throw new IllegalArgumentException(path(ReplicaLbOption.POLICY) + " is not set: name a client policy (registered: "
                    + String.join(", ", ClientPolicies.names()) + ")");
        }
        return policy;
    }

    /** {@code local-rack}: the client's rack, or null; not blank. */
    String localRack() {
        String rack = read(ReplicaLbOption.LOCAL_RACK, () -> profile.getString(ReplicaLbOption.LOCAL_RACK, null));
        if (rack != null && rack.isBlank()) {
            throw new IllegalArgumentException(path(ReplicaLbOption.LOCAL_RACK) + " '" + rack + "' is empty: name the client's rack or leave it out");
        }
        return rack;
    }

    /** {@code hit-rate-poll-interval}: 0 (off) or within [10 ms, 1 hour]. */
    Duration hitRatePollInterval(Duration dflt) {
        Duration poll = duration(ReplicaLbOption.HIT_RATE_POLL_INTERVAL, dflt);
        if (!poll.isZero() && (poll.compareTo(Duration.ofMillis(10)) < 0 || poll.compareTo(HOUR) > 0)) {
            throw new IllegalArgumentException(path(ReplicaLbOption.HIT_RATE_POLL_INTERVAL) + " " + poll.toMillis()
                    + " ms: must be 0 (off) or within [10 ms, 1 hour]");
        }
        return poll;
    }

    /** {@code ticket-match-window}: within [0, {@code ttl}]. */
    Duration ticketMatchWindow(Duration dflt, Duration ttl) {
        Duration window = duration(ReplicaLbOption.TICKET_MATCH_WINDOW, dflt);
        if (window.isNegative() || window.compareTo(ttl) > 0) {
            throw new IllegalArgumentException(path(ReplicaLbOption.TICKET_MATCH_WINDOW) + " " + window.toMillis()
                    + " ms: must be within [0, ticket-ttl " + ttl.toMillis() + " ms]");
        }
        return window;
    }

    /** {@code max-open-tickets-per-node}: within [1, 2^20]. */
    int maxOpenTicketsPerNode(int dflt) {
        int maxOpen = read(ReplicaLbOption.MAX_OPEN_TICKETS_PER_NODE, () -> profile.getInt(ReplicaLbOption.MAX_OPEN_TICKETS_PER_NODE, dflt));
        if (maxOpen < 1 || maxOpen > 1 << 20) {
            throw new IllegalArgumentException(path(ReplicaLbOption.MAX_OPEN_TICKETS_PER_NODE) + " " + maxOpen + ": must be within [1, 1048576]");
        }
        return maxOpen;
    }

    /** {@code shards}: a whole number within [1, {@code max}] ({@code dflt} when unset). */
    int shards(int dflt, int max) {
        int shards = read(ReplicaLbOption.SHARDS, () -> profile.getInt(ReplicaLbOption.SHARDS, dflt));
        Object rawShards = raw(ReplicaLbOption.SHARDS.getPath());
        if (rawShards instanceof Number num && num.doubleValue() != Math.rint(num.doubleValue())) {
            // The driver's reader would truncate it.
            throw new IllegalArgumentException(path(ReplicaLbOption.SHARDS) + " '" + rawShards + "': must be a whole number within [1, "
                    + max + "]");
        }
        if (shards < 1 || shards > max) {
            throw new IllegalArgumentException(path(ReplicaLbOption.SHARDS) + " " + shards + ": must be within [1, " + max
                    + "] (default: the number of cores, " + dflt + "; 1: one shared view)");
        }
        return shards;
    }

    /** The option's full path, as an application writes it. */
    static String path(DriverOption option) {
        return "datastax-java-driver." + option.getPath();
    }

    /**
     * Reads one option; the driver's own error (a wrong type, ...) becomes one line naming the
     * option and the value.
     */
    <T> T read(DriverOption option, Supplier<T> get) {
        try {
            return get.get();
        } catch (RuntimeException e) {
            Object raw = raw(option.getPath());
            String value = raw == null ? "" : " '" + raw + "'";
            throw new IllegalArgumentException(path(option) + value + ": " + ReplicaLbSettings.oneLine(e.getMessage()), e);
        }
    }

    /** The value at {@code path} as written, or null. */
    private Object raw(String path) {
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
    Map<String, String> params() {
        String prefix = ReplicaLbOption.PARAMS.getPath();
        Map<String, String> out = new TreeMap<>();
        for (Map.Entry<String, Object> e : read(ReplicaLbOption.PARAMS, profile::entrySet)) {
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

    /** A duration option, {@code dflt} when unset. */
    Duration duration(DriverOption option, Duration dflt) {
        return read(option, () -> profile.getDuration(option, dflt));
    }

    /** {@code d}, checked to be within (0, 1 hour]. */
    Duration positive(Duration d, DriverOption option) {
        if (d.isZero() || d.isNegative() || d.compareTo(HOUR) > 0) {
            throw new IllegalArgumentException(path(option) + " " + d.toMillis() + " ms: must be within (0, 1 hour]");
        }
        return d;
    }
}
