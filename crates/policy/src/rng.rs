//! The random-number generator every policy is handed.
//!
//! Policies never own global randomness: the caller passes `&mut Rng`, so the simulator can
//! replay a run bit for bit from a seed and a real node can give each worker its own stream.
//! The generator is xoshiro256++ (fast, small state, stable output across crate versions); the
//! wrapper keeps the rest of the project independent of the `rand` API of the day.

use rand_core::{Rng as _, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// A deterministic pseudo-random generator (xoshiro256++), seeded from a `u64`.
#[derive(Clone, Debug)]
pub struct Rng(Xoshiro256PlusPlus);

impl Rng {
    /// A generator whose whole output is fixed by `seed`.
    pub fn seed_from_u64(seed: u64) -> Self {
        Rng(Xoshiro256PlusPlus::seed_from_u64(seed))
    }

    /// An independent stream derived from this one (for per-client or per-node generators).
    pub fn fork(&mut self) -> Self {
        Rng::seed_from_u64(self.next_u64())
    }

    /// 64 uniformly random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// A uniform float in [0, 1) with 53 bits of precision.
    #[inline]
    pub fn unit_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A uniform integer in `0..n` (Lemire's multiply-shift; bias below 2^-32 for n < 2^32).
    /// `n` must be positive.
    #[inline]
    pub fn below(&mut self, n: usize) -> usize {
        assert!(n > 0, "Rng::below needs a positive bound");
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }

    /// True with probability `p` (clamped to [0, 1]).
    #[inline]
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit_f64() < p
    }

    /// An exponentially distributed value with the given mean.
    #[inline]
    pub fn exponential(&mut self, mean: f64) -> f64 {
        // 1 - u is in (0, 1], so the logarithm is finite.
        -mean * (1.0 - self.unit_f64()).ln()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream() {
        let mut a = Rng::seed_from_u64(7);
        let mut b = Rng::seed_from_u64(7);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
    }

    #[test]
    fn unit_and_below_stay_in_range() {
        let mut r = Rng::seed_from_u64(1);
        let mut counts = [0u32; 3];
        for _ in 0..30_000 {
            let u = r.unit_f64();
            assert!((0.0..1.0).contains(&u));
            counts[r.below(3)] += 1;
        }
        for c in counts {
            assert!((9_500..10_500).contains(&c), "below(3) is not uniform: {counts:?}");
        }
    }
}
