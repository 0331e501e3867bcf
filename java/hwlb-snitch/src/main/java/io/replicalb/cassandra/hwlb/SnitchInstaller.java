package io.replicalb.cassandra.hwlb;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.apache.cassandra.locator.IEndpointSnitch;

/**
 * Puts the right snitch on the node's read path for the coordinator policy, as
 * {@code StorageService.updateSnitch} does: for {@code dynamic-snitch} a fresh
 * DynamicEndpointSnitch (default settings) over the inner snitch, so reads run stock Cassandra
 * code only; for the other policies the plug-in itself, taking out a DynamicEndpointSnitch that
 * Cassandra wrapped it in at start ({@code dynamic_snitch: true}, the default). A
 * DynamicEndpointSnitch taken out is closed: its two scheduled tasks are cancelled and its MBean
 * unregistered (what {@code close()} does in 5.0; 5.0 has no way to unsubscribe it from the
 * latency feed, see {@link DesOps}).
 */
public final class SnitchInstaller
{
    private static final Logger logger = LoggerFactory.getLogger(SnitchInstaller.class);

    /** The node's snitch slot. */
    public interface NodeSnitch
    {
        /** The snitch the node reads with now (null before Cassandra set one). */
        IEndpointSnitch current();

        /** Makes {@code snitch} the node's snitch. */
        void install(IEndpointSnitch snitch);
    }

    /** What the installer does with DynamicEndpointSnitches. */
    public interface DesOps
    {
        /** Whether {@code snitch} is a DynamicEndpointSnitch. */
        boolean isDes(IEndpointSnitch snitch);

        /** The snitch a DynamicEndpointSnitch wraps. */
        IEndpointSnitch wrapped(IEndpointSnitch des);

        /** A fresh DynamicEndpointSnitch over {@code inner}. */
        IEndpointSnitch create(IEndpointSnitch inner);

        /** Closes a DynamicEndpointSnitch taken off the read path. */
        void close(IEndpointSnitch des);
    }

    private final IEndpointSnitch plugin;
    private final IEndpointSnitch inner;
    private final NodeSnitch node;
    private final DesOps des;

    /** An installer swapping between {@code plugin} and a DynamicEndpointSnitch over {@code inner}. */
    public SnitchInstaller(IEndpointSnitch plugin, IEndpointSnitch inner, NodeSnitch node, DesOps des)
    {
        this.plugin = plugin;
        this.inner = inner;
        this.node = node;
        this.des = des;
    }

    /**
     * Makes the node's snitch the one {@code policy} needs. Does nothing when it already is, or
     * when the node's snitch is neither the plug-in nor a DynamicEndpointSnitch (an operator
     * replaced it: left alone).
     *
     * @return whether the node's snitch changed
     */
    public synchronized boolean apply(CoordinatorPolicy policy)
    {
        IEndpointSnitch current = node.current();
        if (current == null)
            return false;
        boolean currentIsDes = des.isDes(current);
        if (current != plugin && !currentIsDes)
        {
            logger.warn("HWLB: the node's snitch is {}, neither the plug-in nor a DynamicEndpointSnitch: left alone", current.getClass().getName());
            return false;
        }
        if (policy == CoordinatorPolicy.DYNAMIC_SNITCH)
        {
            if (currentIsDes && des.wrapped(current) == inner)
                return false;
            // Close first: the fresh one registers the same MBean name.
            if (currentIsDes)
                des.close(current);
            IEndpointSnitch fresh = des.create(inner);
            node.install(fresh);
            logger.info("HWLB: policy dynamic-snitch: the node reads with a fresh DynamicEndpointSnitch over {}", inner.getClass().getName());
            return true;
        }
        if (current == plugin)
            return false;
        node.install(plugin);
        des.close(current);
        logger.info("HWLB: policy {}: the plug-in is the node's snitch (DynamicEndpointSnitch taken out and closed)", policy.label());
        return true;
    }
}
