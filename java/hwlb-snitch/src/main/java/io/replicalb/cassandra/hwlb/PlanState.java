package io.replicalb.cassandra.hwlb;

import io.replicalb.core.hwlb.HwlbPlan;
import io.replicalb.core.hwlb.PlanConfig;
import io.replicalb.core.hwlb.StepAside;
import io.replicalb.core.hwlb.SystematicSampler;
import io.replicalb.core.hwlb.Warmup;

/**
 * A replica set's plan reduced to what the request path needs, with the inputs it was made
 * from: the effective rates (in the set's canonical order), whether HWLB is active, this
 * coordinator's sampler and k * row[j] for the expected counts. Immutable; {@link #checkedVersion}
 * is the {@link PeerView} version at which the inputs were last found unchanged.
 */
final class PlanState
{
    final long checkedVersion;
    final double[] rates;
    final StepAside stepAside;
    final SystematicSampler sampler;
    final double[] kTimesRow;
    /** A replica's expected cache misses per read under the plan (NaN: a rate unknown); paces warm-up reads. */
    final double missesPerRead;

    PlanState(long checkedVersion, double[] rates, StepAside stepAside, SystematicSampler sampler, double[] kTimesRow, double missesPerRead)
    {
        this.missesPerRead = missesPerRead;
        this.checkedVersion = checkedVersion;
        this.rates = rates;
        this.stepAside = stepAside;
        this.sampler = sampler;
        this.kTimesRow = kTimesRow;
    }

    /** Whether HWLB draws for this set. */
    boolean active()
    {
        return stepAside == null;
    }

    /** The same plan, found still valid at {@code version}. */
    PlanState checkedAt(long version)
    {
        return new PlanState(version, rates, stepAside, sampler, kTimesRow, missesPerRead);
    }

    /**
     * Computes the plan for node ids {@code ids} (canonical order) from {@code view}'s rates,
     * taking the row of coordinator {@code view.localId} (the shares P when it is not a replica).
     */
    static PlanState compute(int[] ids, int k, PeerView view, PlanConfig config)
    {
        return compute(ids, k, view.rates(-1), view.localId, view.version, config);
    }

    /**
     * Computes the plan for node ids {@code ids} (canonical order) from {@code effective} (the
     * rates by node id of the view at {@code version}: node-wide or one table's), taking the
     * row of coordinator {@code localId} (the shares P when it is not a replica).
     */
    static PlanState compute(int[] ids, int k, double[] effective, int localId, long version, PlanConfig config)
    {
        int n = ids.length;
        double[] rates = new double[n];
        boolean unknown = false;
        int own = -1;
        for (int j = 0; j < n; j++)
        {
            rates[j] = effective[ids[j]];
            if (Double.isNaN(rates[j]))
                unknown = true;
            if (ids[j] == localId)
                own = j;
        }
        if (unknown)
            return new PlanState(version, rates, StepAside.RATE_UNKNOWN, null, null, Double.NaN);
        HwlbPlan plan = HwlbPlan.compute(rates, k, config);
        double missesPerRead = Warmup.missesPerRead(plan, rates, config);
        if (!plan.active())
            return new PlanState(version, rates, plan.stepAside, null, null, missesPerRead);
        double[] row = own >= 0 ? plan.row(own) : plan.shares();
        double[] kTimesRow = new double[n];
        for (int j = 0; j < n; j++)
        {
            assert row[j] <= 1.0 / k + 1e-9 : "a row cell exceeds 1/k";
            kTimesRow[j] = k * row[j];
        }
        return new PlanState(version, rates, null, new SystematicSampler(row), kTimesRow, missesPerRead);
    }

    /** Whether {@code effective}'s rates (by node id) for {@code ids} are the ones this plan was made from. */
    boolean sameRates(int[] ids, double[] effective)
    {
        for (int j = 0; j < ids.length; j++)
            if (Double.compare(rates[j], effective[ids[j]]) != 0)
                return false;
        return true;
    }
}
