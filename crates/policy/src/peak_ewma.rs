//! `peak-ewma`: power of two choices on a peak-sensitive EWMA of round-trip time (Finagle's
//! and tower's/Linkerd's PeakEwma).
//!
//! Per node, `cost` estimates the round-trip time. A sample above the estimate replaces it at
//! once (the peak: react to a slowdown immediately); a lower one is blended in with weight
//! `1 - exp(-dt / tau)`, `dt` the time since the last update (recover slowly, in proportion to
//! elapsed time rather than to sample count). Reading the cost decays it toward 0 for the time
//! elapsed, exactly as a zero-rtt sample would, so a node that stops answering slowly regains
//! traffic. `load = cost * (pending + 1)`; a node never measured starts from `default_rtt_ms`.
//! Two distinct random candidates are compared and the lower load wins (ties: the first drawn).

use crate::nodes::{InFlight, NodeTable};
use crate::order::{scratch, shuffle_prefix, sort_by_score, ScoreBuf};
use crate::params::{ParamDefault as D, ParamSpec, ParamTable, Params, PolicyError};
use crate::policy::{Event, Policy};
use crate::rng::Rng;
use crate::types::{Decision, NodeId, Plan, Request};

/// The name it is registered under.
pub const NAME: &str = "peak-ewma";
/// Its parameters with the published defaults (tower: decay 10 s, default rtt 30 ms).
pub static PARAMS: [ParamSpec; 2] = [
    ParamSpec {
        name: "tau_ms",
        default: D::Float {
            value: 10_000.0,
            min: 0.001,
            max: 86_400_000.0,
        },
        description: "decay time constant of the EWMA (how long a peak is remembered)",
    },
    ParamSpec {
        name: "default_rtt_ms",
        default: D::Float {
            value: 30.0,
            min: 0.0,
            max: 3_600_000.0,
        },
        description: "round-trip time assumed for a node before its first reply",
    },
];

/// One node's peak-EWMA estimate.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PeakEwmaCost {
    /// The estimate, ns; `None` until the node is first seen.
    cost_ns: Option<f64>,
    /// When `cost_ns` was last updated or decayed, ns.
    updated_ns: u64,
}

impl PeakEwmaCost {
    /// The estimate at `now_ns` (decayed toward 0 since the last update), without storing it.
    #[inline]
    pub fn peek(&self, now_ns: u64, tau_ns: f64, default_ns: f64) -> f64 {
        match self.cost_ns {
            None => default_ns,
            Some(c) => c * decay(self.updated_ns, now_ns, tau_ns),
        }
    }

    /// Reads the estimate at `now_ns`, storing the decayed value (tower's read-decays rule).
    #[inline]
    pub fn read(&mut self, now_ns: u64, tau_ns: f64, default_ns: f64) -> f64 {
        self.sample(0.0, now_ns, tau_ns, default_ns)
    }

    /// Folds in a round-trip sample `rtt_ns` at `now_ns`: a peak replaces the estimate, a
    /// lower sample is blended in by elapsed time. Returns the new estimate.
    #[inline]
    pub fn sample(&mut self, rtt_ns: f64, now_ns: u64, tau_ns: f64, default_ns: f64) -> f64 {
        let current = match self.cost_ns {
            None => {
                self.updated_ns = now_ns;
                default_ns
            }
            Some(c) => c,
        };
        let next = if rtt_ns > current {
            rtt_ns
        } else {
            let w = decay(self.updated_ns, now_ns, tau_ns);
            current * w + rtt_ns * (1.0 - w)
        };
        self.cost_ns = Some(next);
        self.updated_ns = self.updated_ns.max(now_ns);
        next
    }
}

/// `exp(-dt / tau)`, 1 when time did not advance.
#[inline]
fn decay(from_ns: u64, to_ns: u64, tau_ns: f64) -> f64 {
    let dt = to_ns.saturating_sub(from_ns) as f64;
    (-dt / tau_ns).exp()
}

/// Power of two choices on peak-EWMA load.
#[derive(Debug)]
pub struct PeakEwma {
    tau_ns: f64,
    default_rtt_ns: f64,
    costs: NodeTable<PeakEwmaCost>,
    in_flight: InFlight,
}

impl PeakEwma {
    /// Builds it from parameter overrides.
    pub fn new(overrides: &ParamTable) -> Result<Self, PolicyError> {
        let params = Params::resolve(NAME, &PARAMS, overrides)?;
        Ok(PeakEwma {
            tau_ns: params.f64("tau_ms") * 1e6,
            default_rtt_ns: params.f64("default_rtt_ms") * 1e6,
            costs: NodeTable::new(),
            in_flight: InFlight::new(),
        })
    }

    /// The current load of `node` (`cost * (pending + 1)`) at `now_ns`, decaying its cost.
    pub fn load(&mut self, node: NodeId, now_ns: u64) -> f64 {
        let pending = self.in_flight.get(node) as f64;
        let cost = match self.costs.get_mut(node) {
            Some(c) => c.read(now_ns, self.tau_ns, self.default_rtt_ns),
            None => self.default_rtt_ns,
        };
        cost * (pending + 1.0)
    }

    /// The cost estimate of `node` at `now_ns`, ns (for tests and reports; does not decay).
    pub fn cost_ns(&self, node: NodeId, now_ns: u64) -> f64 {
        self.costs.value(node).peek(now_ns, self.tau_ns, self.default_rtt_ns)
    }
}

impl Policy for PeakEwma {
    fn plan(&mut self, req: &Request<'_>, now_ns: u64, rng: &mut Rng, out: &mut Plan) -> Decision {
        if !req.plannable() {
            return Decision::Unavailable;
        }
        let (mut order, n) = scratch(req.candidates);
        let order = &mut order[..n];
        let d = 2usize.max(req.count).min(n);
        shuffle_prefix(order, 0, d, rng);
        let mut buf = ScoreBuf::new();
        let scores = buf.fill(d, |i| self.load(order[i], now_ns));
        sort_by_score(&mut order[..d], scores);
        out.set_order(order, req.count);
        Decision::Send
    }

    fn observe(&mut self, event: &Event<'_>, now_ns: u64) {
        self.in_flight.observe(event);
        match *event {
            Event::Sent { node } => {
                let c = self.costs.entry(node);
                if c.cost_ns.is_none() {
                    c.sample(0.0, now_ns, self.tau_ns, self.default_rtt_ns);
                }
            }
            Event::Reply(reply) => {
                self.costs
                    .entry(reply.node)
                    .sample(reply.latency_ns as f64, now_ns, self.tau_ns, self.default_rtt_ns);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;

    #[test]
    fn jumps_to_a_peak_and_decays() {
        let mut p = PeakEwma::new(&ParamTable::new()).unwrap();
        let a = NodeId(0);
        // Unknown: the default rtt.
        assert_eq!(p.cost_ns(a, 0), 30.0 * MS as f64);
        p.on_send(a, 0);
        p.on_reply(&reply(0, 10 * MS), 0);
        // A 10 ms sample at the same instant blends with weight exp(0) = 1 on the old value.
        assert_eq!(p.cost_ns(a, 0), 30.0 * MS as f64);
        // A peak replaces the estimate at once.
        p.on_send(a, S);
        p.on_reply(&reply(0, 200 * MS), S);
        let peak = p.cost_ns(a, S);
        assert_eq!(peak, 200.0 * MS as f64);
        // Lower samples pull it down by elapsed time: after tau the old value weighs 1/e.
        p.on_send(a, 11 * S);
        p.on_reply(&reply(0, 10 * MS), 11 * S);
        let expected = 200.0 * (-1.0f64).exp() + 10.0 * (1.0 - (-1.0f64).exp());
        assert!((p.cost_ns(a, 11 * S) / MS as f64 - expected).abs() < 1e-6);
        // With no samples it decays toward 0 when read.
        let later = p.cost_ns(a, 31 * S);
        assert!((later / p.cost_ns(a, 11 * S) - (-2.0f64).exp()).abs() < 1e-9);
    }

    #[test]
    fn load_counts_pending_and_p2c_prefers_the_cheaper() {
        let mut p = PeakEwma::new(&ParamTable::new()).unwrap();
        let nodes = ids(2);
        for (node, ms) in [(0u16, 50), (1, 5)] {
            p.on_send(NodeId(node), 0);
            p.on_reply(&reply(node, ms * MS), 0);
        }
        let mut rng = Rng::seed_from_u64(1);
        let mut plan = Plan::new();
        p.plan(&req(&nodes, 1), 0, &mut rng, &mut plan);
        assert_eq!(plan.targets(), &[NodeId(1)]);
        assert_eq!(plan.fallbacks(), &[NodeId(0)]);
        // Node 0's 50 ms peak replaced its estimate; node 1's 5 ms sample at t=0 blended with
        // weight 1 on the 30 ms default. 20 pending requests make node 1 costlier: 30 x 21 > 50.
        for _ in 0..20 {
            p.on_send(NodeId(1), 0);
        }
        assert!(p.load(NodeId(1), 0) > p.load(NodeId(0), 0));
        p.plan(&req(&nodes, 1), 0, &mut rng, &mut plan);
        assert_eq!(plan.targets(), &[NodeId(0)]);
    }
}
