//! Per-node state keyed by [`NodeId`], compact: one entry per node heard from, in the order
//! first heard of, behind a small open-addressing index. A client of a 2,000-node cluster that
//! heard from a hundred nodes keeps a hundred entries (a few words each), not 2,000: a fleet of
//! 100,000 stateful clients fits in memory.
//!
//! Policies read it in `plan` through [`NodeTable::get`] and write it from the events they observe
//! through [`NodeTable::entry`]; the table grows only when a node is first written (a
//! callback), never on the steady-state request path.
//!
//! It answers exactly as the dense table indexed by node id it replaced (a vector grown to the
//! highest id written, lower ids filled with the default): a node below the highest id written
//! reads as present with the default state, and [`NodeTable::get_mut`] of such a node stores
//! that default state before handing it out (so state a policy writes there stays, as it did).
//! Policies keep their decisions, bit for bit; only the memory changes.

use crate::policy::Event;
use crate::types::NodeId;

/// An empty index entry.
const EMPTY: u32 = u32::MAX;

/// Compact per-node state; `T::default()` is the state of a node never heard of.
#[derive(Clone, Debug, Default)]
pub struct NodeTable<T> {
    /// Node id to slot, directly (`NO_SLOT`: none) while that array is no larger than a hashed
    /// index would be (a coordinator hears of most nodes); else empty.
    direct: Box<[u16]>,
    /// Otherwise open addressing with linear probing, a power of two long (or empty), at most
    /// half full: each entry packs a node id (low 16 bits) and its slot (high 16 bits).
    index: Box<[u32]>,
    /// The nodes of `slots`, in the same order.
    keys: Vec<NodeId>,
    /// The states, in the order their nodes were first written.
    slots: Vec<T>,
    /// One more than the highest node index written: the length the dense table had.
    limit: usize,
    /// The state read for a node below `limit` that was never written.
    default: T,
}

/// No slot in the direct index.
const NO_SLOT: u16 = u16::MAX;

impl<T: Default> NodeTable<T> {
    /// An empty table (allocates nothing).
    pub fn new() -> Self {
        NodeTable {
            direct: Box::new([]),
            index: Box::new([]),
            keys: Vec::new(),
            slots: Vec::new(),
            limit: 0,
            default: T::default(),
        }
    }

    /// Where `node`'s entry is in the hashed index, or the empty entry where it would go.
    #[inline]
    fn probe(&self, node: NodeId) -> (usize, u32) {
        let mask = self.index.len() - 1;
        let mut i = hash(node, mask);
        loop {
            let e = self.index[i];
            if e == EMPTY || e as u16 == node.0 {
                return (i, e);
            }
            i = (i + 1) & mask;
        }
    }

    /// The slot of `node`, if it was ever written.
    #[inline]
    pub fn slot_of(&self, node: NodeId) -> Option<usize> {
        if self.index.is_empty() {
            return match self.direct.get(node.index()) {
                Some(&s) if s != NO_SLOT => Some(s as usize),
                _ => None,
            };
        }
        match self.probe(node).1 {
            EMPTY => None,
            e => Some((e >> 16) as usize),
        }
    }

    /// The state of `node`, if the node's id is at most the highest one written (as a dense
    /// table's slot; the default state when this node itself was never written).
    #[inline]
    pub fn get(&self, node: NodeId) -> Option<&T> {
        match self.slot_of(node) {
            Some(s) => Some(&self.slots[s]),
            None if node.index() < self.limit => Some(&self.default),
            None => None,
        }
    }

    /// Mutable state of `node`, if the node's id is at most the highest one written (a node
    /// below it never written gets its default state stored first). Grows the table only in
    /// that case.
    #[inline]
    pub fn get_mut(&mut self, node: NodeId) -> Option<&mut T> {
        if node.index() >= self.limit {
            return None;
        }
        Some(self.entry(node))
    }

    /// Mutable state of `node`, creating default state for it on first sight. Allocates only
    /// when the node is new and the table is full.
    #[inline]
    pub fn entry(&mut self, node: NodeId) -> &mut T {
        let s = self.entry_slot(node);
        &mut self.slots[s]
    }

    /// The slot of `node`, created with default state on first sight (see [`Self::entry`]).
    #[inline]
    pub fn entry_slot(&mut self, node: NodeId) -> usize {
        if let Some(s) = self.slot_of(node) {
            return s;
        }
        self.insert(node)
    }

    #[cold]
    fn insert(&mut self, node: NodeId) -> usize {
        let s = self.slots.len();
        assert!(s < NO_SLOT as usize, "a node table holds at most {} nodes", NO_SLOT);
        // Grown by a quarter (not doubled): the slots are most of a client's memory.
        if self.slots.len() == self.slots.capacity() {
            let more = (s / 4).max(4);
            self.slots.reserve_exact(more);
            self.keys.reserve_exact(more);
        }
        self.slots.push(T::default());
        self.keys.push(node);
        self.limit = self.limit.max(node.index() + 1);
        // The direct array (2 bytes per id up to the highest) while it is no larger than a
        // hashed index (4 bytes per entry, at least twice the nodes).
        let hashed_len = (2 * self.slots.len()).next_power_of_two().max(8);
        if self.limit <= 2 * hashed_len {
            if !self.index.is_empty() || self.direct.len() < self.limit {
                let len = self.limit.max(self.direct.len() + self.direct.len() / 4).min(1 << 16);
                self.index = Box::new([]);
                self.direct = vec![NO_SLOT; len].into_boxed_slice();
                for (s, &k) in self.keys.iter().enumerate() {
                    self.direct[k.index()] = s as u16;
                }
            } else {
                self.direct[node.index()] = s as u16;
            }
        } else if self.index.len() != hashed_len {
            self.direct = Box::new([]);
            self.index = vec![EMPTY; hashed_len].into_boxed_slice();
            let mask = hashed_len - 1;
            for (s, &k) in self.keys.iter().enumerate() {
                let mut i = hash(k, mask);
                while self.index[i] != EMPTY {
                    i = (i + 1) & mask;
                }
                self.index[i] = (s as u32) << 16 | k.0 as u32;
            }
        } else {
            let (i, e) = self.probe(node);
            debug_assert_eq!(e, EMPTY);
            self.index[i] = (s as u32) << 16 | node.0 as u32;
        }
        s
    }

    /// How many nodes were written.
    #[inline]
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether no node was written.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The state in slot `s` (see [`Self::slot_of`]).
    #[inline]
    pub fn at(&self, s: usize) -> &T {
        &self.slots[s]
    }

    /// The state in slot `s`, mutably.
    #[inline]
    pub fn at_mut(&mut self, s: usize) -> &mut T {
        &mut self.slots[s]
    }

    /// Every node written, in the order first written.
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = (NodeId, &T)> {
        self.keys.iter().copied().zip(self.slots.iter())
    }

    /// Every node written, mutably, in the order first written.
    #[inline]
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (NodeId, &mut T)> {
        self.keys.iter().copied().zip(self.slots.iter_mut())
    }
}

/// Fibonacci hashing of a node id into an index of `mask + 1` entries (ids are small and
/// dense: the multiply spreads neighbours apart).
#[inline]
fn hash(node: NodeId, mask: usize) -> usize {
    ((node.0 as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize & mask
}

impl<T: Default + Copy> NodeTable<T> {
    /// A copy of `node`'s state, or the default for a node never seen.
    #[inline]
    pub fn value(&self, node: NodeId) -> T {
        self.get(node).copied().unwrap_or_default()
    }
}

/// Requests in flight per node, as counted by the sender: a send adds one, a reply or a
/// failure removes one (never below zero, so a stray reply cannot corrupt the count).
#[derive(Clone, Debug, Default)]
pub struct InFlight {
    counts: NodeTable<u32>,
}

impl InFlight {
    /// No requests in flight anywhere.
    pub fn new() -> Self {
        InFlight::default()
    }

    /// Requests in flight to `node`.
    #[inline]
    pub fn get(&self, node: NodeId) -> u32 {
        self.counts.value(node)
    }

    /// A request was sent to `node`.
    #[inline]
    pub fn sent(&mut self, node: NodeId) {
        let c = self.counts.entry(node);
        *c = c.saturating_add(1);
    }

    /// A request to `node` ended (reply or failure).
    #[inline]
    pub fn ended(&mut self, node: NodeId) {
        if let Some(c) = self.counts.get_mut(node) {
            *c = c.saturating_sub(1);
        }
    }

    /// Counts a send, a reply or a failure (other events change nothing): what every policy
    /// that counts requests in flight does with its events, in one place.
    #[inline]
    pub fn observe(&mut self, event: &Event<'_>) {
        match *event {
            Event::Sent { node } => self.sent(node),
            Event::Reply(reply) => self.ended(reply.node),
            Event::Failure { node, .. } => self.ended(node),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_on_entry_only_and_saturates() {
        let mut t: NodeTable<u32> = NodeTable::new();
        assert!(t.get(NodeId(3)).is_none());
        *t.entry(NodeId(3)) = 7;
        assert_eq!(t.value(NodeId(3)), 7);
        assert_eq!(t.value(NodeId(1)), 0);
        assert_eq!(t.value(NodeId(9)), 0);

        let mut f = InFlight::new();
        f.ended(NodeId(2));
        assert_eq!(f.get(NodeId(2)), 0);
        f.sent(NodeId(2));
        f.sent(NodeId(2));
        f.ended(NodeId(2));
        assert_eq!(f.get(NodeId(2)), 1);
        f.ended(NodeId(2));
        f.ended(NodeId(2));
        assert_eq!(f.get(NodeId(2)), 0);
    }

    /// The dense table the compact one replaced, as the reference.
    struct Dense(Vec<u64>);

    impl Dense {
        fn get(&self, node: NodeId) -> Option<&u64> {
            self.0.get(node.index())
        }
        fn get_mut(&mut self, node: NodeId) -> Option<&mut u64> {
            self.0.get_mut(node.index())
        }
        fn entry(&mut self, node: NodeId) -> &mut u64 {
            if node.index() >= self.0.len() {
                self.0.resize(node.index() + 1, 0);
            }
            &mut self.0[node.index()]
        }
    }

    #[test]
    fn answers_as_the_dense_table_and_keeps_only_the_nodes_written() {
        let mut rng = crate::Rng::seed_from_u64(37);
        for round in 0..50u64 {
            let (mut t, mut d) = (NodeTable::<u64>::new(), Dense(Vec::new()));
            let spread = [4, 64, 3000][round as usize % 3];
            let mut written = std::collections::BTreeSet::new();
            for step in 0..2_000u64 {
                let node = NodeId(rng.below(spread) as u16);
                match rng.below(4) {
                    0 => {
                        *t.entry(node) += step;
                        *d.entry(node) += step;
                        written.insert(node);
                    }
                    1 => {
                        if let (Some(a), Some(b)) = (t.get_mut(node), d.get_mut(node)) {
                            *a += 1;
                            *b += 1;
                            written.insert(node);
                        }
                        assert_eq!(t.get(node).is_some(), d.get(node).is_some());
                    }
                    _ => assert_eq!(t.get(node), d.get(node), "round {round} step {step} node {node:?}"),
                }
            }
            assert_eq!(t.len(), written.len(), "one entry per node written");
            for (node, &v) in t.iter() {
                assert_eq!(Some(&v), d.get(node));
            }
        }
    }
}
