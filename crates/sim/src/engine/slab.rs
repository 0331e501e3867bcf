//! A slab: records addressed by a `u32` index with a free list, so the hot loop allocates
//! nothing once the slab has grown to the run's peak. Each record carries a generation so a
//! stale reference (an event about a freed record) is recognised.

/// A record with a generation.
pub trait Slot: Default {
    /// The record's generation (bumped on every free).
    fn generation(&self) -> u32;
    /// Sets the generation.
    fn set_generation(&mut self, g: u32);
}

/// Records indexed by `u32`. A record's generation is even while it is live and odd while its
/// slot is free, so one load answers "is this reference still valid".
#[derive(Debug, Default)]
pub struct Slab<T> {
    items: Vec<T>,
    free: Vec<u32>,
}

/// The most records a slab holds.
pub const MAX_SLOTS: usize = 1 << 30;

impl<T: Slot> Slab<T> {
    /// An empty slab.
    pub fn new() -> Self {
        Slab {
            items: Vec::new(),
            free: Vec::new(),
        }
    }

    /// Stores `item` and returns (index, generation).
    #[inline]
    pub fn insert(&mut self, mut item: T) -> (u32, u32) {
        match self.free.pop() {
            Some(i) => {
                let g = self.items[i as usize].generation().wrapping_add(1);
                debug_assert!(g.is_multiple_of(2));
                item.set_generation(g);
                self.items[i as usize] = item;
                (i, g)
            }
            None => {
                assert!(self.items.len() < MAX_SLOTS, "slab full: more than {MAX_SLOTS} records live");
                item.set_generation(0);
                self.items.push(item);
                ((self.items.len() - 1) as u32, 0)
            }
        }
    }

    /// Hints the CPU to fetch record `i` (if it exists): no effect on results.
    #[inline]
    pub fn prefetch(&self, i: u32) {
        if let Some(item) = self.items.get(i as usize) {
            crate::prefetch::lines(item);
        }
    }

    /// Hints the CPU to fetch the record the next [`Self::insert`] overwrites (no effect on
    /// results).
    #[inline]
    pub fn prefetch_free(&self) {
        if let Some(&i) = self.free.last() {
            self.prefetch(i);
        }
    }

    /// Frees record `i` (its generation becomes odd).
    #[inline]
    pub fn remove(&mut self, i: u32) {
        let item = &mut self.items[i as usize];
        let g = item.generation();
        debug_assert!(g.is_multiple_of(2), "double free of slot {i}");
        if !g.is_multiple_of(2) {
            return;
        }
        item.set_generation(g.wrapping_add(1));
        self.free.push(i);
    }

    /// Record `i` if it is live with generation `gen`.
    #[inline]
    pub fn get(&self, i: u32, gen: u32) -> Option<&T> {
        self.items
            .get(i as usize)
            .filter(|x| x.generation() == gen && gen.is_multiple_of(2))
    }

    /// Mutable record `i` if it is live with generation `gen`.
    #[inline]
    pub fn get_mut(&mut self, i: u32, gen: u32) -> Option<&mut T> {
        self.items
            .get_mut(i as usize)
            .filter(|x| x.generation() == gen && gen.is_multiple_of(2))
    }

    /// Record `i`, which must be live.
    #[inline]
    pub fn at(&self, i: u32) -> &T {
        debug_assert!(self.is_live(i));
        &self.items[i as usize]
    }

    /// Mutable record `i`, which must be live.
    #[inline]
    pub fn at_mut(&mut self, i: u32) -> &mut T {
        debug_assert!(self.is_live(i));
        &mut self.items[i as usize]
    }

    /// Whether record `i` is live.
    #[inline]
    pub fn is_live(&self, i: u32) -> bool {
        self.items.get(i as usize).is_some_and(|x| x.generation().is_multiple_of(2))
    }

    /// Indices of live records.
    pub fn live_indices(&self) -> impl Iterator<Item = u32> + '_ {
        self.items
            .iter()
            .enumerate()
            .filter(|(_, x)| x.generation().is_multiple_of(2))
            .map(|(i, _)| i as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default, Debug)]
    struct R {
        gen: u32,
        v: u32,
    }
    impl Slot for R {
        fn generation(&self) -> u32 {
            self.gen
        }
        fn set_generation(&mut self, g: u32) {
            self.gen = g;
        }
    }

    #[test]
    fn stale_references_are_refused() {
        let mut s = Slab::new();
        let (a, ga) = s.insert(R { gen: 0, v: 1 });
        s.remove(a);
        assert!(s.get(a, ga).is_none() && !s.is_live(a));
        let (b, gb) = s.insert(R { gen: 0, v: 2 });
        assert_eq!(a, b);
        assert_ne!(ga, gb);
        assert_eq!(s.get(b, gb).map(|r| r.v), Some(2));
        assert_eq!(s.live_indices().collect::<Vec<_>>(), vec![b]);
    }
}
