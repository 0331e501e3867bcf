//! `summary.json`: the machine-readable result of a comparison, one entry per policy run.
//! Its keys are a contract checked from outside; keep them exactly.

use crate::latency::LatencyStats;
use serde::Serialize;

/// The whole file.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// The scenario's name.
    pub scenario: String,
    /// What ran it on a real cluster: `node` or `cassandra` (absent for the simulator).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// The seed every run used.
    pub seed: u64,
    /// What the run was asked: the binary's version, the policies, the `--set` overrides.
    #[serde(flatten)]
    pub asked: Asked,
    /// One per policy, in the order they were asked for.
    pub runs: Vec<RunSummary>,
}

/// What a run was asked, recorded beside its results (summary.json, the report) so that a
/// result says what produced it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Asked {
    /// The version of the binary that ran it (`replica-lb --version`).
    pub version: String,
    /// The policy items run, in order (the `--policy` list, or the scenario's own).
    pub policies: Vec<String>,
    /// The `--set KEY=VALUE` overrides applied to the scenario file, in order (empty: the file
    /// as it is).
    pub overrides: Vec<String>,
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
    /// Latency of every request, a timed-out or failed one counted at the read time-out (the
    /// figures a report leads with).
    pub latency_all_ms: LatencyStats,
    /// Latency per named phase.
    pub phases: Vec<PhaseSummary>,
    /// Per-node totals.
    pub nodes: Vec<NodeTotals>,
    /// Seconds from a restarted node's return until its hit ratio is within 0.05 of its
    /// peers' mean; `None` without a restart (or if it never got there).
    pub warmup_s: Option<f64>,
    /// Multi-key requests (a request for many partitions), apart from the single reads above;
    /// present when the scenario sends them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub multi: Option<MultiSummary>,
    /// Bytes on the network: the simulator's model, or what the real nodes counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkSummary>,
    /// The scenario's rolling restarts with a `gate` (one per such fault, in file order):
    /// when each node went down, came back and was warm; absent without one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rolling_restarts: Vec<crate::rolling::RollingRestart>,
    /// The run itself, as a computation: `"sim": {events, wall_s}` for a simulation,
    /// `"real": {wall_s}` for a run on a real cluster.
    #[serde(flatten)]
    pub run: RunStats,
}

impl RunSummary {
    /// Wall-clock seconds the run took.
    pub fn wall_s(&self) -> f64 {
        match self.run {
            RunStats::Sim(s) => s.wall_s,
            RunStats::Real(r) => r.wall_s,
        }
    }

    /// Events the simulator processed (0 for a real run).
    pub fn events(&self) -> u64 {
        match self.run {
            RunStats::Sim(s) => s.events,
            RunStats::Real(_) => 0,
        }
    }
}

/// What produced a run: the simulator or a real cluster (the key `summary.json` uses).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum RunStats {
    /// A simulation.
    #[serde(rename = "sim")]
    Sim(SimStats),
    /// A run on real processes.
    #[serde(rename = "real")]
    Real(RealStats),
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
    /// Latency of every request that ended in it, a timed-out or failed one counted at the
    /// read time-out.
    pub latency_all_ms: LatencyStats,
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

/// Multi-key requests of a run.
#[derive(Clone, Debug, Serialize)]
pub struct MultiSummary {
    /// Multi-key requests issued during measurement.
    pub requests: u64,
    /// Of those, answered in full (every key).
    pub completed: u64,
    /// Latency of the completed ones, from the client's send until its last key's answer.
    pub latency_ms: LatencyStats,
    /// Latency of every one that ended, a timed-out or failed one counted at the read
    /// time-out.
    pub latency_all_ms: LatencyStats,
}

/// Bytes on the network over the measured run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct NetworkSummary {
    /// Bytes between clients and nodes, both directions.
    pub client_bytes: u64,
    /// Bytes between nodes (coordinators and replicas).
    pub internode_bytes: u64,
    /// The busiest node's busiest second: the larger of its sent and received bits over its
    /// NIC's bits per second, in [0, 1] (0 when NICs are not modelled).
    pub nic_peak_utilization: f64,
}

/// How a simulation went as a computation.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SimStats {
    /// Events processed (simulator) or 0.
    pub events: u64,
    /// Wall-clock seconds (the one field that differs between identical runs).
    pub wall_s: f64,
}

/// How a real run went as a computation.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RealStats {
    /// Wall-clock seconds of the run (cluster start, data, warm-up and measurement).
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

#[cfg(test)]
mod tests {
    use crate::{Asked, RealStats, Recorder, RecorderConfig, RunStats, Summary};

    #[test]
    fn a_real_run_says_real_where_a_simulation_says_sim_in_the_same_place() {
        let r = Recorder::new(RecorderConfig {
            nodes: 1,
            duration_s: 1,
            phases: vec![],
            timeout_ns: 5_000_000_000,
        })
        .unwrap();
        let mut m = r.finish("naive".into(), None, 7, 1.5);
        let asked = Asked {
            version: "0.1.0".into(),
            policies: vec!["naive".into()],
            overrides: vec!["clients.count=2".into()],
        };
        let sim = Summary {
            scenario: "s".into(),
            engine: None,
            seed: 3,
            asked: asked.clone(),
            runs: vec![m.summary.clone()],
        };
        m.summary.run = RunStats::Real(RealStats { wall_s: 12.5 });
        let real = Summary {
            scenario: "s".into(),
            engine: Some("node".into()),
            seed: 3,
            asked,
            runs: vec![m.summary.clone()],
        };
        let (sim, real) = (sim.to_json(), real.to_json());
        let v: serde_json::Value = serde_json::from_str(&real).unwrap();
        assert_eq!(v["runs"][0]["real"]["wall_s"], 12.5);
        assert!(v["runs"][0].get("sim").is_none());
        let v: serde_json::Value = serde_json::from_str(&sim).unwrap();
        assert_eq!(
            (v["version"].as_str(), v["overrides"][0].as_str()),
            (Some("0.1.0"), Some("clients.count=2"))
        );
        assert_eq!(v["policies"], serde_json::json!(["naive"]));
        assert_eq!(v["runs"][0]["latency_all_ms"], v["runs"][0]["latency_ms"], "nothing failed");
        assert_eq!(
            (v["runs"][0]["sim"]["events"].as_u64(), v["runs"][0]["sim"]["wall_s"].as_f64()),
            (Some(7), Some(1.5))
        );
        for text in [&sim, &real] {
            let keys = [
                "\"policy\"",
                "\"requests\"",
                "\"latency_ms\"",
                "\"phases\"",
                "\"nodes\"",
                "\"warmup_s\"",
            ];
            let pos: Vec<usize> = keys.iter().map(|k| text.find(k).unwrap()).collect();
            assert!(pos.windows(2).all(|w| w[0] < w[1]), "keys in order: {text}");
            let last = text.find("\"sim\"").or(text.find("\"real\"")).unwrap();
            assert!(last > pos[5], "the run's key comes last");
        }
    }
}
