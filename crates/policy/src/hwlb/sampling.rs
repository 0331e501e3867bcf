//! Systematic sampling: k distinct replicas with exact inclusion probabilities k * pp[j].
//!
//! Draw one u uniform in [0, 1/k); for i in 0..k take the point u + i/k and select the replica
//! whose cumulative interval of pp contains it. Replica j is included with probability exactly
//! k pp[j], and since pp[j] <= 1/k no interval holds two points, so the k are distinct. (Pick,
//! remove and renormalise does not give these marginals.) One random number per request.

use crate::rng::Rng;
use crate::types::MAX_REPLICAS;

/// A row prepared for sampling: the cumulative upper bounds of each replica's interval.
#[derive(Clone, Copy, Debug)]
pub struct SamplingRow {
    len: u8,
    /// `upper[j]` = pp[0] + ... + pp[j]; the last positive entry is +inf so rounding can never
    /// push a point past it onto a zero-probability replica.
    upper: [f64; MAX_REPLICAS],
}

impl SamplingRow {
    /// Prepares `row` (non-negative, summing to 1, each at most 1/k for the k it is used with).
    pub fn new(row: &[f64]) -> Self {
        assert!(!row.is_empty() && row.len() <= MAX_REPLICAS);
        let mut upper = [0.0; MAX_REPLICAS];
        let mut acc = 0.0;
        let mut last_positive = 0;
        for (j, &p) in row.iter().enumerate() {
            assert!(p >= 0.0, "negative probability {p}");
            acc += p;
            upper[j] = acc;
            if p > 0.0 {
                last_positive = j;
            }
        }
        for u in &mut upper[last_positive..row.len()] {
            *u = f64::INFINITY;
        }
        SamplingRow {
            len: row.len() as u8,
            upper,
        }
    }

    /// The number of replicas in the row.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether the row is empty (never, once built).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Writes the indices of `k` distinct replicas to `out[..k]`, in increasing order.
    #[inline]
    pub fn sample(&self, k: usize, rng: &mut Rng, out: &mut [usize]) {
        let mut slots = out.iter_mut();
        self.sample_each(k, rng, |j| *slots.next().expect("out holds k slots") = j);
    }

    /// Calls `chosen(j)` for each of `k` distinct replica indices, in increasing order.
    #[inline]
    pub fn sample_each(&self, k: usize, rng: &mut Rng, chosen: impl FnMut(usize)) {
        self.sample_each_at(k, rng.unit_f64(), chosen);
    }

    /// [`Self::sample_each`] with the uniform number `unit` in [0, 1) given (shared decision
    /// traces replay a draw exactly).
    #[inline]
    pub fn sample_each_at(&self, k: usize, unit: f64, mut chosen: impl FnMut(usize)) {
        let n = self.len as usize;
        debug_assert!(k >= 1 && k <= n);
        let step = 1.0 / k as f64;
        let u = unit * step;
        let mut j = 0;
        for i in 0..k {
            let point = u + i as f64 * step;
            while point >= self.upper[j] {
                j += 1;
            }
            chosen(j);
            // The next point lies at least 1/k further on and pp[j] <= 1/k: it belongs to a
            // later interval. Starting there also guards against rounding at 1e-16 scale.
            j = (j + 1).min(n - 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_probability_replicas_are_never_chosen() {
        let row = SamplingRow::new(&[0.5, 0.0, 0.5, 0.0]);
        let mut rng = Rng::seed_from_u64(3);
        let mut out = [0usize; 2];
        for _ in 0..10_000 {
            row.sample(2, &mut rng, &mut out);
            assert_eq!(out, [0, 2]);
        }
    }

    #[test]
    fn inclusion_matches_k_times_pp() {
        let pp = [0.1, 0.2, 0.3, 0.15, 0.25];
        let row = SamplingRow::new(&pp);
        let mut rng = Rng::seed_from_u64(9);
        let mut counts = [0u32; 5];
        let mut out = [0usize; 3];
        let draws = 200_000;
        for _ in 0..draws {
            row.sample(3, &mut rng, &mut out);
            assert!(out[0] < out[1] && out[1] < out[2]);
            for &j in &out {
                counts[j] += 1;
            }
        }
        for j in 0..5 {
            let expected = 3.0 * pp[j];
            let got = counts[j] as f64 / draws as f64;
            let se = (expected * (1.0 - expected) / draws as f64).sqrt();
            assert!((got - expected).abs() < 5.0 * se, "replica {j}: {got} vs {expected}");
        }
    }
}
