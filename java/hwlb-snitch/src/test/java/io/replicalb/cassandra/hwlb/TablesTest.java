package io.replicalb.cassandra.hwlb;

import java.util.Map;

import org.apache.cassandra.schema.ColumnMetadata;
import org.junit.jupiter.api.Test;

import static io.replicalb.cassandra.hwlb.TestCluster.ep;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/** The node table's contract columns (names and types are checked from outside). */
class TablesTest
{
    @Test
    void theNodeTableHasThePolicyAndTheSafetyCounters()
    {
        HwlbSnitch s = new HwlbSnitch(HwlbSettings.parse(Map.of("policy", "unified")::get), new TestCluster.RankSnitch(Map.of()), ep(21));
        HwlbTables.NodeTable t = new HwlbTables.NodeTable(s.control());
        Map<String, String> expected = Map.of("policy", "text", "fallbacks", "bigint", "passed_over", "bigint", "probes", "bigint",
                                              "enabled", "boolean");
        for (Map.Entry<String, String> e : expected.entrySet())
        {
            ColumnMetadata c = t.metadata().getColumn(org.apache.cassandra.cql3.ColumnIdentifier.getInterned(e.getKey(), true));
            assertNotNull(c, e.getKey());
            assertEquals(e.getValue(), c.type.asCQL3Type().toString(), e.getKey());
        }
        assertEquals("replica_lb_hwlb", t.metadata().keyspace);
        assertEquals("node", t.metadata().name);
    }
}
