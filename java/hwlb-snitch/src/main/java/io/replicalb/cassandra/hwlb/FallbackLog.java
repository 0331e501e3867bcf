package io.replicalb.cassandra.hwlb;

import java.util.concurrent.atomic.AtomicLong;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Logs an exception caught on the request path at most once a minute (the count is in {@code fallbacks}). */
final class FallbackLog
{
    private static final Logger logger = LoggerFactory.getLogger(ReplicaRouter.class);
    private static final long EVERY_NS = 60_000_000_000L;
    private final AtomicLong lastNs = new AtomicLong(Long.MIN_VALUE);

    void report(Throwable t)
    {
        long now = System.nanoTime();
        long last = lastNs.get();
        if ((last == Long.MIN_VALUE || now - last >= EVERY_NS) && lastNs.compareAndSet(last, now))
            logger.warn("HWLB: ordering failed, the inner snitch's order is used (counted in fallbacks; logged at most once a minute)", t);
    }
}
