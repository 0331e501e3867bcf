package com.datastax.oss.driver.internal.core.metadata;

import com.datastax.oss.driver.api.core.metadata.NodeState;
import com.datastax.oss.driver.internal.core.context.InternalDriverContext;
import java.net.InetSocketAddress;
import java.util.Set;
import java.util.UUID;

/**
 * Test support in the driver's own package: a {@link DefaultNode} with its metadata set as the
 * driver's topology refresh would (datacenter, rack, token, host id, state), without a cluster.
 */
public final class TestNodes {
    private TestNodes() {}

    /** A node at {@code address} in {@code dc}/{@code rack} owning {@code token} (Murmur3), up. */
    public static DefaultNode node(InternalDriverContext context, InetSocketAddress address, String dc, String rack, long token, UUID hostId) {
        DefaultNode node = new DefaultNode(new DefaultEndPoint(address), context);
        node.broadcastRpcAddress = address;
        node.datacenter = dc;
        node.rack = rack;
        node.rawTokens = Set.of(Long.toString(token));
        node.hostId = hostId;
        node.state = NodeState.UP;
        return node;
    }

    /** Sets {@code node}'s state as the driver's node-state manager would. */
    public static void setState(DefaultNode node, NodeState state) {
        node.state = state;
    }
}
