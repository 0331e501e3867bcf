package io.replicalb.driver.runner;

import com.datastax.oss.driver.api.core.DriverTimeoutException;
import com.datastax.oss.driver.api.core.servererrors.ReadTimeoutException;
import com.datastax.oss.driver.api.core.servererrors.WriteTimeoutException;
import java.net.InetSocketAddress;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/**
 * How a request ended, as the reply line says it, with the time-out semantics of the Rust
 * driver's transport (crates/harness/src/loadgen/cql.rs): the driver's own request time-out,
 * or the coordinator's read or write time-out, is a time-out; every other failure an error.
 */
public final class Outcomes {
    private Outcomes() {}

    /**
     * The reply to request {@code id}: {@code ok} with the coordinator when {@code failure} is
     * {@code null}, else {@code timeout} or {@code error}.
     */
    public static String reply(long id, InetSocketAddress coordinator, Throwable failure) {
        if (failure == null) {
            return Protocol.ok(id, coordinator);
        }
        Throwable t = unwrap(failure);
        if (timedOut(t)) {
            return Protocol.timeout(id);
        }
        return Protocol.error(id, t.getClass().getSimpleName() + ": " + t.getMessage());
    }

    /** Whether {@code t} (unwrapped) is a time-out. */
    static boolean timedOut(Throwable t) {
        return t instanceof DriverTimeoutException || t instanceof ReadTimeoutException || t instanceof WriteTimeoutException;
    }

    /** The failure inside the wrappers of asynchronous completion. */
    static Throwable unwrap(Throwable t) {
        while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }
}
