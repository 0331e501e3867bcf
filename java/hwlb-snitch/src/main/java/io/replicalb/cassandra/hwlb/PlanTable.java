package io.replicalb.cassandra.hwlb;

import java.util.ArrayList;
import java.util.List;

/**
 * The plans by replica set and table: an open-addressing table keyed by a 64-bit fingerprint
 * of (node ids in canonical order, k, the table key whose rates the plan uses, ReadTable.NONE
 * for the node-wide rates), published copy-on-write. Lookups take no lock and allocate
 * nothing; a new replica set (rare: there are few distinct sets of endpoints, however many
 * token ranges) copies the table under this object's monitor. Plans change in place in their
 * {@link PlanSlot}, so rate changes never copy the table.
 */
final class PlanTable
{
    private static final class Table
    {
        final PlanSlot[] slots;
        final int mask;
        final int size;

        Table(PlanSlot[] slots, int size)
        {
            this.slots = slots;
            this.mask = slots.length - 1;
            this.size = size;
        }
    }

    private volatile Table table = new Table(new PlanSlot[16], 0);

    /** The fingerprint of ids[0..n), k and the table key. */
    static long key(int[] ids, int n, int k, int tableKey)
    {
        long h = 0x9E3779B97F4A7C15L * (k + 1) + tableKey * 0xC2B2AE3D27D4EB4FL;
        for (int j = 0; j < n; j++)
        {
            h ^= ids[j] + 1;
            h *= 0xBF58476D1CE4E5B9L;
            h ^= h >>> 31;
        }
        return h;
    }

    /** The slot for ids[0..n), k and table, or null. */
    PlanSlot get(long key, int[] ids, int n, int k, int tableKey)
    {
        Table t = table;
        int i = (int) (key ^ (key >>> 32)) & t.mask;
        while (true)
        {
            PlanSlot s = t.slots[i];
            if (s == null)
                return null;
            if (s.key == key && s.matches(ids, n, k, tableKey))
                return s;
            i = (i + 1) & t.mask;
        }
    }

    /** The slot for ids[0..n), k and table, added if missing (copies the table). */
    synchronized PlanSlot add(long key, int[] ids, int n, int k, int tableKey)
    {
        PlanSlot existing = get(key, ids, n, k, tableKey);
        if (existing != null)
            return existing;
        int[] copy = java.util.Arrays.copyOf(ids, n);
        PlanSlot slot = new PlanSlot(key, copy, k, tableKey);
        Table t = table;
        int capacity = t.slots.length;
        while ((t.size + 1) * 2 > capacity)
            capacity *= 2;
        PlanSlot[] slots = new PlanSlot[capacity];
        for (PlanSlot s : t.slots)
            if (s != null)
                insert(slots, s);
        insert(slots, slot);
        table = new Table(slots, t.size + 1);
        return slot;
    }

    private static void insert(PlanSlot[] slots, PlanSlot s)
    {
        int mask = slots.length - 1;
        int i = (int) (s.key ^ (s.key >>> 32)) & mask;
        while (slots[i] != null)
            i = (i + 1) & mask;
        slots[i] = s;
    }

    /** Every slot (for inspection). */
    List<PlanSlot> slots()
    {
        List<PlanSlot> out = new ArrayList<>();
        for (PlanSlot s : table.slots)
            if (s != null)
                out.add(s);
        return out;
    }

    /** How many replica sets have a slot. */
    int size()
    {
        return table.size;
    }
}
