//! Replica groups (which nodes hold a key: the shared ring, [`workload::placement`]) and
//! one-way network latencies between zones.

use crate::scenario::Scenario;
use policy::NodeId;
use workload::placement::{Member, Placement, Ring};

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
    one_way_ns: Vec<u64>,
    zones: usize,
}

impl Topology {
    /// The topology of `sc` (or of its ideal shared queue: one server everyone reaches at
    /// same-zone latency).
    pub fn new(sc: &Scenario, ideal: bool) -> Self {
        let zones = sc.network.zones;
        if ideal {
            let server = Member { id: NodeId(0), zone: 0 };
            return Topology {
                nodes: 1,
                node_zone: vec![EVERYWHERE],
                ring: Ring::new(&[server], 1, 1, Placement::Ring),
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
        Topology {
            nodes: sc.cluster.nodes,
            node_zone: sc.cluster.node_zone.clone(),
            ring,
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
        self.ring.replicas(group).as_slice()
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
