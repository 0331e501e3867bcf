//! A rolling restart of a real local cluster (either engine): nodes restarted one after another,
//! cold (kill -9, same data, empty caches), the next one when the pace says so, and the record
//! the simulator writes for its gated restarts ([`replica_lb_metrics::rolling::RollingRestart`]).
//!
//! Three paces: `warm` (the next node goes down once the last one is warm by the rule of
//! [`replica_lb_metrics::warm_gate`], or at the time-out), a fixed interval after the last node
//! came back (`cluster rolling-restart --interval-s`), and a fixed stagger between the nodes'
//! kills (a scenario's `gate = "watch"`, as the simulator runs it). Whatever the pace, the gate
//! watches, so every record says when each node got warm and how cold it was when the next one
//! went down. `cluster rolling-restart` and a scenario's gated restart on a real cluster both
//! run [`rolling_restart`].

use crate::gate::{describe, Gate, GateError, Reading, WarmSource};
use replica_lb_cassandra::Engine;
use replica_lb_metrics::rolling::{NodeRestart, RollingRestart};
use replica_lb_metrics::warm_gate::WarmRule;
use std::path::Path;
use std::time::{Duration, Instant};

/// The file `cluster rolling-restart` writes in the cluster directory.
pub const RECORD_FILE: &str = "rolling-restart.json";

/// What lets the next node go down.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pace {
    /// The last restarted node is warm, or `timeout` passed since it came back.
    Warm {
        /// The ceiling on the wait.
        timeout: Duration,
    },
    /// A fixed time after the last node came back.
    AfterUp {
        /// The interval.
        interval: Duration,
    },
    /// A fixed time after the last node went down (the simulator's `watch`).
    Stagger {
        /// From one kill to the next.
        every: Duration,
    },
}

/// A rolling restart's plan.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RollingPlan {
    /// The pace.
    pub pace: Pace,
    /// The rule the gate judges (and the record's verdicts use) whatever the pace.
    pub rule: WarmRule,
    /// The gate's trailing window.
    pub window: Duration,
    /// Seconds each node stays down (the caller's restart keeps it down that long).
    pub down_s: f64,
}

/// A gated rolling restart on the real cluster: its nodes restarted one after another from
/// `at_s`, at the gate's pace ([`rolling_restart`]).
#[derive(Clone, Debug, PartialEq)]
pub struct RealRoll {
    /// The nodes, in restart order.
    pub nodes: Vec<u32>,
    /// When the first goes down, seconds since the start of measurement.
    pub at_s: f64,
    /// The pace, the rule and the window.
    pub plan: RollingPlan,
}

impl RollingPlan {
    /// An empty record of the plan for `planned` nodes: gate `warm`, or `watch` (the rule only
    /// watched) under a fixed pace; the ceiling is the time-out or the interval.
    fn record(&self, planned: usize) -> RollingRestart {
        let (gate, ceiling, interval_s) = match self.pace {
            Pace::Warm { timeout } => ("warm", timeout, None),
            Pace::AfterUp { interval } => ("watch", interval, Some(interval.as_secs_f64())),
            Pace::Stagger { every } => ("watch", every, None),
        };
        let mut r = RollingRestart::new(
            gate,
            self.rule.within(),
            self.window.as_secs() as u32,
            ceiling.as_secs_f64(),
            planned,
        );
        r.interval_s = interval_s;
        r
    }
}

/// What a rolling restart is given to do its work.
pub struct Hooks<'a> {
    /// Restarts a node: kill, down `plan.down_s`, start, wait until it answers.
    pub restart: &'a mut dyn FnMut(u32) -> Result<(), GateError>,
    /// Gets the record after each node (to save it: a run that stops half-way keeps what it
    /// did).
    pub on_node: &'a mut dyn FnMut(&RollingRestart) -> Result<(), GateError>,
    /// True once the restart must stop where it is (an experiment's run ended).
    pub stop: &'a dyn Fn() -> bool,
}

/// Restarts `nodes` of the local cluster in `dir` in that order under `plan` with `hooks`;
/// times are seconds since `origin`. Ends early, with the record so far, when `hooks.stop`
/// says so.
pub fn rolling_restart(
    dir: &Path,
    nodes: &[u32],
    plan: RollingPlan,
    origin: Instant,
    hooks: Hooks<'_>,
    progress: &mut dyn FnMut(&str),
) -> Result<RollingRestart, GateError> {
    let Hooks { restart, on_node, stop } = hooks;
    assert!(!plan.window.is_zero(), "a gate needs a window");
    let engine = replica_lb_cassandra::engine_of(dir).map_err(GateError::failed)?;
    let mut gate = Gate::new(WarmSource::of_dir(dir)?, plan.rule, plan.window)?;
    let mut record = plan.record(nodes.len());
    let at = |t: Instant| t.duration_since(origin).as_secs_f64();
    for (k, &id) in nodes.iter().enumerate() {
        if stop() {
            break;
        }
        progress(&format!("rolling restart: node {id} ({} of {}) goes down", k + 1, nodes.len()));
        let down = Instant::now();
        restart(id)?;
        let mut node = NodeRestart::down(id as usize, at(down));
        node.up_at_s = Some(at(Instant::now()));
        let until = match plan.pace {
            Pace::Warm { timeout } => Instant::now() + timeout,
            Pace::AfterUp { interval } => Instant::now() + interval,
            Pace::Stagger { every } => down + every,
        };
        let name = name_of(engine, id);
        let wait_for_warm = matches!(plan.pace, Pace::Warm { .. });
        let (warm_at, last) = watch(&mut gate, &name, until, wait_for_warm, stop, progress)?;
        node.warm_at_s = warm_at.map(at);
        node.timed_out = warm_at.is_none();
        if let Some(r) = &last {
            if let Some(n) = r.node(&name) {
                node.set_verdict(&n.verdict);
                progress(&format!("rolling restart: {}", describe(n)));
            }
            node.hit_ratios = r.nodes.iter().map(|n| (n.node.clone(), n.hit_ratio)).collect();
        }
        record.nodes.push(node);
        record.tally();
        on_node(&record)?;
    }
    Ok(record)
}

/// Watches node `name` until `until`: under the warm pace only until it is warm, otherwise to
/// `until` whatever happens (the last reading is then the one when the next node goes down).
/// When it was first seen warm, and the last reading.
fn watch(
    gate: &mut Gate,
    name: &str,
    until: Instant,
    wait_for_warm: bool,
    stop: &dyn Fn() -> bool,
    progress: &mut dyn FnMut(&str),
) -> Result<(Option<Instant>, Option<Reading>), GateError> {
    let out = gate.wait_until(Some(name), until, stop, progress)?;
    let warm_at = out.warm.then(Instant::now);
    let mut last = out.last;
    while !wait_for_warm && Instant::now() < until && !stop() {
        gate.pause_until(until);
        if let Some(r) = gate.poll()? {
            last = Some(r);
        }
    }
    Ok((warm_at, last))
}

/// Node `id`'s name in the gate's readings.
fn name_of(engine: Engine, id: u32) -> String {
    match engine {
        Engine::Node => format!("node {id}"),
        Engine::Cassandra => replica_lb_cassandra::config::client_ip(id).to_string(),
    }
}

/// The local cluster's node ids, in id order; at least 2 (the gate compares a node with its
/// peers).
pub fn node_ids(dir: &Path) -> Result<Vec<u32>, GateError> {
    let ids: Vec<u32> = match replica_lb_cassandra::engine_of(dir).map_err(GateError::failed)? {
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

/// Writes `record` to `DIR/rolling-restart.json`.
pub fn write_record(dir: &Path, record: &RollingRestart) -> Result<(), GateError> {
    let path = dir.join(RECORD_FILE);
    let text = serde_json::to_string_pretty(record).map_err(|e| GateError::failed(e.to_string()))?;
    std::fs::write(&path, text + "\n").map_err(|e| GateError::failed(format!("cannot write {}: {e}", path.display())))
}

/// Runs a real plan's gated rolling restarts one after another, each from its `at_s` after
/// `t0` (the start of measurement), with `restart(node, down_s)`; stops where it is once `stop`
/// is set (the measured run ended). The records, in the plan's order.
pub(crate) fn run_rolls(
    rolls: &[RealRoll],
    dir: &Path,
    t0: Instant,
    stop: &std::sync::atomic::AtomicBool,
    restart: &mut dyn FnMut(u32, f64) -> Result<(), GateError>,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<RollingRestart>, GateError> {
    use std::sync::atomic::Ordering;
    let stopped = || stop.load(Ordering::Relaxed);
    let mut out = Vec::with_capacity(rolls.len());
    for roll in rolls {
        let at = t0 + Duration::from_secs_f64(roll.at_s.max(0.0));
        while Instant::now() < at && !stopped() {
            std::thread::sleep(at.saturating_duration_since(Instant::now()).min(Duration::from_millis(100)));
        }
        if stopped() {
            break;
        }
        let down_s = roll.plan.down_s;
        let hooks = Hooks {
            restart: &mut |id| restart(id, down_s),
            on_node: &mut |_| Ok(()),
            stop: &stopped,
        };
        out.push(rolling_restart(dir, &roll.nodes, roll.plan, t0, hooks, progress)?);
    }
    Ok(out)
}

/// Chart markers: (seconds, label).
pub(crate) type Markers = Vec<(f64, String)>;

/// The chart markers of rolling restarts' nodes (`node 2 down`, `node 2 up`), and the first
/// node back (its id and time), as the fault timeline gives them.
pub(crate) fn markers(records: &[RollingRestart]) -> (Markers, Option<(usize, f64)>) {
    let mut marks = Vec::new();
    let mut first_back = None;
    for n in records.iter().flat_map(|r| &r.nodes) {
        marks.push((n.down_at_s, format!("node {} down", n.node)));
        if let Some(up) = n.up_at_s {
            marks.push((up, format!("node {} up", n.node)));
            first_back.get_or_insert((n.node, up));
        }
    }
    (marks, first_back)
}
