package io.replicalb.cassandra.hwlb;

import java.util.Locale;

/**
 * The value of the plug-in's gossip application state: {@code hwlb1:} (the marker a node
 * publishes at start: it runs the plug-in, no rate yet) or {@code hwlb1:0.812345} (its
 * published hit rate, six decimals). The version prefix lets a later format coexist.
 */
public final class GossipValue
{
    /** The prefix of this format. */
    public static final String PREFIX = "hwlb1:";

    private GossipValue()
    {
    }

    /** The marker: the node runs the plug-in and has no rate yet. */
    public static String marker()
    {
        return PREFIX;
    }

    /** The value carrying {@code rate} (in [0, 1]), rounded to six decimals. */
    public static String of(double rate)
    {
        if (!(rate >= 0.0 && rate <= 1.0))
            throw new IllegalArgumentException("a published rate must be in [0, 1]: " + rate);
        return PREFIX + String.format(Locale.ROOT, "%.6f", rate);
    }

    /**
     * Whether {@code value} is in a format this plug-in understands: the marker or a rate in
     * [0, 1]. A later version ({@code hwlb9:...}) or garbage is not.
     */
    public static boolean understood(String value)
    {
        return value != null && (value.equals(PREFIX) || !Double.isNaN(parse(value)));
    }

    /**
     * The rate in {@code value}: NaN for the marker or a value not understood (an unknown
     * version, a bad number, a rate outside [0, 1]): the node runs the plug-in, its rate is
     * not known.
     */
    public static double parse(String value)
    {
        if (value == null || !value.startsWith(PREFIX) || value.length() == PREFIX.length())
            return Double.NaN;
        try
        {
            double r = Double.parseDouble(value.substring(PREFIX.length()));
            return r >= 0.0 && r <= 1.0 ? r : Double.NaN;
        }
        catch (NumberFormatException e)
        {
            return Double.NaN;
        }
    }
}
