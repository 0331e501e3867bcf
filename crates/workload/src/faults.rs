//! The fault timeline, expanded into primitive actions (down, up, pause, resume, set delay,
//! set slow-down) at absolute times, plus the fluctuation processes.

use crate::scenario::{FaultKind, Gate, GateMode, RestartCache, Scenario, StageSel, MAX_FAULT_ACTIONS};

/// A primitive change to one node.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Action {
    /// Crash: the cache lost, or kept for the start (`cache`).
    Down {
        /// What the cache holds when the node starts again.
        cache: RestartCache,
    },
    /// Start again.
    Up,
    /// Freeze.
    Pause,
    /// Thaw.
    Resume,
    /// Set the added delay on messages it sends, ns.
    SetDelay(u64),
    /// Set service-time factors.
    SetSlow {
        /// CPU factor.
        cpu: f64,
        /// Disk factor.
        disk: f64,
    },
}

/// An action at a time.
#[derive(Clone, Copy, Debug)]
pub struct Timed {
    /// Absolute simulated time, ns.
    pub t_ns: u64,
    /// The node.
    pub node: u16,
    /// What.
    pub action: Action,
}

/// A fluctuation process.
#[derive(Clone, Debug)]
pub struct Fluctuation {
    /// First step, absolute ns.
    pub start_ns: u64,
    /// No step at or after this.
    pub end_ns: u64,
    /// Step interval.
    pub interval_ns: u64,
    /// Flip probability per step.
    pub probability: f64,
    /// Slow-down in the slow state.
    pub factor: f64,
    /// Nodes.
    pub nodes: Vec<u16>,
}

/// A rolling restart with a gate: what the engine needs to pace it (`gate = "warm"`) or to
/// watch it (`gate = "watch"`). Only its first node's restart is among the plan's actions
/// when it waits for warmth: the next ones depend on the run, and the engine schedules them.
#[derive(Clone, Debug)]
pub struct Roll {
    /// The nodes, in restart order.
    pub nodes: Vec<u16>,
    /// The gate.
    pub gate: Gate,
    /// How long each node stays down, ns.
    pub down_ns: u64,
    /// What each node's cache holds when it comes back.
    pub cache: RestartCache,
    /// No node goes down at or after this absolute time, ns.
    pub until_ns: u64,
}

/// Every fault of a run.
#[derive(Clone, Debug, Default)]
pub struct FaultPlan {
    /// Primitive actions, by time.
    pub actions: Vec<Timed>,
    /// Fluctuation processes.
    pub fluctuations: Vec<Fluctuation>,
    /// Gated rolling restarts, in file order.
    pub rolls: Vec<Roll>,
}

impl FaultPlan {
    /// Expands the scenario's faults; `measure_ns` is t = 0 of the file, `end_ns` the end.
    pub fn new(sc: &Scenario, measure_ns: u64, end_ns: u64) -> Self {
        let mut plan = FaultPlan::default();
        let abs = |t: i64| -> u64 { (measure_ns as i64 + t).max(0) as u64 };
        for f in &sc.faults {
            let until = f.until_ns.map(abs).unwrap_or(end_ns).min(end_ns);
            if let FaultKind::Fluctuate {
                interval_ns,
                probability,
                factor,
            } = f.kind
            {
                plan.fluctuations.push(Fluctuation {
                    start_ns: abs(f.at_ns),
                    end_ns: until,
                    interval_ns,
                    probability,
                    factor,
                    nodes: f.nodes.clone(),
                });
                continue;
            }
            let (on, off) = match f.kind {
                FaultKind::Restart { cache } => (Action::Down { cache }, Action::Up),
                FaultKind::Pause => (Action::Pause, Action::Resume),
                FaultKind::Delay { added_ns } => (Action::SetDelay(added_ns), Action::SetDelay(0)),
                FaultKind::Slow { factor, stage } => {
                    let (cpu, disk) = match stage {
                        StageSel::Cpu => (factor, 1.0),
                        StageSel::Disk => (1.0, factor),
                        StageSel::All => (factor, factor),
                    };
                    (Action::SetSlow { cpu, disk }, Action::SetSlow { cpu: 1.0, disk: 1.0 })
                }
                FaultKind::Fluctuate { .. } => unreachable!("handled above"),
            };
            // A warm gate's later restarts wait for the run: only the first is planned.
            let planned = match f.gate {
                Some(gate) => {
                    plan.rolls.push(Roll {
                        nodes: f.nodes.clone(),
                        gate,
                        down_ns: f.duration_ns.unwrap_or(0),
                        cache: match f.kind {
                            FaultKind::Restart { cache } => cache,
                            _ => RestartCache::Empty,
                        },
                        until_ns: until,
                    });
                    if gate.mode == GateMode::Warm {
                        1
                    } else {
                        f.nodes.len()
                    }
                }
                None => f.nodes.len(),
            };
            let mut start = abs(f.at_ns);
            loop {
                if start >= until || plan.actions.len() >= MAX_FAULT_ACTIONS {
                    break;
                }
                for (k, &node) in f.nodes[..planned].iter().enumerate() {
                    let at = start + k as u64 * f.stagger_ns;
                    if at >= until {
                        break;
                    }
                    plan.actions.push(Timed {
                        t_ns: at,
                        node,
                        action: on,
                    });
                    if let Some(d) = f.duration_ns {
                        plan.actions.push(Timed {
                            t_ns: at + d,
                            node,
                            action: off,
                        });
                    }
                }
                match f.every_ns {
                    Some(every) => start += every,
                    None => break,
                }
            }
        }
        // Stable: simultaneous actions keep file order.
        plan.actions.sort_by_key(|a| a.t_ns);
        plan
    }
}
