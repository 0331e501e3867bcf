package io.replicalb.driver;

import com.datastax.oss.driver.api.core.metadata.Node;
import io.replicalb.core.client.ClientPolicy;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The driver's nodes as the dense ids a {@link ClientPolicy} takes: each {@link Node} gets an id
 * once, when first seen (init or onAdd), never reused, below {@link ClientPolicy#MAX_NODES}.
 * Per node it keeps whether it is in the local datacenter (only those are ever candidates) and
 * whether it is live (up, as the driver's policy callbacks say), and the local nodes' zones
 * (racks) for {@link ClientPolicy#onTopology}.
 *
 * <p>Readers (every request) see immutable snapshots through volatile fields and take no lock;
 * writers (topology and state changes, rare) are serialised by the table's monitor and publish
 * a new snapshot.
 */
final class NodeTable {
    /** One node's id and what the plans need to know of it. */
    static final class Entry {
        final int id;
        final Node node;
        /** Whether it is in the local datacenter. */
        final boolean local;
        /** Whether it is up (and not removed). */
        volatile boolean live;

        Entry(int id, Node node, boolean local, boolean live) {
            this.id = id;
            this.node = node;
            this.local = local;
            this.live = live;
        }
    }

    private final String localDc;
    private final String localRack;
    private volatile IdentityHashMap<Node, Entry> byNode = new IdentityHashMap<>();
    private volatile Entry[] byId = new Entry[0];
    /** The live local nodes' ids, in id order. */
    private volatile int[] liveLocal = new int[0];
    private int nextId;
    /** Nodes not given an id (beyond {@link ClientPolicy#MAX_NODES}). */
    private long unmapped;

    /** An empty table for a client in {@code localDc} (null: every datacenter is local) and {@code localRack} (may be null). */
    NodeTable(String localDc, String localRack) {
        this.localDc = localDc;
        this.localRack = localRack;
    }

    /** The node's entry, or null when it has none. */
    Entry get(Node node) {
        return byNode.get(node);
    }

    /** The entry of id {@code id}, or null (removed, or never given). */
    Entry byId(int id) {
        Entry[] a = byId;
        return id < a.length ? a[id] : null;
    }

    /** The live local nodes' ids (do not modify). */
    int[] liveLocal() {
        return liveLocal;
    }

    /** Nodes that got no id: the table was full. */
    synchronized long unmapped() {
        return unmapped;
    }

    /**
     * Adds {@code node} (live or not) if it has no id yet; returns its entry, or null when the
     * table is full (counted).
     */
    synchronized Entry add(Node node, boolean live) {
        Entry e = byNode.get(node);
        if (e != null) {
            return e;
        }
        if (nextId >= ClientPolicy.MAX_NODES) {
            unmapped++;
            return null;
        }
        boolean local = localDc == null || Objects.equals(localDc, node.getDatacenter());
        e = new Entry(nextId++, node, local, live);
        IdentityHashMap<Node, Entry> m = new IdentityHashMap<>(byNode);
        m.put(node, e);
        Entry[] ids = Arrays.copyOf(byId, e.id + 1);
        ids[e.id] = e;
        byId = ids;
        byNode = m;
        republish();
        return e;
    }

    /** Marks {@code node} live or not; returns its entry if that changed it, else null. */
    synchronized Entry setLive(Node node, boolean live) {
        Entry e = byNode.get(node);
        if (e == null || e.live == live) {
            return null;
        }
        e.live = live;
        republish();
        return e;
    }

    /** Forgets {@code node} (its id is not reused); returns its entry, or null when it had none. */
    synchronized Entry remove(Node node) {
        Entry e = byNode.get(node);
        if (e == null) {
            return null;
        }
        e.live = false;
        IdentityHashMap<Node, Entry> m = new IdentityHashMap<>(byNode);
        m.remove(node);
        Entry[] ids = byId.clone();
        ids[e.id] = null;
        byId = ids;
        byNode = m;
        republish();
        return e;
    }

    private void republish() {
        Entry[] ids = byId;
        int n = 0;
        int[] live = new int[ids.length];
        for (Entry e : ids) {
            if (e != null && e.local && e.live) {
                live[n++] = e.id;
            }
        }
        liveLocal = Arrays.copyOf(live, n);
    }

    /** The zones now: {@code zones[id]} is the id's zone (its rack among the local ones), -1 unknown. */
    synchronized Topology topology() {
        Entry[] ids = byId;
        Map<String, Integer> racks = new LinkedHashMap<>();
        int[] zones = new int[ids.length];
        Arrays.fill(zones, -1);
        if (localRack != null) {
            racks.put(localRack, 0);
        }
        for (Entry e : ids) {
            if (e != null && e.local && e.node.getRack() != null) {
                zones[e.id] = racks.computeIfAbsent(e.node.getRack(), r -> racks.size());
            }
        }
        return new Topology(zones, localRack == null ? -1 : 0);
    }

    /** Every entry now (tests, counters). */
    List<Entry> entries() {
        List<Entry> out = new ArrayList<>();
        for (Entry e : byId) {
            if (e != null) {
                out.add(e);
            }
        }
        return out;
    }

    /** What {@link ClientPolicy#onTopology} is told. */
    record Topology(int[] zoneOfNode, int localZone) {}
}
