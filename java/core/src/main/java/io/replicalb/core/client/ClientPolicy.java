package io.replicalb.core.client;

/**
 * A client-side replica-selection policy: which of a request's candidate nodes a driver tries
 * first, second, ..., and what it learns from what happens. It is the Java side of the Rust {@code policy::Policy} trait for policies
 * that decide as a client ({@code unified}, {@code c3}, {@code hwlb-client},
 * {@code weighted-least-loaded}, {@code peak-ewma}, {@code p2c}), and it makes the same
 * decisions as the Rust code on the shared traces ({@code testdata/client-policy-traces.json}).
 *
 * <p>Rules, as in Rust:
 * <ul>
 *   <li>time ({@code nowNs}, monotonic nanoseconds) and randomness ({@link io.replicalb.core.Rng})
 *       are arguments, so the same inputs always give the same decision;</li>
 *   <li>an instance is not thread-safe: its caller serialises every call (one lock, or one
 *       instance per thread), and {@link #plan} allocates nothing;</li>
 *   <li>nodes are small dense ids {@code 0..MAX_NODES} chosen by the caller; everything the
 *       policy learns arrives through {@link #observe} (and the zones through
 *       {@link #onTopology}): for each request actually sent the caller reports
 *       {@link Event#SENT} once and then exactly one {@link Event#REPLY} or failure;</li>
 *   <li>a policy's name and parameters live in the registry ({@link ClientPolicies}): the
 *       interface only plans and observes.</li>
 * </ul>
 */
public interface ClientPolicy {
    /** The largest node id plus one that a policy must accept. */
    int MAX_NODES = 4096;

    /** The most candidates one plan takes (the Rust {@code MAX_REPLICAS}); more is refused. */
    int MAX_CANDIDATES = 64;

    /**
     * Orders the candidates of one request, best first. {@code candidates[0..count)} are
     * distinct live node ids in topology order (the key's replicas for a token-aware request,
     * every node otherwise), at most {@link #MAX_CANDIDATES}; the policy writes a permutation of
     * them into {@code out[0..count)} (the order a driver tries them in) and returns
     * {@code count}. {@code out} may not be {@code candidates}.
     *
     * @throws IllegalArgumentException when {@code count} exceeds {@link #MAX_CANDIDATES} or
     *     the arrays' lengths
     */
    int plan(int[] candidates, int count, long nowNs, io.replicalb.core.Rng rng, int[] out);

    /**
     * Learns that {@code event} happened to {@code node} at {@code nowNs}. {@code latencyNs}
     * is a {@link Event#REPLY}'s time since its send (0 otherwise); {@code hitRate} the node's
     * cache hit rate carried by a reply or a {@link Event#HIT_RATE}, NaN when none.
     *
     * @throws IllegalArgumentException when {@code node} is outside {@code 0..MAX_NODES}
     */
    void observe(Event event, int node, long latencyNs, double hitRate, long nowNs);

    /**
     * The zones (racks) of the known nodes: {@code zoneOfNode[i]} is node i's zone, -1 when
     * unknown; {@code localZone} the client's own zone, -1 when unknown. Called at start and
     * whenever the topology changes, never per request.
     */
    default void onTopology(int[] zoneOfNode, int localZone) {}
}
