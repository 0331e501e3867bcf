package io.replicalb.core.hwlb;

import java.util.SplittableRandom;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Systematic sampling beyond the shared vectors (HwlbComponentVectorsTest replays Rust's draws,
 * zero entries and rounding at the bounds among them): the marginals, and Java's own plan rows.
 */
class SamplerTest
{
    @Test
    void inclusionMatchesKTimesPp()
    {
        double[] pp = { 0.1, 0.2, 0.3, 0.15, 0.25 };
        SystematicSampler row = new SystematicSampler(pp);
        SplittableRandom rnd = new SplittableRandom(9);
        long[] counts = new long[5];
        int[] out = new int[3];
        int draws = 200_000;
        for (int d = 0; d < draws; d++)
        {
            row.sample(3, rnd.nextDouble(), out);
            assertTrue(out[0] < out[1] && out[1] < out[2], "distinct, increasing");
            for (int j : out)
                counts[j]++;
        }
        for (int j = 0; j < 5; j++)
        {
            double expected = 3.0 * pp[j];
            double got = counts[j] / (double) draws;
            double se = Math.sqrt(expected * (1.0 - expected) / draws);
            assertTrue(Math.abs(got - expected) < 5.0 * se, "replica " + j + ": " + got + " vs " + expected);
        }
    }

    @Test
    void plannedRowsNeverDrawDuplicatesOrExceedTheirMarginals()
    {
        // Rows of real plans, including the published counterexamples.
        double[][] cases = { { 0.0, 7.0 / 9.0, 7.0 / 9.0, 0.9 }, { 0.66, 0.66, 0.34, 0.32 }, { 0.95, 0.91667, 0.75, 0.75 } };
        int[] ks = { 2, 3, 3 };
        SplittableRandom rnd = new SplittableRandom(11);
        for (int c = 0; c < cases.length; c++)
        {
            HwlbPlan plan = HwlbPlan.compute(cases[c], ks[c], PlanConfig.DEFAULT);
            for (int coord = 0; coord < plan.n(); coord++)
            {
                double[] r = plan.row(coord);
                for (double x : r)
                    assertTrue(x <= 1.0 / ks[c] + 1e-12, "row within 1/k");
                SystematicSampler s = new SystematicSampler(r);
                for (int d = 0; d < 20_000; d++)
                {
                    long mask = s.sampleMask(ks[c], rnd.nextDouble());
                    assertEquals(ks[c], Long.bitCount(mask), "k distinct replicas");
                    for (int j = 0; j < r.length; j++)
                        if (r[j] == 0.0)
                            assertEquals(0L, mask & (1L << j), "a zero cell is never drawn");
                }
            }
        }
    }
}
