package io.replicalb.cassandra.hwlb;

import java.util.Arrays;
import java.util.Locale;

/**
 * The value of the plug-in's gossip application state, in one of two formats:
 * <ul>
 * <li>{@code hwlb1:} (the marker a node publishes at start: it runs the plug-in, no rate yet)
 *     or {@code hwlb1:0.812345} (its node-wide hit rate, six decimals). A node publishes this
 *     format whenever it has no per-table rate to give, so a cluster without per-table rates
 *     gossips exactly what earlier releases did;</li>
 * <li>{@code hwlb2:0.812345;1a2b3c4d=0.912345,5e6f7a8b=0.100000}: the node-wide rate, then
 *     per table (its {@link ReadTable} key, eight lower-case hex digits) the table's rate. At
 *     most {@link #MAX_TABLES} tables, so a value is at most {@link #MAX_BYTES} bytes.</li>
 * </ul>
 * The version prefix lets a later format coexist: a value in a format this class does not
 * understand ({@code hwlb9:...}, garbage, a rate outside [0, 1], a duplicate or malformed
 * table key, more than {@link #MAX_TABLES} tables) is "not understood" and the peer's rate
 * counts as unknown.
 */
public final class GossipValue
{
    /** The prefix of the node-wide format. */
    public static final String PREFIX = "hwlb1:";
    /** The prefix of the per-table format. */
    public static final String PREFIX_TABLES = "hwlb2:";
    /** The most tables one value carries (the setting {@code max_tables} is at most this). */
    public static final int MAX_TABLES = 32;
    /** Bytes of one table entry: key (8), '=', rate (8), ','. */
    public static final int TABLE_ENTRY_BYTES = 18;
    /** Bytes of a value without tables: prefix (6), node-wide rate (8), ';'. */
    public static final int BASE_BYTES = 15;
    /** The longest value: {@link #BASE_BYTES} + {@link #MAX_TABLES} entries (591 bytes). */
    public static final int MAX_BYTES = BASE_BYTES + MAX_TABLES * TABLE_ENTRY_BYTES;

    /** A parsed value: the node-wide rate (NaN for the marker) and the per-table rates. */
    public record Parsed(double rate, int[] tableKeys, double[] tableRates)
    {
        /** A value without per-table rates. */
        static Parsed nodeWide(double rate)
        {
            return new Parsed(rate, new int[0], new double[0]);
        }

        /** How many tables it carries. */
        public int tables()
        {
            return tableKeys.length;
        }
    }

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
        checkRate(rate);
        return PREFIX + String.format(Locale.ROOT, "%.6f", rate);
    }

    /**
     * The value carrying the node-wide {@code rate} and, per table {@code tableKeys[i]}, its
     * rate {@code tableRates[i]} (all in [0, 1], six decimals); without tables, the node-wide
     * format {@link #of(double)}.
     *
     * @throws IllegalArgumentException for a rate outside [0, 1], more than {@link #MAX_TABLES}
     *         tables, a key 0 or a duplicate key
     */
    public static String of(double rate, int[] tableKeys, double[] tableRates)
    {
        if (tableKeys.length != tableRates.length)
            throw new IllegalArgumentException("table keys and rates differ in length: " + tableKeys.length + " and " + tableRates.length);
        if (tableKeys.length == 0)
            return of(rate);
        if (tableKeys.length > MAX_TABLES)
            throw new IllegalArgumentException("a value carries at most " + MAX_TABLES + " tables: " + tableKeys.length);
        checkRate(rate);
        StringBuilder b = new StringBuilder(BASE_BYTES + tableKeys.length * TABLE_ENTRY_BYTES);
        b.append(PREFIX_TABLES).append(String.format(Locale.ROOT, "%.6f", rate)).append(';');
        for (int i = 0; i < tableKeys.length; i++)
        {
            if (tableKeys[i] == ReadTable.NONE)
                throw new IllegalArgumentException("table key 0 is reserved (no table)");
            for (int j = 0; j < i; j++)
                if (tableKeys[j] == tableKeys[i])
                    throw new IllegalArgumentException("table key " + ReadTable.hex(tableKeys[i]) + " twice");
            checkRate(tableRates[i]);
            if (i > 0)
                b.append(',');
            b.append(ReadTable.hex(tableKeys[i])).append('=').append(String.format(Locale.ROOT, "%.6f", tableRates[i]));
        }
        String value = b.toString();
        assert value.length() <= MAX_BYTES : "a gossip value within its stated bound";
        return value;
    }

    private static void checkRate(double rate)
    {
        if (!(rate >= 0.0 && rate <= 1.0))
            throw new IllegalArgumentException("a published rate must be in [0, 1]: " + rate);
    }

    /**
     * Whether {@code value} is in a format this plug-in understands: the marker, a rate in
     * [0, 1], or the per-table format. A later version ({@code hwlb9:...}) or garbage is not.
     */
    public static boolean understood(String value)
    {
        return value != null && (value.equals(PREFIX) || parseFull(value) != null);
    }

    /**
     * The node-wide rate in {@code value}: NaN for the marker or a value not understood (an
     * unknown version, a bad number, a rate outside [0, 1]): the node runs the plug-in, its
     * rate is not known.
     */
    public static double parse(String value)
    {
        Parsed p = parseFull(value);
        return p == null ? Double.NaN : p.rate();
    }

    /**
     * {@code value} parsed in either format; null for the marker and for a value not
     * understood. Never throws.
     */
    public static Parsed parseFull(String value)
    {
        if (value == null || value.length() > MAX_BYTES)
            return null;
        if (value.startsWith(PREFIX))
        {
            double r = rate(value, PREFIX.length(), value.length());
            return Double.isNaN(r) ? null : Parsed.nodeWide(r);
        }
        if (!value.startsWith(PREFIX_TABLES))
            return null;
        int semi = value.indexOf(';', PREFIX_TABLES.length());
        if (semi < 0)
            return null;
        double node = rate(value, PREFIX_TABLES.length(), semi);
        if (Double.isNaN(node))
            return null;
        int[] keys = new int[MAX_TABLES];
        double[] rates = new double[MAX_TABLES];
        int n = 0;
        int at = semi + 1;
        while (at < value.length())
        {
            int end = value.indexOf(',', at);
            if (end < 0)
                end = value.length();
            int eq = value.indexOf('=', at);
            if (n == MAX_TABLES || eq < 0 || eq > end || eq - at != 8)
                return null;
            int key;
            try
            {
                key = Integer.parseUnsignedInt(value.substring(at, eq), 16);
            }
            catch (NumberFormatException e)
            {
                return null;
            }
            double r = rate(value, eq + 1, end);
            if (key == ReadTable.NONE || Double.isNaN(r) || !value.startsWith(ReadTable.hex(key), at))
                return null;
            for (int j = 0; j < n; j++)
                if (keys[j] == key)
                    return null;
            keys[n] = key;
            rates[n] = r;
            n++;
            if (end == value.length() - 1)
                return null; // a trailing comma
            at = end + 1;
        }
        if (n == 0)
            return null;
        return new Parsed(node, Arrays.copyOf(keys, n), Arrays.copyOf(rates, n));
    }

    /** The rate in value[from, to), or NaN when it is not a number in [0, 1]. */
    private static double rate(String value, int from, int to)
    {
        if (to <= from)
            return Double.NaN;
        try
        {
            double r = Double.parseDouble(value.substring(from, to));
            return r >= 0.0 && r <= 1.0 ? r : Double.NaN;
        }
        catch (NumberFormatException e)
        {
            return Double.NaN;
        }
    }
}
