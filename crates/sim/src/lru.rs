//! The row cache: an LRU of keys whose memory follows its capacity, not the key space.
//!
//! Rows live in a fixed array of `capacity` entries (key and recency links), linked into an
//! intrusive doubly linked recency list closed by a sentinel, so relinking has no branches.
//! A key finds its entry through an open-addressing hash index (linear probing, at most half
//! full, backward-shift deletion): one word per index slot holding a 32-bit tag of the key's
//! hash and the entry's number. A lookup is one random access into the index (the one
//! [`Lru::prefetch`] hints) and one into the entries; nothing is allocated after [`Lru::new`].
//! A row costs 32 to 48 bytes: a node caching 100,000 rows holds under 5 MB, whatever the key
//! space (up to 2^64 keys).

use workload::placement::mix64;

/// The most rows one cache holds (entry numbers, and the sentinel, fit a `u32`).
pub const MAX_CAPACITY_ROWS: usize = 1 << 30;
const _: () = assert!(workload::scenario::MAX_CACHE_ROWS as usize <= MAX_CAPACITY_ROWS);

/// One cached row: its key and its neighbours in the recency list.
#[derive(Clone, Copy, Debug)]
struct Entry {
    key: u64,
    prev: u32,
    next: u32,
}

/// A least-recently-used set of keys with a fixed capacity.
#[derive(Clone, Debug)]
pub struct Lru {
    /// `capacity` row entries, then the sentinel: its `next` is the most recent row, its
    /// `prev` the least recent. Entries `0..len` are in use.
    entries: Vec<Entry>,
    /// The hash index: 0 = empty, else the key's tag (high 32 bits) and its entry number + 1.
    index: Vec<u64>,
    /// `index.len() - 1` (a power of two minus one).
    mask: usize,
    len: usize,
    capacity: usize,
}

/// The tag of `key`: 32 well-mixed bits; its low bits are also the key's home slot.
#[inline]
fn tag_of(key: u64) -> u32 {
    (mix64(key) >> 32) as u32
}

impl Lru {
    /// An empty cache of `capacity` rows (1 to [`MAX_CAPACITY_ROWS`]).
    pub fn new(capacity: usize) -> Self {
        assert!(
            (1..=MAX_CAPACITY_ROWS).contains(&capacity),
            "cache capacity {capacity} rows: must be in [1, {MAX_CAPACITY_ROWS}]"
        );
        let sentinel = capacity as u32;
        let mut entries = vec![
            Entry {
                key: 0,
                prev: sentinel,
                next: sentinel,
            };
            capacity + 1
        ];
        entries[capacity] = Entry {
            key: u64::MAX,
            prev: sentinel,
            next: sentinel,
        };
        let slots = (2 * capacity).next_power_of_two();
        Lru {
            entries,
            index: vec![0; slots],
            mask: slots - 1,
            len: 0,
            capacity,
        }
    }

    /// The bytes a cache of `capacity` rows allocates: its entries and its hash index (32 to
    /// 48 bytes a row), for a memory estimate before a run.
    pub fn bytes_for(capacity: usize) -> u64 {
        let entries = (capacity as u64 + 1) * std::mem::size_of::<Entry>() as u64;
        let slots = (2 * capacity as u64).next_power_of_two();
        entries + slots * std::mem::size_of::<u64>() as u64
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The index slot holding `key` and its entry number, if cached.
    #[inline]
    fn find(&self, key: u64) -> Option<(usize, u32)> {
        let tag = tag_of(key);
        let mut pos = tag as usize & self.mask;
        loop {
            let word = self.index[pos];
            if word == 0 {
                return None;
            }
            let entry = (word as u32).wrapping_sub(1);
            if (word >> 32) as u32 == tag && self.entries[entry as usize].key == key {
                return Some((pos, entry));
            }
            pos = (pos + 1) & self.mask;
        }
    }

    /// Looks `key` up; a hit makes it most recent.
    #[inline]
    pub fn get(&mut self, key: u64) -> bool {
        let Some((_, e)) = self.find(key) else {
            return false;
        };
        self.unlink(e);
        self.push_front(e);
        true
    }

    /// Hints the CPU to fetch `key`'s index slot: called when a read reaches the node, so the
    /// lookup after the CPU stage finds it in cache (a hint only, no effect on results).
    #[inline]
    pub fn prefetch(&self, key: u64) {
        #[cfg(target_arch = "x86_64")]
        if let Some(slot) = self.index.get(tag_of(key) as usize & self.mask) {
            use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            // SAFETY: SSE is part of the x86_64 baseline, and a prefetch never dereferences:
            // it is a hint about a valid address of our own slice.
            unsafe { _mm_prefetch::<_MM_HINT_T0>((slot as *const u64).cast::<i8>()) };
        }
    }

    /// Whether `key` is cached (no recency change).
    pub fn contains(&self, key: u64) -> bool {
        self.find(key).is_some()
    }

    /// Inserts `key` as most recent (evicting the least recent when full); a present key is
    /// just made most recent.
    #[inline]
    pub fn insert(&mut self, key: u64) {
        if self.get(key) {
            return;
        }
        let e = if self.len < self.capacity {
            self.len += 1;
            (self.len - 1) as u32
        } else {
            let victim = self.entries[self.capacity].prev;
            let (pos, found) = self.find(self.entries[victim as usize].key).expect("a cached row is indexed");
            debug_assert_eq!(found, victim);
            self.remove_slot(pos);
            self.unlink(victim);
            victim
        };
        self.entries[e as usize].key = key;
        self.push_front(e);
        let tag = tag_of(key);
        let mut pos = tag as usize & self.mask;
        while self.index[pos] != 0 {
            pos = (pos + 1) & self.mask;
        }
        self.index[pos] = (tag as u64) << 32 | (e as u64 + 1);
    }

    /// Empties it (a restarted node), keeping the memory.
    pub fn clear(&mut self) {
        self.index.fill(0);
        let sentinel = self.capacity as u32;
        self.entries[self.capacity].prev = sentinel;
        self.entries[self.capacity].next = sentinel;
        self.len = 0;
    }

    /// Empties index slot `pos`, shifting back the entries after it that probed past it, so
    /// every key stays reachable from its home slot without tombstones.
    #[inline]
    fn remove_slot(&mut self, pos: usize) {
        let mut hole = pos;
        let mut j = pos;
        loop {
            j = (j + 1) & self.mask;
            let word = self.index[j];
            if word == 0 {
                break;
            }
            let home = (word >> 32) as usize & self.mask;
            // The entry at j may fill the hole when the hole lies on its probe path [home, j).
            if (j.wrapping_sub(home) & self.mask) >= (j.wrapping_sub(hole) & self.mask) {
                self.index[hole] = word;
                hole = j;
            }
        }
        self.index[hole] = 0;
    }

    /// Takes entry `e` out of the recency list.
    #[inline]
    fn unlink(&mut self, e: u32) {
        let Entry { prev, next, .. } = self.entries[e as usize];
        self.entries[prev as usize].next = next;
        self.entries[next as usize].prev = prev;
    }

    /// Links entry `e` (not in the list) in as most recent.
    #[inline]
    fn push_front(&mut self, e: u32) {
        let sentinel = self.capacity;
        let first = self.entries[sentinel].next;
        let entry = &mut self.entries[e as usize];
        entry.prev = sentinel as u32;
        entry.next = first;
        self.entries[first as usize].prev = e;
        self.entries[sentinel].next = e;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_least_recent() {
        let mut c = Lru::new(2);
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

    /// Checks the cache against a plain list, over `keys` keys spread by `stride` (so huge
    /// keys and colliding home slots are exercised), clearing now and then.
    fn check_against_model(capacity: usize, keys: u64, stride: u64, seed: u64) {
        let mut c = Lru::new(capacity);
        let mut model: Vec<u64> = Vec::new(); // most recent last
        let mut rng = policy::Rng::seed_from_u64(seed);
        for i in 0..20_000 {
            if i % 5_000 == 4_999 {
                c.clear();
                model.clear();
            }
            assert_eq!(c.len(), model.len());
            let k = (rng.below(keys as usize) as u64).wrapping_mul(stride);
            let hit = c.get(k);
            let pos = model.iter().position(|&x| x == k);
            assert_eq!(hit, pos.is_some(), "key {k} at step {i}");
            if let Some(p) = pos {
                model.remove(p);
                model.push(k);
            } else {
                c.insert(k);
                if model.len() == capacity {
                    model.remove(0);
                }
                model.push(k);
            }
        }
        for &k in &model {
            assert!(c.contains(k));
        }
    }

    #[test]
    fn matches_a_reference_model() {
        check_against_model(50, 200, 1, 2);
        check_against_model(1, 3, 1, 3);
        check_against_model(37, 60, 1 << 40, 4);
        check_against_model(64, 1_000, 0x9e37_79b9_7f4a_7c15, 5);
    }

    #[test]
    fn memory_follows_capacity_not_keys() {
        let c = Lru::new(1_000);
        assert_eq!(c.index.len(), 2_048);
        assert_eq!(c.entries.len(), 1_001);
        let mut c = c;
        c.insert(u64::MAX - 1);
        c.insert(999_999_999_999);
        assert!(c.contains(u64::MAX - 1) && c.contains(999_999_999_999) && !c.contains(0));
    }
}
