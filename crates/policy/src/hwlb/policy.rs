//! `hwlb` as a coordinator-side policy: rates in through feedback and gossip, one cached plan
//! per replica group, systematic sampling per request. The same code runs at a client as
//! `hwlb-client` ([`Hwlb::new_client`]): a client is a coordinator that is not a replica, so
//! it draws the replica it sends to with the shares P themselves (k = 1 at CL=ONE, where the
//! coordinator a token-aware client chooses serves the read itself), learning hit rates from
//! replies that carry them or from a poller (the driver adapter's).
//!
//! Per request: read each candidate's effective rate (staleness rules applied), compare with
//! the inputs of the group's cached plan, recompute only if they differ (the only allocating
//! step, taken when rates change), then draw `count` replicas from this coordinator's row with
//! one random number. When HWLB steps aside the naive behaviour applies.

use super::peers::PeerRates;
use super::plan::{HwlbPlan, PlanConfig, PlanScratch, StepAside, DEFAULT_HIT_RATE_CAP, DEFAULT_MIN_SPREAD};
use super::sampling::SamplingRow;
use super::warmup::{self, ColdSplit};
use crate::nodes::NodeTable;
use crate::order::local_first_then_random;
use crate::params::{ParamDefault as D, ParamSpec, ParamTable, Params, PolicyError};
use crate::policy::{Event, Policy};
use crate::rng::Rng;
use crate::types::{Decision, Failure, NodeId, Plan, Request, MAX_REPLICAS};
use rustc_hash::FxHashMap;

/// The name it is registered under.
pub const NAME: &str = "hwlb";
/// The name of its client-side form.
pub const CLIENT_NAME: &str = "hwlb-client";

/// Its parameters with the published defaults.
pub static PARAMS: [ParamSpec; 10] = [
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
    ParamSpec {
        name: "warmup_reads",
        default: D::Float {
            value: 0.0,
            min: 0.0,
            max: 10.0,
        },
        description: "warm-up reads (0 = off, as published): a restarted replica colder than the warmest by more than 0.05 serves no reads of its own while enough others can, and reads keys in the background at this fraction of the pace that gives it its warm peers' misses per second (1 = the same misses per second)",
    },
    ParamSpec {
        name: "warmup_max_in_flight",
        default: D::Int {
            value: 4,
            min: 1,
            max: 1_000_000,
        },
        description: "background reads are skipped while this coordinator has this many reads in flight at the cold replica",
    },
    ParamSpec {
        name: "warmup_ramp_s",
        default: D::Float {
            value: 0.0,
            min: 0.0,
            max: 3_600.0,
        },
        description: "slow start of the warm-up reads: their pace rises linearly from 0 to the whole over this long after the cold replica came up (0 = the whole pace at once)",
    },
    ParamSpec {
        name: "warmup_window_s",
        default: D::Float {
            value: 900.0,
            min: 1.0,
            max: 86_400.0,
        },
        description: "only a replica that came up (restarted) this recently counts as warming: one that stays colder for good (a smaller cache) takes its HWLB share",
    },
];

/// Heat-weighted load balancing.
#[derive(Debug)]
pub struct Hwlb {
    config: PlanConfig,
    extra_replica: bool,
    enabled: bool,
    warmup: Warmup,
    /// This coordinator's reads in flight per node, for the warm-up limit.
    in_flight: NodeTable<u32>,
    /// When each node was last seen coming up, ns; `None` = never, which counts as
    /// `started_ns` (a coordinator that just started sees every node as just up:
    /// itself, restarted with an empty cache, included).
    up_at_ns: NodeTable<Option<u64>>,
    /// The time of this policy's first plan, ns.
    started_ns: Option<u64>,
    peers: PeerRates,
    /// The plans of the replica groups read lately, at most `plans_kept_max` of them.
    plans: FxHashMap<u64, CachedPlan<CACHED_MAX>>,
    /// The most plans kept before the cache starts again ([`PLANS_KEPT`]).
    plans_kept_max: usize,
    recomputes: u64,
    /// The memory plans are recomputed in (no allocation per recomputation).
    scratch: PlanScratch,
}

/// The most replica groups' plans one instance keeps: past it the cache is emptied and starts
/// again. A coordinator coordinates a few dozen groups (RF x vnodes: 48 with RF 3 and 16
/// vnodes), all kept; a client of a large cluster reads thousands, each rarely (once in minutes
/// for a client of 2,000 nodes), so their plans are seldom reused and keeping them all cost it
/// about 2 MB. A plan is a function of its group's candidates and rates alone (recomputed when a
/// rate changes), so a plan dropped and recomputed is the same plan: decisions do not depend on
/// this bound, only memory and speed.
pub const PLANS_KEPT: usize = 64;

/// The most candidates of a plan kept in the cache: a few words each (a coordinator keeps one
/// per replica group it coordinates); a larger plan is recomputed per request.
const CACHED_MAX: usize = 8;

/// A group's plan, reduced to what the per-request path needs, with the inputs it was made
/// from (to know when to recompute), for at most `N` candidates.
#[derive(Clone, Debug)]
struct CachedPlan<const N: usize> {
    nodes: [NodeId; N],
    rates: [f64; N],
    n: usize,
    count: usize,
    local: Option<NodeId>,
    active: bool,
    row: SamplingRow<N>,
    /// A candidate's expected cache misses per read ([`warmup::misses_per_read`]).
    misses_per_read: f64,
    /// The peer table's version when the rates were last checked against this plan.
    checked_version: u64,
    /// Until when those rates cannot change by ageing alone, ns.
    valid_until_ns: u64,
}

/// Warm-up reads: background reads that fill a cold replica's cache off the request path.
#[derive(Clone, Copy, Debug)]
struct Warmup {
    /// Share of reads that send one (0 = off).
    share: f64,
    /// At most this many of this coordinator's reads in flight at the cold replica.
    max_in_flight: u32,
    /// How long after coming up a replica may count as warming, ns.
    window_ns: u64,
    /// The slow start: the pace rises from 0 to `share` over this long after coming up, ns.
    ramp_ns: u64,
}

impl Hwlb {
    /// Builds it from parameter overrides, for coordinators.
    pub fn new(overrides: &ParamTable) -> Result<Self, PolicyError> {
        Hwlb::build(NAME, overrides)
    }

    /// Builds `hwlb-client`: the same algorithm choosing a request's coordinator at a client.
    pub fn new_client(overrides: &ParamTable) -> Result<Self, PolicyError> {
        Hwlb::build(CLIENT_NAME, overrides)
    }

    fn build(name: &'static str, overrides: &ParamTable) -> Result<Self, PolicyError> {
        let params = Params::resolve(name, &PARAMS, overrides)?;
        let config = PlanConfig {
            hit_rate_cap: params.f64("hit_rate_cap"),
            min_spread: params.f64("min_spread"),
        };
        let stale_after_ns = (params.f64("stale_after_ms") * 1e6) as u64;
        Ok(Hwlb {
            config,
            extra_replica: params.bool("extra_replica"),
            enabled: params.bool("enabled"),
            warmup: Warmup {
                share: params.f64("warmup_reads"),
                max_in_flight: params.i64("warmup_max_in_flight") as u32,
                window_ns: (params.f64("warmup_window_s") * 1e9) as u64,
                ramp_ns: (params.f64("warmup_ramp_s") * 1e9) as u64,
            },
            in_flight: NodeTable::new(),
            up_at_ns: NodeTable::new(),
            started_ns: None,
            peers: PeerRates::new(stale_after_ns, params.f64("stale_rate")),
            plans: FxHashMap::default(),
            plans_kept_max: PLANS_KEPT,
            recomputes: 0,
            scratch: PlanScratch::default(),
        })
    }

    /// HWLB proper for `req`: the group's cached plan (recomputed only when rates changed),
    /// then `count` replicas by systematic sampling; the naive order when HWLB steps aside.
    /// Returns a candidate's expected cache misses per read under the plan (0 when a rate is
    /// unknown), which paces warm-up reads.
    fn plan_shares(&mut self, req: &Request<'_>, now_ns: u64, rng: &mut Rng, out: &mut Plan) -> f64 {
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
                    return cached.misses_per_read;
                }
            }
        }
        let extra_replica = self.extra_replica;
        if req.candidates.len() <= CACHED_MAX {
            if let Some(plan) = self.rebuild::<CACHED_MAX>(req, now_ns) {
                plan.choose(req, extra_replica, rng, out);
                let misses = plan.misses_per_read;
                if self.plans.len() >= self.plans_kept_max && !self.plans.contains_key(&req.group) {
                    self.plans.clear();
                }
                self.plans.insert(req.group, plan);
                return misses;
            }
        } else if let Some(plan) = self.rebuild::<MAX_REPLICAS>(req, now_ns) {
            plan.choose(req, extra_replica, rng, out);
            return plan.misses_per_read;
        }
        // A candidate reports no rate (StepAside::RateUnknown): the naive behaviour.
        local_first_then_random(req, rng, out);
        0.0
    }

    /// When `node` last came up, ns: when this policy saw it, else when it started planning (it
    /// sees every node as just up then), else `now_ns`.
    fn up_at(&self, node: NodeId, now_ns: u64) -> u64 {
        match self.up_at_ns.get(node) {
            Some(&Some(t)) => t,
            _ => self.started_ns.unwrap_or(now_ns),
        }
    }

    /// With warm-up reads on: the candidates that are not cold into `warm`, the split
    /// ([`warmup::split_cold`]), the coldest candidate's rate and how long ago it came up (ns);
    /// `None` when none is cold, a rate is unknown, or too few are warm to serve the request
    /// (then every candidate takes its HWLB share).
    ///
    /// Warming means came up less than `warmup_window_s` ago: a replica that stays colder for
    /// good (a smaller cache) is not starved once the window ends.
    fn split_cold(&self, req: &Request<'_>, now_ns: u64, warm: &mut [NodeId; MAX_REPLICAS]) -> Option<(ColdSplit, f64, u64)> {
        let n = req.candidates.len();
        let (mut rates, mut warming) = ([0.0; MAX_REPLICAS], [false; MAX_REPLICAS]);
        for j in 0..n {
            let node = req.candidates[j];
            rates[j] = self.peers.effective(node, now_ns)?;
            let up_at = self.up_at(node, now_ns);
            warming[j] = up_at <= now_ns && now_ns - up_at < self.warmup.window_ns;
        }
        let split = warmup::split_cold(&rates[..n], &warming[..n], req.count)?;
        let mut m = 0;
        for (j, &node) in req.candidates.iter().enumerate() {
            if split.cold_mask & (1 << j) == 0 {
                warm[m] = node;
                m += 1;
            }
        }
        debug_assert_eq!(m, split.warm);
        let coldest = req.candidates[split.coldest];
        Some((split, rates[split.coldest], now_ns.saturating_sub(self.up_at(coldest, now_ns))))
    }

    /// A read sent to `node` ended (the runtime reports each send's end exactly once).
    fn ended(&mut self, node: NodeId) {
        if let Some(n) = self.in_flight.get_mut(node) {
            *n = n.saturating_sub(1);
        }
    }

    /// A request is being planned at `now_ns` by the coordinator on `local`: its own rate is
    /// never stale from now on, and with warm-up reads on, planning has started (every node not
    /// seen coming up since counts as up from then). [`Policy::plan`] calls it; so does a
    /// policy that plans some requests without HWLB (`unified`), so that HWLB's view does not
    /// depend on which requests it planned.
    pub fn note_planning(&mut self, local: Option<NodeId>, now_ns: u64) {
        if let Some(local) = local {
            self.peers.set_local(local);
        }
        if self.enabled && self.warmup.share > 0.0 {
            self.started_ns.get_or_insert(now_ns);
        }
    }

    /// Whether this policy saw `node` come up less than `warmup_window_s` before `now_ns`: a
    /// restart it heard of (unlike [`Self::up_at`], its own start does not count).
    pub fn saw_come_up_within_window(&self, node: NodeId, now_ns: u64) -> bool {
        matches!(self.up_at_ns.get(node), Some(&Some(up_at)) if up_at <= now_ns && now_ns - up_at < self.warmup.window_ns)
    }

    /// How many times a plan was recomputed (rates changed, or its group's plan was not
    /// kept); for tests and reports.
    pub fn recomputes(&self) -> u64 {
        self.recomputes
    }

    /// How many replica groups' plans it keeps now (at most [`PLANS_KEPT`]).
    pub fn plans_kept(&self) -> usize {
        self.plans.len()
    }

    /// The hit rate `node` counts with at `now_ns` (`None`: unknown, or no plug-in).
    pub fn effective_rate(&self, node: NodeId, now_ns: u64) -> Option<f64> {
        self.peers.effective(node, now_ns)
    }

    /// Hit rates above this count as this in the plans.
    pub fn hit_rate_cap(&self) -> f64 {
        self.config.hit_rate_cap
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

    /// Recomputes the plan of `req.group` from the current rates (at most `N` candidates).
    /// `None` when a candidate reports no rate: HWLB steps aside.
    fn rebuild<const N: usize>(&mut self, req: &Request<'_>, now_ns: u64) -> Option<CachedPlan<N>> {
        let n = req.candidates.len();
        let mut rates = [0.0; MAX_REPLICAS];
        for (slot, &node) in rates.iter_mut().zip(req.candidates) {
            *slot = self.peers.effective(node, now_ns)?;
        }
        self.recomputes += 1;
        let plan = &mut self.scratch;
        let step_aside = HwlbPlan::compute_with(&rates[..n], req.count, &self.config, plan);
        let own = req.local.and_then(|l| req.candidates.iter().position(|&x| x == l));
        let row = match own {
            Some(c) => SamplingRow::of(plan.row(c)),
            None => SamplingRow::of(plan.shares()),
        };
        let mut cached = CachedPlan {
            nodes: [NodeId(0); N],
            rates: [0.0; N],
            n,
            count: req.count,
            local: req.local,
            active: step_aside.is_none(),
            row,
            misses_per_read: warmup::misses_per_read_of(req.count, plan.shares(), &rates[..n], &self.config),
            checked_version: self.peers.version(),
            valid_until_ns: valid_until(&self.peers, req.candidates, now_ns),
        };
        cached.nodes[..n].copy_from_slice(req.candidates);
        cached.rates[..n].copy_from_slice(&rates[..n]);
        Some(cached)
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

impl<const N: usize> CachedPlan<N> {
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
    fn plan(&mut self, req: &Request<'_>, now_ns: u64, rng: &mut Rng, out: &mut Plan) -> Decision {
        if !req.plannable() {
            return Decision::Unavailable;
        }
        self.note_planning(req.local, now_ns);
        if !self.enabled {
            local_first_then_random(req, rng, out);
            return Decision::Send;
        }
        if self.warmup.share > 0.0 {
            let mut warm = [NodeId(0); MAX_REPLICAS];
            if let Some((split, cold_rate, since_up_ns)) = self.split_cold(req, now_ns, &mut warm) {
                // The request reads from the warm replicas only, with HWLB's shares among them;
                // the coldest replica warms in the background, at its peers' misses per second.
                let narrowed = Request {
                    candidates: &warm[..split.warm],
                    group: req.group ^ split.cold_mask.wrapping_mul(0x9e37_79b9_7f4a_7c15),
                    ..*req
                };
                let warm_misses = self.plan_shares(&narrowed, now_ns, rng, out);
                let coldest = req.candidates[split.coldest];
                let busy = self.in_flight.value(coldest) >= self.warmup.max_in_flight;
                let pace = self.warmup.share * warmup::slow_start(since_up_ns, self.warmup.ramp_ns);
                let chance = warmup::background_chance(pace, warm_misses, cold_rate, &self.config);
                if !busy && rng.unit_f64() < chance {
                    out.set_background(coldest);
                }
                return Decision::Send;
            }
        }
        self.plan_shares(req, now_ns, rng, out);
        Decision::Send
    }

    fn observe(&mut self, event: &Event<'_>, now_ns: u64) {
        match *event {
            Event::Sent { node } => *self.in_flight.entry(node) += 1,
            Event::Reply(reply) => {
                self.ended(reply.node);
                if let Some(rate) = reply.feedback.hit_rate {
                    self.peers.record(reply.node, rate, now_ns);
                }
            }
            Event::Failure { node, failure } => {
                self.ended(node);
                if failure == Failure::ConnectionLost {
                    self.peers.forget(node);
                }
            }
            Event::Info { node, info } => {
                if let Some(rate) = info.hit_rate {
                    self.peers.record(node, rate, now_ns);
                }
            }
            Event::NodeUp { node, caps } => {
                *self.up_at_ns.entry(node) = Some(now_ns);
                self.peers.forget(node);
                self.peers.set_supported(node, caps.reports_hit_rate);
            }
            Event::NodeDown { node } => self.peers.forget(node),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Feedback, Reply};

    /// Tells `p` that `node`'s hit rate is `rate`, at `now_ns`.
    fn tell(p: &mut Hwlb, node: u16, rate: f64, now_ns: u64) {
        let reply = Reply {
            node: NodeId(node),
            latency_ns: 1_000_000,
            feedback: Feedback {
                hit_rate: Some(rate),
                ..Feedback::default()
            },
        };
        p.observe(&Event::Reply(&reply), now_ns);
    }

    #[test]
    fn a_bounded_plan_cache_plans_as_an_unbounded_one_does() {
        // 40 nodes, 400 replica groups of three read at random, rates that change now and
        // then: the instance keeping at most PLANS_KEPT plans recomputes more often, and plans
        // every request (targets and fallbacks) as one keeping every plan.
        for client in [false, true] {
            let make = || {
                if client {
                    Hwlb::new_client(&ParamTable::new())
                } else {
                    Hwlb::new(&ParamTable::new())
                }
            };
            let (mut bounded, mut unbounded) = (make().unwrap(), make().unwrap());
            unbounded.plans_kept_max = usize::MAX;
            let mut world = Rng::seed_from_u64(3);
            let (mut rng_b, mut rng_u) = (Rng::seed_from_u64(4), Rng::seed_from_u64(4));
            let (mut plan_b, mut plan_u) = (Plan::new(), Plan::new());
            let mut now_ns = 0;
            for node in 0..40u16 {
                let rate = 0.5 + 0.4 * world.unit_f64();
                tell(&mut bounded, node, rate, now_ns);
                tell(&mut unbounded, node, rate, now_ns);
            }
            for i in 0..20_000u32 {
                now_ns += 100_000;
                if i % 500 == 0 {
                    let (node, rate) = (world.below(40) as u16, world.unit_f64());
                    tell(&mut bounded, node, rate, now_ns);
                    tell(&mut unbounded, node, rate, now_ns);
                }
                let group = world.below(400) as u64;
                let first = (group % 38) as u16;
                let candidates = [NodeId(first), NodeId(first + 1), NodeId(first + 2)];
                let local = (!client).then_some(candidates[(group % 3) as usize]);
                let req = Request {
                    candidates: &candidates,
                    replicas: None,
                    count: 1 + (group % 2) as usize,
                    local,
                    group,
                };
                bounded.plan(&req, now_ns, &mut rng_b, &mut plan_b);
                unbounded.plan(&req, now_ns, &mut rng_u, &mut plan_u);
                assert_eq!(plan_b.targets(), plan_u.targets(), "client {client} request {i}");
                assert_eq!(plan_b.fallbacks(), plan_u.fallbacks(), "client {client} request {i}");
                assert!(bounded.plans_kept() <= PLANS_KEPT);
            }
            assert!(unbounded.plans_kept() > PLANS_KEPT, "the groups read outnumber the bound");
            assert!(bounded.recomputes() > unbounded.recomputes(), "dropped plans were recomputed");
        }
    }
}
