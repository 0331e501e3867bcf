//! The row cache: an LRU of keys, as an intrusive doubly linked recency list closed by a
//! sentinel (relinking has no branches), in one of two layouts with the same behaviour:
//!
//! - **dense** ([`Dense`]), when the key space is at most [`DENSE_MAX_KEYS`] and at most
//!   [`DENSE_MAX_KEYS_PER_ROW`] times the capacity: one word of links per key, indexed by the
//!   key, so a lookup is one random access (the one [`Lru::prefetch`] hints) and keys read
//!   together (a hot set of neighbouring keys) share cache lines. Zeroed memory mapped lazily:
//!   8 bytes per key ever read.
//! - **hashed** ([`Hashed`]), otherwise: an open-addressing table of twice the capacity
//!   (linear probing, backward-shift deletion), each slot holding the key and its links, so a
//!   lookup is one random access (the home slot, hinted; probing continues in the same cache
//!   line mostly). 32 bytes a row, whatever the key space (up to 2^64 keys).
//!
//! Nothing is allocated after [`Lru::new`].

use replica_lb_workload::placement::mix64;

/// The most rows one cache holds (slot numbers, and the sentinel, fit a `u32` plus one).
pub const MAX_CAPACITY_ROWS: usize = 1 << 30;
const _: () = assert!(replica_lb_workload::scenario::MAX_CACHE_ROWS as usize <= MAX_CAPACITY_ROWS);

/// The most keys a dense cache indexes (8 bytes each, touched as keys are read: 128 MB at most).
pub const DENSE_MAX_KEYS: u64 = 1 << 24;
/// A dense cache indexes at most this many keys per row of capacity.
pub const DENSE_MAX_KEYS_PER_ROW: u64 = 16;

/// A recency list over numbered places (keys, or table slots) and a sentinel: each place's
/// links are `[previous + 1, next]` (0 in the first: not in the list), plain words so that a new
/// table is zeroed memory, and relinking writes a neighbour's half without reading it (a store
/// does not wait for its cache line; a load would).
trait Links {
    fn link(&self, i: usize) -> [u32; 2];
    fn link_mut(&mut self, i: usize) -> &mut [u32; 2];
    fn sentinel(&self) -> usize;

    /// Takes `e` out of the list.
    #[inline(always)]
    fn unlink(&mut self, e: usize) {
        let [p1, n] = self.link(e);
        self.link_mut(p1 as usize - 1)[1] = n;
        self.link_mut(n as usize)[0] = p1;
    }

    /// Links `e` (not in the list) in as most recent.
    #[inline(always)]
    fn push_front(&mut self, e: usize) {
        let sentinel = self.sentinel();
        let first = self.link(sentinel)[1];
        *self.link_mut(e) = [sentinel as u32 + 1, first];
        self.link_mut(first as usize)[0] = e as u32 + 1;
        self.link_mut(sentinel)[1] = e as u32;
    }

    /// The least recent (the sentinel when empty).
    #[inline(always)]
    fn last(&self) -> usize {
        self.link(self.sentinel())[0] as usize - 1
    }

    /// Empties the list (the places keep their links: the caller clears them).
    fn reset(&mut self) {
        let sentinel = self.sentinel();
        *self.link_mut(sentinel) = [sentinel as u32 + 1, sentinel as u32];
    }
}

/// The hashed layout (see the [module docs](self)): slots `[key low, key high, previous + 1,
/// next]`, the sentinel after the table.
#[derive(Clone, Debug)]
struct Hashed {
    slots: Vec<[u32; 4]>,
    /// Table slots (twice the capacity: at most half full).
    size: usize,
    len: usize,
    capacity: usize,
}

impl Links for Hashed {
    #[inline(always)]
    fn link(&self, i: usize) -> [u32; 2] {
        let s = &self.slots[i];
        [s[2], s[3]]
    }
    #[inline(always)]
    fn link_mut(&mut self, i: usize) -> &mut [u32; 2] {
        let s = &mut self.slots[i];
        (&mut s[2..4]).try_into().expect("two words")
    }
    #[inline(always)]
    fn sentinel(&self) -> usize {
        self.size
    }
}

#[inline(always)]
fn key_of(s: &[u32; 4]) -> u64 {
    (s[1] as u64) << 32 | s[0] as u64
}

impl Hashed {
    fn new(capacity: usize) -> Self {
        let size = 2 * capacity;
        let mut h = Hashed {
            slots: vec![[0u32; 4]; size + 1],
            size,
            len: 0,
            capacity,
        };
        h.reset();
        h
    }

    /// The slot `key`'s probe starts at.
    #[inline(always)]
    fn home(&self, key: u64) -> usize {
        ((mix64(key) as u128 * self.size as u128) >> 64) as usize
    }

    /// The slot after `pos`, wrapping around.
    #[inline(always)]
    fn after(&self, pos: usize) -> usize {
        if pos + 1 == self.size {
            0
        } else {
            pos + 1
        }
    }

    /// The slot holding `key`, if cached.
    #[inline]
    fn find(&self, key: u64) -> Option<usize> {
        let mut pos = self.home(key);
        loop {
            let s = &self.slots[pos];
            if s[2] == 0 {
                return None;
            }
            if key_of(s) == key {
                return Some(pos);
            }
            pos = self.after(pos);
        }
    }

    #[inline]
    fn get(&mut self, key: u64) -> bool {
        let Some(e) = self.find(key) else {
            return false;
        };
        self.unlink(e);
        self.push_front(e);
        true
    }

    #[inline]
    fn insert(&mut self, key: u64) {
        if self.get(key) {
            return;
        }
        if self.len == self.capacity {
            let victim = self.last();
            self.unlink(victim);
            self.remove_slot(victim);
            self.len -= 1;
        }
        let mut pos = self.home(key);
        while self.slots[pos][2] != 0 {
            pos = self.after(pos);
        }
        self.slots[pos][0] = key as u32;
        self.slots[pos][1] = (key >> 32) as u32;
        self.push_front(pos);
        self.len += 1;
    }

    fn clear(&mut self) {
        self.slots[..self.size].fill([0; 4]);
        self.reset();
        self.len = 0;
    }

    /// Empties slot `pos` (unlinked already), shifting back the rows after it that probed past
    /// it (relinking their neighbours to their new slot), so every key stays reachable from
    /// its home slot without tombstones.
    fn remove_slot(&mut self, pos: usize) {
        let size = self.size;
        let distance = |from: usize, to: usize| if to >= from { to - from } else { to + size - from };
        let mut hole = pos;
        let mut j = pos;
        loop {
            j = self.after(j);
            let s = self.slots[j];
            if s[2] == 0 {
                break;
            }
            // The row at j may fill the hole when the hole lies on its probe path [home, j).
            if distance(self.home(key_of(&s)), j) >= distance(hole, j) {
                self.slots[hole] = s;
                self.link_mut(s[2] as usize - 1)[1] = hole as u32;
                self.link_mut(s[3] as usize)[0] = hole as u32 + 1;
                hole = j;
            }
        }
        self.slots[hole] = [0; 4];
    }
}

/// The dense layout (see the [module docs](self)): key `k`'s links at `links[k]`, the sentinel
/// after the last key.
#[derive(Clone, Debug)]
struct Dense {
    links: Vec<[u32; 2]>,
    len: usize,
    capacity: usize,
}

impl Links for Dense {
    #[inline(always)]
    fn link(&self, i: usize) -> [u32; 2] {
        self.links[i]
    }
    #[inline(always)]
    fn link_mut(&mut self, i: usize) -> &mut [u32; 2] {
        &mut self.links[i]
    }
    #[inline(always)]
    fn sentinel(&self) -> usize {
        self.links.len() - 1
    }
}

impl Dense {
    fn new(capacity: usize, key_count: u64) -> Self {
        let mut d = Dense {
            links: vec![[0u32; 2]; key_count as usize + 1],
            len: 0,
            capacity,
        };
        d.reset();
        d
    }

    #[inline]
    fn get(&mut self, key: u64) -> bool {
        let k = key as usize;
        if self.links[k][0] == 0 {
            return false;
        }
        self.unlink(k);
        self.push_front(k);
        true
    }

    #[inline]
    fn insert(&mut self, key: u64) {
        if self.get(key) {
            return;
        }
        if self.len == self.capacity {
            let victim = self.last();
            self.unlink(victim);
            self.links[victim][0] = 0;
        } else {
            self.len += 1;
        }
        self.push_front(key as usize);
    }

    fn clear(&mut self) {
        let sentinel = self.sentinel();
        let mut k = self.links[sentinel][1] as usize;
        while k != sentinel {
            let next = self.links[k][1] as usize;
            self.links[k] = [0, 0];
            k = next;
        }
        self.reset();
        self.len = 0;
    }
}

/// A least-recently-used set of keys with a fixed capacity, in the layout that suits its key
/// space (the same behaviour either way).
#[derive(Clone, Debug)]
pub struct Lru(Layout);

#[derive(Clone, Debug)]
enum Layout {
    /// One pair of links per key.
    Dense(Dense),
    /// A table of twice the capacity.
    Hashed(Hashed),
}

impl Lru {
    /// An empty cache of `capacity` rows (1 to [`MAX_CAPACITY_ROWS`]) of keys below
    /// `key_count` (the dense layout when the key space is small enough, see the
    /// [module docs](self)).
    pub fn new(capacity: usize, key_count: u64) -> Self {
        assert!(
            (1..=MAX_CAPACITY_ROWS).contains(&capacity),
            "cache capacity {capacity} rows: must be in [1, {MAX_CAPACITY_ROWS}]"
        );
        if Self::is_dense(capacity, key_count) {
            Lru(Layout::Dense(Dense::new(capacity, key_count)))
        } else {
            Lru(Layout::Hashed(Hashed::new(capacity)))
        }
    }

    /// The bytes a cache of `capacity` rows of keys below `key_count` allocates, for a memory
    /// estimate before a run: the hashed layout's table (32 bytes a row), or the dense layout's
    /// links (8 bytes a key, an upper bound: its pages are mapped as keys are read).
    pub fn bytes_for(capacity: usize, key_count: u64) -> u64 {
        if Self::is_dense(capacity, key_count) {
            (key_count + 1) * std::mem::size_of::<[u32; 2]>() as u64
        } else {
            (2 * capacity as u64 + 1) * std::mem::size_of::<[u32; 4]>() as u64
        }
    }

    /// Whether a cache of `capacity` rows of keys below `key_count` takes the dense layout.
    fn is_dense(capacity: usize, key_count: u64) -> bool {
        key_count <= DENSE_MAX_KEYS && key_count <= DENSE_MAX_KEYS_PER_ROW * capacity as u64
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        match &self.0 {
            Layout::Dense(d) => d.len,
            Layout::Hashed(h) => h.len,
        }
    }

    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Looks `key` up; a hit makes it most recent.
    #[inline]
    pub fn get(&mut self, key: u64) -> bool {
        match &mut self.0 {
            Layout::Dense(d) => d.get(key),
            Layout::Hashed(h) => h.get(key),
        }
    }

    /// Hints the CPU to fetch what a lookup of `key` reads first (its links, or its home
    /// slot): called when a read reaches the node, so the lookup after the CPU stage finds it
    /// in cache (a hint only, no effect on results).
    #[inline]
    pub fn prefetch(&self, key: u64) {
        match &self.0 {
            Layout::Dense(d) => {
                if let Some(l) = d.links.get(key as usize) {
                    crate::prefetch::first_lines(l, 1);
                }
            }
            Layout::Hashed(h) => {
                if let Some(s) = h.slots.get(h.home(key)) {
                    crate::prefetch::first_lines(s, 1);
                }
            }
        }
    }

    /// Whether `key` is cached (no recency change).
    pub fn contains(&self, key: u64) -> bool {
        match &self.0 {
            Layout::Dense(d) => d.links[key as usize][0] != 0,
            Layout::Hashed(h) => h.find(key).is_some(),
        }
    }

    /// Inserts `key` as most recent (evicting the least recent when full); a present key is
    /// just made most recent.
    #[inline]
    pub fn insert(&mut self, key: u64) {
        match &mut self.0 {
            Layout::Dense(d) => d.insert(key),
            Layout::Hashed(h) => h.insert(key),
        }
    }

    /// Empties it (a restarted node), keeping the memory.
    pub fn clear(&mut self) {
        match &mut self.0 {
            Layout::Dense(d) => d.clear(),
            Layout::Hashed(h) => h.clear(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_least_recent() {
        let mut c = Lru::new(2, u64::MAX);
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
    fn check_against_model(capacity: usize, keys: u64, stride: u64, seed: u64, key_count: u64) {
        let mut c = Lru::new(capacity, key_count);
        let mut model: Vec<u64> = Vec::new(); // most recent last
        let mut rng = replica_lb_policy::Rng::seed_from_u64(seed);
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
        for key_count in [u64::MAX, 1_000] {
            check_against_model(50, 200, 1, 2, key_count);
            check_against_model(1, 3, 1, 3, key_count);
            check_against_model(64, 1_000, 1, 6, key_count);
        }
        check_against_model(37, 60, 1 << 40, 4, u64::MAX);
        check_against_model(64, 1_000, 0x9e37_79b9_7f4a_7c15, 5, u64::MAX);
    }

    #[test]
    fn memory_follows_capacity_not_keys() {
        let c = Lru::new(1_000, 1 << 40);
        let Layout::Hashed(h) = &c.0 else {
            panic!("a large key space is hashed")
        };
        assert_eq!(h.slots.len(), 2_001);
        let dense = Lru::new(1_000, 16_000);
        let Layout::Dense(d) = &dense.0 else {
            panic!("a small key space is dense")
        };
        assert_eq!(d.links.len(), 16_001);
        let mut c = c;
        c.insert(u64::MAX - 1);
        c.insert(999_999_999_999);
        assert!(c.contains(u64::MAX - 1) && c.contains(999_999_999_999) && !c.contains(0));
    }
}
