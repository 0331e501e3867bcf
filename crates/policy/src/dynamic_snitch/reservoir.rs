//! An exponentially decaying reservoir (forward-decay priority sampling, Cormode et al.; the
//! Codahale/Dropwizard `ExponentiallyDecayingReservoir` Cassandra uses with 100 samples and
//! alpha 0.75): a fixed number of samples, biased toward the last few seconds or so.
//!
//! A sample taken at `t` seconds gets weight `exp(alpha * t)` and priority `weight / u`, `u`
//! uniform in (0, 1]; the reservoir keeps the `capacity` highest priorities. Priorities are kept
//! as logarithms (`alpha * t - ln u`), so no landmark rescaling is ever needed, and weights are
//! taken relative to the newest sample when a quantile is read, so nothing overflows.
//! The reservoir is a binary min-heap on priority: a sample costs O(log capacity), no allocation
//! once full.

/// One kept sample.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Sample {
    log_priority: f64,
    t_s: f64,
    value: f64,
}

/// A weight argument `alpha * (t - base)` beyond this moves the base (far from `exp`'s
/// overflow at 709 and underflow at -708).
const REBASE: f64 = 500.0;

/// The quantile's fast path certifies its answer only when the cumulative weight ratios at the
/// value boundaries that decide it are this far from `q`: far above the rounding of either
/// computation (relative errors below 1e-10 with up to 100,000 samples).
const MARGIN: f64 = 1e-9;

/// A fixed-size, time-biased sample of values.
///
/// The samples are kept as published, a binary min-heap on priority (so eviction is the same);
/// beside them, each sample's value and weight `exp(alpha (t - base))` sorted by value, so that
/// a quantile is one pass over them (no `exp` per sample, no sort) and a sample costs a binary
/// search and a short move on top of the heap's.
#[derive(Clone, Debug, Default)]
pub struct DecayingReservoir {
    heap: Vec<Sample>,
    /// (value, weight) of every sample, in value order (equal values in no particular order).
    sorted: Vec<(f64, f64)>,
    /// The time the weights are relative to, s.
    base_t_s: f64,
    /// The alpha the weights were computed with.
    weights_alpha: f64,
}

impl DecayingReservoir {
    /// An empty reservoir (allocates `capacity` slots once).
    pub fn new(capacity: usize) -> Self {
        DecayingReservoir {
            heap: Vec::with_capacity(capacity),
            sorted: Vec::with_capacity(capacity),
            base_t_s: 0.0,
            weights_alpha: 0.0,
        }
    }

    /// How many samples it holds.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Forgets every sample (keeps the memory).
    pub fn clear(&mut self) {
        self.heap.clear();
        self.sorted.clear();
    }

    /// Offers `value` observed at `t_s` seconds; `u` in (0, 1] is its random draw. Returns
    /// whether the sample was kept (otherwise nothing changed).
    pub fn update(&mut self, value: f64, t_s: f64, alpha_per_s: f64, u: f64, capacity: usize) -> bool {
        debug_assert!(u > 0.0 && u <= 1.0, "u must be in (0, 1]");
        let sample = Sample {
            log_priority: alpha_per_s * t_s - u.ln(),
            t_s,
            value,
        };
        if self.heap.len() < capacity {
            if self.heap.is_empty() {
                self.base_t_s = t_s;
                self.weights_alpha = alpha_per_s;
            }
            self.heap.push(sample);
            self.sift_up(self.heap.len() - 1);
            self.add_sorted(value, t_s, alpha_per_s);
            true
        } else if capacity > 0 && sample.log_priority > self.heap[0].log_priority {
            let evicted = self.heap[0];
            self.heap[0] = sample;
            self.sift_down(0);
            self.remove_sorted(evicted.value, self.weight(evicted.t_s));
            self.add_sorted(value, t_s, alpha_per_s);
            true
        } else {
            false
        }
    }

    /// The weighted `q`-quantile of the values (Dropwizard's `WeightedSnapshot` rule: the
    /// largest value whose cumulative weight before it is at most `q`), or `None` when empty.
    /// `scratch` is reused between calls (no allocation once it has grown to `capacity`).
    ///
    /// The answer is the published computation's, bit for bit: the rule picks a value, and
    /// which value depends only on where `q` falls among the cumulative weights at the value
    /// boundaries, which one pass over the sorted weights computes; where that is closer to `q`
    /// than the rounding of either computation could matter ([`MARGIN`]), or a weight could
    /// underflow, the published computation itself answers.
    pub fn quantile(&self, q: f64, alpha_per_s: f64, scratch: &mut Vec<(f64, f64)>) -> Option<f64> {
        if self.heap.is_empty() {
            return None;
        }
        if alpha_per_s == self.weights_alpha {
            if let Some(v) = self.quantile_fast(q) {
                debug_assert_eq!(Some(v), self.quantile_published(q, alpha_per_s, scratch), "fast quantile");
                return Some(v);
            }
        }
        self.quantile_published(q, alpha_per_s, scratch)
    }

    /// The quantile from the sorted weights, `None` when not certain to match the published
    /// rule.
    fn quantile_fast(&self, q: f64) -> Option<f64> {
        let (mut total, mut lightest, mut heaviest) = (0.0, f64::INFINITY, 0.0f64);
        for &(_, w) in &self.sorted {
            total += w;
            lightest = lightest.min(w);
            heaviest = heaviest.max(w);
        }
        // Every weight, ours and the published one (ours relative to the heaviest), must be a
        // normal number (no underflow), so that both are the mathematical weights up to rounding.
        if !(lightest >= 1e-290 && lightest >= heaviest * 1e-280 && total <= 1e290) {
            return None;
        }
        // The answer is the value of the last group of equal values whose cumulative weight
        // before it is at most q of the total.
        let (mut before, mut answer, mut past) = (0.0, None::<(f64, f64)>, None::<f64>);
        for (i, &(value, w)) in self.sorted.iter().enumerate() {
            if i == 0 || self.sorted[i - 1].0.total_cmp(&value) != std::cmp::Ordering::Equal {
                let ratio = before / total;
                if ratio > q {
                    past = Some(ratio);
                    break;
                }
                answer = Some((value, before));
            }
            before += w;
        }
        let (value, before_answer) = answer?;
        // Certain: the group's own boundary (none before the first group) and the next one's
        // are well on their sides of q.
        let own_certain = before_answer == 0.0 || before_answer / total <= q - MARGIN;
        let next_certain = past.is_none_or(|r| r > q + MARGIN);
        (own_certain && next_certain).then_some(value)
    }

    /// The published computation: every weight relative to the newest sample, the samples
    /// sorted by value, the first whose cumulative weight exceeds `q` ends the walk.
    fn quantile_published(&self, q: f64, alpha_per_s: f64, scratch: &mut Vec<(f64, f64)>) -> Option<f64> {
        if self.heap.is_empty() {
            return None;
        }
        let newest = self.heap.iter().map(|s| s.t_s).fold(f64::NEG_INFINITY, f64::max);
        scratch.clear();
        scratch.extend(self.heap.iter().map(|s| (s.value, (alpha_per_s * (s.t_s - newest)).exp())));
        scratch.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        let total: f64 = scratch.iter().map(|x| x.1).sum();
        let mut before = 0.0;
        let mut answer = scratch[0].0;
        for &(value, w) in scratch.iter() {
            if before / total > q {
                break;
            }
            answer = value;
            before += w;
        }
        Some(answer)
    }

    /// The weight of a sample taken at `t_s`, relative to the base.
    #[inline]
    fn weight(&self, t_s: f64) -> f64 {
        (self.weights_alpha * (t_s - self.base_t_s)).exp()
    }

    /// Adds a kept sample to the sorted weights; moves the base first (weighing every sample
    /// again) when the sample is far from it or `alpha_per_s` changed.
    fn add_sorted(&mut self, value: f64, t_s: f64, alpha_per_s: f64) {
        let x = alpha_per_s * (t_s - self.base_t_s);
        let near = x.abs() <= REBASE; // false for NaN too
        if alpha_per_s != self.weights_alpha || !near {
            // The heap holds the new sample already.
            self.base_t_s = t_s;
            self.weights_alpha = alpha_per_s;
            self.sorted.clear();
            for i in 0..self.heap.len() {
                let s = self.heap[i];
                let w = self.weight(s.t_s);
                self.sorted.push((s.value, w));
            }
            self.sorted.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
            return;
        }
        let w = x.exp();
        let at = self
            .sorted
            .partition_point(|e| e.0.total_cmp(&value) != std::cmp::Ordering::Greater);
        self.sorted.insert(at, (value, w));
    }

    /// Removes an evicted sample's (value, weight) from the sorted weights.
    fn remove_sorted(&mut self, value: f64, w: f64) {
        let from = self.sorted.partition_point(|e| e.0.total_cmp(&value) == std::cmp::Ordering::Less);
        let at = from
            + self.sorted[from..]
                .iter()
                .position(|e| e.1.to_bits() == w.to_bits() && e.0.to_bits() == value.to_bits())
                .expect("an evicted sample is among the sorted weights");
        self.sorted.remove(at);
    }

    fn sift_up(&mut self, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.heap[i].log_priority >= self.heap[parent].log_priority {
                break;
            }
            self.heap.swap(i, parent);
            i = parent;
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut smallest = i;
            if l < n && self.heap[l].log_priority < self.heap[smallest].log_priority {
                smallest = l;
            }
            if r < n && self.heap[r].log_priority < self.heap[smallest].log_priority {
                smallest = r;
            }
            if smallest == i {
                break;
            }
            self.heap.swap(i, smallest);
            i = smallest;
        }
    }
}

/// A deterministic draw in (0, 1] from a sample's identity (the reply path has no RNG argument):
/// the SplitMix64 finaliser of `seed`.
#[inline]
pub fn unit_from_hash(seed: u64) -> f64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    ((z >> 11) + 1) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_a_small_reservoir_is_exact() {
        let mut r = DecayingReservoir::new(100);
        let mut scratch = Vec::new();
        assert_eq!(r.quantile(0.5, 0.75, &mut scratch), None);
        for (i, v) in [5.0, 1.0, 3.0, 2.0, 4.0].into_iter().enumerate() {
            r.update(v, 10.0, 0.75, unit_from_hash(i as u64), 100);
        }
        assert_eq!(r.quantile(0.5, 0.75, &mut scratch), Some(3.0));
    }

    #[test]
    fn keeps_capacity_and_favours_recent_samples() {
        let mut r = DecayingReservoir::new(100);
        let mut scratch = Vec::new();
        // 1000 old samples of 1.0, then 1000 samples of 9.0 ten seconds later.
        for i in 0..1_000u64 {
            r.update(1.0, 0.0, 0.75, unit_from_hash(i), 100);
        }
        for i in 1_000..2_000u64 {
            r.update(9.0, 10.0, 0.75, unit_from_hash(i), 100);
        }
        assert_eq!(r.len(), 100);
        assert_eq!(r.quantile(0.5, 0.75, &mut scratch), Some(9.0));
        assert_eq!(r.quantile(0.0, 0.75, &mut scratch), Some(9.0), "old samples are all evicted");
        r.clear();
        assert!(r.is_empty());
    }

    #[test]
    fn hashed_draws_are_in_the_unit_interval() {
        for i in 0..10_000u64 {
            let u = unit_from_hash(i);
            assert!(u > 0.0 && u <= 1.0);
        }
    }

    #[test]
    fn the_fast_quantile_is_the_published_one() {
        // Random latencies (some equal, some repeated times), evictions, a base that moves
        // (a high alpha over a long run), and a reset: every quantile read both ways.
        let mut rng = crate::Rng::seed_from_u64(11);
        for (alpha, capacity, step_s) in [(0.75, 100, 0.003), (5.0, 20, 0.5), (0.0, 7, 1.0), (0.75, 1, 0.01)] {
            let mut r = DecayingReservoir::new(capacity);
            let (mut scratch, mut other) = (Vec::new(), Vec::new());
            let (mut t, mut fast) = (0.0, 0);
            for i in 0..20_000u64 {
                if rng.below(3) > 0 {
                    t += step_s * rng.unit_f64();
                }
                let value = if rng.below(4) == 0 {
                    2.0
                } else {
                    (rng.below(5_000) as f64 + 1.0) / 1e3
                };
                r.update(value, t, alpha, unit_from_hash(i), capacity);
                if i % 7_001 == 7_000 {
                    r.clear();
                }
                for q in [0.5, 0.0, 0.99] {
                    let published = r.quantile_published(q, alpha, &mut other);
                    assert_eq!(r.quantile(q, alpha, &mut scratch), published, "alpha {alpha} sample {i} q {q}");
                    fast += (!r.is_empty() && r.quantile_fast(q).is_some()) as u32;
                }
            }
            assert!(fast > 50_000, "the fast path answers nearly always: {fast} of 60,000");
        }
    }
}
