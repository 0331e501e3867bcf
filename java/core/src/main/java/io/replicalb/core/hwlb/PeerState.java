package io.replicalb.core.hwlb;

/** What a coordinator knows of one node's hit rate, as shown in {@code replica_lb_hwlb.peers}. */
public enum PeerState
{
    /** This node: its own rate, never stale. */
    LOCAL,
    /** A fresh rate heard from the peer. */
    RATE,
    /** A rate whose peer was not heard from for stale_after_ms, or is down: counts as stale_rate. */
    STALE,
    /** The peer runs the plug-in but no rate is known (just started or restarted): counts as 0.0. */
    UNKNOWN,
    /** The peer does not run the plug-in: HWLB steps aside for replica sets containing it. */
    UNSUPPORTED;

    /** The lower-case name used in the virtual table. */
    public String label()
    {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
