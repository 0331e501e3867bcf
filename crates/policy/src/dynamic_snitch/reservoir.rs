//! An exponentially decaying reservoir (forward-decay priority sampling, Cormode et al.; the
//! Codahale/Dropwizard `ExponentiallyDecayingReservoir` Cassandra uses with 100 samples and
//! alpha 0.75): a fixed number of samples, biased toward the last few seconds or so.
//!
//! A sample taken at `t` seconds gets weight `exp(alpha * t)` and priority `weight / u`, `u`
//! uniform in (0, 1]; the reservoir keeps the `capacity` highest priorities. Priorities are kept
//! as logarithms (`alpha * t - ln u`), so no landmark rescaling is ever needed, and weights are
//! taken relative to the newest sample when a quantile is read, so nothing overflows.
//! The reservoir is a binary min-heap on priority: a sample costs O(log capacity), no allocation
//! once full. Beside it the kept values are grouped by value with their summed weights, so a
//! quantile is one pass over the distinct values: Cassandra's samples are whole milliseconds,
//! a few dozen distinct values among a hundred samples.

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

/// The groups' weights are updated in place (a sample's weight added, an evicted one's taken
/// away), so they carry rounding; a bound on it is kept, and past this fraction of the total
/// they are summed again from the samples (far below [`MARGIN`], so the certificate holds).
const MAX_DRIFT: f64 = 1e-12;

/// The fast quantile answers only when the lightest weight is at least `e^MIN_LOG_WEIGHT`
/// (about 1e-287, a normal number with room to spare), so none of ours underflows.
const MIN_LOG_WEIGHT: f64 = -660.0;
/// The fast quantile answers only when the heaviest weight is at most `e^MAX_LOG_SPAN` (about
/// 3e277) times the lightest, so the published computation's weights, relative to the
/// heaviest, stay normal too.
const MAX_LOG_SPAN: f64 = 640.0;

/// One distinct value among the kept samples.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Group {
    value: f64,
    /// The sum of its samples' weights `exp(alpha (t - base))`.
    weight: f64,
    /// How many kept samples have this value (at least 1).
    count: u32,
}

/// A fixed-size, time-biased sample of values.
///
/// The samples are kept as published, a binary min-heap on priority (so eviction is the same);
/// beside them, the distinct values in order with their samples' summed weights
/// `exp(alpha (t - base))`, so that a quantile is one pass over the distinct values (no `exp`
/// per sample, no sort) and a sample costs a binary search among them on top of the heap's.
#[derive(Clone, Debug)]
pub struct DecayingReservoir {
    heap: Vec<Sample>,
    /// The distinct values of the samples, in value order (`total_cmp`), with their weights.
    groups: Vec<Group>,
    /// A bound on the absolute rounding error of every group's weight (and of their sum),
    /// grown by each in-place update, reset when they are summed again.
    drift: f64,
    /// The sum of the groups' weights, kept in place (within `drift`).
    total: f64,
    /// At most the earliest and at least the latest time among the samples, s (for the
    /// certificate's check that no weight underflows).
    earliest_t_s: f64,
    latest_t_s: f64,
    /// The time the weights are relative to, s.
    base_t_s: f64,
    /// The alpha the weights were computed with.
    weights_alpha: f64,
}

impl Default for DecayingReservoir {
    fn default() -> Self {
        DecayingReservoir::new(0)
    }
}

impl DecayingReservoir {
    /// An empty reservoir (allocates `capacity` slots once; the groups grow to the distinct
    /// values seen).
    pub fn new(capacity: usize) -> Self {
        DecayingReservoir {
            heap: Vec::with_capacity(capacity),
            groups: Vec::new(),
            drift: 0.0,
            total: 0.0,
            earliest_t_s: f64::INFINITY,
            latest_t_s: f64::NEG_INFINITY,
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
        self.groups.clear();
        (self.drift, self.total) = (0.0, 0.0);
        (self.earliest_t_s, self.latest_t_s) = (f64::INFINITY, f64::NEG_INFINITY);
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
            self.add_to_group(value, t_s, alpha_per_s);
            true
        } else if capacity > 0 && sample.log_priority > self.heap[0].log_priority {
            let evicted = self.heap[0];
            self.heap[0] = sample;
            self.sift_down(0);
            self.take_from_group(evicted.value, self.weight(evicted.t_s));
            self.add_to_group(value, t_s, alpha_per_s);
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
    /// boundaries, which one pass over the groups' weights computes; where that is closer to `q`
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

    /// The quantile from the groups' weights, `None` when not certain to match the published
    /// rule.
    fn quantile_fast(&self, q: f64) -> Option<f64> {
        let total: f64 = self.groups.iter().map(|g| g.weight).sum();
        // Every weight, ours and the published one (ours relative to the heaviest), must be a
        // normal number (no underflow), so that both are the mathematical weights up to
        // rounding. Checked on the exponents, from the samples' earliest and latest times:
        // the lightest weight at least e^MIN_LOG_WEIGHT, the heaviest at most e^MAX_LOG_SPAN
        // times the lightest (no `exp` per quantile).
        let lightest_log = self.weights_alpha * (self.earliest_t_s - self.base_t_s);
        let span_log = self.weights_alpha * (self.latest_t_s - self.earliest_t_s);
        let normal = lightest_log >= MIN_LOG_WEIGHT && span_log <= MAX_LOG_SPAN; // false for NaN too
        if !(normal && total <= 1e290) {
            return None;
        }
        // The groups' in-place sums must be far closer than the margin.
        let close = self.drift <= MAX_DRIFT * total; // false for NaN too
        if !close {
            return None;
        }
        // The answer is the value of the last group whose cumulative weight before it is at
        // most q of the total.
        let (mut before, mut answer, mut past) = (0.0, None::<(f64, f64)>, None::<f64>);
        for g in &self.groups {
            let ratio = before / total;
            if ratio > q {
                past = Some(ratio);
                break;
            }
            answer = Some((g.value, before));
            before += g.weight;
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

    /// Adds a kept sample to its value's group; sums every group again (moving the base first)
    /// when the sample is far from the base, `alpha_per_s` changed, or the in-place sums
    /// drifted too far.
    fn add_to_group(&mut self, value: f64, t_s: f64, alpha_per_s: f64) {
        let x = alpha_per_s * (t_s - self.base_t_s);
        let near = x.abs() <= REBASE; // false for NaN too
        if alpha_per_s != self.weights_alpha || !near {
            // The heap holds the new sample already.
            self.base_t_s = t_s;
            self.weights_alpha = alpha_per_s;
            self.sum_groups();
            return;
        }
        let w = x.exp();
        self.earliest_t_s = self.earliest_t_s.min(t_s);
        self.latest_t_s = self.latest_t_s.max(t_s);
        let at = self
            .groups
            .partition_point(|g| g.value.total_cmp(&value) == std::cmp::Ordering::Less);
        match self.groups.get_mut(at) {
            Some(g) if g.value.total_cmp(&value) == std::cmp::Ordering::Equal => {
                self.drift += f64::EPSILON * (g.weight + w);
                g.weight += w;
                g.count += 1;
            }
            _ => self.groups.insert(
                at,
                Group {
                    value,
                    weight: w,
                    count: 1,
                },
            ),
        }
        self.drift += f64::EPSILON * (self.total + w);
        self.total += w;
        self.resum_if_drifted();
    }

    /// Takes an evicted sample's weight `w` out of its value's group.
    fn take_from_group(&mut self, value: f64, w: f64) {
        let at = self
            .groups
            .partition_point(|g| g.value.total_cmp(&value) == std::cmp::Ordering::Less);
        let g = self
            .groups
            .get_mut(at)
            .filter(|g| g.value.total_cmp(&value) == std::cmp::Ordering::Equal)
            .expect("an evicted sample's value has a group");
        if g.count == 1 {
            self.groups.remove(at);
        } else {
            self.drift += f64::EPSILON * (g.weight + w);
            g.weight -= w;
            g.count -= 1;
        }
        self.drift += f64::EPSILON * (self.total + w);
        self.total -= w;
    }

    /// Sums the groups again when the bound on their rounding passed [`MAX_DRIFT`] of the total
    /// (an eviction of a heavy sample can leave the rest far lighter than what was taken away).
    fn resum_if_drifted(&mut self) {
        let close = self.drift <= MAX_DRIFT * 0.5 * self.total; // false for NaN too
        if !close {
            self.sum_groups();
        }
    }

    /// Every group's weight summed afresh from the samples (at the current base and alpha).
    fn sum_groups(&mut self) {
        self.groups.clear();
        let (mut earliest, mut latest) = (f64::INFINITY, f64::NEG_INFINITY);
        for i in 0..self.heap.len() {
            let s = self.heap[i];
            earliest = earliest.min(s.t_s);
            latest = latest.max(s.t_s);
            let weight = self.weight(s.t_s);
            self.groups.push(Group {
                value: s.value,
                weight,
                count: 1,
            });
        }
        self.groups.sort_unstable_by(|a, b| a.value.total_cmp(&b.value));
        self.groups.dedup_by(|later, kept| {
            let same = later.value.total_cmp(&kept.value) == std::cmp::Ordering::Equal;
            if same {
                kept.weight += later.weight;
                kept.count += later.count;
            }
            same
        });
        self.total = self.groups.iter().map(|g| g.weight).sum();
        (self.earliest_t_s, self.latest_t_s) = (earliest, latest);
        self.drift = 0.0;
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
        for (alpha, capacity, step_s, whole_ms) in [
            (0.75, 100, 0.003, false),
            (5.0, 20, 0.5, false),
            (0.0, 7, 1.0, false),
            (0.75, 1, 0.01, false),
            // Cassandra's samples: whole milliseconds, a few distinct values, one a second.
            (0.75, 100, 1.0, true),
        ] {
            let mut r = DecayingReservoir::new(capacity);
            let (mut scratch, mut other) = (Vec::new(), Vec::new());
            let (mut t, mut fast) = (0.0, 0);
            for i in 0..20_000u64 {
                if rng.below(3) > 0 {
                    t += step_s * rng.unit_f64();
                }
                let value = if whole_ms {
                    rng.below(12) as f64
                } else if rng.below(4) == 0 {
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

    #[test]
    fn samples_too_far_apart_in_time_are_left_to_the_published_computation() {
        // 1,000 s apart at alpha 0.75: the old sample weighs e^-750 of the new one, below
        // what a normal number holds relative to it, so only the published rule answers.
        let (alpha, mut scratch, mut other) = (0.75, Vec::new(), Vec::new());
        let mut r = DecayingReservoir::new(2);
        assert!(r.update(1.0, 0.0, alpha, 1e-300, 2));
        assert!(r.update(2.0, 1_000.0, alpha, 1.0, 2));
        assert_eq!(r.quantile_fast(0.5), None);
        assert_eq!(r.quantile(0.5, alpha, &mut scratch), r.quantile_published(0.5, alpha, &mut other));
        assert_eq!(r.quantile(0.5, alpha, &mut scratch), Some(2.0));
    }

    #[test]
    fn evicting_the_heaviest_sample_sums_the_groups_again() {
        // A recent sample drawn with u = 1 has a lower priority than two old ones drawn with a
        // tiny u, and is evicted: what is left weighs e^-75 of what was taken away, far below
        // the rounding the in-place sums carried.
        let (alpha, mut scratch, mut other) = (0.75, Vec::new(), Vec::new());
        let mut r = DecayingReservoir::new(2);
        assert!(r.update(5.0, 100.0, alpha, 1.0, 2));
        assert!(r.update(1.0, 0.0, alpha, 1e-300, 2));
        assert!(r.update(2.0, 0.0, alpha, 1e-300, 2));
        assert_eq!(r.len(), 2);
        for q in [0.0, 0.5, 0.99] {
            assert_eq!(r.quantile(q, alpha, &mut scratch), r.quantile_published(q, alpha, &mut other));
        }
        // (0.5 falls exactly between the two equal weights: the published rule decides that.)
        assert_eq!(r.quantile_fast(0.99), Some(2.0), "summed again, the fast path answers");
    }
}
