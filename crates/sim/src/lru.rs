//! The row cache: an LRU of keys, as an intrusive doubly linked recency list indexed by key
//! (no per-entry allocation).
//!
//! `links[k]` holds key `k`'s neighbours in the list, so a lookup is one random access (the
//! one [`Lru::prefetch`] hints) and relinking touches only the neighbours' links, with no
//! dependent load between. A sentinel after the last key closes the list into a ring, so
//! relinking has no branches. A million-key space costs 8 MB per node.

/// `prev` of a key that is not cached.
const ABSENT: u32 = u32::MAX;

/// Aligned so that a key's links never straddle two cache lines.
#[derive(Clone, Copy, Debug)]
#[repr(align(8))]
struct Link {
    prev: u32,
    next: u32,
}

/// The links of a key that is not cached.
const UNCACHED: Link = Link {
    prev: ABSENT,
    next: ABSENT,
};

/// A least-recently-used set of keys with a fixed capacity.
#[derive(Clone, Debug)]
pub struct Lru {
    /// One link per key, then the sentinel: its `next` is the most recent key, its `prev`
    /// the least recent.
    links: Vec<Link>,
    len: usize,
    capacity: usize,
}

impl Lru {
    /// An empty cache of `capacity` rows over keys `0..key_count` (both below 2^32 - 1).
    pub fn new(capacity: usize, key_count: u64) -> Self {
        assert!(capacity > 0 && (capacity as u64) < ABSENT as u64 && key_count < ABSENT as u64);
        let sentinel = key_count as u32;
        let mut links = vec![UNCACHED; key_count as usize + 1];
        links[sentinel as usize] = Link {
            prev: sentinel,
            next: sentinel,
        };
        Lru { links, len: 0, capacity }
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Looks `key` up; a hit makes it most recent.
    #[inline]
    pub fn get(&mut self, key: u64) -> bool {
        let Link { prev, next } = self.links[key as usize];
        if prev == ABSENT {
            return false;
        }
        self.links[prev as usize].next = next;
        self.links[next as usize].prev = prev;
        self.push_front(key as u32);
        true
    }

    /// Hints the CPU to fetch `key`'s links: called when a read reaches the node, so the
    /// lookup after the CPU stage finds them in cache (the one random access into megabytes;
    /// a hint only, no effect on results).
    #[inline]
    pub fn prefetch(&self, key: u64) {
        #[cfg(target_arch = "x86_64")]
        if let Some(link) = self.links.get(key as usize) {
            use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            // SAFETY: SSE is part of the x86_64 baseline, and a prefetch never dereferences:
            // it is a hint about a valid address of our own slice.
            unsafe { _mm_prefetch::<_MM_HINT_T0>((link as *const Link).cast::<i8>()) };
        }
    }

    /// Whether `key` is cached (no recency change).
    pub fn contains(&self, key: u64) -> bool {
        self.links[key as usize].prev != ABSENT
    }

    /// Inserts `key` as most recent (evicting the least recent when full); a present key is
    /// just made most recent.
    #[inline]
    pub fn insert(&mut self, key: u64) {
        if self.get(key) {
            return;
        }
        if self.len < self.capacity {
            self.len += 1;
        } else {
            let victim = self.links[self.sentinel()].prev;
            let Link { prev, next } = self.links[victim as usize];
            self.links[prev as usize].next = next;
            self.links[next as usize].prev = prev;
            self.links[victim as usize].prev = ABSENT;
        }
        self.push_front(key as u32);
    }

    /// Empties it (a restarted node), keeping the memory.
    pub fn clear(&mut self) {
        let sentinel = self.sentinel();
        let mut k = self.links[sentinel].next;
        while k as usize != sentinel {
            let link = &mut self.links[k as usize];
            k = link.next;
            link.prev = ABSENT;
        }
        self.links[sentinel] = Link {
            prev: sentinel as u32,
            next: sentinel as u32,
        };
        self.len = 0;
    }

    #[inline]
    fn sentinel(&self) -> usize {
        self.links.len() - 1
    }

    /// Links `key` (not in the list) in as most recent.
    #[inline]
    fn push_front(&mut self, key: u32) {
        let sentinel = self.sentinel();
        let first = self.links[sentinel].next;
        self.links[key as usize] = Link {
            prev: sentinel as u32,
            next: first,
        };
        self.links[first as usize].prev = key;
        self.links[sentinel].next = key;
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
        for i in 0..20_000 {
            if i % 5_000 == 4_999 {
                c.clear();
                model.clear();
            }
            assert_eq!(c.len(), model.len());
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
