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

/// A fixed-size, time-biased sample of values.
#[derive(Clone, Debug, Default)]
pub struct DecayingReservoir {
    heap: Vec<Sample>,
}

impl DecayingReservoir {
    /// An empty reservoir (allocates `capacity` slots once).
    pub fn new(capacity: usize) -> Self {
        DecayingReservoir {
            heap: Vec::with_capacity(capacity),
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
    }

    /// Offers `value` observed at `t_s` seconds; `u` in (0, 1] is its random draw.
    pub fn update(&mut self, value: f64, t_s: f64, alpha_per_s: f64, u: f64, capacity: usize) {
        debug_assert!(u > 0.0 && u <= 1.0, "u must be in (0, 1]");
        let sample = Sample {
            log_priority: alpha_per_s * t_s - u.ln(),
            t_s,
            value,
        };
        if self.heap.len() < capacity {
            self.heap.push(sample);
            self.sift_up(self.heap.len() - 1);
        } else if capacity > 0 && sample.log_priority > self.heap[0].log_priority {
            self.heap[0] = sample;
            self.sift_down(0);
        }
    }

    /// The weighted `q`-quantile of the values (Dropwizard's `WeightedSnapshot` rule: the
    /// largest value whose cumulative weight before it is at most `q`), or `None` when empty.
    /// `scratch` is reused between calls (no allocation once it has grown to `capacity`).
    pub fn quantile(&self, q: f64, alpha_per_s: f64, scratch: &mut Vec<(f64, f64)>) -> Option<f64> {
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
}
