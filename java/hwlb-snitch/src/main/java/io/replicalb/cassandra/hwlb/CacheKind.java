package io.replicalb.cassandra.hwlb;

import java.util.Locale;

/**
 * Whose misses count as the node's cache misses ({@code replica_lb.hwlb.cache}). The row cache,
 * when it has capacity, is the one whose misses go to the SSTables; otherwise the chunk cache
 * of data file pages; the key cache last.
 */
public enum CacheKind
{
    /** The row cache if its capacity is above 0, else the chunk cache if enabled, else the key cache. */
    AUTO,
    /** Cassandra's row cache ({@code row_cache_size}). */
    ROW,
    /** Cassandra's chunk cache ({@code file_cache_enabled}, {@code file_cache_size}). */
    CHUNK,
    /** Cassandra's key cache ({@code key_cache_size}). */
    KEY;

    /** The lower-case name used in settings and tables. */
    public String label()
    {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * Parses a cache kind (case-insensitive).
     *
     * @throws IllegalArgumentException naming the bad value and the allowed ones
     */
    public static CacheKind parse(String what, String text)
    {
        String t = text == null ? "" : text.trim().toUpperCase(Locale.ROOT);
        for (CacheKind c : values())
            if (c.name().equals(t))
                return c;
        throw new IllegalArgumentException(what + " '" + text + "' is not allowed; use one of auto, row, chunk, key");
    }
}
