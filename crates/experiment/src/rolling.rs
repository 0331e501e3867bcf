//! `cluster rolling-restart`: every node of a local cluster restarted one after another, cold
//! (kill -9, same data, empty caches), the next one only when the gate says so, and what the
//! gate saw written to `DIR/rolling-restart.json`.
//!
//! Two gates: `warm` (the next node goes down once the last one is warm by the rule of
//! [`replica_lb_metrics::warm_gate`], or at the time-out) and a fixed interval after the last
//! node came back. Under the interval the gate still watches, so both records say when each node
//! got warm and how cold it was when the next one went down.

use crate::gate::{describe, Gate, GateError, NodeReading, Reading, WarmSource};
use replica_lb_cassandra::Engine;
use replica_lb_metrics::warm_gate::{Verdict, WarmRule};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// The file the restart writes in the cluster directory.
pub const RECORD_FILE: &str = "rolling-restart.json";

/// What lets the next node go down.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RestartGate {
    /// The last restarted node is warm, or `timeout` passed since it came back.
    Warm {
        /// The rule.
        rule: WarmRule,
        /// The trailing window it judges over.
        window: Duration,
        /// The ceiling on the wait.
        timeout: Duration,
    },
    /// A fixed time after the last node came back (the gate watches, and records, meanwhile).
    Interval {
        /// The interval.
        interval: Duration,
        /// The rule the record's verdicts use.
        rule: WarmRule,
        /// Its window.
        window: Duration,
    },
}

/// A rolling restart's plan.
#[derive(Clone, Copy, Debug)]
pub struct RollingPlan {
    /// The gate.
    pub gate: RestartGate,
    /// Seconds each node stays down (the caller's restart keeps it down that long).
    pub down_s: f64,
}

/// One node's restart as the record keeps it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct NodeRestart {
    /// The node id.
    pub node: u32,
    /// When it was killed, seconds since the rolling restart began.
    pub down_at_s: f64,
    /// When it answered again.
    pub up_at_s: f64,
    /// When the gate first saw it warm (`None`: not before the next node went down, or the
    /// time-out).
    pub warm_at_s: Option<f64>,
    /// The gate's verdict on it when the next node went down (or the restart ended).
    pub verdict: Option<Verdict>,
    /// Every node's hit ratio in that reading, by name.
    pub hit_ratios: BTreeMap<String, Option<f64>>,
}

/// The whole record (`rolling-restart.json`).
#[derive(Clone, Debug, serde::Serialize)]
pub struct RollingRecord {
    /// `warm` or `interval`.
    pub gate: &'static str,
    /// The rule's tolerance.
    pub within: f64,
    /// The gate's window, seconds.
    pub window_s: f64,
    /// The warm gate's time-out, seconds (`None` under a fixed interval).
    pub timeout_s: Option<f64>,
    /// The fixed interval, seconds (`None` under the warm gate).
    pub interval_s: Option<f64>,
    /// Seconds each node stayed down.
    pub down_s: f64,
    /// Per node, in restart order.
    pub nodes: Vec<NodeRestart>,
    /// From the first kill until the last node's gate opened, seconds.
    pub total_s: f64,
}

/// Restarts every node of the local cluster in `dir` in id order under `plan`, each with
/// `restart` (kill, down `plan.down_s`, start, wait until it answers), writing the record to
/// `DIR/rolling-restart.json` after each node (a run that stops half-way keeps what it did).
pub fn rolling_restart(
    dir: &Path,
    plan: RollingPlan,
    restart: &mut dyn FnMut(u32) -> Result<(), GateError>,
    progress: &mut dyn FnMut(&str),
) -> Result<RollingRecord, GateError> {
    let (rule, window) = match plan.gate {
        RestartGate::Warm { rule, window, .. } | RestartGate::Interval { rule, window, .. } => (rule, window),
    };
    let engine = replica_lb_cassandra::engine_of(dir).map_err(GateError::failed)?;
    let ids = node_ids(dir, engine)?;
    let mut gate = Gate::new(WarmSource::of_dir(dir)?, rule, window)?;
    let start = Instant::now();
    let mut record = RollingRecord::new(&plan, rule, window);
    for (k, &id) in ids.iter().enumerate() {
        progress(&format!("rolling restart: node {id} ({} of {}) goes down", k + 1, ids.len()));
        let down_at_s = start.elapsed().as_secs_f64();
        restart(id)?;
        let up_at_s = start.elapsed().as_secs_f64();
        let name = name_of(engine, id);
        let (warm_at_s, last) = after_restart(&mut gate, &name, plan.gate, start, progress)?;
        record
            .nodes
            .push(node_record(id, down_at_s, up_at_s, warm_at_s, last.as_ref(), &name));
        record.total_s = start.elapsed().as_secs_f64();
        write_record(dir, &record)?;
    }
    Ok(record)
}

impl RollingRecord {
    /// An empty record of `plan`.
    fn new(plan: &RollingPlan, rule: WarmRule, window: Duration) -> RollingRecord {
        let (gate, timeout_s, interval_s) = match plan.gate {
            RestartGate::Warm { timeout, .. } => ("warm", Some(timeout.as_secs_f64()), None),
            RestartGate::Interval { interval, .. } => ("interval", None, Some(interval.as_secs_f64())),
        };
        RollingRecord {
            gate,
            within: rule.within(),
            window_s: window.as_secs_f64(),
            timeout_s,
            interval_s,
            down_s: plan.down_s,
            nodes: Vec::new(),
            total_s: 0.0,
        }
    }
}

/// Waits after node `name` came back, as the gate says: until warm (or the time-out) or for
/// the interval (noting when it got warm). Returns when it was first seen warm and the last
/// reading.
fn after_restart(
    gate: &mut Gate,
    name: &str,
    how: RestartGate,
    start: Instant,
    progress: &mut dyn FnMut(&str),
) -> Result<(Option<f64>, Option<Reading>), GateError> {
    match how {
        RestartGate::Warm { timeout, .. } => {
            let out = gate.wait(Some(name), timeout, progress)?;
            let warm_at = out.warm.then(|| start.elapsed().as_secs_f64());
            if !out.warm {
                progress(&format!(
                    "rolling restart: {name} not warm after {:.0} s: {}",
                    out.waited_s,
                    out.cold_nodes(gate.names())
                ));
            }
            Ok((warm_at, out.last))
        }
        RestartGate::Interval { interval, .. } => {
            let until = Instant::now() + interval;
            let mut warm_at = None;
            let mut last = None;
            while Instant::now() < until {
                if let Some(r) = gate.poll()? {
                    if warm_at.is_none() && r.node(name).is_some_and(|n| n.warm) {
                        warm_at = Some(start.elapsed().as_secs_f64());
                    }
                    last = Some(r);
                }
                std::thread::sleep(Duration::from_secs(1).min(until.saturating_duration_since(Instant::now())));
            }
            if let Some(n) = last.as_ref().and_then(|r| r.node(name)) {
                progress(&format!("rolling restart: after the interval, {}", describe(n)));
            }
            Ok((warm_at, last))
        }
    }
}

fn node_record(id: u32, down_at_s: f64, up_at_s: f64, warm_at_s: Option<f64>, last: Option<&Reading>, name: &str) -> NodeRestart {
    let own: Option<&NodeReading> = last.and_then(|r| r.node(name));
    NodeRestart {
        node: id,
        down_at_s,
        up_at_s,
        warm_at_s,
        verdict: own.map(|n| n.verdict),
        hit_ratios: last
            .map(|r| r.nodes.iter().map(|n| (n.node.clone(), n.hit_ratio)).collect())
            .unwrap_or_default(),
    }
}

/// Node `id`'s name in the gate's readings.
fn name_of(engine: Engine, id: u32) -> String {
    match engine {
        Engine::Node => format!("node {id}"),
        Engine::Cassandra => replica_lb_cassandra::config::client_ip(id).to_string(),
    }
}

/// The cluster's node ids, in id order (the order the gate's source lists them).
fn node_ids(dir: &Path, engine: Engine) -> Result<Vec<u32>, GateError> {
    let ids: Vec<u32> = match engine {
        Engine::Node => replica_lb_launcher::status(dir)?.iter().map(|n| n.id).collect(),
        Engine::Cassandra => replica_lb_cassandra::status(dir)
            .map_err(GateError::failed)?
            .iter()
            .map(|n| n.id)
            .collect(),
    };
    if ids.len() < 2 {
        return Err(GateError::usage(format!(
            "a rolling restart needs at least 2 nodes (the gate compares a node with its peers); {} has {}",
            dir.display(),
            ids.len()
        )));
    }
    Ok(ids)
}

fn write_record(dir: &Path, record: &RollingRecord) -> Result<(), GateError> {
    let path = dir.join(RECORD_FILE);
    let text = serde_json::to_string_pretty(record).map_err(|e| GateError::failed(e.to_string()))?;
    std::fs::write(&path, text + "\n").map_err(|e| GateError::failed(format!("cannot write {}: {e}", path.display())))
}
