//! `summary.json`: the machine-readable result of a comparison, one entry per policy run.
//! Its keys are a contract checked from outside; keep them exactly.

use crate::latency::LatencyStats;
use serde::Serialize;

/// The whole file.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// The scenario's name.
    pub scenario: String,
    /// The seed every run used.
    pub seed: u64,
    /// One per policy, in the order they were asked for.
    pub runs: Vec<RunSummary>,
}

/// One policy's run.
#[derive(Clone, Debug, Serialize)]
pub struct RunSummary {
    /// The policy item as given (`hwlb`, `random/naive`, ...).
    pub policy: String,
    /// Requests issued during measurement.
    pub requests: u64,
    /// Requests answered.
    pub completed: u64,
    /// Requests that got no answer within the read time-out.
    pub timeouts: u64,
    /// Requests that failed (no live replica could take them).
    pub errors: u64,
    /// Latency of every completed request.
    pub latency_ms: LatencyStats,
    /// Latency per named phase.
    pub phases: Vec<PhaseSummary>,
    /// Per-node totals.
    pub nodes: Vec<NodeTotals>,
    /// Seconds from a restarted node's return until its hit ratio is within 0.05 of its
    /// peers' mean; `None` without a restart (or if it never got there).
    pub warmup_s: Option<f64>,
    /// The run itself.
    pub sim: SimStats,
}

/// Latency during one named phase.
#[derive(Clone, Debug, Serialize)]
pub struct PhaseSummary {
    /// Its name.
    pub name: String,
    /// Start, seconds since measurement start.
    pub start_s: f64,
    /// End, seconds since measurement start.
    pub end_s: f64,
    /// Latency of requests completed in it.
    pub latency_ms: LatencyStats,
}

/// One node's totals over the measured run.
#[derive(Clone, Debug, Serialize)]
pub struct NodeTotals {
    /// Node id.
    pub id: usize,
    /// Replica reads served.
    pub reads: u64,
    /// Row-cache hits.
    pub cache_hits: u64,
    /// Row-cache misses.
    pub cache_misses: u64,
    /// Reads done for itself as coordinator.
    pub local_reads: u64,
    /// Reads sent, as coordinator, to other replicas.
    pub remote_reads: u64,
    /// Reads done for other coordinators (or clients reading directly).
    pub replica_reads: u64,
}

/// How the run went as a computation.
#[derive(Clone, Debug, Serialize)]
pub struct SimStats {
    /// Events processed (simulator) or 0.
    pub events: u64,
    /// Wall-clock seconds (the one field that differs between identical runs).
    pub wall_s: f64,
}

impl Summary {
    /// Pretty JSON, ending with a newline.
    pub fn to_json(&self) -> String {
        // Serialising plain structs of numbers and strings cannot fail.
        let mut s = serde_json::to_string_pretty(self).expect("summary serialises");
        s.push('\n');
        s
    }
}
