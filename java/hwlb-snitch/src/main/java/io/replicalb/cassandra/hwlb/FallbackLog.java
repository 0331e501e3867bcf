package io.replicalb.cassandra.hwlb;

import java.util.concurrent.atomic.AtomicLong;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Logs an exception caught on the request path at most once a minute (the caller counts them). */
final class FallbackLog
{
    private static final Logger logger = LoggerFactory.getLogger(ReplicaRouter.class);
    private static final long EVERY_NS = 60_000_000_000L;
    private final AtomicLong lastNs = new AtomicLong(Long.MIN_VALUE);
    private final String what;

    /** A log saying {@code what} happened and what was done instead. */
    FallbackLog(String what)
    {
        this.what = what;
    }

    void report(Throwable t)
    {
        long now = System.nanoTime();
        long last = lastNs.get();
        if ((last == Long.MIN_VALUE || now - last >= EVERY_NS) && lastNs.compareAndSet(last, now))
            logger.warn("HWLB: {} (logged at most once a minute)", what, t);
    }
}
