//! The row cache: an LRU of keys, intrusive and index-based (no per-entry allocation).
//!
//! Entries live in one `Vec` with `prev`/`next` indices forming the recency list; a direct
//! index `key -> slot` (4 bytes per key of the key space) finds them. A million-key space with
//! a 100,000-row cache costs 4 MB + 1.6 MB per node.

const NIL: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Entry {
    key: u32,
    prev: u32,
    next: u32,
}

/// A least-recently-used set of keys with a fixed capacity.
#[derive(Clone, Debug)]
pub struct Lru {
    index: Vec<u32>,
    entries: Vec<Entry>,
    capacity: usize,
    head: u32,
    tail: u32,
}

impl Lru {
    /// An empty cache of `capacity` rows over keys `0..key_count` (both at most 2^32 - 1).
    pub fn new(capacity: usize, key_count: u64) -> Self {
        assert!(capacity > 0 && (capacity as u64) < NIL as u64 && key_count < NIL as u64);
        Lru {
            index: vec![NIL; key_count as usize],
            entries: Vec::with_capacity(capacity.min(key_count as usize)),
            capacity,
            head: NIL,
            tail: NIL,
        }
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Looks `key` up; a hit makes it most recent.
    #[inline]
    pub fn get(&mut self, key: u64) -> bool {
        let slot = self.index[key as usize];
        if slot == NIL {
            return false;
        }
        self.unlink(slot);
        self.push_front(slot);
        true
    }

    /// Hints the CPU to fetch `key`'s index slot: called when a read reaches the node, so the
    /// lookup after the CPU stage finds it in cache (the index is the one random access
    /// into megabytes; a hint only, no effect on results).
    #[inline]
    pub fn prefetch(&self, key: u64) {
        #[cfg(target_arch = "x86_64")]
        if let Some(slot) = self.index.get(key as usize) {
            use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            // SAFETY: SSE is part of the x86_64 baseline, and a prefetch never dereferences:
            // it is a hint about a valid address of our own slice.
            unsafe { _mm_prefetch::<_MM_HINT_T0>((slot as *const u32).cast::<i8>()) };
        }
    }

    /// Whether `key` is cached (no recency change).
    pub fn contains(&self, key: u64) -> bool {
        self.index[key as usize] != NIL
    }

    /// Inserts `key` as most recent (evicting the least recent when full); a present key is
    /// just made most recent.
    #[inline]
    pub fn insert(&mut self, key: u64) {
        if self.get(key) {
            return;
        }
        let slot = if self.entries.len() < self.capacity {
            self.entries.push(Entry {
                key: key as u32,
                prev: NIL,
                next: NIL,
            });
            (self.entries.len() - 1) as u32
        } else {
            let victim = self.tail;
            debug_assert!(victim != NIL);
            self.unlink(victim);
            let old = self.entries[victim as usize].key;
            self.index[old as usize] = NIL;
            self.entries[victim as usize].key = key as u32;
            victim
        };
        self.index[key as usize] = slot;
        self.push_front(slot);
    }

    /// Empties it (a restarted node), keeping the memory.
    pub fn clear(&mut self) {
        for e in &self.entries {
            self.index[e.key as usize] = NIL;
        }
        self.entries.clear();
        self.head = NIL;
        self.tail = NIL;
    }

    #[inline]
    fn unlink(&mut self, slot: u32) {
        let Entry { prev, next, .. } = self.entries[slot as usize];
        if prev != NIL {
            self.entries[prev as usize].next = next;
        } else {
            self.head = next;
        }
        if next != NIL {
            self.entries[next as usize].prev = prev;
        } else {
            self.tail = prev;
        }
    }

    #[inline]
    fn push_front(&mut self, slot: u32) {
        let old = self.head;
        {
            let e = &mut self.entries[slot as usize];
            e.prev = NIL;
            e.next = old;
        }
        if old != NIL {
            self.entries[old as usize].prev = slot;
        } else {
            self.tail = slot;
        }
        self.head = slot;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_least_recent() {
        let mut c = Lru::new(2, 10);
        c.insert(1);
        c.insert(2);
        assert!(c.get(1)); // 1 most recent
        c.insert(3); // evicts 2
        assert!(c.contains(1) && c.contains(3) && !c.contains(2));
        assert_eq!(c.len(), 2);
        c.clear();
        assert!(c.is_empty() && !c.contains(1));
        c.insert(4);
        assert!(c.get(4));
    }

    #[test]
    fn matches_a_reference_model() {
        let mut c = Lru::new(50, 200);
        let mut model: Vec<u64> = Vec::new(); // most recent last
        let mut rng = policy::Rng::seed_from_u64(2);
        for _ in 0..20_000 {
            let k = rng.below(200) as u64;
            let hit = c.get(k);
            let pos = model.iter().position(|&x| x == k);
            assert_eq!(hit, pos.is_some());
            if let Some(p) = pos {
                model.remove(p);
                model.push(k);
            } else {
                c.insert(k);
                if model.len() == 50 {
                    model.remove(0);
                }
                model.push(k);
            }
        }
    }
}
