package io.replicalb.cassandra.hwlb;

import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.apache.cassandra.db.marshal.BooleanType;
import org.apache.cassandra.db.marshal.DoubleType;
import org.apache.cassandra.db.marshal.LongType;
import org.apache.cassandra.db.marshal.UTF8Type;
import org.apache.cassandra.db.virtual.AbstractMutableVirtualTable;
import org.apache.cassandra.db.virtual.AbstractVirtualTable;
import org.apache.cassandra.db.virtual.SimpleDataSet;
import org.apache.cassandra.db.virtual.VirtualKeyspace;
import org.apache.cassandra.db.virtual.VirtualKeyspaceRegistry;
import org.apache.cassandra.db.virtual.VirtualTable;
import org.apache.cassandra.dht.LocalPartitioner;
import org.apache.cassandra.exceptions.InvalidRequestException;
import org.apache.cassandra.schema.TableMetadata;

/**
 * The virtual keyspace {@code replica_lb_hwlb} (apart from the data keyspace {@code replica_lb}
 * that replica-lb's load generator writes): {@code node} (this node's switch, rate and counters),
 * {@code peers} (what this coordinator knows of each node and how often it chose it) and
 * {@code settings} (every setting; {@code policy}, {@code enabled}, {@code read_cl} and
 * {@code reset_counters} writable with UPDATE), {@code tables} (this node's hit rate per table)
 * and {@code table_rates} (every node's rate per table, as this coordinator plans with it). Node-local, like every virtual table: a client
 * asks each node separately.
 */
public final class HwlbTables
{
    /** The keyspace's name. */
    public static final String KEYSPACE = "replica_lb_hwlb";

    private HwlbTables()
    {
    }

    /** The keyspace with its three tables over {@code control}. */
    public static VirtualKeyspace keyspace(HwlbControl control)
    {
        return new VirtualKeyspace(KEYSPACE, List.<VirtualTable>of(new NodeTable(control), new PeersTable(control), new SettingsTable(control),
                                                                   new TablesTable(control), new TableRatesTable(control)));
    }

    /** Registers the keyspace with Cassandra (once the schema is loaded). */
    public static void register(HwlbControl control)
    {
        VirtualKeyspaceRegistry.instance.register(keyspace(control));
    }

    private static TableMetadata.Builder table(String name, String comment)
    {
        return TableMetadata.builder(KEYSPACE, name)
                            .comment(comment)
                            .kind(TableMetadata.Kind.VIRTUAL)
                            .partitioner(new LocalPartitioner(UTF8Type.instance));
    }

    private static Double orNull(double x)
    {
        return Double.isNaN(x) ? null : x;
    }

    /** {@code replica_lb_hwlb.node}: one row for this node. */
    static final class NodeTable extends AbstractVirtualTable
    {
        private final HwlbControl c;

        NodeTable(HwlbControl c)
        {
            super(table("node", "HWLB on this node: switch, hit rate, counters")
                  .addPartitionKeyColumn("node", UTF8Type.instance)
                  .addRegularColumn("policy", UTF8Type.instance)
                  .addRegularColumn("enabled", BooleanType.instance)
                  .addRegularColumn("read_cl", UTF8Type.instance)
                  .addRegularColumn("cache", UTF8Type.instance)
                  .addRegularColumn("hit_rate", DoubleType.instance)
                  .addRegularColumn("published_rate", DoubleType.instance)
                  .addRegularColumn("cache_hits", LongType.instance)
                  .addRegularColumn("cache_misses", LongType.instance)
                  .addRegularColumn("reads_coordinated", LongType.instance)
                  .addRegularColumn("local_reads", LongType.instance)
                  .addRegularColumn("remote_reads", LongType.instance)
                  .addRegularColumn("draws", LongType.instance)
                  .addRegularColumn("stepped_aside", LongType.instance)
                  .addRegularColumn("plan_recomputes", LongType.instance)
                  .addRegularColumn("fallbacks", LongType.instance)
                  .addRegularColumn("passed_over", LongType.instance)
                  .addRegularColumn("probes", LongType.instance)
                  .addRegularColumn("table_rates", UTF8Type.instance)
                  .addRegularColumn("table_reads", LongType.instance)
                  .addRegularColumn("cold_left_out", LongType.instance)
                  .addRegularColumn("gave_way", LongType.instance)
                  .addRegularColumn("warmup_reads", LongType.instance)
                  .addRegularColumn("warmup_skipped", LongType.instance)
                  .addRegularColumn("warmup_failures", LongType.instance)
                  .build());
            this.c = c;
        }

        @Override
        public DataSet data()
        {
            HwlbCounters.Totals t = c.counters().totals();
            SimpleDataSet result = new SimpleDataSet(metadata());
            result.row(c.nodeName())
                  .column("policy", c.getPolicy())
                  .column("enabled", c.isEnabled())
                  .column("read_cl", c.getReadCl())
                  .column("cache", c.getCache())
                  .column("hit_rate", c.getHitRate())
                  .column("published_rate", orNull(c.getPublishedRate()))
                  .column("cache_hits", c.getCacheHits())
                  .column("cache_misses", c.getCacheMisses())
                  .column("reads_coordinated", t.get(HwlbCounters.COORDINATED))
                  .column("local_reads", t.get(HwlbCounters.LOCAL_READS))
                  .column("remote_reads", t.get(HwlbCounters.REMOTE_READS))
                  .column("draws", t.get(HwlbCounters.DRAWS))
                  .column("stepped_aside", t.get(HwlbCounters.STEPPED_ASIDE))
                  .column("plan_recomputes", t.planRecomputes())
                  .column("fallbacks", t.get(HwlbCounters.FALLBACKS))
                  .column("passed_over", t.get(HwlbCounters.PASSED_OVER))
                  .column("probes", c.getProbes())
                  .column("table_rates", c.getTableRates())
                  .column("table_reads", t.get(HwlbCounters.TABLE_RATES))
                  .column("cold_left_out", t.get(HwlbCounters.COLD_LEFT_OUT))
                  .column("gave_way", t.get(HwlbCounters.GAVE_WAY))
                  .column("warmup_reads", c.getWarmupReads())
                  .column("warmup_skipped", c.getWarmupSkipped())
                  .column("warmup_failures", c.getWarmupFailures());
            return result;
        }
    }

    /** {@code replica_lb_hwlb.peers}: one row per node known (this one included). */
    static final class PeersTable extends AbstractVirtualTable
    {
        private final HwlbControl c;

        PeersTable(HwlbControl c)
        {
            super(table("peers", "HWLB: what this coordinator knows of each node, and how often it chose it")
                  .addPartitionKeyColumn("peer", UTF8Type.instance)
                  .addRegularColumn("state", UTF8Type.instance)
                  .addRegularColumn("hit_rate", DoubleType.instance)
                  .addRegularColumn("effective_rate", DoubleType.instance)
                  .addRegularColumn("age_ms", LongType.instance)
                  .addRegularColumn("chosen", LongType.instance)
                  .addRegularColumn("expected", DoubleType.instance)
                  .addRegularColumn("first_k", LongType.instance)
                  .addRegularColumn("unanswered", LongType.instance)
                  .addRegularColumn("pending", LongType.instance)
                  .addRegularColumn("latency_ms", DoubleType.instance)
                  .addRegularColumn("silent", BooleanType.instance)
                  .addRegularColumn("expired", BooleanType.instance)
                  .addRegularColumn("replies", LongType.instance)
                  .addRegularColumn("expiries", LongType.instance)
                  .addRegularColumn("resets", LongType.instance)
                  .addRegularColumn("passed_over", LongType.instance)
                  .addRegularColumn("last_resort", LongType.instance)
                  .addRegularColumn("last_reply_ms", LongType.instance)
                  .build());
            this.c = c;
        }

        @Override
        public DataSet data()
        {
            HwlbCounters.Totals t = c.counters().totals();
            SimpleDataSet result = new SimpleDataSet(metadata());
            for (PeerDirectory.PeerInfo p : c.peers())
            {
                result.row(HwlbControl.name(p.endpoint()))
                      .column("state", p.state().label())
                      .column("hit_rate", orNull(p.knownRate()))
                      .column("effective_rate", orNull(p.effectiveRate()))
                      .column("age_ms", p.ageMs() < 0 ? null : p.ageMs())
                      .column("chosen", t.chosen(p.id()))
                      .column("expected", t.expected(p.id()))
                      .column("first_k", t.firstK(p.id()));
                CoordinatorHealth h = c.health();
                if (h != null && !p.endpoint().equals(c.localEndpoint()))
                {
                    CoordinatorHealth.Snapshot x = h.snapshot(p.id(), System.nanoTime());
                    result.column("unanswered", (long) x.unanswered())
                          .column("pending", (long) x.pending())
                          .column("latency_ms", orNull(x.latencyMs()))
                          .column("silent", x.silent())
                          .column("expired", x.expired())
                          .column("replies", x.replies())
                          .column("expiries", x.expiries())
                          .column("resets", x.resets())
                          .column("passed_over", x.passedOver())
                          .column("last_resort", x.lastResort())
                          .column("last_reply_ms", x.lastReplyAgoMs() < 0 ? null : x.lastReplyAgoMs());
                }
            }
            return result;
        }
    }

    /** {@code replica_lb_hwlb.tables}: this node's hit rate per row-cached table. */
    static final class TablesTable extends AbstractVirtualTable
    {
        private final HwlbControl c;

        TablesTable(HwlbControl c)
        {
            super(table("tables", "HWLB: this node's row-cache hit rate per table, and which tables it gossips")
                  .addPartitionKeyColumn("table_name", UTF8Type.instance)
                  .addRegularColumn("table_key", UTF8Type.instance)
                  .addRegularColumn("hit_rate", DoubleType.instance)
                  .addRegularColumn("published_rate", DoubleType.instance)
                  .addRegularColumn("reads_per_s", DoubleType.instance)
                  .addRegularColumn("cache_hits", LongType.instance)
                  .addRegularColumn("cache_misses", LongType.instance)
                  .addRegularColumn("gossiped", BooleanType.instance)
                  .build());
            this.c = c;
        }

        @Override
        public DataSet data()
        {
            SimpleDataSet result = new SimpleDataSet(metadata());
            for (TableRates.Info t : c.localTables())
            {
                result.row(t.name())
                      .column("table_key", ReadTable.hex(t.key()))
                      .column("hit_rate", t.hitRate())
                      .column("published_rate", orNull(t.publishedRate()))
                      .column("reads_per_s", t.readsPerS())
                      .column("cache_hits", t.hits())
                      .column("cache_misses", t.misses())
                      .column("gossiped", t.published());
            }
            return result;
        }
    }

    /** {@code replica_lb_hwlb.table_rates}: per table some node gossips, every node's rate for it. */
    static final class TableRatesTable extends AbstractVirtualTable
    {
        private final HwlbControl c;

        TableRatesTable(HwlbControl c)
        {
            super(table("table_rates", "HWLB: per table, the rate of each node this coordinator plans reads of that table with")
                  .addPartitionKeyColumn("table_name", UTF8Type.instance)
                  .addClusteringColumn("peer", UTF8Type.instance)
                  .addRegularColumn("table_key", UTF8Type.instance)
                  .addRegularColumn("hit_rate", DoubleType.instance)
                  .addRegularColumn("effective_rate", DoubleType.instance)
                  .build());
            this.c = c;
        }

        @Override
        public DataSet data()
        {
            SimpleDataSet result = new SimpleDataSet(metadata());
            for (PeerDirectory.TableRateInfo t : c.tableRates())
            {
                result.row(c.tableName(t.tableKey()), HwlbControl.name(t.endpoint()))
                      .column("table_key", ReadTable.hex(t.tableKey()))
                      .column("hit_rate", orNull(t.knownRate()))
                      .column("effective_rate", orNull(t.effectiveRate()));
            }
            return result;
        }
    }

    /** {@code replica_lb_hwlb.settings}: every setting; some writable. */
    static final class SettingsTable extends AbstractMutableVirtualTable
    {
        private final HwlbControl c;

        SettingsTable(HwlbControl c)
        {
            super(table("settings", "HWLB settings; policy, enabled, read_cl and reset_counters are writable")
                  .addPartitionKeyColumn("name", UTF8Type.instance)
                  .addRegularColumn("value", UTF8Type.instance)
                  .build());
            this.c = c;
        }

        @Override
        public DataSet data()
        {
            SimpleDataSet result = new SimpleDataSet(metadata());
            for (Map.Entry<String, String> e : c.settingsNow().entrySet())
                result.row(e.getKey()).column("value", e.getValue());
            return result;
        }

        @Override
        protected void applyColumnUpdate(ColumnValues partitionKey, ColumnValues clusteringColumns, Optional<ColumnValue> columnValue)
        {
            String name = partitionKey.value(0);
            if (columnValue.isEmpty())
                throw new InvalidRequestException("setting '" + name + "': a value is required");
            String value = columnValue.get().value();
            try
            {
                c.write(name, value);
            }
            catch (IllegalArgumentException e)
            {
                throw new InvalidRequestException(e.getMessage());
            }
        }
    }
}
