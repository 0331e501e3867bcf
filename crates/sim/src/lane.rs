//! A FIFO lane beside the event heap ([`crate::queue`]): events already in key order are
//! appended and taken from the front instead of being sifted through the heap.

/// A FIFO in a power-of-two ring (cheaper per operation than a `VecDeque`: no wrap-around
/// branches, indices masked).
#[derive(Debug)]
pub struct Lane<T: Copy> {
    ring: Vec<T>,
    /// What unused slots hold.
    filler: T,
    /// Index of the head, and of one past the tail, both unmasked (wrapping).
    head: usize,
    tail: usize,
}

impl<T: Copy> Lane<T> {
    /// An empty lane with room for `capacity` items before it grows; `filler` fills unused
    /// slots.
    pub fn with_capacity(capacity: usize, filler: T) -> Lane<T> {
        Lane {
            ring: vec![filler; capacity.max(1).next_power_of_two()],
            filler,
            head: 0,
            tail: 0,
        }
    }

    #[inline(always)]
    fn mask(&self) -> usize {
        self.ring.len() - 1
    }

    /// Items held.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.tail.wrapping_sub(self.head)
    }

    /// Whether it holds nothing.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.head == self.tail
    }

    /// The oldest item.
    #[inline(always)]
    pub fn front(&self) -> Option<&T> {
        (!self.is_empty()).then(|| &self.ring[self.head & self.mask()])
    }

    /// The `i`-th oldest item.
    #[inline(always)]
    pub fn get(&self, i: usize) -> Option<&T> {
        (i < self.len()).then(|| &self.ring[self.head.wrapping_add(i) & self.mask()])
    }

    /// The newest item.
    #[inline(always)]
    pub fn back(&self) -> Option<&T> {
        (!self.is_empty()).then(|| &self.ring[self.tail.wrapping_sub(1) & self.mask()])
    }

    /// Appends an item.
    #[inline(always)]
    pub fn push_back(&mut self, e: T) {
        if self.len() == self.ring.len() {
            self.grow();
        }
        let i = self.tail & self.mask();
        self.ring[i] = e;
        self.tail = self.tail.wrapping_add(1);
    }

    /// Takes the head; the caller has seen that there is one.
    #[inline(always)]
    pub fn pop_front(&mut self) -> T {
        debug_assert!(self.head != self.tail);
        let e = self.ring[self.head & self.mask()];
        self.head = self.head.wrapping_add(1);
        e
    }

    /// Doubles the ring, keeping the order (head moves to index 0).
    #[cold]
    fn grow(&mut self) {
        let mut ring = Vec::with_capacity(self.ring.len() * 2);
        for i in 0..self.len() {
            ring.push(self.ring[self.head.wrapping_add(i) & self.mask()]);
        }
        let len = ring.len();
        ring.resize(self.ring.len() * 2, self.filler);
        self.ring = ring;
        self.head = 0;
        self.tail = len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lane keeps its order across wrap-arounds and growth.
    #[test]
    fn the_lane_is_a_fifo_through_wraps_and_growth() {
        let mut lane = Lane::with_capacity(4, 0u64);
        let (mut pushed, mut popped) = (0u64, 0u64);
        for round in 0..50 {
            for _ in 0..(round % 7 + 1) {
                lane.push_back(pushed);
                pushed += 1;
                assert_eq!(lane.back().copied(), Some(pushed - 1));
            }
            for _ in 0..(round % 5 + 1) {
                if lane.front().is_none() {
                    break;
                }
                assert_eq!(lane.pop_front(), popped);
                popped += 1;
            }
            assert_eq!(lane.len() as u64, pushed - popped);
        }
        assert!(lane.ring.len() > 4, "it grew");
    }
}
