//! `summary.json` of a real run: the simulator's format with the `sim` key replaced by
//! `real` {`wall_s`} (keys in the same order).

use metrics::{LatencyStats, NodeTotals, PhaseSummary, RunSummary};
use serde::Serialize;

/// The whole file.
#[derive(Serialize)]
pub struct RealSummary<'a> {
    /// The scenario's name.
    pub scenario: &'a str,
    /// The load generator's seed.
    pub seed: u64,
    /// One per policy, in the order they were asked for.
    pub runs: Vec<RealRunSummary<'a>>,
}

/// One policy's run.
#[derive(Serialize)]
pub struct RealRunSummary<'a> {
    /// The policy item as given.
    pub policy: &'a str,
    /// Requests issued during measurement.
    pub requests: u64,
    /// Requests answered.
    pub completed: u64,
    /// Requests that timed out.
    pub timeouts: u64,
    /// Requests that failed otherwise.
    pub errors: u64,
    /// Latency of every completed request.
    pub latency_ms: &'a LatencyStats,
    /// Latency per named phase.
    pub phases: &'a [PhaseSummary],
    /// Per-node totals.
    pub nodes: &'a [NodeTotals],
    /// Seconds from the restarted node's return until its hit ratio is within 0.05 of its
    /// peers' mean.
    pub warmup_s: Option<f64>,
    /// The run itself.
    pub real: RealStats,
}

/// How the real run went as a computation.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct RealStats {
    /// Wall-clock seconds of the run (cluster start, data, warm-up and measurement).
    pub wall_s: f64,
}

/// Pretty JSON of the real runs, ending with a newline.
pub fn to_json(scenario: &str, seed: u64, runs: &[&RunSummary]) -> String {
    let s = RealSummary {
        scenario,
        seed,
        runs: runs
            .iter()
            .map(|r| RealRunSummary {
                policy: &r.policy,
                requests: r.requests,
                completed: r.completed,
                timeouts: r.timeouts,
                errors: r.errors,
                latency_ms: &r.latency_ms,
                phases: &r.phases,
                nodes: &r.nodes,
                warmup_s: r.warmup_s,
                real: RealStats { wall_s: r.sim.wall_s },
            })
            .collect(),
    };
    // Plain structs of numbers and strings always serialise.
    let mut text = serde_json::to_string_pretty(&s).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use metrics::{Recorder, RecorderConfig};

    #[test]
    fn sim_key_is_replaced_by_real() {
        let r = Recorder::new(RecorderConfig {
            nodes: 1,
            duration_s: 1,
            phases: vec![],
        })
        .unwrap();
        let m = r.finish("naive".into(), None, 0, 12.5);
        let text = to_json("s", 7, &[&m.summary]);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let run = &v["runs"][0];
        assert_eq!(run["real"]["wall_s"], 12.5);
        assert!(run.get("sim").is_none());
        assert_eq!(run["policy"], "naive");
        let keys = [
            "\"policy\"",
            "\"requests\"",
            "\"latency_ms\"",
            "\"phases\"",
            "\"nodes\"",
            "\"warmup_s\"",
            "\"real\"",
        ];
        let pos: Vec<usize> = keys.iter().map(|k| text.find(k).unwrap()).collect();
        assert!(pos.windows(2).all(|w| w[0] < w[1]), "keys in the simulator's order");
    }
}
