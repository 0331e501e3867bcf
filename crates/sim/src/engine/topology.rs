//! Replica groups (which nodes hold a key) and one-way network latencies between zones.

use crate::scenario::{Placement, Scenario};
use policy::NodeId;

/// Zone marker of the ideal shared queue's single server: as near as any sender's own zone.
pub const EVERYWHERE: u16 = u16::MAX;

/// The cluster's static shape.
#[derive(Debug)]
pub struct Topology {
    /// Nodes simulated.
    pub nodes: usize,
    node_zone: Vec<u16>,
    /// `groups x rf` replica lists, group-major.
    replicas: Vec<NodeId>,
    rf: usize,
    groups: usize,
    one_way_ns: Vec<u64>,
    zones: usize,
}

impl Topology {
    /// The topology of `sc` (or of its ideal shared queue: one server everyone reaches at
    /// same-zone latency).
    pub fn new(sc: &Scenario, ideal: bool) -> Self {
        let zones = sc.network.zones;
        if ideal {
            return Topology {
                nodes: 1,
                node_zone: vec![EVERYWHERE],
                replicas: vec![NodeId(0)],
                rf: 1,
                groups: 1,
                one_way_ns: sc.network.one_way_ns.clone(),
                zones,
            };
        }
        let n = sc.cluster.nodes;
        let rf = sc.cluster.replication_factor;
        // With RF = N every key lives everywhere: one group, in id order.
        let groups = if rf == n { 1 } else { n };
        let mut replicas = Vec::with_capacity(groups * rf);
        for g in 0..groups {
            let start = replicas.len();
            let mut used_zones: Vec<u16> = Vec::new();
            for step in 0..n {
                if replicas.len() - start == rf {
                    break;
                }
                let node = (g + step) % n;
                let zone = sc.cluster.node_zone[node];
                if sc.cluster.placement == Placement::OnePerZone && used_zones.contains(&zone) {
                    continue;
                }
                used_zones.push(zone);
                replicas.push(NodeId(node as u16));
            }
            // Validation guarantees enough zones for one-per-zone placement.
            assert_eq!(replicas.len() - start, rf, "group {g} could not be filled");
        }
        Topology {
            nodes: n,
            node_zone: sc.cluster.node_zone.clone(),
            replicas,
            rf,
            groups,
            one_way_ns: sc.network.one_way_ns.clone(),
            zones,
        }
    }

    /// Zone of node `n`.
    pub fn node_zone(&self, n: usize) -> u16 {
        self.node_zone[n]
    }

    /// The replicas of `group`, in ring order.
    #[inline]
    pub fn replicas(&self, group: u32) -> &[NodeId] {
        let s = group as usize * self.rf;
        &self.replicas[s..s + self.rf]
    }

    /// The group of `key` (a hash, so neighbouring keys spread over the ring).
    #[inline]
    pub fn group_of(&self, key: u64) -> u32 {
        if self.groups == 1 {
            return 0;
        }
        (mix64(key) % self.groups as u64) as u32
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

/// SplitMix64's finaliser: a cheap, well-mixed hash of a key.
#[inline]
pub fn mix64(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}
