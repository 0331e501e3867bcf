//! Latency histograms: HdrHistogram with 3 significant digits over 1 us .. 1 h, recorded in
//! microseconds, plus an exact sum for the mean.
//!
//! The one definition of a run's percentiles lives here too ([`LatencyHistogram::with_failures`]):
//! over every request, a timed-out or failed one counted at the read time-out, so that a tail
//! never hides its failures (the coordinated-omission mistake in another form). Every report,
//! table and leaderboard takes its all-requests figures from it.

use hdrhistogram::Histogram;
use serde::Serialize;

/// The largest latency a histogram holds, us (one hour); larger values saturate.
pub const MAX_LATENCY_US: u64 = 3_600_000_000;
/// Significant digits kept (0.1% relative error: p99.9 stays trustworthy).
pub const SIGNIFICANT_DIGITS: u8 = 3;

/// A latency distribution: an HdrHistogram in microseconds with the exact sum in ns.
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    hist: Histogram<u64>,
    sum_ns: u128,
    count: u64,
    /// The read time-out, us, once failures were added at it ([`Self::with_failures`]): a
    /// figure that falls in its bucket is reported as the time-out itself (5000 ms, not the
    /// bucket's top, 5001.215 ms).
    exact_us: Option<u64>,
}

/// The latency figures every report shows, in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct LatencyStats {
    /// Exact mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
}

/// [`LatencyStats`] with the far tail (p99.99 and the largest value), ms, rounded to the
/// microsecond: what a benchmark of a real cluster reports (`bench`'s `latency_ms`). Its JSON
/// keys are those of [`LatencyStats`] followed by `p9999` and `max`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct TailStats {
    /// Mean and the percentiles every report shows.
    #[serde(flatten)]
    pub stats: LatencyStats,
    /// 99.99th percentile.
    pub p9999: f64,
    /// Largest.
    pub max: f64,
}

impl std::ops::Deref for TailStats {
    type Target = LatencyStats;

    fn deref(&self) -> &LatencyStats {
        &self.stats
    }
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        LatencyHistogram::new()
    }
}

impl LatencyHistogram {
    /// An empty histogram.
    pub fn new() -> Self {
        // The bounds are constants known to be valid, so creation cannot fail.
        let hist = Histogram::new_with_bounds(1, MAX_LATENCY_US, SIGNIFICANT_DIGITS).expect("valid histogram bounds");
        LatencyHistogram {
            hist,
            sum_ns: 0,
            count: 0,
            exact_us: None,
        }
    }

    /// Records one latency, ns (sub-microsecond values count as 1 us).
    #[inline]
    pub fn record_ns(&mut self, latency_ns: u64) {
        self.hist.saturating_record(recorded_us(latency_ns));
        self.sum_ns += latency_ns as u128;
        self.count += 1;
    }

    /// The distribution of every request: these (completed) ones and `failed` more, each at
    /// `timeout_ns` (a timed-out or failed request counted at the read time-out). Its mean,
    /// percentiles and count are those of every request a run or a span ended.
    pub fn with_failures(&self, failed: u64, timeout_ns: u64) -> LatencyHistogram {
        let mut all = self.clone();
        if failed > 0 {
            let us = recorded_us(timeout_ns);
            all.hist.saturating_record_n(us, failed);
            all.exact_us = Some(us);
            all.sum_ns += timeout_ns as u128 * failed as u128;
            all.count += failed;
        }
        all
    }

    /// Adds every value of `other`.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        // Same bounds on both sides: addition cannot fail.
        self.hist.add(&other.hist).expect("histograms with equal bounds");
        self.sum_ns += other.sum_ns;
        self.count += other.count;
        self.exact_us = self.exact_us.or(other.exact_us);
    }

    /// Empties it.
    pub fn reset(&mut self) {
        self.hist.reset();
        self.sum_ns = 0;
        self.count = 0;
        self.exact_us = None;
    }

    /// How many values.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Exact mean, ms (0 when empty).
    pub fn mean_ms(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum_ns as f64 / self.count as f64 / 1e6
        }
    }

    /// The value at quantile `q` in [0, 1], ms (0 when empty).
    pub fn quantile_ms(&self, q: f64) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        self.reported_us(self.hist.value_at_quantile(q)) as f64 / 1000.0
    }

    /// The largest value recorded, ms (0 when empty).
    pub fn max_ms(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        self.reported_us(self.hist.max()) as f64 / 1000.0
    }

    /// The largest value, us, that shares `us`'s bucket: what a quantile falling on `us`
    /// reports.
    pub(crate) fn highest_equivalent_us(&self, us: u64) -> u64 {
        self.hist.highest_equivalent(us)
    }

    /// What a figure whose bucket tops at `top_us` reports: the top, or the time-out itself
    /// when failures were added at it and it shares that bucket.
    fn reported_us(&self, top_us: u64) -> u64 {
        exact_or_top(self.exact_us, top_us, |us| self.hist.highest_equivalent(us))
    }

    /// Mean, p50, p95, p99 and p99.9, ms, rounded to the microsecond.
    pub fn stats(&self) -> LatencyStats {
        LatencyStats {
            mean: round_us(self.mean_ms()),
            p50: round_us(self.quantile_ms(0.50)),
            p95: round_us(self.quantile_ms(0.95)),
            p99: round_us(self.quantile_ms(0.99)),
            p999: round_us(self.quantile_ms(0.999)),
        }
    }

    /// [`LatencyHistogram::stats`] with p99.99 and the largest value.
    pub fn tail_stats(&self) -> TailStats {
        TailStats {
            stats: self.stats(),
            p9999: round_us(self.quantile_ms(0.9999)),
            max: round_us(self.max_ms()),
        }
    }
}

/// `exact_us` when it lies in the bucket topping at `top_us` (`top_of` gives a value's bucket
/// top), else `top_us`: a failure counted at the read time-out is reported as the time-out.
pub(crate) fn exact_or_top(exact_us: Option<u64>, top_us: u64, top_of: impl Fn(u64) -> u64) -> u64 {
    match exact_us {
        Some(e) if top_of(e) == top_us => e,
        _ => top_us,
    }
}

/// The microseconds a histogram records for `latency_ns`.
#[inline]
pub(crate) fn recorded_us(latency_ns: u64) -> u64 {
    (latency_ns / 1000).clamp(1, MAX_LATENCY_US)
}

/// Rounds milliseconds to whole microseconds (stable, readable JSON).
pub fn round_us(ms: f64) -> f64 {
    (ms * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_accurate_to_three_digits() {
        let mut h = LatencyHistogram::new();
        for i in 1..=100_000u64 {
            h.record_ns(i * 1000); // 1 us .. 100 ms
        }
        let s = h.stats();
        assert!((s.p50 - 50.0).abs() / 50.0 < 0.001, "{s:?}");
        assert!((s.p999 - 99.9).abs() / 99.9 < 0.001, "{s:?}");
        assert!((s.mean - 50.0005).abs() < 1e-3, "{s:?}");
        let mut m = LatencyHistogram::new();
        m.merge(&h);
        m.merge(&h);
        assert_eq!(m.count(), 200_000);
        assert_eq!(m.stats(), s);
    }

    /// 26% of the requests time out: the all-requests p99 is the time-out, the completed ones'
    /// is not; with 0.67% time-outs the all-requests p99 is a completed request's (one rank
    /// further than the completed-only p99) and the p99.9 the time-out.
    #[test]
    fn failures_count_at_the_time_out() {
        let mut h = LatencyHistogram::new();
        for i in 1..=7_400u64 {
            h.record_ns(i * 100_000); // 0.1 .. 740 ms
        }
        let all = h.with_failures(2_600, 5_000_000_000);
        assert_eq!(all.count(), 10_000);
        assert_eq!(all.stats().p99, 5000.0);
        assert!((all.stats().p50 - 500.0).abs() / 500.0 < 0.001, "{:?}", all.stats());
        assert!(h.stats().p99 < 740.0);
        let mean = (h.mean_ms() * 7_400.0 + 5000.0 * 2_600.0) / 10_000.0;
        assert!((all.mean_ms() - mean).abs() < 1e-9);
        let few = h.with_failures(50, 5_000_000_000).stats();
        // Rank ceil(0.99 x 7,450) = 7,376 of the completed: 737.6 ms.
        assert!((few.p99 - 737.6).abs() / 737.6 < 0.001, "{few:?}");
        assert_eq!(few.p999, 5000.0);
        // Failures alone; none at all.
        assert_eq!(LatencyHistogram::new().with_failures(3, 5_000_000_000).stats().p50, 5000.0);
        assert_eq!(h.with_failures(0, 5_000_000_000).stats(), h.stats());
    }

    #[test]
    fn empty_is_zero() {
        assert_eq!(LatencyHistogram::new().stats(), LatencyStats::default());
    }
}
