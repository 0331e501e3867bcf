//! Prequal's probe pool and its hot threshold.
//!
//! [`ProbePool`]: at most `capacity` (16) probe answers, one per node (a newer answer replaces
//! the older one; when full, the oldest entry makes room). An entry expires `max_age` (1 s)
//! after it arrived and can be used for at most `max_reuse` selections; each use adds one to its
//! RIF, since the request just routed there is now in flight on it (our choice: the paper bounds
//! reuse, and a reused answer that ignored our own request would attract a herd).
//!
//! [`RifQuantile`]: the RIFs of recent probe answers; a node is *hot* when its RIF exceeds their
//! `q` quantile (0.84). Recomputed when an answer arrives, not per request.

use crate::types::{NodeId, MAX_REPLICAS};

/// One probe answer in the pool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Entry {
    /// Who answered.
    pub node: NodeId,
    /// Requests in flight there (plus our uses of this entry).
    pub rif: u32,
    /// Its latency estimate, ns.
    pub latency_ns: u64,
    /// When the answer arrived, ns.
    pub received_ns: u64,
    /// How many selections used it.
    pub uses: u32,
}

/// The pool of recent probe answers.
#[derive(Clone, Debug)]
pub struct ProbePool {
    entries: [Entry; MAX_REPLICAS],
    len: usize,
    capacity: usize,
    max_age_ns: u64,
    max_reuse: u32,
}

impl ProbePool {
    /// An empty pool; `capacity` at most [`MAX_REPLICAS`].
    pub fn new(capacity: usize, max_age_ns: u64, max_reuse: u32) -> Self {
        assert!((1..=MAX_REPLICAS).contains(&capacity), "pool capacity out of range");
        ProbePool {
            entries: [Entry::default(); MAX_REPLICAS],
            len: 0,
            capacity,
            max_age_ns,
            max_reuse: max_reuse.max(1),
        }
    }

    /// The live entries (call [`ProbePool::expire`] first).
    pub fn entries(&self) -> &[Entry] {
        &self.entries[..self.len]
    }

    /// How many entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds an answer received at `now_ns`.
    pub fn insert(&mut self, node: NodeId, rif: u32, latency_ns: u64, now_ns: u64) {
        let entry = Entry {
            node,
            rif,
            latency_ns,
            received_ns: now_ns,
            uses: 0,
        };
        if let Some(i) = self.entries().iter().position(|e| e.node == node) {
            self.entries[i] = entry;
        } else if self.len < self.capacity {
            self.entries[self.len] = entry;
            self.len += 1;
        } else {
            let oldest = (0..self.len).min_by_key(|&i| self.entries[i].received_ns).unwrap_or(0);
            self.entries[oldest] = entry;
        }
    }

    /// Drops the entries older than the maximum age at `now_ns`.
    pub fn expire(&mut self, now_ns: u64) {
        let mut i = 0;
        while i < self.len {
            if now_ns.saturating_sub(self.entries[i].received_ns) > self.max_age_ns {
                self.remove(i);
            } else {
                i += 1;
            }
        }
    }

    /// Records a selection of the entry for `node`: RIF + 1, and out when its budget is spent.
    pub fn use_entry(&mut self, node: NodeId) {
        if let Some(i) = self.entries().iter().position(|e| e.node == node) {
            let e = &mut self.entries[i];
            e.rif = e.rif.saturating_add(1);
            e.uses += 1;
            if e.uses >= self.max_reuse {
                self.remove(i);
            }
        }
    }

    fn remove(&mut self, i: usize) {
        self.len -= 1;
        self.entries[i] = self.entries[self.len];
    }
}

/// The RIFs of the most recent probe answers and their hot threshold.
///
/// Kept twice: in arrival order (a ring, to know which RIF rolls out) and sorted (so the
/// quantile is one index away). A new RIF costs two binary searches and two short moves within
/// preallocated memory; nothing is allocated after construction.
#[derive(Clone, Debug)]
pub struct RifQuantile {
    ring: Vec<u32>,
    next: usize,
    sorted: Vec<u32>,
    quantile: f64,
}

impl RifQuantile {
    /// Keeps the last `history` RIFs and tracks their `quantile`.
    pub fn new(history: usize, quantile: f64) -> Self {
        let history = history.max(1);
        RifQuantile {
            ring: Vec::with_capacity(history),
            next: 0,
            sorted: Vec::with_capacity(history),
            quantile,
        }
    }

    /// Records a RIF, forgetting the oldest one when the history is full.
    pub fn record(&mut self, rif: u32) {
        if self.ring.len() < self.ring.capacity() {
            self.ring.push(rif);
        } else {
            let old = std::mem::replace(&mut self.ring[self.next], rif);
            self.next = (self.next + 1) % self.ring.len();
            let at = self.sorted.partition_point(|&x| x < old);
            debug_assert_eq!(self.sorted[at], old);
            self.sorted.remove(at);
        }
        let at = self.sorted.partition_point(|&x| x < rif);
        self.sorted.insert(at, rif);
        debug_assert!(self.sorted.len() == self.ring.len());
    }

    /// The threshold: the nearest-rank quantile, the value at position `floor(q * (len - 1))`
    /// of the sorted recent RIFs (`None` before any RIF).
    #[inline]
    pub fn threshold(&self) -> Option<u32> {
        if self.sorted.is_empty() {
            return None;
        }
        let k = (self.quantile * (self.sorted.len() - 1) as f64).floor() as usize;
        Some(self.sorted[k.min(self.sorted.len() - 1)])
    }

    /// Whether a node with this RIF is hot (never, before any RIF was recorded).
    #[inline]
    pub fn is_hot(&self, rif: u32) -> bool {
        self.threshold().is_some_and(|t| rif > t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::MS;

    #[test]
    fn pool_is_bounded_expires_and_limits_reuse() {
        let mut p = ProbePool::new(2, 1_000 * MS, 2);
        p.insert(NodeId(0), 1, 5, 0);
        p.insert(NodeId(1), 2, 5, 10 * MS);
        p.insert(NodeId(2), 3, 5, 20 * MS);
        assert_eq!(p.len(), 2);
        assert!(p.entries().iter().all(|e| e.node != NodeId(0)), "the oldest made room");
        p.insert(NodeId(1), 7, 5, 30 * MS);
        assert_eq!(p.len(), 2, "one entry per node");
        p.use_entry(NodeId(1));
        assert_eq!(p.entries().iter().find(|e| e.node == NodeId(1)).unwrap().rif, 8);
        p.use_entry(NodeId(1));
        assert_eq!(p.len(), 1, "reuse budget spent");
        p.expire(1_020 * MS);
        assert_eq!(p.len(), 1);
        p.expire(1_021 * MS);
        assert!(p.is_empty());
    }

    #[test]
    fn hot_means_above_the_quantile() {
        let mut q = RifQuantile::new(100, 0.84);
        assert!(!q.is_hot(1_000));
        for rif in 0..100 {
            q.record(rif);
        }
        assert_eq!(q.threshold(), Some(83));
        assert!(q.is_hot(84) && !q.is_hot(83));
        // Old RIFs roll out.
        for _ in 0..100 {
            q.record(5);
        }
        assert_eq!(q.threshold(), Some(5));
    }
}
