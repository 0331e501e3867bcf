//! Replica groups (which nodes hold a key: the shared ring, [`replica_lb_workload::placement`]) and
//! one-way network latencies between zones.

use crate::scenario::Scenario;
use replica_lb_policy::NodeId;
use replica_lb_workload::placement::{Member, Placement, Ring};

/// Zone marker of the ideal shared queue's single server: as near as any sender's own zone.
pub const EVERYWHERE: u16 = u16::MAX;

/// The cluster's static shape.
#[derive(Debug)]
pub struct Topology {
    /// Nodes simulated.
    pub nodes: usize,
    node_zone: Vec<u16>,
    /// Where keys live: the ring the real cluster's nodes use too.
    ring: Ring,
    /// Every group's replicas, `rf` per group back to back (group `g` at `g * rf`): the ring's
    /// replica sets hold room for [`replica_lb_policy::MAX_REPLICAS`] nodes each (130 bytes), this table
    /// only the `rf` a group has, so the groups of a large cluster stay in cache.
    flat: Vec<NodeId>,
    /// Replicas per group (every group has the same number).
    rf: usize,
    one_way_ns: Vec<u64>,
    zones: usize,
}

/// The ring's replica sets back to back, and their common size (every group of a ring has
/// the same number of replicas: as many as the ring's members allow, up to its RF).
fn flatten(ring: &Ring) -> (Vec<NodeId>, usize) {
    let rf = if ring.groups() == 0 { 0 } else { ring.replicas(0).len() };
    let mut flat = Vec::with_capacity(ring.groups() * rf);
    for g in 0..ring.groups() as u32 {
        let set = ring.replicas(g).as_slice();
        assert_eq!(set.len(), rf, "group {g}: every group has the same number of replicas");
        flat.extend_from_slice(set);
    }
    (flat, rf)
}

impl Topology {
    /// The topology of `sc` (or of its ideal shared queue: one server everyone reaches at
    /// same-zone latency).
    pub fn new(sc: &Scenario, ideal: bool) -> Self {
        let zones = sc.network.zones;
        if ideal {
            let server = Member { id: NodeId(0), zone: 0 };
            let ring = Ring::new(&[server], 1, 1, Placement::Ring);
            let (flat, rf) = flatten(&ring);
            return Topology {
                nodes: 1,
                node_zone: vec![EVERYWHERE],
                ring,
                flat,
                rf,
                one_way_ns: sc.network.one_way_ns.clone(),
                zones,
            };
        }
        let members: Vec<Member> = (0..sc.cluster.nodes)
            .map(|i| Member {
                id: NodeId(i as u16),
                zone: sc.cluster.node_zone[i] as u32,
            })
            .collect();
        let ring = Ring::new(&members, sc.cluster.vnodes, sc.cluster.replication_factor, sc.cluster.placement);
        // Validation guarantees enough nodes (and zones, for one-per-zone) for every group.
        for g in 0..ring.groups() as u32 {
            assert_eq!(
                ring.replicas(g).len(),
                sc.cluster.replication_factor,
                "group {g} could not be filled"
            );
        }
        let (flat, rf) = flatten(&ring);
        Topology {
            nodes: sc.cluster.nodes,
            node_zone: sc.cluster.node_zone.clone(),
            ring,
            flat,
            rf,
            one_way_ns: sc.network.one_way_ns.clone(),
            zones,
        }
    }

    /// Zone of node `n`.
    pub fn node_zone(&self, n: usize) -> u16 {
        self.node_zone[n]
    }

    /// The replicas of `group`, primary first.
    #[inline]
    pub fn replicas(&self, group: u32) -> &[NodeId] {
        let start = group as usize * self.rf;
        let set = &self.flat[start..start + self.rf];
        debug_assert_eq!(set, self.ring.replicas(group).as_slice());
        set
    }

    /// The group of key number `key` (its replica set on the ring).
    #[inline]
    pub fn group_of(&self, key: u64) -> u32 {
        self.ring.group_of_index(key)
    }

    /// Base one-way latency from zone `from` to zone `to`, ns.
    #[inline]
    pub fn one_way_ns(&self, from: u16, to: u16) -> u64 {
        let (from, to) = match (from, to) {
            (EVERYWHERE, EVERYWHERE) => (0, 0),
            (EVERYWHERE, t) => (t, t),
            (f, EVERYWHERE) => (f, f),
            other => other,
        };
        self.one_way_ns[from as usize * self.zones + to as usize]
    }
}
