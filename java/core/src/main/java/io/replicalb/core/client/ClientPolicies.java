package io.replicalb.core.client;

import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;

/**
 * The client policies by name, as the Rust registry names them, each built with the published
 * defaults overridden by {@code params} (the Rust parameter names, values as text). The Java
 * driver package builds its policy from the driver's configuration through {@link #create}.
 * Registered: {@code c3} (its ranking; no rate control), {@code hwlb-client}, {@code p2c},
 * {@code peak-ewma}, {@code unified} and {@code weighted-least-loaded}.
 */
public final class ClientPolicies {
    private static final Map<String, Function<Map<String, String>, ClientPolicy>> BY_NAME = new TreeMap<>();

    static {
        BY_NAME.put(Unified.NAME, Unified::new);
        BY_NAME.put(C3.NAME, C3::new);
        BY_NAME.put(HwlbClient.NAME, HwlbClient::new);
        BY_NAME.put(WeightedLeastLoaded.NAME, WeightedLeastLoaded::new);
        BY_NAME.put(PeakEwma.NAME, PeakEwma::new);
        BY_NAME.put(P2c.NAME, P2c::new);
    }

    private ClientPolicies() {}

    /**
     * The policy {@code name} with {@code params} applied.
     *
     * @throws IllegalArgumentException with a one-line message naming the bad name or
     *     parameter and what is allowed
     */
    public static ClientPolicy create(String name, Map<String, String> params) {
        Function<Map<String, String>, ClientPolicy> make = BY_NAME.get(name);
        if (make == null) {
            throw new IllegalArgumentException("unknown client policy '" + name + "': allowed: " + String.join(", ", names()));
        }
        return make.apply(params);
    }

    /** The registered names, sorted. */
    public static Iterable<String> names() {
        return BY_NAME.keySet();
    }
}
