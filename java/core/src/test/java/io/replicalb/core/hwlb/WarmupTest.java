package io.replicalb.core.hwlb;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/** The Rust module's unit cases (crates/policy/src/hwlb/warmup.rs), on the Java port. */
class WarmupTest
{
    private static final boolean[] ALL = { true, true, true };

    @Test
    void aWarmingReplicaColderByMoreThanTheMarginIsCold()
    {
        assertEquals(new Warmup.ColdSplit(0b010, 1, 2), Warmup.splitCold(new double[]{ 0.9, 0.84, 0.86 }, ALL, 3, 2));
        assertNull(Warmup.splitCold(new double[]{ 0.9, 0.86, 0.86 }, ALL, 3, 2), "within the margin: warm");
        assertNull(Warmup.splitCold(new double[]{ 0.9, 0.1, 0.86 }, new boolean[]{ true, false, true }, 3, 2), "not warming");
    }

    @Test
    void aSplitNeedsKWarmReplicas()
    {
        assertNull(Warmup.splitCold(new double[]{ 0.9, 0.1, 0.2 }, ALL, 3, 2));
        assertEquals(new Warmup.ColdSplit(0b110, 2, 1), Warmup.splitCold(new double[]{ 0.9, 0.2, 0.1 }, ALL, 3, 1));
    }

    @Test
    void backgroundReadsGiveTheColdReplicaItsPeersMissesPerSecond()
    {
        PlanConfig config = PlanConfig.DEFAULT;
        double[] warm = { 0.8, 0.8 };
        double m = Warmup.missesPerRead(HwlbPlan.compute(warm, 2, config), warm, config);
        assertEquals(0.2, m, 1e-12);
        for (double cold : new double[]{ 0.0, 0.5, 0.7 })
            assertEquals(m, Warmup.backgroundChance(1.0, m, cold, config) * (1.0 - cold), 1e-12, "cold " + cold);
        assertEquals(0.1, Warmup.backgroundChance(0.5, m, 0.0, config), 1e-12);
        assertEquals(1.0, Warmup.backgroundChance(1.0, 0.9, 0.5, config), "at most every read");
    }

    @Test
    void theUniformCaseIsThePlansWithoutBuildingIt()
    {
        PlanConfig config = PlanConfig.DEFAULT;
        // k = n (no choice), over the first two of a longer array, one rate above the cap.
        double[] rates = { 0.82, 0.97, 0.5 };
        double[] two = { rates[0], rates[1] };
        assertEquals(Warmup.missesPerRead(HwlbPlan.compute(two, 2, config), two, config),
                     Warmup.uniformMissesPerRead(rates, 2, 2, config), 1e-15);
        // All equally warm.
        HwlbPlan equal = HwlbPlan.compute(new double[]{ 0.8, 0.8, 0.8 }, 1, config);
        assertEquals(Warmup.missesPerRead(equal, new double[]{ 0.8, 0.8, 0.8 }, config),
                     Warmup.uniformMissesPerRead(new double[]{ 0.8, 0.8, 0.8 }, 3, 1, config), 1e-15);
    }

    @Test
    void missesPerReadFollowHwlbsShares()
    {
        PlanConfig config = PlanConfig.DEFAULT;
        double[] rates = { 0.9, 0.8, 0.6 };
        HwlbPlan plan = HwlbPlan.compute(rates, 1, config);
        double m = Warmup.missesPerRead(plan, rates, config);
        for (int j = 0; j < 3; j++)
            assertEquals(m, plan.shares()[j] * (1.0 - rates[j]), 1e-9, "replica " + j);
    }

    @Test
    void slowStartRisesLinearlyOverTheRamp()
    {
        // The values of the Rust test slow_start_rises_linearly_over_the_ramp.
        assertEquals(1.0, Warmup.slowStart(5L, 0L), "no ramp: the whole pace at once");
        assertEquals(0.0, Warmup.slowStart(0L, 10_000_000_000L));
        assertEquals(0.25, Warmup.slowStart(2_500_000_000L, 10_000_000_000L));
        assertEquals(1.0, Warmup.slowStart(10_000_000_000L, 10_000_000_000L));
        assertEquals(1.0, Warmup.slowStart(Long.MAX_VALUE, 10_000_000_000L));
        assertEquals(0.0, Warmup.slowStart(-5L, 10_000_000_000L), "a clock that went back: none yet");
    }
}
