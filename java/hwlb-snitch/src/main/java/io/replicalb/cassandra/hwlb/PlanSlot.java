package io.replicalb.cassandra.hwlb;

import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;

/**
 * One replica set's entry in the {@link PlanTable}: the set (node ids in canonical order), k
 * and the table whose rates it plans with (ReadTable.NONE: node-wide), fixed, and its current {@link PlanState}, swapped atomically when the rates change.
 */
final class PlanSlot
{
    private static final AtomicReferenceFieldUpdater<PlanSlot, PlanState> STATE =
        AtomicReferenceFieldUpdater.newUpdater(PlanSlot.class, PlanState.class, "state");

    final long key;
    final int[] ids;
    final int k;
    final int table;
    volatile PlanState state;

    PlanSlot(long key, int[] ids, int k, int table)
    {
        this.key = key;
        this.ids = ids;
        this.k = k;
        this.table = table;
    }

    /** Whether this slot is for exactly ids[0..n), k and table. */
    boolean matches(int[] candidateIds, int n, int k, int table)
    {
        if (this.k != k || this.table != table || ids.length != n)
            return false;
        for (int j = 0; j < n; j++)
            if (ids[j] != candidateIds[j])
                return false;
        return true;
    }

    /** Replaces {@code expected} by {@code next}; false when another thread got there first. */
    boolean swap(PlanState expected, PlanState next)
    {
        return STATE.compareAndSet(this, expected, next);
    }
}
