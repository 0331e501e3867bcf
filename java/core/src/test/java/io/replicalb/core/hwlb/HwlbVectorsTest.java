package io.replicalb.core.hwlb;

import java.io.File;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The shared vectors (testdata/hwlb-vectors.json, written by the Rust binary's
 * {@code replica-lb hwlb plan --json}): for every case the Java plan's active flag, shares and
 * every row cell agree with Rust's to 1e-9.
 */
class HwlbVectorsTest
{
    private static final double TOL = 1e-9;
    private static double maxDiff;

    @Test
    void everyCaseMatchesTheRustPlan() throws Exception
    {
        String path = System.getProperty("hwlb.vectors");
        assertTrue(path != null && !path.isEmpty(), "Surefire passes -Dhwlb.vectors");
        File file = new File(path);
        assertTrue(file.isFile(), "vectors at " + file.getAbsolutePath());
        JsonNode root = new ObjectMapper().readTree(file);
        JsonNode cases = root.get("cases");
        assertTrue(cases.size() >= 100, "about 150 cases, found " + cases.size());
        int checked = 0;
        for (int c = 0; c < cases.size(); c++)
        {
            JsonNode cs = cases.get(c);
            int k = cs.get("cl").asInt();
            double[] rates = doubles(cs.get("hit_rates"));
            int n = rates.length;
            HwlbPlan plan = HwlbPlan.compute(rates, k, PlanConfig.DEFAULT);
            String what = "case " + c + " (hit rates " + cs.get("hit_rates") + ", cl " + k + ")";
            assertEquals(cs.get("active").asBoolean(), plan.active(), what + ": active");
            double[] shares = doubles(cs.get("shares"));
            double[] got = plan.shares();
            assertEquals(n, shares.length, what);
            for (int j = 0; j < n; j++)
                near(shares[j], got[j], what + ": share " + j);
            JsonNode rows = cs.get("rows");
            assertEquals(n, rows.size(), what + ": rows");
            for (int i = 0; i < n; i++)
            {
                double[] row = doubles(rows.get(i));
                for (int j = 0; j < n; j++)
                    near(row[j], plan.cell(i, j), what + ": row " + i + " cell " + j);
            }
            checked++;
        }
        assertEquals(cases.size(), checked);
        System.out.println("hwlb vectors: " + checked + " cases agree with Rust; largest difference " + maxDiff);
    }

    private static void near(double expected, double actual, String what)
    {
        maxDiff = Math.max(maxDiff, Math.abs(expected - actual));
        if (!(Math.abs(expected - actual) <= TOL))
            fail(what + ": Rust " + expected + ", Java " + actual);
    }

    private static double[] doubles(JsonNode array)
    {
        double[] out = new double[array.size()];
        for (int i = 0; i < out.length; i++)
            out[i] = array.get(i).asDouble();
        return out;
    }
}
