package io.replicalb.cassandra.hwlb;

import org.apache.cassandra.cache.ChunkCache;
import org.apache.cassandra.metrics.CacheMetrics;
import org.apache.cassandra.service.CacheService;

/**
 * Reads the cumulative hit and request counts of the cache whose misses count, from
 * Cassandra's own metrics (no per-read hook): the row cache when it has capacity (its misses
 * are the reads that go to the SSTables), else the chunk cache of data file pages when enabled,
 * else the key cache.
 */
public interface CacheProbe
{
    /** The cache measured: row, chunk or key. */
    CacheKind kind();

    /** Cumulative hits since the node started. */
    long hits();

    /** Cumulative requests (hits + misses) since the node started. */
    long requests();

    /** Cumulative misses since the node started. */
    default long misses()
    {
        return Math.max(0, requests() - hits());
    }

    /**
     * The probe for {@code wanted}; {@link CacheKind#AUTO} resolves as described above. Needs
     * Cassandra's CacheService (call once the node is up).
     */
    static CacheProbe of(CacheKind wanted)
    {
        CacheKind kind = wanted;
        if (kind == CacheKind.AUTO)
        {
            if (CacheService.instance.rowCache.getCapacity() > 0)
                kind = CacheKind.ROW;
            else if (ChunkCache.instance != null)
                kind = CacheKind.CHUNK;
            else
                kind = CacheKind.KEY;
        }
        CacheMetrics metrics;
        switch (kind)
        {
            case ROW:
                metrics = CacheService.instance.rowCache.getMetrics();
                break;
            case CHUNK:
                if (ChunkCache.instance == null)
                    throw new IllegalArgumentException(HwlbSettings.PREFIX + "cache 'chunk' is not allowed: the chunk cache is disabled "
                                                       + "(file_cache_enabled: false); use auto, row or key");
                metrics = ChunkCache.instance.metrics;
                break;
            default:
                metrics = CacheService.instance.keyCache.getMetrics();
                break;
        }
        return of(kind, metrics);
    }

    /** A probe reading {@code metrics} as cache {@code kind}. */
    static CacheProbe of(CacheKind kind, CacheMetrics metrics)
    {
        return new CacheProbe()
        {
            @Override
            public CacheKind kind()
            {
                return kind;
            }

            @Override
            public long hits()
            {
                return metrics.hits.getCount();
            }

            @Override
            public long requests()
            {
                return metrics.requests.getCount();
            }
        };
    }
}
