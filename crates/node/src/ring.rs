//! The token ring: each node owns `vnodes` pseudo-random tokens; a key's replicas are the
//! first `replication_factor` distinct nodes met walking clockwise from the key's token.
//!
//! Tokens depend only on (node id, vnode index) and keys hash with a fixed function, so every
//! node and every token-aware client computes the same ring from the same member list. The
//! replica set of every range is precomputed: a lookup is one binary search.

use policy::{NodeId, ReplicaSet};

/// A ring over a fixed set of nodes.
#[derive(Clone, Debug)]
pub struct Ring {
    tokens: Vec<u64>,
    replicas: Vec<ReplicaSet>,
    nodes: Vec<NodeId>,
    replication_factor: usize,
}

/// 64-bit FNV-1a: stable across platforms and versions.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// splitmix64's finaliser: spreads nearby inputs over the whole range.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The token of a key.
pub fn key_token(key: &[u8]) -> u64 {
    mix64(fnv1a(key))
}

/// The token of a node's `vnode`-th virtual node.
pub fn node_token(node: NodeId, vnode: u32) -> u64 {
    mix64(((node.0 as u64) << 32 | vnode as u64) ^ 0x5eed_0f12_ce7b_1d4b)
}

impl Ring {
    /// The ring of `nodes` (any order, duplicates ignored), each with `vnodes` tokens, placing
    /// `replication_factor` replicas per key (fewer when there are fewer nodes).
    pub fn new(nodes: &[NodeId], vnodes: u32, replication_factor: usize) -> Ring {
        let mut members: Vec<NodeId> = nodes.to_vec();
        members.sort();
        members.dedup();
        let mut points: Vec<(u64, NodeId)> = members
            .iter()
            .flat_map(|&n| (0..vnodes.max(1)).map(move |v| (node_token(n, v), n)))
            .collect();
        points.sort();
        let want = replication_factor.min(members.len()).min(policy::MAX_REPLICAS);
        let replicas = (0..points.len())
            .map(|start| {
                let mut set = ReplicaSet::new();
                let mut i = start;
                while set.len() < want {
                    let node = points[i % points.len()].1;
                    if !set.contains(node) {
                        set.push(node);
                    }
                    i += 1;
                }
                set
            })
            .collect();
        Ring {
            tokens: points.iter().map(|p| p.0).collect(),
            replicas,
            nodes: members,
            replication_factor,
        }
    }

    /// The replicas of `key` in ring order and the id of its range (the range's token).
    /// An empty ring gives an empty set.
    pub fn replicas(&self, key: &[u8]) -> (&ReplicaSet, u64) {
        static EMPTY: ReplicaSet = ReplicaSet::new();
        if self.tokens.is_empty() {
            return (&EMPTY, 0);
        }
        let t = key_token(key);
        let i = self.tokens.partition_point(|&x| x < t) % self.tokens.len();
        (&self.replicas[i], self.tokens[i])
    }

    /// The member nodes, sorted.
    pub fn nodes(&self) -> &[NodeId] {
        &self.nodes
    }

    /// The configured replication factor (consistency levels count against it).
    pub fn replication_factor(&self) -> usize {
        self.replication_factor
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replicas_are_distinct_stable_and_spread() {
        let nodes: Vec<NodeId> = (0..5).map(NodeId).collect();
        let ring = Ring::new(&nodes, 16, 3);
        let again = Ring::new(&[NodeId(4), NodeId(3), NodeId(2), NodeId(1), NodeId(0)], 16, 3);
        let mut primary = [0u32; 5];
        for k in 0..5000u32 {
            let key = k.to_string();
            let (set, group) = ring.replicas(key.as_bytes());
            assert_eq!(set.len(), 3);
            assert_eq!(again.replicas(key.as_bytes()), (set, group));
            primary[set.as_slice()[0].index()] += 1;
        }
        for p in primary {
            assert!(p > 500, "unbalanced ring: {primary:?}");
        }
    }

    #[test]
    fn fewer_nodes_than_rf_and_empty() {
        let ring = Ring::new(&[NodeId(1), NodeId(0)], 4, 3);
        assert_eq!(ring.replicas(b"x").0.len(), 2);
        assert_eq!(ring.replication_factor(), 3);
        let empty = Ring::new(&[], 4, 3);
        assert!(empty.replicas(b"x").0.is_empty());
    }
}
