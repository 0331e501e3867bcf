package io.replicalb.cassandra.hwlb;

import io.replicalb.core.hwlb.PlanConfig;

import java.util.Map;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The system properties: defaults, parsing, and messages naming the bad value. */
class SettingsTest
{
    @Test
    void defaults()
    {
        HwlbSettings s = HwlbSettings.defaults();
        assertEquals("org.apache.cassandra.locator.GossipingPropertyFileSnitch", s.innerSnitch());
        assertTrue(s.enabled());
        assertEquals(ReadConsistency.QUORUM, s.readCl());
        assertEquals(CacheKind.AUTO, s.cache());
        assertEquals(10_000, s.tickMs());
        assertEquals(60_000, s.windowMs());
        assertEquals(3000, s.staleAfterMs());
        assertEquals(0.95, s.staleRate());
        assertEquals(PlanConfig.DEFAULT, s.plan());
        assertEquals("X10", s.gossipState());
    }

    @Test
    void parsesEveryProperty()
    {
        Map<String, String> p = Map.of("inner_snitch", "SimpleSnitch", "enabled", "FALSE", "read_cl", "local_quorum", "cache", "Chunk",
                                       "tick_ms", "1000", "window_ms", "5000", "stale_after_ms", "2500", "stale_rate", "0.9",
                                       "hit_rate_cap", "0.9", "min_spread", "0.05");
        HwlbSettings s = HwlbSettings.parse(p::get);
        assertEquals("org.apache.cassandra.locator.SimpleSnitch", s.innerSnitch());
        assertEquals(false, s.enabled());
        assertEquals(ReadConsistency.LOCAL_QUORUM, s.readCl());
        assertEquals(CacheKind.CHUNK, s.cache());
        assertEquals(1000, s.tickMs());
        assertEquals(5000, s.windowMs());
        assertEquals(2500, s.staleAfterMs());
        assertEquals(new PlanConfig(0.9, 0.05), s.plan());
        assertEquals("X7", HwlbSettings.parse(Map.of("gossip_state", "x7")::get).gossipState());
    }

    @Test
    void badValuesAreNamedWithWhatIsAllowed()
    {
        bad("enabled", "yes", "use true or false");
        bad("read_cl", "EACH_QUORUM", "ONE, TWO, THREE, QUORUM, LOCAL_QUORUM, LOCAL_ONE, ALL");
        bad("cache", "disk", "auto, row, chunk, key");
        bad("tick_ms", "10s", "[100, 3600000]");
        bad("tick_ms", "0", "[100, 3600000]");
        bad("stale_after_ms", "-1", "[100, 86400000]");
        bad("stale_rate", "1.5", "[0.0, 1.0]");
        bad("hit_rate_cap", "1", "[0.0, 0.999]");
        bad("min_spread", "x", "[0.0, 1.0]");
        bad("gossip_state", "X11", "X1 .. X10");
        bad("inner_snitch", "io.replicalb.cassandra.hwlb.HwlbSnitch", "not HwlbSnitch itself");
    }

    private static void bad(String name, String value, String allowed)
    {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> HwlbSettings.parse(Map.of(name, value)::get));
        assertTrue(e.getMessage().contains(name) && e.getMessage().contains(value) && e.getMessage().contains(allowed), e.getMessage());
    }

    @Test
    void blockFor()
    {
        assertEquals(2, ReadConsistency.QUORUM.blockFor(3));
        assertEquals(3, ReadConsistency.QUORUM.blockFor(5));
        assertEquals(2, ReadConsistency.LOCAL_QUORUM.blockFor(2));
        assertEquals(1, ReadConsistency.ONE.blockFor(3));
        assertEquals(1, ReadConsistency.LOCAL_ONE.blockFor(3));
        assertEquals(3, ReadConsistency.ALL.blockFor(3));
        assertEquals(2, ReadConsistency.TWO.blockFor(3));
    }

    @Test
    void thePolicyDefaultsToUnifiedAndTheOldSwitchStillSetsIt()
    {
        assertEquals(CoordinatorPolicy.UNIFIED, HwlbSettings.defaults().policy());
        assertEquals(CoordinatorPolicy.HWLB, HwlbSettings.parse(Map.of("enabled", "true")::get).policy());
        assertEquals(CoordinatorPolicy.NAIVE, HwlbSettings.parse(Map.of("enabled", "false")::get).policy());
        assertEquals(CoordinatorPolicy.DYNAMIC_SNITCH, HwlbSettings.parse(Map.of("policy", "Dynamic-Snitch", "enabled", "true")::get).policy(),
                     "policy wins over enabled");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> HwlbSettings.parse(Map.of("policy", "des")::get));
        assertTrue(e.getMessage().contains("replica_lb.hwlb.policy 'des'") && e.getMessage().contains("dynamic-snitch"), e.getMessage());
        assertEquals("unified", HwlbSettings.defaults().asMap().get("policy"));
    }

    @Test
    void theRulesParametersParseAndAreListed()
    {
        assertEquals(CoordinatorRule.DEFAULT, HwlbSettings.defaults().rule());
        Map<String, String> p = Map.ofEntries(Map.entry("in_flight_threshold", "20"), Map.entry("min_responses", "3"),
                                              Map.entry("response_window_ms", "500"), Map.entry("latency_ewma_weight", "0.1"),
                                              Map.entry("slow_factor", "4"), Map.entry("slow_margin_ms", "7.5"),
                                              Map.entry("latency_memory_ms", "3000"), Map.entry("stall_ms", "500"), Map.entry("expiry_memory_ms", "1000"),
                                              Map.entry("cold_hit_rate_gap", "0.2"), Map.entry("probe_interval_ms", "100"),
                                              Map.entry("probe_timeout_ms", "2000"), Map.entry("overdue_factor", "2.5"),
                                              Map.entry("heat_weight", "3"));
        HwlbSettings s = HwlbSettings.parse(p::get);
        assertEquals(new CoordinatorRule(20, 3, 500, 0.1, 4.0, 7.5, 3000, 500, 1000, 0.2, 100, 2000, 2.5, 3), s.rule());
        for (String name : p.keySet())
        {
            assertEquals(p.get(name), s.asMap().get(name).replaceAll("\\.0$", ""), name);
            assertTrue(HwlbSettings.describe().containsKey(name), name);
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> HwlbSettings.parse(Map.of("min_responses", "9")::get));
        assertTrue(e.getMessage().contains("min_responses '9'") && e.getMessage().contains("[1, 8]"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> HwlbSettings.parse(Map.of("latency_ewma_weight", "0")::get));
        assertTrue(e.getMessage().contains("latency_ewma_weight"), e.getMessage());
    }

    @Test
    void writableSettingsAreCheckedAndTheRestRefused() throws Exception
    {
        HwlbSettings settings = HwlbSettings.defaults();
        HwlbSwitch sw = new HwlbSwitch(settings.policy(), settings.readCl());
        org.apache.cassandra.locator.InetAddressAndPort me = TestCluster.ep(21);
        HwlbControl c = new HwlbControl(settings, sw, new HwlbCounters(), new PeerDirectory(me, 1_000_000_000L, 0.95, 0), me);
        c.write("enabled", "FALSE");
        assertEquals(false, sw.mode().enabled());
        c.write("read_cl", "local_one");
        assertEquals(ReadConsistency.LOCAL_ONE, sw.mode().readCl());
        c.write("reset_counters", "anything");
        assertEquals("1", c.settingsNow().get("reset_counters"));
        assertEquals("false", c.settingsNow().get("enabled"));
        assertEquals("LOCAL_ONE", c.settingsNow().get("read_cl"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> c.write("enabled", "maybe"));
        assertTrue(e.getMessage().contains("'maybe'") && e.getMessage().contains("true or false"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> c.write("read_cl", "SERIAL"));
        assertTrue(e.getMessage().contains("'SERIAL'") && e.getMessage().contains("QUORUM"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> c.write("tick_ms", "5"));
        assertTrue(e.getMessage().contains("read-only") && e.getMessage().contains("enabled, read_cl, reset_counters"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> c.write("nope", "5"));
        assertTrue(e.getMessage().contains("no setting 'nope'"), e.getMessage());
        assertEquals("127.0.0.21", c.nodeName());
    }
}
