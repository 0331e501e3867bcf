package io.replicalb.cassandra.hwlb;

import org.apache.cassandra.db.ColumnFamilyStore;
import org.apache.cassandra.db.Keyspace;

/**
 * Reads each table's cumulative row-cache counts from Cassandra's per-table metrics (no
 * per-read hook): hits are {@code RowCacheHit}; misses are {@code RowCacheMiss} plus
 * {@code RowCacheHitOutOfRange} (a cached partition that does not cover the query: the read
 * goes to the SSTables all the same). Only tables whose row cache is on are reported.
 */
public interface TableProbe
{
    /** Receives one table's counts. */
    interface Sink
    {
        /**
         * Table {@code key} ({@link ReadTable#key}), named {@code name} (keyspace.table), has
         * had {@code hits} hits and {@code misses} misses since the node started.
         */
        void table(int key, String name, long hits, long misses);
    }

    /** Reports every table with a row cache to {@code sink}. */
    void forEach(Sink sink);

    /** No table: per-table rates off. */
    TableProbe NONE = sink -> {};

    /** The row-cached tables of this node (needs the schema loaded). */
    static TableProbe rowCache()
    {
        return sink -> {
            for (Keyspace ks : Keyspace.all())
            {
                for (ColumnFamilyStore cfs : ks.getColumnFamilyStores())
                {
                    if (!cfs.isRowCacheEnabled())
                        continue;
                    sink.table(ReadTable.key(cfs.metadata.id), cfs.metadata.keyspace + "." + cfs.name, cfs.metric.rowCacheHit.getCount(),
                               cfs.metric.rowCacheMiss.getCount() + cfs.metric.rowCacheHitOutOfRange.getCount());
                }
            }
        };
    }
}
