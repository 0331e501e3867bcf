package io.replicalb.core.client;

/** Why a request to a node produced no reply (the Rust {@code policy::Failure}). */
public enum Failure {
    /** The node answered with an error. */
    ERROR,
    /** No answer within the time-out. */
    TIMEOUT,
    /** The connection to the node dropped. */
    CONNECTION_LOST,
}
