package io.replicalb.cassandra.hwlb;

import java.util.ArrayList;
import java.util.List;

import com.codahale.metrics.Gauge;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.apache.cassandra.metrics.CassandraMetricsRegistry;
import org.apache.cassandra.metrics.CassandraMetricsRegistry.MetricName;
import org.apache.cassandra.metrics.DefaultNameFactory;
import org.apache.cassandra.metrics.MetricNameFactory;

/**
 * The plug-in's metrics of one scope (a peer, a table, or none: the node) in Cassandra's
 * metrics registry, named as Cassandra names its own ({@link DefaultNameFactory}: group
 * {@code org.apache.cassandra.metrics}, type {@value #TYPE}), so that each is the MBean
 * {@code org.apache.cassandra.metrics:type=ReplicaLb[,scope=<scope>],name=<name>} that nodetool,
 * the Prometheus JMX exporter and dashboards read. Remembers what it registered so that
 * {@link #remove()} takes exactly that out again (a peer that left, a dropped table, the plug-in
 * stopping).
 */
final class MetricGroup
{
    private static final Logger logger = LoggerFactory.getLogger(MetricGroup.class);
    /** The metrics' type (the ObjectName's {@code type} key). */
    static final String TYPE = "ReplicaLb";

    private final CassandraMetricsRegistry registry;
    private final MetricNameFactory factory;
    private final List<MetricName> names = new ArrayList<>();

    /** The metrics of {@code scope} (null: node-wide, no scope) in {@code registry}. */
    MetricGroup(CassandraMetricsRegistry registry, String scope)
    {
        this.registry = registry;
        this.factory = scope == null ? new DefaultNameFactory(TYPE) : new DefaultNameFactory(TYPE, scope);
    }

    /**
     * Registers {@code gauge} as metric {@code name}, replacing one left by an earlier instance
     * of the plug-in in this JVM (its gauges would read a dead instance). A metric that cannot
     * be registered is logged and left out: the others, and the plug-in, go on.
     */
    <T> void gauge(String name, Gauge<T> gauge)
    {
        MetricName m = factory.createMetricName(name);
        names.add(m);
        try
        {
            registry.remove(m);
            registry.register(m, gauge);
        }
        catch (RuntimeException e)
        {
            logger.warn("HWLB: metric {} not registered", m.getMBeanName(), e);
        }
    }

    /** Removes every metric this group registered. */
    void remove()
    {
        for (MetricName m : names)
            registry.remove(m);
        names.clear();
    }
}
