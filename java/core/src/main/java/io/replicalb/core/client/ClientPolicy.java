package io.replicalb.core.client;

/**
 * A client-side replica-selection policy: which of a request's candidate nodes a driver tries
 * first, second, ... It is the Java side of the Rust {@code policy::Policy} trait for policies
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
 *       policy learns arrives through the {@code on*} callbacks: for each request actually sent
 *       the caller calls {@link #onSend} once and then exactly one of {@link #onReply} /
 *       {@link #onFailure}.</li>
 * </ul>
 */
public interface ClientPolicy {
    /** The largest node id plus one that a policy must accept. */
    int MAX_NODES = 4096;

    /** The most candidates one plan takes (the Rust {@code MAX_REPLICAS}); more is refused. */
    int MAX_CANDIDATES = 64;

    /** The policy's registered name, as in Rust (e.g. {@code unified}). */
    String name();

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

    /** A request was sent to {@code node}. */
    void onSend(int node, long nowNs);

    /**
     * {@code node} answered a request this policy sent, {@code latencyNs} after the send.
     * {@code hitRate} is the node's cache hit rate when the reply carries one, NaN otherwise.
     */
    void onReply(int node, long latencyNs, double hitRate, long nowNs);

    /** A request sent to {@code node} ended without a reply. */
    void onFailure(int node, Failure failure, long nowNs);

    /** News about {@code node} not tied to a reply: its cache hit rate, polled off the request path. */
    default void onHitRate(int node, double hitRate, long nowNs) {}

    /** {@code node} is seen up (added, or back after a restart). */
    default void onNodeUp(int node, long nowNs) {}

    /** {@code node} is seen down. */
    default void onNodeDown(int node, long nowNs) {}

    /**
     * The zones (racks) of the known nodes: {@code zoneOfNode[i]} is node i's zone, -1 when
     * unknown; {@code localZone} the client's own zone, -1 when unknown. Called at start and
     * whenever the topology changes, never per request.
     */
    default void onTopology(int[] zoneOfNode, int localZone) {}
}
