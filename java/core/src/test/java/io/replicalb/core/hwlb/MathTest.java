package io.replicalb.core.hwlb;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Shares, redistribution and plan: the Rust unit tests, mirrored. */
class MathTest
{
    private static double[] shares(double[] h, int k)
    {
        return Shares.of(h, 0.95, k);
    }

    private static double[] rows(double[] h, int k) throws Infeasible
    {
        return Redistribution.redistribute(shares(h, k), k);
    }

    @Test
    void equalMissesPerReplica()
    {
        double[] s = shares(new double[]{ 0.0, 0.5, 0.75 }, 1);
        // r = 1, 2, 4 -> P = 1/7, 2/7, 4/7; misses P(1-H) = 1/7 each.
        assertEquals(1.0 / 7.0, s[0], 1e-12);
        assertEquals(2.0 / 7.0, s[1], 1e-12);
        assertEquals(4.0 / 7.0, s[2], 1e-12);
    }

    @Test
    void capLimitsHotReplicas()
    {
        double[] s = shares(new double[]{ 1.0, 0.95, 0.0 }, 1);
        assertEquals(s[0], s[1], 1e-12, "1.0 is capped to 0.95");
    }

    @Test
    void clippingNeverOvershootsThePublishedCounterexample()
    {
        // The published code gave .400 > 1/3 here.
        double[] s = shares(new double[]{ 0.95, 0.91667, 0.75, 0.75 }, 3);
        for (double x : s)
            assertTrue(x <= 1.0 / 3.0 + 1e-12, java.util.Arrays.toString(s));
        assertEquals(1.0, Shares.sum(s), 1e-12);
        assertArrayEquals(new double[]{ 1.0 / 3, 1.0 / 3, 1.0 / 6, 1.0 / 6 }, s, 1e-12);
    }

    @Test
    void clippingKeepsTheRestProportional()
    {
        double[] s = shares(new double[]{ 0.9, 0.01, 0.01 }, 2);
        assertEquals(0.5, s[0], 1e-12);
        assertEquals(0.25, s[1], 1e-12);
        assertEquals(0.25, s[2], 1e-12);
    }

    @Test
    void k1IsThePublishedSurplusDeficitSplit() throws Infeasible
    {
        double[] r = rows(new double[]{ 0.0, 0.5, 0.75 }, 1);
        double[] expect = { 3.0 / 7.0, 0.0, 4.0 / 7.0, 0.0, 6.0 / 7.0, 1.0 / 7.0, 0.0, 0.0, 1.0 };
        assertArrayEquals(expect, r, 1e-12);
    }

    @Test
    void publishedCounterexamplesStayUnderTheCap() throws Infeasible
    {
        // The published code gave the cold coordinator [.2, 0, 0, .8] here (0.8 > 1/2).
        double[] r = rows(new double[]{ 0.0, 7.0 / 9.0, 7.0 / 9.0, 0.9 }, 2);
        for (double x : r)
            assertTrue(x <= 0.5 + 1e-12, java.util.Arrays.toString(r));
        // The cold coordinator keeps 0.2 and sends exactly 1/2 to the 0.9 replica.
        assertEquals(0.2, r[0], 1e-9);
        assertEquals(0.5, r[3], 1e-9);
        r = rows(new double[]{ 0.66, 0.66, 0.34, 0.32 }, 3);
        for (double x : r)
            assertTrue(x <= 1.0 / 3.0 + 1e-12, java.util.Arrays.toString(r));
    }

    @Test
    void rowsMeetEveryInvariant() throws Infeasible
    {
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(7);
        for (int trial = 0; trial < 2000; trial++)
        {
            int n = 2 + rnd.nextInt(7);
            int k = 1 + rnd.nextInt(n - 1);
            double[] h = new double[n];
            for (int i = 0; i < n; i++)
                h[i] = rnd.nextInt(10) == 0 ? 1.0 : rnd.nextDouble();
            double[] p = shares(h, k);
            double[] r = Redistribution.redistribute(p, k);
            for (int c = 0; c < n; c++)
            {
                double sum = 0;
                for (int j = 0; j < n; j++)
                {
                    double x = r[c * n + j];
                    assertTrue(x >= -1e-12 && x <= 1.0 / k + 1e-9, "cell in [0, 1/k]");
                    sum += x;
                }
                assertEquals(1.0, sum, 1e-9, "row sums to 1");
                assertEquals(Math.min(n * p[c], 1.0 / k), r[c * n + c], 1e-9, "diagonal kept local");
            }
            for (int j = 0; j < n; j++)
            {
                double col = 0;
                for (int c = 0; c < n; c++)
                    col += r[c * n + j];
                assertEquals(p[j], col / n, 1e-9, "column mean is P");
            }
        }
    }

    @Test
    void stepsAsideWhenThereIsNoChoice()
    {
        assertEquals(StepAside.NO_CHOICE, HwlbPlan.compute(new double[]{ 0.1, 0.9, 0.5 }, 3, PlanConfig.DEFAULT).stepAside);
    }

    @Test
    void stepsAsideWhenEquallyWarmAfterTheCap()
    {
        assertEquals(StepAside.EQUALLY_WARM, HwlbPlan.compute(new double[]{ 0.80, 0.81, 0.805 }, 2, PlanConfig.DEFAULT).stepAside);
        assertEquals(StepAside.EQUALLY_WARM, HwlbPlan.compute(new double[]{ 0.96, 1.0, 0.95 }, 1, PlanConfig.DEFAULT).stepAside);
        assertNull(HwlbPlan.compute(new double[]{ 0.80, 0.8101, 0.80 }, 2, PlanConfig.DEFAULT).stepAside);
    }

    @Test
    void inactiveRowsAreTheNaivePolicy()
    {
        HwlbPlan p = HwlbPlan.inactive(3, 2, StepAside.EQUALLY_WARM);
        assertArrayEquals(new double[]{ 0.5, 0.25, 0.25 }, p.row(0));
        assertArrayEquals(new double[]{ 0.25, 0.25, 0.5 }, p.row(2));
        assertArrayEquals(new double[]{ 1.0 / 3, 1.0 / 3, 1.0 / 3 }, p.shares());
        assertFalse(p.active());
    }

    @Test
    void coldRestartQuorumKeepsTheColdNodeMostlyRemote()
    {
        HwlbPlan p = HwlbPlan.compute(new double[]{ 0.0, 0.8, 0.8 }, 2, PlanConfig.DEFAULT);
        assertTrue(p.active());
        assertEquals(1.0 / 11.0, p.shares()[0], 1e-12);
        assertEquals(3.0 / 11.0, p.cell(0, 0), 1e-12);
        assertEquals(0.5, p.cell(1, 1), 1e-12);
        assertEquals(0.0, p.cell(1, 0), 1e-12);
    }

    @Test
    void badInputsAreRefused()
    {
        assertThrows(IllegalArgumentException.class, () -> HwlbPlan.compute(new double[]{ 0.1, 1.5 }, 1, PlanConfig.DEFAULT));
        assertThrows(IllegalArgumentException.class, () -> HwlbPlan.compute(new double[]{ 0.1, 0.5 }, 3, PlanConfig.DEFAULT));
        assertThrows(IllegalArgumentException.class, () -> new PlanConfig(1.0, 0.01));
    }
}
