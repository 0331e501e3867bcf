package io.replicalb.cassandra.hwlb;

import java.util.function.Consumer;

/**
 * The run-time switch: the coordinator policy and the consistency level reads are planned for.
 * Both live in one immutable {@link Mode} behind a volatile field, so the request path reads
 * them with one load and never sees half a change. Written by the settings table and the MBean;
 * a policy change is handed to the listener (the snitch installer) while the switch is held, so
 * changes apply in order.
 */
public final class HwlbSwitch
{
    /** One consistent pair of switch values. */
    public record Mode(CoordinatorPolicy policy, ReadConsistency readCl)
    {
        /** Whether the plug-in draws with HWLB (policy hwlb or unified): the old {@code enabled}. */
        public boolean enabled()
        {
            return policy.draws();
        }
    }

    private volatile Mode mode;
    private Consumer<CoordinatorPolicy> listener = p -> {};

    /** A switch starting at the given values. */
    public HwlbSwitch(CoordinatorPolicy policy, ReadConsistency readCl)
    {
        this.mode = new Mode(policy, readCl);
    }

    /** The current values. */
    public Mode mode()
    {
        return mode;
    }

    /** Sets who is told of policy changes (once the node runs), and tells it the current policy. */
    public synchronized void listen(Consumer<CoordinatorPolicy> listener)
    {
        this.listener = listener;
        listener.accept(mode.policy());
    }

    /** Changes the coordinator policy. */
    public synchronized void setPolicy(CoordinatorPolicy policy)
    {
        mode = new Mode(policy, mode.readCl());
        listener.accept(policy);
    }

    /** The old switch: true = hwlb, false = naive. */
    public void setEnabled(boolean enabled)
    {
        setPolicy(enabled ? CoordinatorPolicy.HWLB : CoordinatorPolicy.NAIVE);
    }

    /** Changes the consistency level reads are planned for. */
    public synchronized void setReadCl(ReadConsistency readCl)
    {
        mode = new Mode(mode.policy(), readCl);
    }
}
