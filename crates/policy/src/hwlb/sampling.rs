//! Systematic sampling: k distinct replicas with exact inclusion probabilities k * pp[j].
//!
//! Draw one u uniform in [0, 1/k); for i in 0..k take the point u + i/k and select the replica
//! whose cumulative interval of pp contains it. Replica j is included with probability exactly
//! k pp[j], and since pp[j] <= 1/k no interval holds two points, so the k are distinct. (Pick,
//! remove and renormalise does not give these marginals.) One random number per request. Only
//! positive entries are candidates, and point i never goes past the (m - k + i)-th of the m
//! candidates: in floating point a point can round across a bound, and these two rules keep the
//! k distinct and positive all the same (testdata/hwlb-component-vectors.json has such draws).

use crate::rng::Rng;
use crate::types::MAX_REPLICAS;

/// A row prepared for sampling: the cumulative upper bounds of the positive entries' intervals,
/// for rows of at most `N` entries (a cache of many rows keeps small ones).
#[derive(Clone, Copy, Debug)]
pub struct SamplingRow<const N: usize = MAX_REPLICAS> {
    len: u8,
    /// How many entries are candidates: the positive ones (all of them if none is positive).
    candidates: u8,
    /// The candidates' indices in the row, in increasing order.
    index: [u8; N],
    /// `upper[q]` = pp[0] + ... + pp[index[q]]; the last is +inf so rounding can never push a
    /// point past it.
    upper: [f64; N],
}

impl SamplingRow {
    /// Prepares `row` (non-negative, summing to 1, each at most 1/k for the k it is used with).
    pub fn new(row: &[f64]) -> Self {
        SamplingRow::of(row)
    }
}

impl<const N: usize> SamplingRow<N> {
    /// Prepares `row` (as [`SamplingRow::new`]) of at most `N` entries.
    pub fn of(row: &[f64]) -> Self {
        assert!(!row.is_empty() && row.len() <= N && N <= MAX_REPLICAS);
        let mut index = [0u8; N];
        let mut upper = [0.0; N];
        let mut candidates = 0;
        let mut acc = 0.0;
        for (j, &p) in row.iter().enumerate() {
            assert!(p >= 0.0, "negative probability {p}");
            acc += p;
            if p > 0.0 {
                index[candidates] = j as u8;
                upper[candidates] = acc;
                candidates += 1;
            }
        }
        if candidates == 0 {
            // No positive entry: every replica is a candidate, the first k are drawn.
            candidates = row.len();
            for (j, slot) in index[..candidates].iter_mut().enumerate() {
                *slot = j as u8;
            }
        }
        upper[candidates - 1] = f64::INFINITY;
        SamplingRow {
            len: row.len() as u8,
            candidates: candidates as u8,
            index,
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
        self.sample_each_unit(k, rng.unit_f64(), chosen);
    }

    /// As [`SamplingRow::sample_each`], with the uniform number `unit` in [0, 1) given (the
    /// start point is `unit / k`): what the Java `SystematicSampler` takes, so the shared
    /// vectors (`testdata/hwlb-component-vectors.json`) can replay a draw exactly.
    #[inline]
    pub fn sample_each_unit(&self, k: usize, unit: f64, mut chosen: impl FnMut(usize)) {
        let m = self.candidates as usize;
        debug_assert!(k >= 1 && k <= self.len as usize);
        debug_assert!((0.0..1.0).contains(&unit));
        let step = 1.0 / k as f64;
        let u = unit * step;
        let mut q = 0;
        for i in 0..k {
            let point = u + i as f64 * step;
            // Point i can lie no further than candidate m - k + i, so the points after it still
            // have a candidate each. With exact arithmetic that never binds (an interval holds at
            // most one point); it catches rounding: a point that lands on a bound which is a
            // multiple of 1/k rounds into the next interval, and without it the last replica
            // would be drawn twice (unit 1 - 2^-53 with pp = {1/4, 1/4, 1/4, 1/4} and k = 4).
            let last = (m + i).saturating_sub(k);
            while q < last && point >= self.upper[q] {
                q += 1;
            }
            chosen(self.index[q] as usize);
            // The next point belongs to a later interval; zero entries are no candidates, so a
            // point rounded back below a bound never draws one.
            q = (q + 1).min(m - 1);
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

    #[test]
    fn a_point_rounded_across_a_bound_never_draws_twice_nor_a_zero() {
        let top = 1.0 - 1.0 / (1u64 << 53) as f64;
        let mut got = Vec::new();
        SamplingRow::new(&[0.25; 4]).sample_each_unit(4, top, |j| got.push(j));
        assert_eq!(got, [0, 1, 2, 3], "was [0, 2, 3, 3]");
        got.clear();
        SamplingRow::new(&[0.0, 0.49999999999999994, 0.5]).sample_each_unit(2, top, |j| got.push(j));
        assert_eq!(got, [1, 2], "was [2, 2]");
    }
}
