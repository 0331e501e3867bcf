package io.replicalb.cassandra.hwlb;

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
