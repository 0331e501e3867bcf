//! Latency histograms: HdrHistogram with 3 significant digits over 1 us .. 1 h, recorded in
//! microseconds, plus an exact sum for the mean.

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
        LatencyHistogram { hist, sum_ns: 0, count: 0 }
    }

    /// Records one latency, ns (sub-microsecond values count as 1 us).
    #[inline]
    pub fn record_ns(&mut self, latency_ns: u64) {
        self.hist.saturating_record(recorded_us(latency_ns));
        self.sum_ns += latency_ns as u128;
        self.count += 1;
    }

    /// Adds every value of `other`.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        // Same bounds on both sides: addition cannot fail.
        self.hist.add(&other.hist).expect("histograms with equal bounds");
        self.sum_ns += other.sum_ns;
        self.count += other.count;
    }

    /// Empties it.
    pub fn reset(&mut self) {
        self.hist.reset();
        self.sum_ns = 0;
        self.count = 0;
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
        self.hist.value_at_quantile(q) as f64 / 1000.0
    }

    /// The largest value recorded, ms (0 when empty).
    pub fn max_ms(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        self.hist.max() as f64 / 1000.0
    }

    /// The largest value, us, that shares `us`'s bucket: what a quantile falling on `us`
    /// reports.
    pub(crate) fn highest_equivalent_us(&self, us: u64) -> u64 {
        self.hist.highest_equivalent(us)
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

    #[test]
    fn empty_is_zero() {
        assert_eq!(LatencyHistogram::new().stats(), LatencyStats::default());
    }
}
