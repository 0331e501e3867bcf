package io.replicalb.core.hwlb;

/**
 * When a node publishes its hit rate by gossip (a port of
 * {@code crates/policy/src/hwlb/publish.rs}): the first time, then whenever it moved by more
 * than 0.1, or by more than 0.01 once 5 s have passed since the last publication. Small moves
 * are held back so gossip stays quiet while a rate drifts; a big one goes out at once.
 */
public final class RatePublisher
{
    /** A change that is published at once. */
    public static final double BIG_CHANGE = 0.1;
    /** A change that is published once {@link #MIN_INTERVAL_NS} has passed. */
    public static final double SMALL_CHANGE = 0.01;
    /** How long a small change waits at least, ns. */
    public static final long MIN_INTERVAL_NS = 5_000_000_000L;

    private boolean published;
    private double lastRate;
    private long lastAtNs;

    /**
     * Whether {@code rate}, measured at {@code nowNs}, is to be published now; if so it becomes
     * the last published rate.
     */
    public synchronized boolean offer(double rate, long nowNs)
    {
        boolean publish;
        if (!published)
        {
            publish = true;
        }
        else
        {
            double moved = Math.abs(rate - lastRate);
            long since = nowNs - lastAtNs;
            publish = moved > BIG_CHANGE || (moved > SMALL_CHANGE && Math.max(since, 0) >= MIN_INTERVAL_NS);
        }
        if (publish)
        {
            published = true;
            lastRate = rate;
            lastAtNs = nowNs;
        }
        return publish;
    }

    /** The last rate published, or NaN before the first publication. */
    public synchronized double last()
    {
        return published ? lastRate : Double.NaN;
    }
}
