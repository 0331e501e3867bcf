package io.replicalb.cassandra.hwlb;

/**
 * JMX view of the plug-in ({@code io.replicalb:type=HwlbSnitch}): the switch (read-write) and the
 * counters (read-only), for operators' tools; the same as the {@code replica_lb} virtual tables.
 */
public interface HwlbControlMBean
{
    /** The coordinator policy: naive, hwlb, unified or dynamic-snitch. */
    String getPolicy();

    /** Changes the coordinator policy at run time. */
    void setPolicy(String policy);

    /** Whether the plug-in draws with HWLB (policy hwlb or unified). */
    boolean isEnabled();

    /** The old switch: true = policy hwlb, false = policy naive. */
    void setEnabled(boolean enabled);

    /** Reads ordered by the fallback (inner order) because of an error or a peer value not understood. */
    long getFallbacks();

    /** Reads where unified passed over at least one replica. */
    long getPassedOver();

    /** Health probes sent. */
    long getProbes();

    /** Reads that left a cold warming replica out (unified's warm-up). */
    long getColdLeftOut();

    /** Warm-up reads sent to cold replicas. */
    long getWarmupReads();

    /** Warm-up reads skipped: too many unanswered at the cold replica. */
    long getWarmupSkipped();

    /** Warm-up reads that could not be built or sent (the request was not affected). */
    long getWarmupFailures();

    /** Whether reads are planned with their own table's rates ("per-table") or node-wide, and why. */
    String getTableRates();

    /** Reads planned with their own table's rates. */
    long getTableReads();

    /** The consistency level reads are planned for. */
    String getReadCl();

    /** Changes the consistency level reads are planned for (ONE, TWO, THREE, QUORUM, LOCAL_QUORUM, LOCAL_ONE, ALL). */
    void setReadCl(String readCl);

    /** The cache measured (row, chunk, key). */
    String getCache();

    /** The tracker's current hit rate. */
    double getHitRate();

    /** The last rate published by gossip (NaN before the first). */
    double getPublishedRate();

    /** Cumulative hits of the cache measured. */
    long getCacheHits();

    /** Cumulative misses of the cache measured. */
    long getCacheMisses();

    /** sortedByProximity calls for reads this node coordinates. */
    long getReadsCoordinated();

    /** Reads of this node's own replica among the first k. */
    long getLocalReads();

    /** Reads of other replicas among the first k. */
    long getRemoteReads();

    /** Orders drawn by HWLB. */
    long getDraws();

    /** Calls where HWLB was on but stepped aside. */
    long getSteppedAside();

    /** Plan recomputations (an input rate changed). */
    long getPlanRecomputes();

    /** Starts a new window for the per-peer chosen, first_k and expected counters. */
    void resetCounters();
}
