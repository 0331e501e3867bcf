package io.replicalb.core.client;

/**
 * What a client policy observes about a node (the Rust {@code policy::Event}), handed to
 * {@link ClientPolicy#observe} with the node and the time: a send, its end (a reply or one of
 * the {@link Failure}s), news of the node's hit rate, the node going up or down. A plain enum,
 * so telling a policy allocates nothing.
 */
public enum Event {
    /** A request was sent to the node. */
    SENT,
    /** The node answered a request this policy sent (with its latency and maybe a hit rate). */
    REPLY,
    /** The node answered with an error ({@link Failure#ERROR}). */
    ERROR,
    /** No answer within the time-out ({@link Failure#TIMEOUT}). */
    TIMEOUT,
    /** The connection to the node dropped ({@link Failure#CONNECTION_LOST}). */
    CONNECTION_LOST,
    /** News not tied to a reply: the node's cache hit rate, polled off the request path. */
    HIT_RATE,
    /** The node is seen up (added, or back after a restart). */
    UP,
    /** The node is seen down. */
    DOWN;

    /** The event of a request that ended with {@code failure}. */
    public static Event of(Failure failure) {
        return switch (failure) {
            case ERROR -> ERROR;
            case TIMEOUT -> TIMEOUT;
            case CONNECTION_LOST -> CONNECTION_LOST;
        };
    }

    /** How the request ended when it is a failure, else {@code null}. */
    public Failure failure() {
        return switch (this) {
            case ERROR -> Failure.ERROR;
            case TIMEOUT -> Failure.TIMEOUT;
            case CONNECTION_LOST -> Failure.CONNECTION_LOST;
            default -> null;
        };
    }
}
