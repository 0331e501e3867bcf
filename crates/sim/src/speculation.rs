//! The speculative-retry threshold of a percentile policy (`speculative_retry = "p99"`), as
//! Cassandra computes it: a percentile of the table's *coordinator* read latency (a read's
//! whole time at its coordinator, speculation included), from a histogram whose counts decay
//! with a mean lifetime of 60 s (Cassandra's `DecayingEstimatedHistogramReservoir`, buckets
//! 1.2x apart), re-read every [`THRESHOLD_INTERVAL_S`] (Cassandra's `SPECULATION_THRESHOLD_UPDATER`
//! runs every `read_request_timeout`, 5 s by default).
//!
//! Why not the last second's replica reads: when one replica slows down, its replies are all
//! slow, their percentile follows its queue up, and a retry that fires that late rescues
//! nothing. The coordinator's latency is bounded by the retries themselves, and the minute-long
//! memory makes the threshold drift up over tens of seconds, as it does in a real cluster.

/// How often the threshold is re-read, s: Cassandra's default `read_request_timeout`.
pub const THRESHOLD_INTERVAL_S: u64 = 5;

/// Buckets: bucket `i` holds latencies up to `FIRST_NS x 1.2^i` (the last one everything above).
const BUCKETS: usize = 128;
/// The first bucket's upper bound, ns.
const FIRST_NS: f64 = 1_000.0;
/// Each bucket's bound over the previous one's.
const GROWTH: f64 = 1.2;
/// Mean lifetime of a sample, s.
const MEAN_LIFETIME_S: f64 = 60.0;

/// A latency histogram whose counts decay exponentially with time.
#[derive(Clone, Debug)]
pub struct DecayingHistogram {
    /// Decayed counts per bucket.
    weights: Box<[f64; BUCKETS]>,
    /// Their sum.
    total: f64,
}

impl Default for DecayingHistogram {
    fn default() -> Self {
        DecayingHistogram {
            weights: Box::new([0.0; BUCKETS]),
            total: 0.0,
        }
    }
}

impl DecayingHistogram {
    /// Adds one latency, ns.
    pub fn record_ns(&mut self, latency_ns: u64) {
        let i = if latency_ns as f64 <= FIRST_NS {
            0
        } else {
            (((latency_ns as f64 / FIRST_NS).ln() / GROWTH.ln()).ceil() as usize).min(BUCKETS - 1)
        };
        self.weights[i] += 1.0;
        self.total += 1.0;
    }

    /// Lets `elapsed_s` seconds pass: every count shrinks by `exp(-elapsed / 60 s)`.
    pub fn decay(&mut self, elapsed_s: f64) {
        let f = (-elapsed_s / MEAN_LIFETIME_S).exp();
        for w in self.weights.iter_mut() {
            *w *= f;
        }
        self.total *= f;
    }

    /// The `quantile` (in [0, 1]) as its bucket's upper bound, ns (`None` when empty).
    pub fn quantile_ns(&self, quantile: f64) -> Option<u64> {
        assert!((0.0..=1.0).contains(&quantile), "a quantile is in [0, 1]: {quantile}");
        if self.total <= 0.0 {
            return None;
        }
        let target = quantile * self.total;
        let mut seen = 0.0;
        for (i, &w) in self.weights.iter().enumerate() {
            seen += w;
            if seen >= target && w > 0.0 {
                return Some((FIRST_NS * GROWTH.powi(i as i32)) as u64);
            }
        }
        let last = self.weights.iter().rposition(|&w| w > 0.0).unwrap_or(0);
        Some((FIRST_NS * GROWTH.powi(last as i32)) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quantile_is_its_buckets_upper_bound() {
        let mut h = DecayingHistogram::default();
        assert_eq!(h.quantile_ns(0.99), None);
        for _ in 0..99 {
            h.record_ns(2_000_000);
        }
        h.record_ns(50_000_000);
        let p50 = h.quantile_ns(0.5).unwrap();
        assert!((2_000_000..2_400_000).contains(&p50), "{p50}");
        let p100 = h.quantile_ns(1.0).unwrap();
        assert!((50_000_000..60_000_000).contains(&p100), "{p100}");
        h.record_ns(0);
        assert_eq!(h.quantile_ns(0.0), Some(1_000));
    }

    /// The median after 100 reads at 2 ms, `elapsed_s` seconds, then 40 reads at 30 ms, ns.
    fn median_after(elapsed_s: f64) -> u64 {
        let mut h = DecayingHistogram::default();
        for _ in 0..100 {
            h.record_ns(2_000_000);
        }
        h.decay(elapsed_s);
        for _ in 0..40 {
            h.record_ns(30_000_000);
        }
        h.quantile_ns(0.5).unwrap()
    }

    #[test]
    fn old_samples_fade_with_a_mean_lifetime_of_a_minute() {
        // A minute on, the old samples weigh 100/e = 37: the 40 slow ones are over half.
        assert!(median_after(60.0) >= 30_000_000);
        // Twenty seconds on, they weigh 100 x 0.72 = 72: the 40 are under half.
        assert!(median_after(20.0) < 3_000_000);
    }
}
