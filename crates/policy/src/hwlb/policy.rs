//! `hwlb` as a coordinator-side policy: rates in through feedback and gossip, one cached plan
//! per replica group, systematic sampling per request.
//!
//! Per request: read each candidate's effective rate (staleness rules applied), compare with
//! the inputs of the group's cached plan, recompute only if they differ (the only allocating
//! step, taken when rates change), then draw `count` replicas from this coordinator's row with
//! one random number. When HWLB steps aside the naive behaviour applies.

use super::peers::PeerRates;
use super::plan::{HwlbPlan, PlanConfig, StepAside, DEFAULT_HIT_RATE_CAP, DEFAULT_MIN_SPREAD};
use super::sampling::SamplingRow;
use crate::order::local_first_then_random;
use crate::params::{ParamDefault as D, ParamSpec, ParamTable, Params, PolicyError};
use crate::policy::Policy;
use crate::rng::Rng;
use crate::types::{Decision, Failure, Feedback, NodeCaps, NodeId, Plan, Reply, Request, Side, MAX_REPLICAS};
use rustc_hash::FxHashMap;

/// The name it is registered under.
pub const NAME: &str = "hwlb";

/// Its parameters with the published defaults.
pub static PARAMS: [ParamSpec; 6] = [
    ParamSpec {
        name: "hit_rate_cap",
        default: D::Float {
            value: DEFAULT_HIT_RATE_CAP,
            min: 0.0,
            max: 0.999,
        },
        description: "hit rates above this count as this (higher starves cold nodes)",
    },
    ParamSpec {
        name: "min_spread",
        default: D::Float {
            value: DEFAULT_MIN_SPREAD,
            min: 0.0,
            max: 1.0,
        },
        description: "step aside when max H - min H is at most this",
    },
    ParamSpec {
        name: "stale_after_ms",
        default: D::Float {
            value: 1000.0,
            min: 0.001,
            max: 86_400_000.0,
        },
        description: "a peer's rate older than this counts as stale_rate",
    },
    ParamSpec {
        name: "stale_rate",
        default: D::Float {
            value: 0.95,
            min: 0.0,
            max: 1.0,
        },
        description: "the rate assumed for a stale peer, so it gets traffic and reports back",
    },
    ParamSpec {
        name: "extra_replica",
        default: D::Bool(true),
        description: "plan one extra replica, uniform among the unselected, for speculative retry",
    },
    ParamSpec {
        name: "enabled",
        default: D::Bool(true),
        description: "false behaves exactly as naive (switch HWLB off without changing policy)",
    },
];

/// Heat-weighted load balancing.
#[derive(Debug)]
pub struct Hwlb {
    params: Params,
    config: PlanConfig,
    extra_replica: bool,
    enabled: bool,
    peers: PeerRates,
    plans: FxHashMap<u64, CachedPlan>,
    recomputes: u64,
}

/// A group's plan, reduced to what the per-request path needs, with the inputs it was made
/// from (to know when to recompute).
#[derive(Clone, Debug)]
struct CachedPlan {
    nodes: [NodeId; MAX_REPLICAS],
    rates: [f64; MAX_REPLICAS],
    n: usize,
    count: usize,
    local: Option<NodeId>,
    active: bool,
    row: SamplingRow,
}

impl Hwlb {
    /// Builds it from parameter overrides.
    pub fn new(overrides: &ParamTable) -> Result<Self, PolicyError> {
        let params = Params::resolve(NAME, &PARAMS, overrides)?;
        let config = PlanConfig {
            hit_rate_cap: params.f64("hit_rate_cap"),
            min_spread: params.f64("min_spread"),
        };
        let stale_after_ns = (params.f64("stale_after_ms") * 1e6) as u64;
        Ok(Hwlb {
            config,
            extra_replica: params.bool("extra_replica"),
            enabled: params.bool("enabled"),
            peers: PeerRates::new(stale_after_ns, params.f64("stale_rate")),
            plans: FxHashMap::default(),
            recomputes: 0,
            params,
        })
    }

    /// How many times a plan was recomputed (rates changed); for tests and reports.
    pub fn recomputes(&self) -> u64 {
        self.recomputes
    }

    /// Switches HWLB on or off at run time (off = naive).
    pub fn set_enabled(&mut self, enabled: bool) {
        self.enabled = enabled;
    }

    /// The plan this coordinator would use for `req` at `now_ns` (for inspection and reports;
    /// the request path uses its cache instead).
    pub fn current_plan(&self, req: &Request<'_>, now_ns: u64) -> HwlbPlan {
        let n = req.candidates.len();
        let mut rates = [0.0; MAX_REPLICAS];
        for (slot, &node) in rates.iter_mut().zip(req.candidates) {
            match self.peers.effective(node, now_ns) {
                Some(r) => *slot = r,
                None => return HwlbPlan::inactive(n, req.count, StepAside::RateUnknown),
            }
        }
        HwlbPlan::compute(&rates[..n], req.count, &self.config)
    }

    fn refresh(&mut self, req: &Request<'_>, rates: &[f64]) -> &CachedPlan {
        let n = req.candidates.len();
        let fresh = match self.plans.get(&req.group) {
            Some(p) => {
                p.n == n && p.count == req.count && p.local == req.local && p.nodes[..n] == *req.candidates && p.rates[..n] == *rates
            }
            None => false,
        };
        if !fresh {
            self.recomputes += 1;
            let plan = HwlbPlan::compute(rates, req.count, &self.config);
            let own = req.local.and_then(|l| req.candidates.iter().position(|&x| x == l));
            let row = match own {
                Some(c) => SamplingRow::new(plan.row(c)),
                None => SamplingRow::new(&plan.shares),
            };
            let mut cached = CachedPlan {
                nodes: [NodeId(0); MAX_REPLICAS],
                rates: [0.0; MAX_REPLICAS],
                n,
                count: req.count,
                local: req.local,
                active: plan.active(),
                row,
            };
            cached.nodes[..n].copy_from_slice(req.candidates);
            cached.rates[..n].copy_from_slice(rates);
            self.plans.insert(req.group, cached);
        }
        &self.plans[&req.group]
    }
}

impl Policy for Hwlb {
    fn name(&self) -> &'static str {
        NAME
    }

    fn side(&self) -> Side {
        Side::Coordinator
    }

    fn params(&self) -> &Params {
        &self.params
    }

    fn plan(&mut self, req: &Request<'_>, now_ns: u64, rng: &mut Rng, out: &mut Plan) -> Decision {
        let n = req.candidates.len();
        if n < req.count || req.count == 0 {
            return Decision::Unavailable;
        }
        if let Some(local) = req.local {
            self.peers.set_local(local);
        }
        let mut rates = [0.0; MAX_REPLICAS];
        let mut known = self.enabled;
        for (slot, &node) in rates.iter_mut().zip(req.candidates) {
            match self.peers.effective(node, now_ns) {
                Some(r) => *slot = r,
                None => known = false,
            }
        }
        // Step aside (StepAside::RateUnknown) when a candidate reports no rate.
        if !known {
            local_first_then_random(req, rng, out);
            return Decision::Send;
        }
        let extra_replica = self.extra_replica;
        let cached = self.refresh(req, &rates[..n]);
        if !cached.active {
            local_first_then_random(req, rng, out);
            return Decision::Send;
        }
        let mut picked = [0usize; MAX_REPLICAS];
        cached.row.sample(req.count, rng, &mut picked);
        out.clear();
        let mut chosen: u64 = 0;
        for &j in &picked[..req.count] {
            out.push_target(req.candidates[j]);
            chosen |= 1 << j;
        }
        if extra_replica && n > req.count {
            // The r-th unselected replica, r uniform.
            let mut r = rng.below(n - req.count);
            for j in 0..n {
                if chosen & (1 << j) == 0 {
                    if r == 0 {
                        out.push_fallback(req.candidates[j]);
                        break;
                    }
                    r -= 1;
                }
            }
        }
        Decision::Send
    }

    fn on_reply(&mut self, reply: &Reply, now_ns: u64) {
        if let Some(rate) = reply.feedback.hit_rate {
            self.peers.record(reply.node, rate, now_ns);
        }
    }

    fn on_failure(&mut self, node: NodeId, failure: Failure, _now_ns: u64) {
        if failure == Failure::ConnectionLost {
            self.peers.forget(node);
        }
    }

    fn on_info(&mut self, node: NodeId, info: &Feedback, now_ns: u64) {
        if let Some(rate) = info.hit_rate {
            self.peers.record(node, rate, now_ns);
        }
    }

    fn on_node_up(&mut self, node: NodeId, caps: NodeCaps, _now_ns: u64) {
        self.peers.forget(node);
        self.peers.set_supported(node, caps.reports_hit_rate);
    }

    fn on_node_down(&mut self, node: NodeId, _now_ns: u64) {
        self.peers.forget(node);
    }
}
