package io.replicalb.cassandra.hwlb;

import java.util.Arrays;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The gossip value's two formats: round trip, the size bound, the old format, garbage. */
class GossipValueTest
{
    @Test
    void perTableRatesRoundTrip()
    {
        int[] keys = { 0x1a2b3c4d, 0x5e6f7a8b, -1, 7 };
        double[] rates = { 0.9123449, 0.1, 1.0, 0.0 };
        String v = GossipValue.of(0.812345, keys, rates);
        assertEquals("hwlb2:0.812345;1a2b3c4d=0.912345,5e6f7a8b=0.100000,ffffffff=1.000000,00000007=0.000000", v);
        GossipValue.Parsed p = GossipValue.parseFull(v);
        assertEquals(0.812345, p.rate());
        assertArrayEquals(keys, p.tableKeys());
        assertArrayEquals(new double[]{ 0.912345, 0.1, 1.0, 0.0 }, p.tableRates());
        assertTrue(GossipValue.understood(v));
        assertEquals(0.812345, GossipValue.parse(v), "the node-wide rate");
        // Without tables: exactly the earlier format.
        assertEquals("hwlb1:0.500000", GossipValue.of(0.5, new int[0], new double[0]));
    }

    @Test
    void theValueStaysWithinItsStatedBound()
    {
        for (int n = 0; n <= GossipValue.MAX_TABLES; n++)
        {
            int[] keys = new int[n];
            double[] rates = new double[n];
            for (int i = 0; i < n; i++)
            {
                keys[i] = 0x80000000 + i * 0x01010101;
                rates[i] = 0.123456789;
            }
            String v = GossipValue.of(1.0, keys, rates);
            int expected = n == 0 ? "hwlb1:1.000000".length() : GossipValue.BASE_BYTES + n * GossipValue.TABLE_ENTRY_BYTES - 1;
            assertEquals(expected, v.length(), "value with " + n + " tables: " + v);
            assertTrue(v.length() <= GossipValue.MAX_BYTES);
            assertEquals(n, GossipValue.parseFull(v).tables());
        }
        assertEquals(591, GossipValue.MAX_BYTES);
        assertEquals(303, GossipValue.BASE_BYTES + HwlbSettings.DEFAULT_MAX_TABLES * GossipValue.TABLE_ENTRY_BYTES, "the default bound");
        int[] tooMany = new int[GossipValue.MAX_TABLES + 1];
        for (int i = 0; i < tooMany.length; i++)
            tooMany[i] = i + 1;
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                                                  () -> GossipValue.of(0.5, tooMany, new double[tooMany.length]));
        assertTrue(e.getMessage().contains("33"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> GossipValue.of(0.5, new int[]{ 3, 3 }, new double[2]));
        assertThrows(IllegalArgumentException.class, () -> GossipValue.of(0.5, new int[]{ ReadTable.NONE }, new double[1]));
        assertThrows(IllegalArgumentException.class, () -> GossipValue.of(0.5, new int[]{ 3 }, new double[]{ 1.5 }));
        // A reader refuses more tables than the bound, however they are written.
        StringBuilder b = new StringBuilder("hwlb2:0.500000;");
        for (int i = 1; i <= GossipValue.MAX_TABLES + 1; i++)
            b.append(i > 1 ? "," : "").append(ReadTable.hex(i)).append("=0.5");
        assertNull(GossipValue.parseFull(b.toString()));
    }

    @Test
    void theOldFormatStillParses()
    {
        GossipValue.Parsed p = GossipValue.parseFull("hwlb1:0.812345");
        assertEquals(0.812345, p.rate());
        assertEquals(0, p.tables());
        assertNull(GossipValue.parseFull("hwlb1:"), "the marker carries no rate");
        assertTrue(GossipValue.understood("hwlb1:"));
        assertTrue(Double.isNaN(GossipValue.parse("hwlb1:")));
    }

    @Test
    void garbageIsNotUnderstood()
    {
        for (String v : Arrays.asList(null, "", "hwlb2:", "hwlb2:0.5", "hwlb2:0.5;", "hwlb2:;0000000a=0.5", "hwlb2:1.5;0000000a=0.5",
                                      "hwlb2:0.5;0000000a=1.5", "hwlb2:0.5;0000000a=-0.1", "hwlb2:0.5;0000000a=NaN", "hwlb2:0.5;0000000a=",
                                      "hwlb2:0.5;0000000a", "hwlb2:0.5;000000a=0.5", "hwlb2:0.5;+000000a=0.5", "hwlb2:0.5;0000000A=0.5",
                                      "hwlb2:0.5;zzzzzzzz=0.5", "hwlb2:0.5;00000000=0.5", "hwlb2:0.5;0000000a=0.5,",
                                      "hwlb2:0.5;0000000a=0.5,0000000a=0.6", "hwlb2:0.5;0000000a=0.5;0000000b=0.5", "hwlb2:0.5;0000000a=0.5,,",
                                      "hwlb3:0.5", "hwlb1:0.5;0000000a=0.5", "hwlb2:0.5;0000000a=0.5" + "x".repeat(GossipValue.MAX_BYTES)))
        {
            assertNull(GossipValue.parseFull(v), String.valueOf(v));
            assertFalse(GossipValue.understood(v), String.valueOf(v));
            assertTrue(Double.isNaN(GossipValue.parse(v)), String.valueOf(v));
        }
    }

    @Test
    void tableKeysComeFromTableIds()
    {
        java.util.UUID u = java.util.UUID.fromString("5a1c395e-b41f-11e5-9f22-ba0be0483c18");
        int k = ReadTable.key(org.apache.cassandra.schema.TableId.fromUUID(u));
        assertEquals(k, ReadTable.key(u.getMostSignificantBits(), u.getLeastSignificantBits()), "the same hash of the id");
        assertTrue(k != ReadTable.NONE);
        assertEquals(8, ReadTable.hex(k).length());
        assertEquals("0000000a", ReadTable.hex(10));
        assertEquals(Integer.parseUnsignedInt(ReadTable.hex(k), 16), k);
    }
}
