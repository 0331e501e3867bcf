//! The benchmark's JSON report and its per-second lines.

use metrics::{LatencyHistogram, MultiSummary};
use serde::Serialize;

/// Latency percentiles of successful requests, ms, measured from the intended send time.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LatencySummary {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// 99.99th percentile.
    pub p9999: f64,
    /// Largest.
    pub max: f64,
}

impl LatencySummary {
    /// Summarises a latency histogram (the metrics crate's, as the simulator's; zeros when
    /// empty).
    pub fn of(h: &LatencyHistogram) -> LatencySummary {
        LatencySummary {
            mean: h.mean_ms(),
            p50: h.quantile_ms(0.50),
            p95: h.quantile_ms(0.95),
            p99: h.quantile_ms(0.99),
            p999: h.quantile_ms(0.999),
            p9999: h.quantile_ms(0.9999),
            max: h.max_ms(),
        }
    }
}

/// One second of the run (requests that finished during it).
#[derive(Clone, Debug, Serialize)]
pub struct SecondReport {
    /// Seconds since the start (0 = the first second).
    pub t_s: usize,
    /// Successful requests.
    pub completed: u64,
    /// Failed requests (time-outs excluded).
    pub errors: u64,
    /// Timed-out requests.
    pub timeouts: u64,
    /// Median latency, ms.
    pub p50_ms: f64,
    /// 99th-percentile latency, ms.
    pub p99_ms: f64,
}

/// The line of second `t_s`.
pub fn second_line(t_s: usize, completed: u64, errors: u64, timeouts: u64, hist: Option<&LatencyHistogram>) -> SecondReport {
    let q = |p: f64| hist.map_or(0.0, |h| h.quantile_ms(p));
    SecondReport {
        t_s,
        completed,
        errors,
        timeouts,
        p50_ms: q(0.5),
        p99_ms: q(0.99),
    }
}

impl SecondReport {
    /// The human-readable line printed while the benchmark runs.
    pub fn text(&self) -> String {
        format!(
            "t={:>4}s completed={:>7} errors={:>5} timeouts={:>5} p50={:>8.3}ms p99={:>8.3}ms",
            self.t_s, self.completed, self.errors, self.timeouts, self.p50_ms, self.p99_ms
        )
    }
}

/// The whole run: the fields the contract names, then the run's settings.
#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    /// Requests the schedule asked for.
    pub requests: u64,
    /// Successful requests.
    pub completed: u64,
    /// Failed requests (time-outs excluded).
    pub errors: u64,
    /// Timed-out requests.
    pub timeouts: u64,
    /// Latency of successful requests, ms.
    pub latency_ms: LatencySummary,
    /// One entry per second.
    pub per_second: Vec<SecondReport>,
    /// Target rate, requests/s.
    pub target_rate: f64,
    /// Successful requests / duration.
    pub achieved_rate: f64,
    /// Sending time, s.
    pub duration_s: f64,
    /// Consistency level.
    pub cl: String,
    /// Share of reads.
    pub read_fraction: f64,
    /// The client-side policy that chose the coordinators.
    pub client_policy: String,
    /// Probes the policy had sent (Prequal), off the request path.
    pub probes_sent: u64,
    /// Replies that carried the coordinator's feedback record to the policy.
    pub feedback_replies: u64,
    /// With `--multi`: every request above is a multi-key request, summarised again here as
    /// the simulator's summary.json does (`requests`, `completed`, `latency_ms` from the
    /// intended send time to the last key's answer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub multi: Option<MultiSummary>,
    /// With `--multi`: `in` or `parallel`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub multi_mode: Option<&'static str>,
    /// With `--multi`: keys per request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub multi_keys: Option<usize>,
    /// Bytes the node cluster's nodes counted from the run's start to its end (all of their
    /// traffic then, this client's and any other's); absent through the driver, or when a node
    /// did not answer Stats at either end or restarted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<BenchNetwork>,
}

/// Bytes on the network during a bench run, as the nodes count them (docs/cluster.md), with
/// the key names of summary.json's `network`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct BenchNetwork {
    /// Bytes between clients and nodes, both directions.
    pub client_bytes: u64,
    /// Bytes between nodes (each counted once, as sent).
    pub internode_bytes: u64,
}

/// One second's counts and latencies, as both `bench` paths keep them.
#[derive(Default)]
pub(super) struct Second {
    pub(super) completed: u64,
    pub(super) errors: u64,
    pub(super) timeouts: u64,
    pub(super) hist: Option<LatencyHistogram>,
}

impl Second {
    /// A request that ended in this second: `latency_ns` counts for answered ones only.
    pub(super) fn record(&mut self, outcome: super::Outcome, latency_ns: u64) {
        match outcome {
            super::Outcome::Ok => {
                self.completed += 1;
                self.hist.get_or_insert_with(LatencyHistogram::new).record_ns(latency_ns);
            }
            super::Outcome::Timeout => self.timeouts += 1,
            super::Outcome::Error => self.errors += 1,
        }
    }

    /// Its line, as second `t`.
    pub(super) fn line(&self, t: usize) -> SecondReport {
        second_line(t, self.completed, self.errors, self.timeouts, self.hist.as_ref())
    }
}
