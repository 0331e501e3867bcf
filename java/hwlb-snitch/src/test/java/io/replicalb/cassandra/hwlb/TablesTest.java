package io.replicalb.cassandra.hwlb;

import java.util.Map;

import org.apache.cassandra.schema.ColumnMetadata;
import org.junit.jupiter.api.Test;

import static io.replicalb.cassandra.hwlb.TestCluster.ep;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

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

    @Test
    void thePerTableTablesShowEachNodesRateForEachTable()
    {
        HwlbSnitch s = new HwlbSnitch(HwlbSettings.parse(Map.of("policy", "hwlb")::get), new TestCluster.RankSnitch(Map.of()), ep(21));
        long now = System.nanoTime();
        s.directory().setLocalRate(GossipValue.parseFull("hwlb2:0.700000;0000000a=0.500000"), now);
        s.directory().observe(ep(22), now, true, true, true, now);
        s.directory().recordRate(ep(22), GossipValue.parseFull("hwlb1:0.400000"), now, now);
        HwlbTables.NodeTable node = new HwlbTables.NodeTable(s.control());
        HwlbTables.TablesTable tables = new HwlbTables.TablesTable(s.control());
        HwlbTables.TableRatesTable rates = new HwlbTables.TableRatesTable(s.control());
        Map<String, String> columns = Map.of("table_rates", "text", "table_reads", "bigint");
        for (Map.Entry<String, String> e : columns.entrySet())
            assertEquals(e.getValue(), column(node, e.getKey()).type.asCQL3Type().toString(), e.getKey());
        for (String c : new String[]{ "table_key", "hit_rate", "published_rate", "reads_per_s", "cache_hits", "cache_misses", "gossiped" })
            assertNotNull(column(tables, c), c);
        for (String c : new String[]{ "table_name", "peer", "table_key", "hit_rate", "effective_rate" })
            assertNotNull(column(rates, c), c);
        assertEquals("tables", tables.metadata().name);
        assertEquals("table_rates", rates.metadata().name);
        assertEquals(1, rates.metadata().clusteringColumns().size(), "one row per (table, peer)");
        // Before the plug-in started: node-wide, and it says why.
        assertTrue(s.control().getTableRates().startsWith("node-wide"), s.control().getTableRates());
        java.util.List<PeerDirectory.TableRateInfo> rows = s.control().tableRates();
        assertEquals(2, rows.size(), rows.toString());
        for (PeerDirectory.TableRateInfo r : rows)
        {
            assertEquals(0x0a, r.tableKey());
            if (r.endpoint().equals(ep(21)))
                assertEquals(0.5, r.knownRate());
            else
            {
                assertTrue(Double.isNaN(r.knownRate()), "an old-format peer reported no table");
                assertEquals(0.4, r.effectiveRate(), "its node-wide rate counts");
            }
        }
        assertEquals("0000000a", s.control().tableName(0x0a), "a table this node does not measure: its key");
        assertTrue(!rates.data().isEmpty(), "one partition per table");
        assertTrue(tables.data().isEmpty(), "this node measures no table before it started");
        assertNotNull(node.data());
    }

    private static ColumnMetadata column(org.apache.cassandra.db.virtual.VirtualTable t, String name)
    {
        return t.metadata().getColumn(org.apache.cassandra.cql3.ColumnIdentifier.getInterned(name, true));
    }
}
