//! The benchmark's JSON report and its per-second lines.

use crate::options::{BenchOptions, MultiOptions};
use replica_lb_metrics::{MultiSummary, TailStats, Tally};
use serde::Serialize;

/// What a run counted.
pub struct Totals {
    /// Requests the schedule asked for.
    pub requests: u64,
    /// Every request's end (those still out at the hard end count as time-outs).
    pub total: Tally,
    /// One line per second.
    pub per_second: Vec<SecondReport>,
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
    /// Median latency of the successful requests, ms.
    pub p50_ms: f64,
    /// 99th-percentile latency of the successful requests, ms.
    pub p99_ms: f64,
    /// 99th-percentile latency of every request that ended, a failed or timed-out one at the
    /// time-out, ms.
    pub p99_all_ms: f64,
}

/// The line of second `t_s`, whose requests `tally` counted (`timeout_ns`: the time-out, where
/// a failed request counts in `p99_all_ms`).
pub fn second_line(t_s: usize, tally: &Tally, timeout_ns: u64) -> SecondReport {
    let q = |p: f64| tally.latency().map_or(0.0, |h| h.quantile_ms(p));
    SecondReport {
        t_s,
        completed: tally.completed,
        errors: tally.errors,
        timeouts: tally.timeouts,
        p50_ms: q(0.5),
        p99_ms: q(0.99),
        p99_all_ms: tally.all_latency(timeout_ns).map_or(0.0, |h| h.quantile_ms(0.99)),
    }
}

impl SecondReport {
    /// The human-readable line printed while the benchmark runs.
    pub fn text(&self) -> String {
        format!(
            "t={:>4}s completed={:>7} errors={:>5} timeouts={:>5} p99(every request)={:>8.3}ms completed: p50={:>8.3}ms p99={:>8.3}ms",
            self.t_s, self.completed, self.errors, self.timeouts, self.p99_all_ms, self.p50_ms, self.p99_ms
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
    /// Latency of successful requests, ms, from the intended send time.
    pub latency_ms: TailStats,
    /// Latency of every request, ms, from the intended send time, a failed or timed-out one
    /// counted at the time-out (`timeout_ms`).
    pub latency_all_ms: TailStats,
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

impl BenchReport {
    /// The report of a run of `opts` (and `multi`) that counted `totals`, whose coordinators
    /// `client_policy` chose.
    pub(crate) fn new(opts: &BenchOptions, multi: Option<MultiOptions>, totals: Totals, client_policy: String) -> BenchReport {
        let Totals {
            requests,
            total,
            per_second,
        } = totals;
        let timeout_ns = opts.timeout_ms as u64 * 1_000_000;
        BenchReport {
            requests,
            completed: total.completed,
            errors: total.errors,
            timeouts: total.timeouts,
            latency_ms: total.tail_stats(),
            latency_all_ms: total.all_tail_stats(timeout_ns),
            per_second,
            target_rate: opts.rate,
            achieved_rate: total.completed as f64 / opts.duration_s,
            duration_s: opts.duration_s,
            cl: opts.cl.as_str().to_string(),
            read_fraction: opts.read_fraction,
            client_policy,
            probes_sent: 0,
            feedback_replies: 0,
            multi: multi.map(|_| MultiSummary {
                requests,
                completed: total.completed,
                latency_ms: total.latency().map(|h| h.stats()).unwrap_or_default(),
                latency_all_ms: total.all_latency(timeout_ns).map(|h| h.stats()).unwrap_or_default(),
            }),
            multi_mode: multi.map(|m| m.mode_name()),
            multi_keys: multi.map(|m| m.keys),
            network: None,
        }
    }
}
