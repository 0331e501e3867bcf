package io.replicalb.cassandra.hwlb;

import java.util.Locale;

/**
 * How this coordinator orders a read's replicas: the run-time setting {@code policy}.
 */
public enum CoordinatorPolicy
{
    /** The inner snitch's order. */
    NAIVE("naive"),
    /** HWLB's draw (the order of the 2026 seeds' plug-in). */
    HWLB("hwlb"),
    /** HWLB's draw over the replicas the coordinator rule does not pass over, those last. */
    UNIFIED("unified"),
    /** Cassandra's own DynamicEndpointSnitch over the inner snitch; the plug-in is off the read path. */
    DYNAMIC_SNITCH("dynamic-snitch");

    /** The default when nothing is set. */
    public static final CoordinatorPolicy DEFAULT = UNIFIED;

    private final String label;

    CoordinatorPolicy(String label)
    {
        this.label = label;
    }

    /** The name in settings and tables. */
    public String label()
    {
        return label;
    }

    /** Whether the plug-in draws with HWLB in this mode (what the old {@code enabled} switch said). */
    public boolean draws()
    {
        return this == HWLB || this == UNIFIED;
    }

    /** Whether the plug-in's own router orders reads in this mode. */
    public boolean pluginOrders()
    {
        return this != DYNAMIC_SNITCH;
    }

    /** The allowed values, for messages. */
    public static String allowed()
    {
        return "naive, hwlb, unified or dynamic-snitch";
    }

    /**
     * Parses a label (case-insensitive).
     *
     * @throws IllegalArgumentException naming {@code name}, the value and what is allowed
     */
    public static CoordinatorPolicy parse(String name, String value)
    {
        String t = value == null ? "" : value.trim().toLowerCase(Locale.ROOT);
        for (CoordinatorPolicy p : values())
            if (p.label.equals(t))
                return p;
        throw new IllegalArgumentException(name + " '" + value + "' is not allowed; use " + allowed());
    }
}
