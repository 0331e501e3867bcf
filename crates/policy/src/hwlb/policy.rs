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
    /// The peer table's version when the rates were last checked against this plan.
    checked_version: u64,
    /// Until when those rates cannot change by ageing alone, ns.
    valid_until_ns: u64,
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

    /// Recomputes the plan of `req.group` from the current rates. `None` (and nothing cached)
    /// when a candidate reports no rate: HWLB steps aside.
    fn rebuild(&mut self, req: &Request<'_>, now_ns: u64) -> Option<&CachedPlan> {
        let n = req.candidates.len();
        let mut rates = [0.0; MAX_REPLICAS];
        for (slot, &node) in rates.iter_mut().zip(req.candidates) {
            *slot = self.peers.effective(node, now_ns)?;
        }
        self.recomputes += 1;
        let plan = HwlbPlan::compute(&rates[..n], req.count, &self.config);
        let own = req.local.and_then(|l| req.candidates.iter().position(|&x| x == l));
        let row = match own {
            Some(c) => SamplingRow::new(plan.row(c)),
            None => SamplingRow::new(&plan.shares),
        };
        let mut cached = CachedPlan {
            nodes: [NodeId(0); MAX_REPLICAS],
            rates,
            n,
            count: req.count,
            local: req.local,
            active: plan.active(),
            row,
            checked_version: self.peers.version(),
            valid_until_ns: valid_until(&self.peers, req.candidates, now_ns),
        };
        cached.nodes[..n].copy_from_slice(req.candidates);
        self.plans.insert(req.group, cached);
        self.plans.get(&req.group)
    }
}

/// Until when the effective rates of `nodes` cannot change by ageing alone.
fn valid_until(peers: &PeerRates, nodes: &[NodeId], now_ns: u64) -> u64 {
    nodes
        .iter()
        .map(|&node| peers.fixed_until_ns(node, now_ns))
        .min()
        .unwrap_or(u64::MAX)
}

impl CachedPlan {
    /// Whether this plan was made for exactly this request shape.
    #[inline]
    fn same_shape(&self, req: &Request<'_>) -> bool {
        let n = req.candidates.len();
        self.n == n && self.count == req.count && self.local == req.local && self.nodes[..n] == *req.candidates
    }

    /// Whether every candidate's effective rate at `now_ns` is the one the plan was made from.
    #[inline]
    fn same_rates(&self, req: &Request<'_>, peers: &PeerRates, now_ns: u64) -> bool {
        req.candidates
            .iter()
            .zip(&self.rates[..self.n])
            .all(|(&node, &rate)| peers.effective(node, now_ns) == Some(rate))
    }

    /// Fills `out` for one request: the naive order when inactive, else `count` replicas by
    /// systematic sampling and, if wanted, one extra uniform among the unselected.
    #[inline]
    fn choose(&self, req: &Request<'_>, extra_replica: bool, rng: &mut Rng, out: &mut Plan) {
        if !self.active {
            local_first_then_random(req, rng, out);
            return;
        }
        out.clear();
        let mut chosen: u64 = 0;
        self.row.sample_each(req.count, rng, |j| {
            out.push_target(req.candidates[j]);
            chosen |= 1 << j;
        });
        let n = self.n;
        if extra_replica && n > req.count {
            // The r-th unselected replica, r uniform.
            let mut r = rng.below(n - req.count);
            for j in (0..n).filter(|&j| chosen & (1 << j) == 0) {
                if r == 0 {
                    out.push_fallback(req.candidates[j]);
                    break;
                }
                r -= 1;
            }
        }
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
        if !req.plannable() {
            return Decision::Unavailable;
        }
        if let Some(local) = req.local {
            self.peers.set_local(local);
        }
        if !self.enabled {
            local_first_then_random(req, rng, out);
            return Decision::Send;
        }
        // Fast path: nothing changed since the group's plan was last checked. Otherwise check
        // the rates themselves, and recompute only if they differ.
        if let Some(cached) = self.plans.get_mut(&req.group) {
            if cached.same_shape(req) {
                let version = self.peers.version();
                let unchanged = cached.checked_version == version && now_ns <= cached.valid_until_ns;
                if unchanged || cached.same_rates(req, &self.peers, now_ns) {
                    if !unchanged {
                        cached.checked_version = version;
                        cached.valid_until_ns = valid_until(&self.peers, req.candidates, now_ns);
                    }
                    cached.choose(req, self.extra_replica, rng, out);
                    return Decision::Send;
                }
            }
        }
        let extra_replica = self.extra_replica;
        match self.rebuild(req, now_ns) {
            Some(cached) => cached.choose(req, extra_replica, rng, out),
            // A candidate reports no rate (StepAside::RateUnknown): the naive behaviour.
            None => local_first_then_random(req, rng, out),
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
