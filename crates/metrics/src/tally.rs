//! Requests counted by how they ended, with the latency of the answered ones: what a load
//! generator keeps for a whole run and for each of its seconds.

use crate::latency::{LatencyHistogram, TailStats};

/// How a request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Answered.
    Ok,
    /// Failed (not a time-out).
    Error,
    /// Timed out.
    Timeout,
}

impl Outcome {
    /// How a multi-key request ends that has a part ending `self` and another `other`: a
    /// time-out of any part times the whole request out, else an error fails it.
    pub fn and(self, other: Outcome) -> Outcome {
        match (self, other) {
            (Outcome::Timeout, _) | (_, Outcome::Timeout) => Outcome::Timeout,
            (Outcome::Error, _) | (_, Outcome::Error) => Outcome::Error,
            _ => Outcome::Ok,
        }
    }
}

/// Ended requests by outcome, with the latency of the answered ones (the histogram is made
/// on the first answer, so an idle second costs no allocation).
#[derive(Clone, Debug, Default)]
pub struct Tally {
    /// Answered requests.
    pub completed: u64,
    /// Failed requests (time-outs excluded).
    pub errors: u64,
    /// Timed-out requests.
    pub timeouts: u64,
    latency: Option<LatencyHistogram>,
}

impl Tally {
    /// Counts one request that ended with `outcome`; `latency_ns` counts for answered ones.
    pub fn record(&mut self, outcome: Outcome, latency_ns: u64) {
        match outcome {
            Outcome::Ok => {
                self.completed += 1;
                self.latency.get_or_insert_with(LatencyHistogram::new).record_ns(latency_ns);
            }
            Outcome::Timeout => self.timeouts += 1,
            Outcome::Error => self.errors += 1,
        }
    }

    /// Requests counted, however they ended.
    pub fn ended(&self) -> u64 {
        self.completed + self.errors + self.timeouts
    }

    /// The answered requests' latencies (`None`: none answered).
    pub fn latency(&self) -> Option<&LatencyHistogram> {
        self.latency.as_ref()
    }

    /// The answered requests' latency figures (zeros when none answered).
    pub fn tail_stats(&self) -> TailStats {
        self.latency.as_ref().map(LatencyHistogram::tail_stats).unwrap_or_default()
    }

    /// Every request's latency, a timed-out or failed one at `timeout_ns`
    /// ([`LatencyHistogram::with_failures`]; `None`: nothing ended).
    pub fn all_latency(&self, timeout_ns: u64) -> Option<LatencyHistogram> {
        let failed = self.errors + self.timeouts;
        match &self.latency {
            Some(h) => Some(h.with_failures(failed, timeout_ns)),
            None if failed > 0 => Some(LatencyHistogram::new().with_failures(failed, timeout_ns)),
            None => None,
        }
    }

    /// Every request's latency figures, a timed-out or failed one at `timeout_ns` (zeros when
    /// nothing ended).
    pub fn all_tail_stats(&self, timeout_ns: u64) -> TailStats {
        self.all_latency(timeout_ns)
            .as_ref()
            .map(LatencyHistogram::tail_stats)
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tally_counts_outcomes_and_times_answers_only() {
        let mut t = Tally::default();
        assert_eq!(t.tail_stats(), TailStats::default());
        t.record(Outcome::Ok, 2_000_000);
        t.record(Outcome::Error, 9_000_000_000);
        t.record(Outcome::Timeout, 9_000_000_000);
        assert_eq!((t.completed, t.errors, t.timeouts, t.ended()), (1, 1, 1, 3));
        assert_eq!(t.latency().map(LatencyHistogram::count), Some(1));
        assert_eq!(t.tail_stats().max, 2.0);
        assert_eq!(t.tail_stats().p50, 2.0);
        let json = serde_json::to_string(&t.tail_stats()).unwrap();
        assert_eq!(
            json,
            r#"{"mean":2.0,"p50":2.0,"p95":2.0,"p99":2.0,"p999":2.0,"p9999":2.0,"max":2.0}"#
        );
        let all = t.all_tail_stats(5_000_000_000);
        assert_eq!((all.p50, all.max, t.all_latency(1).map(|h| h.count())), (5000.0, 5000.0, Some(3)));
        assert_eq!(Tally::default().all_tail_stats(1), TailStats::default());
        assert_eq!(Outcome::Ok.and(Outcome::Error), Outcome::Error);
        assert_eq!(Outcome::Error.and(Outcome::Timeout), Outcome::Timeout);
    }
}
