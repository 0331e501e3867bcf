//! The hit-rate tracker a node runs for itself (per table).
//!
//! Hits and misses are counted; every tick (published: 10 s) the counts of the tick become
//! instantaneous rates (per second) that feed exponentially weighted moving averages of hits/s
//! and misses/s over a window (published: 1 minute): avg += alpha (instant - avg) with
//! alpha = 1 - exp(-tick / window), the first tick initialising the average (as Scylla's
//! `utils::moving_average`). The hit rate is avg_hits / (avg_hits + avg_misses), 0 when there
//! were no hits. Because it is a moving average, a node's reported rate lags its true one.

/// Published tick of the moving averages.
pub const DEFAULT_TICK_NS: u64 = 10_000_000_000;
/// Published window of the moving averages.
pub const DEFAULT_WINDOW_NS: u64 = 60_000_000_000;

/// Counts a node's cache hits and misses and keeps their moving averages.
#[derive(Clone, Debug)]
pub struct HitRateTracker {
    tick_ns: u64,
    alpha: f64,
    next_tick_ns: u64,
    hits_in_tick: u64,
    misses_in_tick: u64,
    hits_total: u64,
    misses_total: u64,
    /// Moving averages (per second), `None` before the first tick.
    averages: Option<(f64, f64)>,
}

impl HitRateTracker {
    /// A tracker started at `now_ns` with the given tick and window (both positive).
    pub fn new(tick_ns: u64, window_ns: u64, now_ns: u64) -> Self {
        assert!(tick_ns > 0 && window_ns > 0, "tick and window must be positive");
        HitRateTracker {
            tick_ns,
            alpha: 1.0 - (-(tick_ns as f64) / window_ns as f64).exp(),
            next_tick_ns: now_ns + tick_ns,
            hits_in_tick: 0,
            misses_in_tick: 0,
            hits_total: 0,
            misses_total: 0,
            averages: None,
        }
    }

    /// A tracker with the published 10 s tick and 1 minute window.
    pub fn with_defaults(now_ns: u64) -> Self {
        HitRateTracker::new(DEFAULT_TICK_NS, DEFAULT_WINDOW_NS, now_ns)
    }

    /// Counts one cache hit.
    #[inline]
    pub fn record_hit(&mut self) {
        self.hits_in_tick += 1;
        self.hits_total += 1;
    }

    /// Counts one cache miss.
    #[inline]
    pub fn record_miss(&mut self) {
        self.misses_in_tick += 1;
        self.misses_total += 1;
    }

    /// Records `hits` hits and `misses` misses at once (a caller that reads a cache's counters
    /// rather than seeing each lookup).
    #[inline]
    pub fn record(&mut self, hits: u64, misses: u64) {
        self.hits_in_tick += hits;
        self.hits_total += hits;
        self.misses_in_tick += misses;
        self.misses_total += misses;
    }

    /// Advances the averages over every tick that ended at or before `now_ns`. Returns true
    /// when the averages changed (so the caller can publish the new rate).
    pub fn advance(&mut self, now_ns: u64) -> bool {
        if now_ns < self.next_tick_ns {
            return false;
        }
        let tick_s = self.tick_ns as f64 / 1e9;
        let instant = (self.hits_in_tick as f64 / tick_s, self.misses_in_tick as f64 / tick_s);
        self.hits_in_tick = 0;
        self.misses_in_tick = 0;
        let (mut hits, mut misses) = match self.averages {
            None => instant,
            Some((h, m)) => (h + self.alpha * (instant.0 - h), m + self.alpha * (instant.1 - m)),
        };
        // Ticks that passed with no activity recorded at all: each one decays toward zero.
        let idle_ticks = (now_ns - self.next_tick_ns) / self.tick_ns;
        if idle_ticks > 0 {
            let keep = (1.0 - self.alpha).powf(idle_ticks as f64);
            hits *= keep;
            misses *= keep;
        }
        self.averages = Some((hits, misses));
        self.next_tick_ns += (idle_ticks + 1) * self.tick_ns;
        true
    }

    /// The hit rate: avg hits/s / (avg hits/s + avg misses/s); 0 without hits.
    pub fn hit_rate(&self) -> f64 {
        match self.averages {
            Some((h, m)) if h > 0.0 => h / (h + m),
            _ => 0.0,
        }
    }

    /// Moving averages of (hits/s, misses/s); zeros before the first tick.
    pub fn averages_per_s(&self) -> (f64, f64) {
        self.averages.unwrap_or((0.0, 0.0))
    }

    /// All hits counted since the start.
    pub fn hits_total(&self) -> u64 {
        self.hits_total
    }

    /// All misses counted since the start.
    pub fn misses_total(&self) -> u64 {
        self.misses_total
    }

    /// When the next tick ends, ns.
    pub fn next_tick_ns(&self) -> u64 {
        self.next_tick_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn feed(t: &mut HitRateTracker, hits: u64, misses: u64) {
        (0..hits).for_each(|_| t.record_hit());
        (0..misses).for_each(|_| t.record_miss());
    }

    #[test]
    fn zero_until_the_first_tick_and_without_hits() {
        let mut t = HitRateTracker::with_defaults(0);
        feed(&mut t, 80, 20);
        assert_eq!(t.hit_rate(), 0.0);
        assert!(!t.advance(9 * S));
        assert!(t.advance(10 * S));
        assert!((t.hit_rate() - 0.8).abs() < 1e-12);
        assert_eq!(t.averages_per_s(), (8.0, 2.0));

        let mut cold = HitRateTracker::with_defaults(0);
        feed(&mut cold, 0, 50);
        cold.advance(10 * S);
        assert_eq!(cold.hit_rate(), 0.0);
    }

    #[test]
    fn moving_average_follows_the_published_formula() {
        let mut t = HitRateTracker::with_defaults(0);
        feed(&mut t, 0, 100); // tick 1: 0 hits/s, 10 misses/s
        t.advance(10 * S);
        feed(&mut t, 100, 0); // tick 2: 10 hits/s, 0 misses/s
        t.advance(20 * S);
        let alpha = 1.0 - (-10.0f64 / 60.0).exp();
        let (h, m) = t.averages_per_s();
        assert!((h - alpha * 10.0).abs() < 1e-12, "{h}");
        assert!((m - (10.0 - alpha * 10.0)).abs() < 1e-12, "{m}");
        assert!((t.hit_rate() - alpha).abs() < 1e-12);
        // After a minute of all hits (6 more ticks) the rate is near but below 1.
        for i in 3..9 {
            feed(&mut t, 100, 0);
            t.advance(i * 10 * S);
        }
        let expect = 1.0 - (1.0 - alpha).powi(7);
        assert!((t.hit_rate() - expect).abs() < 1e-9, "{} vs {expect}", t.hit_rate());
    }

    #[test]
    fn idle_ticks_decay_both_averages() {
        let mut t = HitRateTracker::new(S, 4 * S, 0);
        feed(&mut t, 10, 10);
        t.advance(S);
        t.advance(4 * S); // three idle ticks in one call
        let alpha = 1.0 - (-0.25f64).exp();
        let keep = (1.0 - alpha).powi(3);
        let (h, m) = t.averages_per_s();
        assert!((h - 10.0 * keep).abs() < 1e-9 && (m - 10.0 * keep).abs() < 1e-9);
        assert!((t.hit_rate() - 0.5).abs() < 1e-12, "the ratio survives decay");
        assert_eq!(t.next_tick_ns(), 5 * S);
    }
}
