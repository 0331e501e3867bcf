package io.replicalb.cassandra.hwlb;

/**
 * The run-time switch: whether HWLB is on and the consistency level it plans for. Both live in
 * one immutable {@link Mode} behind a volatile field, so the request path reads them with one
 * load and never sees half a change. Written by the settings table and the MBean.
 */
public final class HwlbSwitch
{
    /** One consistent pair of switch values. */
    public record Mode(boolean enabled, ReadConsistency readCl)
    {
    }

    private volatile Mode mode;

    /** A switch starting at the given values. */
    public HwlbSwitch(boolean enabled, ReadConsistency readCl)
    {
        this.mode = new Mode(enabled, readCl);
    }

    /** The current values. */
    public Mode mode()
    {
        return mode;
    }

    /** Switches HWLB on or off. */
    public synchronized void setEnabled(boolean enabled)
    {
        mode = new Mode(enabled, mode.readCl());
    }

    /** Changes the consistency level reads are planned for. */
    public synchronized void setReadCl(ReadConsistency readCl)
    {
        mode = new Mode(mode.enabled(), readCl);
    }
}
