//! What a rolling restart did (summary.json's `rolling_restarts`): when each node went down,
//! came back and was warm by the [`warm_gate`](crate::warm_gate) rule, and how long the
//! whole restart took.

use crate::warm_gate::{Verdict, Warmth};
use serde::Serialize;
use std::collections::BTreeMap;

/// One rolling restart (one `[[fault]]` with a `gate`) of one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RollingRestart {
    /// `warm` (the next node waits for the last one to be warm) or `watch` (a fixed interval,
    /// the rule only watched).
    pub gate: String,
    /// The rule's tolerance (`gate_within`).
    pub within: f64,
    /// The trailing window the rule judges, seconds (`gate_window_s`).
    pub window_s: u32,
    /// The gate's ceiling: how long after a node came back the next one goes down (or, when
    /// watched, its warmth is given up on), seconds (`gate_timeout_s`).
    pub timeout_s: f64,
    /// A real cluster's fixed interval after each node came back (`cluster rolling-restart
    /// --interval-s`), seconds; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval_s: Option<f64>,
    /// Nodes the fault lists.
    pub planned: usize,
    /// Nodes that went down during the run.
    pub restarted: usize,
    /// Nodes given up on at the time-out (not warm by then).
    pub timeouts: usize,
    /// From the first node down to the last node warm (or back up, when it timed out),
    /// seconds; `None` when the run ended before every node was back and judged.
    pub duration_s: Option<f64>,
    /// Each node that went down, in order.
    pub nodes: Vec<NodeRestart>,
}

/// One node of a rolling restart.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NodeRestart {
    /// The node.
    pub node: usize,
    /// When it went down, measured seconds.
    pub down_at_s: f64,
    /// When it came back (`None`: not within the run).
    pub up_at_s: Option<f64>,
    /// When the rule first found it warm (`None`: the time-out came first, or the run ended).
    pub warm_at_s: Option<f64>,
    /// Whether it was given up on at the time-out.
    pub timed_out: bool,
    /// The rule's verdict when the next node went down (the last node: when it was judged
    /// warm or timed out; `None`: never judged).
    pub warmth: Option<Warmth>,
    /// The node's misses per read in that verdict.
    pub misses_per_read: Option<f64>,
    /// The other nodes' median misses per read in that verdict.
    pub peers_median: Option<f64>,
    /// Every node's hit ratio in that reading, by name (a real cluster's gate; absent in the
    /// simulator, whose per-second series has them).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub hit_ratios: BTreeMap<String, Option<f64>>,
}

impl NodeRestart {
    /// Node `node`, down at `down_at_s`; the rest filled as the restart goes.
    pub fn down(node: usize, down_at_s: f64) -> NodeRestart {
        NodeRestart {
            node,
            down_at_s,
            up_at_s: None,
            warm_at_s: None,
            timed_out: false,
            warmth: None,
            misses_per_read: None,
            peers_median: None,
            hit_ratios: BTreeMap::new(),
        }
    }

    /// Keeps `v` as the verdict of this node.
    pub fn set_verdict(&mut self, v: &Verdict) {
        self.warmth = Some(v.warmth);
        self.misses_per_read = v.misses_per_read;
        self.peers_median = v.peers_median;
    }

    /// Its misses per read over its peers' median in the last verdict (2.0: twice as many);
    /// `None` when unread, or when the peers never miss (no ratio says anything there).
    pub fn misses_vs_peers(&self) -> Option<f64> {
        match (self.misses_per_read, self.peers_median) {
            (Some(own), Some(peers)) if peers > 0.0 => Some(own / peers),
            _ => None,
        }
    }

    /// When the node was done: warm, or back up when it timed out; `None` while undecided.
    pub fn done_at_s(&self) -> Option<f64> {
        match (self.warm_at_s, self.timed_out) {
            (Some(w), _) => Some(w),
            (None, true) => self.up_at_s,
            (None, false) => None,
        }
    }
}

impl RollingRestart {
    /// A rolling restart of `planned` nodes under `gate` (`warm` or `watch`) with the rule's
    /// tolerance, window and ceiling; no node restarted yet.
    pub fn new(gate: &str, within: f64, window_s: u32, timeout_s: f64, planned: usize) -> RollingRestart {
        RollingRestart {
            gate: gate.to_string(),
            within,
            window_s,
            timeout_s,
            interval_s: None,
            planned,
            restarted: 0,
            timeouts: 0,
            duration_s: None,
            nodes: Vec::new(),
        }
    }

    /// Fills `restarted`, `timeouts` and `duration_s` from `nodes`.
    pub fn tally(&mut self) {
        self.restarted = self.nodes.len();
        self.timeouts = self.nodes.iter().filter(|n| n.timed_out).count();
        let all_done = self.nodes.len() == self.planned && self.nodes.iter().all(|n| n.done_at_s().is_some());
        self.duration_s = match (all_done, self.nodes.first()) {
            (true, Some(first)) => {
                let last = self.nodes.iter().filter_map(NodeRestart::done_at_s).fold(f64::MIN, f64::max);
                Some(last - first.down_at_s)
            }
            _ => None,
        };
    }

    /// One line for a terminal: `gate warm: 15/15 nodes in 212 s, 1 time-out`.
    pub fn line(&self) -> String {
        let took = self
            .duration_s
            .map_or("not finished within the run".to_string(), |d| format!("in {d:.0} s"));
        let s = if self.timeouts == 1 { "" } else { "s" };
        format!(
            "gate {} (within {}, window {} s): {}/{} nodes {took}, {} time-out{s}",
            self.gate, self.within, self.window_s, self.restarted, self.planned, self.timeouts
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(down: f64, up: f64, warm: Option<f64>) -> NodeRestart {
        NodeRestart {
            up_at_s: Some(up),
            warm_at_s: warm,
            timed_out: warm.is_none(),
            ..NodeRestart::down(0, down)
        }
    }

    #[test]
    fn the_duration_runs_from_the_first_down_to_the_last_done() {
        let mut r = RollingRestart::new("warm", 0.2, 10, 60.0, 2);
        r.nodes = vec![node(10.0, 12.0, Some(30.0)), node(30.0, 32.0, None)];
        r.tally();
        assert_eq!((r.restarted, r.timeouts, r.duration_s), (2, 1, Some(22.0)));
        assert_eq!(r.line(), "gate warm (within 0.2, window 10 s): 2/2 nodes in 22 s, 1 time-out");
        r.planned = 3;
        r.tally();
        assert_eq!(r.duration_s, None, "a node never restarted");
    }
}
