//! Gated rolling restarts (a restart `[[fault]]` with a `gate`): the once-a-second check that
//! judges each node back from its restart by [`WarmRule::judge`], and with `gate = "warm"`
//! takes the next node down once the last one is warm (or its time-out expired).
//!
//! The rule judges a node's cache lookups over the trailing `gate_window_s` whole measured
//! seconds, cut to the seconds since it came back (its counters started again at the
//! restart, as a real node's do), against every other node's over the same seconds. A node is
//! found warm only once a whole window has passed since it came back, as `warmup wait` and a
//! real cluster's gate judge it (a node back with its cache kept is not let go on its first
//! second's reads); the verdict recorded when the next node goes down may be over fewer
//! seconds. The check runs on the engine's tick, on every whole measured second; a node the
//! gate lets go goes down at that tick. A node's `down`/`up` are recorded when its fault action runs, so a
//! watched fixed-interval restart (its actions planned in advance) is recorded the same way.
//!
//! [`WarmRule::judge`]: replica_lb_metrics::warm_gate::WarmRule::judge

use super::*;
use replica_lb_metrics::rolling::{NodeRestart, RollingRestart};
use replica_lb_metrics::warm_gate::{CacheWindow, Verdict};
use replica_lb_workload::faults::{Roll, Timed};
use replica_lb_workload::scenario::GateMode;

/// One node of a rolling restart as the run goes, times absolute (ns).
#[derive(Clone, Copy, Debug)]
struct Step {
    node: u16,
    down_ns: u64,
    up_ns: Option<u64>,
    warm_ns: Option<u64>,
    timed_out: bool,
    /// The last verdict kept: when the next node went down, or when this one was decided.
    verdict: Option<Verdict>,
}

impl Step {
    /// Warm, or given up on.
    fn decided(&self) -> bool {
        self.warm_ns.is_some() || self.timed_out
    }
}

/// One gated rolling restart as it goes.
pub(super) struct RollState {
    roll: Roll,
    /// The nodes that went down so far, in order.
    steps: Vec<Step>,
}

impl RollState {
    /// The restart `roll`, nothing done yet.
    pub(super) fn new(roll: Roll) -> RollState {
        RollState { roll, steps: Vec::new() }
    }
}

impl Sim<'_> {
    /// The verdict on `node`, back since `up_ns`, at the current time, and whether it covers
    /// a whole window; `None` before it has been back a whole measured second.
    fn judge_back(
        &self,
        rule: &replica_lb_metrics::warm_gate::WarmRule,
        window_s: u32,
        node: usize,
        up_ns: u64,
    ) -> Option<(Verdict, bool)> {
        let to_s = (self.measured_t()? / SECOND_NS) as u32;
        let back_s = up_ns.checked_sub(self.measure_ns)?.div_ceil(SECOND_NS) as u32;
        let from_s = back_s.max(to_s.saturating_sub(window_s));
        if from_s >= to_s {
            return None;
        }
        let own = self.rec.cache_window(node, from_s, to_s);
        let peers: Vec<CacheWindow> = (0..self.nodes.len())
            .filter(|&p| p != node)
            .map(|p| self.rec.cache_window(p, from_s, to_s))
            .collect();
        Some((rule.judge(own, &peers), to_s - from_s >= window_s))
    }

    /// Node `n` is going down by a fault: when it is the next node of a rolling restart, the
    /// restart records it, and the verdict on the node before it at this moment.
    pub(super) fn roll_down(&mut self, n: usize) {
        for r in 0..self.rolls.len() {
            let roll = &self.rolls[r];
            if roll.roll.nodes.get(roll.steps.len()).map(|&x| x as usize) != Some(n) {
                continue;
            }
            if let Some(prev) = roll.steps.last().copied() {
                let (rule, window_s) = (roll.roll.gate.rule, roll.roll.gate.window_s);
                let v = prev.up_ns.and_then(|up| self.judge_back(&rule, window_s, prev.node as usize, up));
                if let (Some((v, _)), Some(last)) = (v, self.rolls[r].steps.last_mut()) {
                    last.verdict = Some(v);
                }
            }
            let step = Step {
                node: n as u16,
                down_ns: self.now,
                up_ns: None,
                warm_ns: None,
                timed_out: false,
                verdict: None,
            };
            self.rolls[r].steps.push(step);
            return;
        }
    }

    /// Node `n` is back up: the rolling restart it is down for records when.
    pub(super) fn roll_up(&mut self, n: usize) {
        let now = self.now;
        for roll in &mut self.rolls {
            if let Some(step) = roll.steps.iter_mut().rev().find(|s| s.node as usize == n && s.up_ns.is_none()) {
                step.up_ns = Some(now);
                return;
            }
        }
    }

    /// The once-a-second check: each node back and not yet decided is judged (warm, or given
    /// up on at its time-out); a warm gate whose last node is decided takes the next one down.
    pub(super) fn check_rolls(&mut self) {
        for r in 0..self.rolls.len() {
            let (rule, window_s, timeout_ns) = {
                let g = &self.rolls[r].roll.gate;
                (g.rule, g.window_s, g.timeout_ns)
            };
            for k in 0..self.rolls[r].steps.len() {
                let step = self.rolls[r].steps[k];
                let Some(up_ns) = step.up_ns.filter(|_| !step.decided()) else {
                    continue;
                };
                let judged = self.judge_back(&rule, window_s, step.node as usize, up_ns);
                let warm = judged.is_some_and(|(v, whole)| whole && v.warmth.is_warm());
                let v = judged.map(|(v, _)| v);
                let timed_out = !warm && self.now >= up_ns + timeout_ns;
                let last = k + 1 == self.rolls[r].steps.len();
                let s = &mut self.rolls[r].steps[k];
                if warm {
                    s.warm_ns = Some(self.now);
                }
                s.timed_out = timed_out;
                // A node whose successor went down keeps the verdict of that moment.
                if (warm || timed_out) && last {
                    s.verdict = v.or(s.verdict);
                }
            }
            self.next_gated_restart(r);
        }
    }

    /// With a warm gate whose last node is decided, the next node goes down now (and comes
    /// back after the fault's `duration_s`), unless none is left or the fault's `until_s` or
    /// the run's end is past.
    fn next_gated_restart(&mut self, r: usize) {
        let roll = &self.rolls[r];
        let next = roll.steps.len();
        let ready = roll.steps.last().is_some_and(Step::decided);
        if roll.roll.gate.mode != GateMode::Warm || !ready || next >= roll.roll.nodes.len() || self.now >= roll.roll.until_ns {
            return;
        }
        let node = roll.roll.nodes[next];
        let (down, up) = (self.now, self.now + roll.roll.down_ns);
        let cache = roll.roll.cache;
        for (t_ns, action) in [(down, Action::Down { cache }), (up, Action::Up)] {
            let i = self.faults.actions.len() as u32;
            self.faults.actions.push(Timed { t_ns, node, action });
            self.q.push(t_ns, Event::Fault { action: i });
        }
    }

    /// What each rolling restart did, for the run's summary.
    pub(super) fn roll_report(&self) -> Vec<RollingRestart> {
        let measured_s = |ns: u64| (ns as f64 - self.measure_ns as f64) / 1e9;
        self.rolls
            .iter()
            .map(|roll| {
                let gate = roll.roll.gate;
                let nodes = roll
                    .steps
                    .iter()
                    .map(|s| {
                        let mut n = NodeRestart {
                            up_at_s: s.up_ns.map(measured_s),
                            warm_at_s: s.warm_ns.map(measured_s),
                            timed_out: s.timed_out,
                            ..NodeRestart::down(s.node as usize, measured_s(s.down_ns))
                        };
                        if let Some(v) = &s.verdict {
                            n.set_verdict(v);
                        }
                        n
                    })
                    .collect();
                let mut out = RollingRestart::new(
                    gate.mode.name(),
                    gate.rule.within(),
                    gate.window_s,
                    gate.timeout_ns as f64 / 1e9,
                    roll.roll.nodes.len(),
                );
                out.nodes = nodes;
                out.tally();
                out
            })
            .collect()
    }
}
