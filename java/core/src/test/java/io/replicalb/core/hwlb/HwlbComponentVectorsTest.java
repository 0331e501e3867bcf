package io.replicalb.core.hwlb;

import java.io.File;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The shared component vectors (testdata/hwlb-component-vectors.json, written by
 * crates/policy/tests/hwlb_component_vectors.rs): every case replayed through
 * {@link SystematicSampler}, {@link HitRateTracker} and {@link RatePublisher}. The selected
 * indices and the publication decisions must equal Rust's exactly, the tracker's rates and
 * averages to 1e-12 (relative for the averages, which are per second).
 */
class HwlbComponentVectorsTest
{
    private static final double TOL = 1e-12;
    private static JsonNode root;

    @BeforeAll
    static void load() throws Exception
    {
        String path = System.getProperty("hwlb.component.vectors");
        assertTrue(path != null && !path.isEmpty(), "Surefire passes -Dhwlb.component.vectors");
        File file = new File(path);
        assertTrue(file.isFile(), "vectors at " + file.getAbsolutePath());
        root = new ObjectMapper().readTree(file);
    }

    @Test
    void samplerDrawsTheSameReplicas()
    {
        JsonNode cases = root.get("sampler");
        assertTrue(cases.size() >= 100, "about 150 sampler cases, found " + cases.size());
        int draws = 0;
        for (JsonNode cs : cases)
        {
            double[] pp = doubles(cs.get("pp"));
            int k = cs.get("k").asInt();
            String what = "sampler case '" + cs.get("name").asText() + "' (pp " + cs.get("pp") + ", k " + k + ")";
            SystematicSampler sampler = new SystematicSampler(pp);
            assertEquals(pp.length, sampler.size(), what);
            JsonNode units = cs.get("units");
            JsonNode selected = cs.get("selected");
            assertEquals(units.size(), selected.size(), what);
            int[] out = new int[k];
            for (int d = 0; d < units.size(); d++)
            {
                double unit = units.get(d).asDouble();
                int[] expected = ints(selected.get(d));
                String draw = what + ", unit " + unit + " (" + Double.toHexString(unit) + ")";
                sampler.sample(k, unit, out);
                assertArrayEquals(expected, out, draw);
                long mask = 0L;
                for (int j : expected)
                    mask |= 1L << j;
                assertEquals(mask, sampler.sampleMask(k, unit), draw + ": mask");
                draws++;
            }
        }
        System.out.println("hwlb component vectors: " + cases.size() + " sampler rows, " + draws + " draws agree with Rust");
    }

    @Test
    void trackerGivesTheSameRates()
    {
        JsonNode cases = root.get("tracker");
        assertTrue(cases.size() >= 30, "about 40 tracker cases, found " + cases.size());
        double maxDiff = 0.0;
        int steps = 0;
        int exact = 0;
        for (JsonNode cs : cases)
        {
            String what = "tracker case '" + cs.get("name").asText() + "'";
            HitRateTracker t = new HitRateTracker(cs.get("tick_ns").asLong(), cs.get("window_ns").asLong(), cs.get("start_ns").asLong());
            long hitsTotal = 0;
            long missesTotal = 0;
            int s = 0;
            for (JsonNode step : cs.get("steps"))
            {
                String at = what + ", step " + s++;
                long hits = step.get("hits").asLong();
                long misses = step.get("misses").asLong();
                t.recordHits(hits);
                t.recordMisses(misses);
                hitsTotal += hits;
                missesTotal += misses;
                assertEquals(step.get("advanced").asBoolean(), t.advance(step.get("at_ns").asLong()), at + ": advanced");
                assertEquals(step.get("next_tick_ns").asLong(), t.nextTickNs(), at + ": next tick");
                double rate = step.get("rate").asDouble();
                double hitsPerS = step.get("avg_hits_per_s").asDouble();
                double missesPerS = step.get("avg_misses_per_s").asDouble();
                maxDiff = Math.max(maxDiff, near(rate, t.hitRate(), 1.0, at + ": rate"));
                near(hitsPerS, t.avgHitsPerS(), Math.max(1.0, Math.abs(hitsPerS)), at + ": hits/s");
                near(missesPerS, t.avgMissesPerS(), Math.max(1.0, Math.abs(missesPerS)), at + ": misses/s");
                if (rate == t.hitRate() && hitsPerS == t.avgHitsPerS() && missesPerS == t.avgMissesPerS())
                    exact++;
                steps++;
            }
            assertEquals(hitsTotal, t.hitsTotal(), what + ": hits total");
            assertEquals(missesTotal, t.missesTotal(), what + ": misses total");
        }
        System.out.println("hwlb component vectors: " + cases.size() + " tracker cases, " + steps + " steps agree with Rust ("
                           + exact + " bit for bit); largest rate difference " + maxDiff);
    }

    @Test
    void publisherMakesTheSameDecisions()
    {
        JsonNode cases = root.get("publisher");
        assertTrue(cases.size() >= 30, "about 40 publisher cases, found " + cases.size());
        int offers = 0;
        for (JsonNode cs : cases)
        {
            String what = "publisher case '" + cs.get("name").asText() + "'";
            RatePublisher p = new RatePublisher();
            int o = 0;
            for (JsonNode offer : cs.get("offers"))
            {
                String at = what + ", offer " + o++ + " (" + offer + ")";
                assertEquals(offer.get("published").asBoolean(), p.offer(offer.get("rate").asDouble(), offer.get("at_ns").asLong()), at);
                JsonNode last = offer.get("last");
                if (last.isNull())
                    assertTrue(Double.isNaN(p.last()), at + ": nothing published yet");
                else
                    assertEquals(last.asDouble(), p.last(), at + ": last published");
                offers++;
            }
        }
        System.out.println("hwlb component vectors: " + cases.size() + " publisher cases, " + offers + " offers agree with Rust");
    }

    private static double near(double expected, double actual, double scale, String what)
    {
        double diff = Math.abs(expected - actual);
        if (!(diff <= TOL * scale))
            fail(what + ": Rust " + expected + ", Java " + actual);
        return diff;
    }

    private static double[] doubles(JsonNode array)
    {
        double[] out = new double[array.size()];
        for (int i = 0; i < out.length; i++)
            out[i] = array.get(i).asDouble();
        return out;
    }

    private static int[] ints(JsonNode array)
    {
        int[] out = new int[array.size()];
        for (int i = 0; i < out.length; i++)
            out[i] = array.get(i).asInt();
        return out;
    }
}
