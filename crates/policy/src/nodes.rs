//! Per-node state indexed by [`NodeId`]: a dense table that grows only when a node id is seen
//! for the first time (a feedback callback), never on the steady-state request path.
//!
//! Policies read it in `plan` through [`NodeTable::get`] (no growth: an unseen node reads as
//! `None`) and write it from the `on_*` callbacks through [`NodeTable::entry`].

use crate::types::NodeId;

/// Dense per-node state; `T::default()` is the state of a node never heard of.
#[derive(Clone, Debug, Default)]
pub struct NodeTable<T> {
    slots: Vec<T>,
}

impl<T: Default> NodeTable<T> {
    /// An empty table.
    pub fn new() -> Self {
        NodeTable { slots: Vec::new() }
    }

    /// The state of `node`, if the node was ever seen.
    #[inline]
    pub fn get(&self, node: NodeId) -> Option<&T> {
        self.slots.get(node.index())
    }

    /// Mutable state of `node`, if the node was ever seen (never grows the table).
    #[inline]
    pub fn get_mut(&mut self, node: NodeId) -> Option<&mut T> {
        self.slots.get_mut(node.index())
    }

    /// Mutable state of `node`, creating default state for it (and any lower id) on first
    /// sight. Allocates only when `node` is a new highest id.
    #[inline]
    pub fn entry(&mut self, node: NodeId) -> &mut T {
        let i = node.index();
        if i >= self.slots.len() {
            self.slots.resize_with(i + 1, T::default);
        }
        &mut self.slots[i]
    }

    /// Every slot (seen or filled-in), by node index.
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = (NodeId, &T)> {
        self.slots.iter().enumerate().map(|(i, s)| (NodeId(i as u16), s))
    }

    /// Every slot, mutably, by node index.
    #[inline]
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (NodeId, &mut T)> {
        self.slots.iter_mut().enumerate().map(|(i, s)| (NodeId(i as u16), s))
    }
}

impl<T: Default + Copy> NodeTable<T> {
    /// A copy of `node`'s state, or the default for a node never seen.
    #[inline]
    pub fn value(&self, node: NodeId) -> T {
        self.slots.get(node.index()).copied().unwrap_or_default()
    }
}

/// Requests in flight per node, as counted by the sender: `on_send` adds one, a reply or a
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
}
