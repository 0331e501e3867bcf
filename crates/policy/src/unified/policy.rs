//! The `unified` policy: [`crate::c3::C3`] for ranking, rate control and backlog where nodes
//! report a service time; [`super::untimed::Untimed`]'s ranking where they report none (unless
//! rate control is on); at a coordinator with hit rates, [`crate::hwlb::Hwlb`]'s draw instead,
//! with busy and silent replicas moved behind the healthy ones ([`crate::health`]). See the
//! [module docs](super).

use crate::c3::{Ranking, C3};
use crate::health::{HealthRule, MAX_MIN_RESPONSES};
use crate::hwlb::Hwlb;
use crate::params::{ParamDefault as D, ParamSpec, ParamTable, ParamValue, Params, PolicyError};
use crate::policy::{Event, Policy};
use crate::rng::Rng;
use crate::types::{Decision, Failure, NodeId, Plan, Request, MAX_REPLICAS};

use super::coordinator::{CoordinatorHealth, CoordinatorRule};
use super::give_way::{give_way, Costs, MAX_HEAT_WEIGHT};
use super::untimed::{Untimed, UntimedRanking};

/// The name it is registered under.
pub const NAME: &str = "unified";

/// Its parameters, with the defaults the tournament chose (docs/unified.md).
pub static PARAMS: [ParamSpec; 28] = [
    ParamSpec::float(
        "concurrency_weight",
        1000.0,
        0.0,
        1e6,
        "C3's n for nodes that report a service time: large = a node without one of our requests in flight ranks first",
    ),
    ParamSpec::float(
        "untimed_concurrency_weight",
        1.0,
        0.0,
        1e6,
        "nodes without a service time (coordinators, driver latencies): score = floor + (1 + n x outstanding)^b x excess; this is n",
    ),
    ParamSpec::float(
        "untimed_queue_exponent",
        1.0,
        0.0,
        16.0,
        "nodes without a service time: b in floor + (1 + n x outstanding)^b x excess",
    ),
    ParamSpec::float(
        "untimed_ewma_weight",
        0.02,
        0.0,
        1.0,
        "nodes without a service time: weight of a new sample in the response-time and deviation averages",
    ),
    ParamSpec::float(
        "untimed_deviation_weight",
        2.0,
        0.0,
        1e6,
        "nodes without a service time: average deviations added to the average response time",
    ),
    ParamSpec::float(
        "untimed_floor_drift",
        0.01,
        0.0,
        1.0,
        "nodes without a service time: how much the lowest response time rises per sample above it",
    ),
    ParamSpec::float(
        "untimed_equal_within",
        0.6,
        0.0,
        1e6,
        "nodes without a service time: response times above the floor within this fraction of the lowest count as equal",
    ),
    ParamSpec::float(
        "untimed_outlier_factor",
        3.0,
        1.0,
        1e6,
        "nodes without a service time: a sample above this many times the estimate is an outlier",
    ),
    ParamSpec {
        name: "untimed_outlier_count",
        default: D::Int {
            value: 3,
            min: 0,
            max: 1_000_000,
        },
        description: "nodes without a service time: outliers in a row after which the average restarts from the last one (0 = never)",
    },
    ParamSpec {
        name: "rate_control",
        default: D::Bool(false),
        description: "C3's cubic rate control and per-group backlog (off: no scenario measured a gain, see docs/unified.md)",
    },
    ParamSpec {
        name: "heat",
        default: D::Bool(true),
        description: "at a coordinator, draw replicas with HWLB's shares (false = C3's ranking there too)",
    },
    ParamSpec {
        name: "heat_only_while_warming",
        default: D::Bool(true),
        description: "at a coordinator whose replicas report their load: HWLB's draw only for reads with a candidate it saw come up within HWLB's warm-up window (900 s); otherwise C3's ranking with coordinator_concurrency_weight, its own replica first; its own replica cold_hit_rate_gap below the warmest other counts as warming too (false = HWLB's draw for every read, as where replicas report no load)",
    },
    ParamSpec::float(
        "coordinator_concurrency_weight",
        1.0,
        0.0,
        1e6,
        "C3's n when a coordinator ranks its replicas by their reported load (heat_only_while_warming)",
    ),
    ParamSpec::float(
        "warmup_reads",
        2.0,
        0.0,
        10.0,
        "HWLB warm-up reads: a cold restarted replica serves no reads of its own and reads in the background at this multiple of its warm peers' misses per second (2: it warms in half the time HWLB's equal misses take)",
    ),
    ParamSpec::float(
        "warmup_ramp_s",
        0.0,
        0.0,
        3_600.0,
        "slow start of the warm-up reads: their pace rises linearly from 0 over this long after the cold replica came up (0 = the whole pace at once)",
    ),
    ParamSpec {
        name: "in_flight_threshold",
        default: D::Int {
            value: 10,
            min: 1,
            max: 1_000_000,
        },
        description: "a replica with this many sends since its last reply (or messages pending to it) and too few answers is passed over",
    },
    ParamSpec {
        name: "min_responses",
        default: D::Int {
            value: 2,
            min: 1,
            max: MAX_MIN_RESPONSES as i64,
        },
        description: "answers needed within the window for a busy replica to count as healthy",
    },
    ParamSpec::float("response_window_ms", 200.0, 0.001, 3_600_000.0, "the window for min_responses"),
    ParamSpec::float(
        "latency_ewma_weight",
        0.05,
        1e-6,
        1.0,
        "coordinator: weight of a new reply latency in a replica's average",
    ),
    ParamSpec::float(
        "slow_factor",
        3.0,
        1.0,
        1e6,
        "coordinator: a replica whose average exceeds this many times the fastest other's (and the margin) is slow",
    ),
    ParamSpec::float(
        "slow_margin_ms",
        5.0,
        0.0,
        3_600_000.0,
        "coordinator: and exceeds it by more than this",
    ),
    ParamSpec::float(
        "latency_memory_ms",
        2000.0,
        0.001,
        3_600_000.0,
        "coordinator: a latency average counts while its last reply is younger than this",
    ),
    ParamSpec::float(
        "stall_ms",
        1000.0,
        0.001,
        3_600_000.0,
        "coordinator: a reply slower than this is a stall: an answer, but not in the latency average",
    ),
    ParamSpec::float(
        "expiry_memory_ms",
        2000.0,
        0.0,
        3_600_000.0,
        "coordinator: a time-out passes a replica over this long, unless it answered since",
    ),
    ParamSpec::float(
        "overdue_factor",
        1.0,
        0.0,
        1e6,
        "coordinator: a replica with one read of ours unanswered for this many times its usual time (its average, at least every replica's pooled average plus four deviations) is passed over (0 = off)",
    ),
    ParamSpec {
        name: "heat_weight",
        default: D::Int {
            value: 1,
            min: 0,
            max: MAX_HEAT_WEIGHT as i64,
        },
        description: "coordinator: a drawn replica gives way to one whose expected time x (misses ratio)^heat_weight is lower (0 = load alone decides)",
    },
    ParamSpec::float(
        "stale_after_ms",
        30_000.0,
        0.001,
        86_400_000.0,
        "a peer's hit rate older than this counts as 0.95 (HWLB's published 1 s is for every reply; a coordinator of a large cluster hears from a replica a few times a minute)",
    ),
    ParamSpec::float(
        "cold_hit_rate_gap",
        0.1,
        0.0,
        1.0,
        "coordinator: a replica this far below the warmest hit rate is cold, never passed over for being slow",
    ),
];

/// One policy for every scenario: C3's ranking (two rankings: with and without a service
/// time), HWLB's shares at a coordinator, and the unhealthy-node rule.
#[derive(Debug)]
pub struct Unified {
    c3: C3,
    hwlb: Hwlb,
    heat: bool,
    /// `heat_only_while_warming`: where every candidate reports its load and none is cold, a
    /// coordinator ranks by that load ([`Self::rank_by_load`]) instead of drawing.
    heat_only_while_warming: bool,
    /// C3's ranking at a coordinator (`coordinator_concurrency_weight` as its n).
    coordinator_ranking: Ranking,
    rate_control: bool,
    health: CoordinatorHealth,
    untimed: Untimed,
    /// The side this instance has planned for ([`Self::note_side`]).
    side: SideSeen,
}

/// Which reads an instance has planned so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SideSeen {
    /// None yet.
    Nothing,
    /// Only reads the untimed ranking or C3 decide: a client's (no `local`), or any with heat off.
    Client,
    /// Only a coordinator's with heat on: HWLB's draw, C3's ranking and the coordinator rule
    /// decide them.
    Coordinator,
    /// Both kinds.
    Both,
}

impl Unified {
    /// Builds it from parameter overrides.
    pub fn new(overrides: &ParamTable) -> Result<Self, PolicyError> {
        let params = Params::resolve(NAME, &PARAMS, overrides)?;
        let mut c3_params = ParamTable::new();
        c3_params.insert("concurrency_weight".into(), ParamValue::Float(params.f64("concurrency_weight")));
        c3_params.insert("rate_control".into(), ParamValue::Bool(params.bool("rate_control")));
        let c3 = C3::new(&c3_params)?;
        let untimed = Ranking {
            concurrency_weight: params.f64("untimed_concurrency_weight"),
            queue_exponent: params.f64("untimed_queue_exponent"),
            ewma_new_weight: c3.ewma_new_weight(),
        };
        let mut hwlb_params = ParamTable::new();
        for name in ["warmup_reads", "warmup_ramp_s", "stale_after_ms"] {
            hwlb_params.insert(name.into(), ParamValue::Float(params.f64(name)));
        }
        let rule = CoordinatorRule {
            health: HealthRule {
                in_flight_threshold: params.i64("in_flight_threshold") as u32,
                min_responses: params.i64("min_responses") as usize,
                response_window_ns: (params.f64("response_window_ms") * 1e6) as u64,
            },
            latency_ewma_weight: params.f64("latency_ewma_weight"),
            slow_factor: params.f64("slow_factor"),
            slow_margin_ns: params.f64("slow_margin_ms") * 1e6,
            latency_memory_ns: (params.f64("latency_memory_ms") * 1e6) as u64,
            stall_ns: (params.f64("stall_ms") * 1e6) as u64,
            expiry_memory_ns: (params.f64("expiry_memory_ms") * 1e6) as u64,
            cold_hit_rate_gap: params.f64("cold_hit_rate_gap"),
            overdue_factor: params.f64("overdue_factor"),
            heat_weight: params.i64("heat_weight") as u32,
        };
        let coordinator_ranking = Ranking {
            concurrency_weight: params.f64("coordinator_concurrency_weight"),
            ..c3.ranking()
        };
        Ok(Unified {
            c3: c3.with_untimed_ranking(untimed),
            hwlb: Hwlb::new(&hwlb_params)?,
            heat: params.bool("heat"),
            heat_only_while_warming: params.bool("heat_only_while_warming"),
            coordinator_ranking,
            rate_control: params.bool("rate_control"),
            health: CoordinatorHealth::new(rule),
            untimed: Untimed::new(UntimedRanking {
                concurrency_weight: params.f64("untimed_concurrency_weight"),
                queue_exponent: params.f64("untimed_queue_exponent"),
                ewma_weight: params.f64("untimed_ewma_weight"),
                deviation_weight: params.f64("untimed_deviation_weight"),
                floor_drift: params.f64("untimed_floor_drift"),
                equal_within: params.f64("untimed_equal_within"),
                outlier_factor: params.f64("untimed_outlier_factor"),
                outlier_count: params.i64("untimed_outlier_count") as u32,
            }),
            side: SideSeen::Nothing,
        })
    }

    /// Notes which side `req` is planned for. An instance serves one side: a client (no
    /// `local`), whose reads never consult HWLB or the coordinator rule, or a coordinator with
    /// heat on, whose reads never consult the untimed ranking. Each stops feeding what its reads
    /// never consult from its first read on: a client of a large cluster saves those per-node
    /// tables and the work of every node's hit-rate news (three pieces per read at 300 nodes), a
    /// coordinator one table write per reply. Were an instance later to plan the other side's
    /// read, that side's parts would learn again from then on.
    #[inline]
    fn note_side(&mut self, req: &Request<'_>) {
        let coordinator_read = req.local.is_some() && self.heat;
        self.side = match (coordinator_read, self.side) {
            (true, SideSeen::Nothing | SideSeen::Coordinator) => SideSeen::Coordinator,
            (false, SideSeen::Nothing | SideSeen::Client) => SideSeen::Client,
            _ => SideSeen::Both,
        };
    }

    /// Whether HWLB and the coordinator rule learn from events: they decide only a
    /// coordinator's reads ([`Self::plan_with_heat`]), so not while this instance has planned
    /// only reads without them.
    #[inline]
    fn feeds_coordinator_state(&self) -> bool {
        self.side != SideSeen::Client
    }

    /// Whether the untimed ranking learns from events: it decides only reads planned without
    /// heat, so not while this instance has planned only a coordinator's with heat on.
    #[inline]
    fn feeds_client_state(&self) -> bool {
        self.side != SideSeen::Coordinator
    }

    /// A coordinator's read: HWLB's draw (or, where no candidate is cold and all report their
    /// load, C3's ranking: [`Self::ranks_by_load`]) over the candidates the coordinator rule
    /// does not pass over (as if the passed-over ones were down), every other healthy
    /// candidate after the chosen ones, the passed-over ones last ([`super::coordinator`]).
    fn plan_with_heat(&mut self, req: &Request<'_>, now_ns: u64, rng: &mut Rng, out: &mut Plan) -> Decision {
        if self.heat_only_while_warming {
            // HWLB may not plan this read; its view (own rate live, planning started) must not
            // depend on which reads it planned.
            self.hwlb.note_planning(req.local, now_ns);
        }
        let n = req.candidates.len();
        let mut rates = [None; MAX_REPLICAS];
        for (slot, &c) in rates.iter_mut().zip(req.candidates) {
            *slot = self.hwlb.effective_rate(c, now_ns);
        }
        let passed = self.health.passed_over(req.candidates, &rates[..n], req.local, req.count, now_ns);
        let by_load = self.ranks_by_load(req, &rates[..n], now_ns);
        if passed == 0 && by_load {
            return self.rank_by_load(req, now_ns, rng, out);
        }
        if passed == 0 {
            let d = self.hwlb.plan(req, now_ns, rng, out);
            if d == Decision::Send {
                self.give_way(req, &rates[..n], passed, now_ns, out);
            }
            return d;
        }
        let (mut healthy, mut h) = ([NodeId(0); MAX_REPLICAS], 0);
        let (mut back, mut b) = ([NodeId(0); MAX_REPLICAS], 0);
        for (j, &c) in req.candidates.iter().enumerate() {
            if passed & (1 << j) != 0 {
                back[b] = c;
                b += 1;
            } else {
                healthy[h] = c;
                h += 1;
            }
        }
        let mut order = [NodeId(0); MAX_REPLICAS];
        let mut len = 0;
        if h >= req.count {
            let narrowed = Request {
                candidates: &healthy[..h],
                group: req.group ^ passed.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(17),
                ..*req
            };
            let decision = if by_load {
                self.rank_by_load(&narrowed, now_ns, rng, out)
            } else {
                self.hwlb.plan(&narrowed, now_ns, rng, out)
            };
            if decision != Decision::Send {
                return decision;
            }
            if !by_load {
                self.give_way(req, &rates[..n], passed, now_ns, out);
            }
            len = out.all().len();
            order[..len].copy_from_slice(out.all());
        }
        for &c in healthy[..h].iter().chain(&back[..b]) {
            if !order[..len].contains(&c) {
                order[len] = c;
                len += 1;
            }
        }
        debug_assert_eq!(len, n);
        out.set_order(&order[..len], req.count);
        Decision::Send
    }

    /// Whether a coordinator ranks this read's candidates by their load rather than drawing
    /// with HWLB's shares: with `heat_only_while_warming`, when every candidate reports its load
    /// (C3's piggyback; Cassandra's replies carry none, so the plug-in always draws) and this
    /// coordinator saw none come up within HWLB's warm-up window (`warmup_window_s`), nor is its
    /// own replica `cold_hit_rate_gap` below the warmest other's hit rate (a coordinator that
    /// restarted does not see itself come up; its own hit rate is always fresh). Once
    /// caches are warm HWLB's draw is blind to queues, and a coordinator of a large cluster has
    /// too few replies of its own to correct that, but every reply carries the replica's queue.
    /// Hit rates that differ without a restart (a node owning more keys) are left to the
    /// ranking: measured, C3's ranking beats the miss-equalising shares there (docs/unified.md).
    fn ranks_by_load(&self, req: &Request<'_>, rates: &[Option<f64>], now_ns: u64) -> bool {
        if !self.heat_only_while_warming {
            return false;
        }
        let gap = self.health.rule().cold_hit_rate_gap;
        let (mut own, mut warmest_other) = (None, f64::NEG_INFINITY);
        for (&node, &rate) in req.candidates.iter().zip(rates) {
            if !self.c3.reports_load(node) || self.hwlb.saw_come_up_within_window(node, now_ns) {
                return false;
            }
            if Some(node) == req.local {
                own = rate;
            } else if let Some(r) = rate {
                warmest_other = warmest_other.max(r);
            }
        }
        !own.is_some_and(|r| r < warmest_other - gap)
    }

    /// C3's ranking with `coordinator_concurrency_weight`, the coordinator's own replica (when
    /// a candidate) moved first: a local read costs no network hop. Measured against C3's
    /// order alone, it has fewer time-outs and a lower p99 at 150, 300 and 600 nodes and in
    /// the 300-node rolling restart (results/2026-11-28-unified-ranks-by-load-once-warm.md).
    fn rank_by_load(&mut self, req: &Request<'_>, now_ns: u64, rng: &mut Rng, out: &mut Plan) -> Decision {
        let ranking = self.coordinator_ranking;
        let decision = self.c3.plan_ranked(req, &ranking, now_ns, rng, out);
        let Some(local) = req.local else {
            return decision;
        };
        if decision != Decision::Send || !out.all().contains(&local) || out.all()[0] == local {
            return decision;
        }
        let mut order = [NodeId(0); MAX_REPLICAS];
        order[0] = local;
        let mut len = 1;
        for &node in out.all() {
            if node != local {
                order[len] = node;
                len += 1;
            }
        }
        let count = out.count();
        out.set_order(&order[..len], count);
        decision
    }

    /// The load step after HWLB's draw ([`super::give_way`]): a target gives way to a live
    /// candidate not passed over (a cold one left out for warming included) whose expected
    /// time, weighed by heat, is lower. The ones that gave way become the first fallbacks.
    fn give_way(&self, req: &Request<'_>, rates: &[Option<f64>], passed: u64, now_ns: u64, out: &mut Plan) {
        let n = req.candidates.len();
        let k = out.count();
        if n <= k || rates.iter().any(Option::is_none) {
            return;
        }
        let mut expected = [0.0; MAX_REPLICAS];
        for (slot, &node) in expected.iter_mut().zip(req.candidates) {
            *slot = self.health.expected_ns(node, now_ns);
        }
        let position = |node: NodeId| req.candidates.iter().position(|&c| c == node).expect("a target is a candidate");
        let mut targets = [0usize; MAX_REPLICAS];
        for (slot, &node) in targets[..k].iter_mut().zip(out.targets()) {
            *slot = position(node);
        }
        let costs = Costs {
            expected_ns: &expected[..n],
            rates,
            eligible: !passed & (u64::MAX >> (64 - n)),
            heat_weight: self.health.rule().heat_weight,
            hit_rate_cap: self.hwlb.hit_rate_cap(),
            keep: req
                .local
                .and_then(|l| req.candidates.iter().position(|&c| c == l))
                .map_or(0, |j| 1 << j),
        };
        let mut gave = [0usize; MAX_REPLICAS];
        let swaps = give_way(&costs, &mut targets[..k], &mut gave);
        if swaps == 0 {
            return;
        }
        let mut order = [NodeId(0); MAX_REPLICAS];
        for (slot, &t) in order.iter_mut().zip(&targets[..k]) {
            *slot = req.candidates[t];
        }
        let mut len = k;
        let gave_way = gave[..swaps].iter().map(|&j| req.candidates[j]);
        for node in gave_way.chain(out.fallbacks().iter().copied()) {
            if !order[..len].contains(&node) {
                order[len] = node;
                len += 1;
            }
        }
        let background = out.background();
        out.set_order(&order[..len], k);
        if background.is_some_and(|b| order[..k].contains(&b)) {
            out.clear_background();
        }
    }
}

impl Policy for Unified {
    fn plan(&mut self, req: &Request<'_>, now_ns: u64, rng: &mut Rng, out: &mut Plan) -> Decision {
        if !req.plannable() {
            return Decision::Unavailable;
        }
        self.note_side(req);
        if let (true, Some(local)) = (self.heat, req.local) {
            self.health.set_local(local);
            return self.plan_with_heat(req, now_ns, rng, out);
        }
        if !self.rate_control && self.untimed.applies(req.candidates) {
            self.untimed.plan(req, now_ns, rng, out);
            return Decision::Send;
        }
        self.c3.plan(req, now_ns, rng, out)
    }

    fn observe(&mut self, event: &Event<'_>, now_ns: u64) {
        let (coordinator, client) = (self.feeds_coordinator_state(), self.feeds_client_state());
        match *event {
            Event::Sent { node } => {
                if coordinator {
                    self.health.sent(node, now_ns);
                }
                if client {
                    self.untimed.sent(node, now_ns);
                }
            }
            Event::Reply(reply) => {
                if coordinator {
                    self.health.replied(reply.node, reply.latency_ns, now_ns);
                }
                if client {
                    let timed = reply.feedback.service_time_ns.is_some();
                    self.untimed.replied(reply.node, reply.latency_ns, timed, now_ns);
                }
            }
            Event::Failure { node, failure } => {
                match failure {
                    Failure::Timeout if coordinator => self.health.expired(node, now_ns),
                    // An error is an answer (the Java driver's rule), not a latency sample.
                    Failure::Timeout | Failure::Error | Failure::ConnectionLost => {}
                }
                if client {
                    self.untimed.failed(node, failure == Failure::Error, now_ns);
                }
            }
            Event::NodeUp { node, .. } | Event::NodeDown { node } if coordinator => self.health.reset(node),
            _ => {}
        }
        // C3 learns only from sends, replies and failures; HWLB from those and the news.
        self.c3.observe(event, now_ns);
        if coordinator {
            self.hwlb.observe(event, now_ns);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;

    fn timed_reply(node: u16, latency_ms: f64, service_ms: f64, queue: u32) -> Reply {
        Reply {
            node: NodeId(node),
            latency_ns: (latency_ms * 1e6) as u64,
            feedback: Feedback {
                queue_len: Some(queue),
                service_time_ns: Some((service_ms * 1e6) as u64),
                ..Feedback::default()
            },
        }
    }

    /// A replica's reply as Cassandra's carry it (the plug-in's case): a hit rate, no load.
    fn hit_rate_reply(node: u16, hit_rate: f64) -> Reply {
        Reply {
            node: NodeId(node),
            latency_ns: MS,
            feedback: Feedback {
                hit_rate: Some(hit_rate),
                ..Feedback::default()
            },
        }
    }

    /// A replica's reply that also reports its load (C3's piggyback; the simulator's default).
    fn loaded_reply(node: u16, hit_rate: f64, latency_ms: f64, service_ms: f64, queue: u32) -> Reply {
        let mut reply = timed_reply(node, latency_ms, service_ms, queue);
        reply.feedback.hit_rate = Some(hit_rate);
        reply
    }

    fn defaults() -> Unified {
        Unified::new(&ParamTable::new()).unwrap()
    }

    #[test]
    fn without_a_service_time_the_near_node_keeps_the_read_despite_one_outstanding() {
        // A client choosing coordinators: node 0 answers in 0.30-0.40 ms (same zone), node 1 in
        // 0.65-0.75 ms (far zone). One of ours in flight at node 0 adds to the part above its
        // floor only: the read stays near. With two in flight it goes far. (C3's (1 + os) x R
        // sends it far with one.)
        let mut p = defaults();
        let nodes = ids(2);
        let mut rng = Rng::seed_from_u64(1);
        let mut plan = Plan::new();
        let mut t = 0;
        for _ in 0..300 {
            for (node, ms) in [(0, 0.30), (0, 0.40), (1, 0.65), (1, 0.75)] {
                t += MS;
                p.on_send(NodeId(node), t);
                p.on_reply(&reply(node, (ms * 1e6) as u64), t);
            }
        }
        p.on_send(NodeId(0), t);
        p.plan(&req(&nodes, 1), t, &mut rng, &mut plan);
        assert_eq!(plan.targets(), &[NodeId(0)]);
        p.on_send(NodeId(0), t);
        p.plan(&req(&nodes, 1), t, &mut rng, &mut plan);
        assert_eq!(plan.targets(), &[NodeId(1)]);
    }

    /// Runs an instance beside one made to feed every part as before it knew its side, through
    /// the same 5,000 reads (`local`: a coordinator's, else a client's) with replies (some with
    /// hit rates, some with service times), time-outs and restarts; asserts every plan is the
    /// same and returns both.
    fn lean_beside_fed(local: Option<NodeId>) -> (Unified, Unified, u64) {
        let nodes = ids(5);
        let (mut lean, mut fed) = (defaults(), defaults());
        let (mut rng_lean, mut rng_fed, mut world) = (Rng::seed_from_u64(9), Rng::seed_from_u64(9), Rng::seed_from_u64(10));
        let (mut plan_lean, mut plan_fed) = (Plan::new(), Plan::new());
        let mut t: u64 = 0;
        for i in 0..5_000u64 {
            t += world.below(4) as u64 * MS / 2;
            let first = world.below(3);
            let candidates = &nodes[first..first + 3];
            let local = local.filter(|l| candidates.contains(l));
            let count = if local.is_some() { 2 } else { 1 };
            let read = Request {
                candidates,
                replicas: None,
                count,
                local,
                group: first as u64,
            };
            lean.plan(&read, t, &mut rng_lean, &mut plan_lean);
            fed.plan(&read, t, &mut rng_fed, &mut plan_fed);
            fed.side = SideSeen::Nothing;
            assert_eq!(plan_lean.targets(), plan_fed.targets(), "read {i}");
            assert_eq!(plan_lean.fallbacks(), plan_fed.fallbacks(), "read {i}");
            for k in 0..count {
                let node = plan_lean.targets()[k];
                let latency_ms = 0.2 + world.below(40) as f64 / 10.0;
                let outcome = world.below(10);
                for p in [&mut lean, &mut fed] {
                    p.on_send(node, t);
                    match outcome {
                        0 => p.on_failure(node, Failure::Timeout, t + 5 * MS),
                        1 => p.on_reply(&hit_rate_reply(node.0, 0.5 + latency_ms / 10.0), t + MS),
                        2 => p.on_reply(&timed_reply(node.0, latency_ms, latency_ms / 2.0, 2), t + MS),
                        3 if i % 50 == 3 => p.on_node_up(node, NodeCaps::default(), t),
                        _ => p.on_reply(&reply(node.0, (latency_ms * 1e6) as u64), t + MS),
                    }
                }
            }
        }
        (lean, fed, t)
    }

    #[test]
    fn a_clients_instance_plans_as_one_feeding_the_coordinator_state_does_and_keeps_none() {
        let (lean, fed, t) = lean_beside_fed(None);
        assert_eq!(lean.side, SideSeen::Client);
        let nodes = ids(5);
        let learned = |p: &Unified| nodes.iter().filter(|&&n| p.hwlb.effective_rate(n, t) != Some(0.0)).count();
        assert_eq!(learned(&lean), 0, "the client's HWLB learned no hit rate");
        assert!(learned(&fed) >= 2, "fed, it learned the hit rates of the nodes it read from");
    }

    #[test]
    fn an_instance_planning_both_sides_reads_feeds_every_part_from_then_on() {
        let nodes = ids(3);
        let (mut rng, mut plan) = (Rng::seed_from_u64(4), Plan::new());
        let mut p = defaults();
        assert!(p.feeds_coordinator_state() && p.feeds_client_state(), "before any read");
        p.plan(&req(&nodes, 1), 0, &mut rng, &mut plan);
        assert!(!p.feeds_coordinator_state() && p.feeds_client_state(), "a client's");
        p.plan(&coordinator_req(&nodes), 0, &mut rng, &mut plan);
        assert_eq!(p.side, SideSeen::Both);
        p.plan(&req(&nodes, 1), 0, &mut rng, &mut plan);
        assert!(p.feeds_coordinator_state() && p.feeds_client_state(), "both, for good");
        let mut q = defaults();
        q.plan(&coordinator_req(&nodes), 0, &mut rng, &mut plan);
        assert!(q.feeds_coordinator_state() && !q.feeds_client_state(), "a coordinator's");
        q.plan(&req(&nodes, 1), 0, &mut rng, &mut plan);
        assert_eq!(q.side, SideSeen::Both);
        // With heat off no read consults HWLB or the coordinator rule.
        let mut r = Unified::new(&table(&[("heat", ParamValue::Bool(false))])).unwrap();
        r.plan(&coordinator_req(&nodes), 0, &mut rng, &mut plan);
        assert!(!r.feeds_coordinator_state() && r.feeds_client_state());
    }

    #[test]
    fn a_coordinators_instance_plans_as_one_feeding_the_untimed_ranking_does_and_keeps_none() {
        // Coordinator 2: a replica of every read (candidates 0-2, 1-3 and 2-4).
        let (lean, fed, _) = lean_beside_fed(Some(NodeId(2)));
        assert_eq!(lean.side, SideSeen::Coordinator);
        let nodes = ids(5);
        let known = |p: &Unified| (0..3).filter(|&f| p.untimed.applies(&nodes[f..f + 3])).count();
        assert_eq!(known(&lean), 0, "the coordinator's untimed ranking learned nothing");
        assert!(known(&fed) > 0, "fed, it learned untimed replies");
    }

    #[test]
    fn with_a_service_time_our_outstanding_requests_rank_first() {
        // Replicas reporting service times: node 0 is four times faster and its queue shorter,
        // but one of our requests is in flight there; node 1 has none of ours.
        let mut p = defaults();
        let nodes = ids(2);
        let mut rng = Rng::seed_from_u64(2);
        let mut plan = Plan::new();
        p.on_send(NodeId(0), 0);
        p.on_reply(&timed_reply(0, 1.0, 1.0, 0), MS);
        p.on_send(NodeId(1), 0);
        p.on_reply(&timed_reply(1, 4.0, 4.0, 3), MS);
        p.plan(&req(&nodes, 1), 2 * MS, &mut rng, &mut plan);
        assert_eq!(plan.targets(), &[NodeId(0)], "nothing in flight: the fast node");
        p.on_send(NodeId(0), 2 * MS);
        p.plan(&req(&nodes, 1), 2 * MS, &mut rng, &mut plan);
        assert_eq!(plan.targets(), &[NodeId(1)], "one of ours in flight at the fast node");
    }

    #[test]
    fn the_untimed_ranking_allocates_nothing_on_the_request_path() {
        // The registry's allocation test replies with service times; this one without, so the
        // ranking of coordinators (crate::unified::untimed) is the one planning.
        let mut p = defaults();
        let nodes = ids(6);
        let mut rng = Rng::seed_from_u64(9);
        let mut plan = Plan::new();
        let mut cycle = |p: &mut Unified, i: u64, rng: &mut Rng| {
            let now = i * 100_000;
            let req = req(&nodes[..3 + (i % 4) as usize], 1);
            assert_eq!(p.plan(&req, now, rng, &mut plan), Decision::Send);
            let t = plan.targets()[0];
            p.on_send(t, now);
            if i.is_multiple_of(7) {
                p.on_failure(t, Failure::Timeout, now + 1);
            } else {
                p.on_reply(&reply(t.0, 300_000 + (i % 13) * 50_000), now + 1);
            }
        };
        for i in 0..1_000 {
            cycle(&mut p, i, &mut rng);
        }
        assert!(p.untimed.applies(&nodes[..3]), "coordinators answered without service times");
        let before = allocations();
        for i in 1_000..21_000 {
            cycle(&mut p, i, &mut rng);
        }
        assert_eq!(allocations() - before, 0);
    }

    /// A coordinator's QUORUM read over three replicas, node 0 local.
    fn coordinator_req(nodes: &[NodeId]) -> Request<'_> {
        Request {
            candidates: nodes,
            replicas: None,
            count: 2,
            local: Some(NodeId(0)),
            group: 7,
        }
    }

    /// A coordinator of a large cluster: its three replicas equally warm, answering in 2-4 ms
    /// long ago (their own averages aged out; every replica's pooled average stands in).
    fn sparse_coordinator() -> (Unified, u64) {
        let mut p = defaults();
        for round in 0..20u64 {
            for node in 0..3u16 {
                p.on_send(NodeId(node), round * MS);
                p.on_reply(&hit_rate_reply_after(node, 0.8, (2 + round % 3) * MS), round * MS);
            }
        }
        (p, 5_000 * MS)
    }

    fn hit_rate_reply_after(node: u16, hit_rate: f64, latency_ns: u64) -> Reply {
        Reply {
            latency_ns,
            ..hit_rate_reply(node, hit_rate)
        }
    }

    #[test]
    fn one_unanswered_read_makes_a_replica_give_way_and_once_overdue_it_is_passed_over() {
        let (mut p, t) = sparse_coordinator();
        let nodes = ids(3);
        let mut rng = Rng::seed_from_u64(5);
        let mut plan = Plan::new();
        // Coordinator 0, QUORUM: it keeps its own replica; the other slot goes to 1 or 2.
        let mut seen = [0u32; 3];
        for _ in 0..200 {
            p.plan(&coordinator_req(&nodes), t, &mut rng, &mut plan);
            for &n in plan.targets() {
                seen[n.index()] += 1;
            }
        }
        assert!(seen[0] == 200 && seen[1] > 50 && seen[2] > 50, "the draw: {seen:?}");
        // One read out to replica 1: it gives way to replica 2 at once, whatever is drawn.
        p.on_send(NodeId(1), t);
        for _ in 0..200 {
            p.plan(&coordinator_req(&nodes), t + MS, &mut rng, &mut plan);
            assert_eq!(plan.targets(), &[NodeId(0), NodeId(2)]);
            assert_eq!(plan.fallbacks().first(), Some(&NodeId(1)));
        }
        // Unanswered past its usual time (the pooled average plus four deviations, ~6 ms): overdue,
        // passed over (last), one read being evidence enough.
        assert!(!p.health.overdue(NodeId(1), t + MS));
        assert!(p.health.overdue(NodeId(1), t + 50 * MS));
        p.plan(&coordinator_req(&nodes), t + 50 * MS, &mut rng, &mut plan);
        assert_eq!(plan.all().last(), Some(&NodeId(1)));
        // Its answer clears both.
        p.on_reply(&hit_rate_reply_after(1, 0.8, 60 * MS), t + 60 * MS);
        assert!(!p.health.overdue(NodeId(1), t + 61 * MS));
        assert_eq!(p.health.waited_ns(NodeId(1), t + 61 * MS), 0);
    }

    #[test]
    fn a_cold_replica_takes_a_read_only_when_the_warm_ones_are_overloaded() {
        let mut p = defaults();
        let nodes = ids(3);
        let mut rng = Rng::seed_from_u64(6);
        let mut plan = Plan::new();
        // Coordinator 3 (not a replica) at ONE; replica 2 cold (0.0), answering in 20 ms.
        let req = Request {
            candidates: &nodes,
            replicas: None,
            count: 1,
            local: Some(NodeId(3)),
            group: 9,
        };
        let feed = |p: &mut Unified, warm_ms: u64, t: u64| {
            for _ in 0..30 {
                for (node, rate, ms) in [(0, 0.75, warm_ms), (1, 0.75, warm_ms), (2, 0.0, 20)] {
                    p.on_send(NodeId(node), t);
                    p.on_reply(&hit_rate_reply_after(node, rate, ms * MS), t);
                }
            }
        };
        // Warm replicas at 40 ms: weighed by heat (1.0 / 0.25 = 4) the cold one costs
        // 4 x 20 = 80 ms, more: the warm ones keep the reads.
        feed(&mut p, 40, 10 * MS);
        for _ in 0..100 {
            p.plan(&req, 10 * MS, &mut rng, &mut plan);
            assert_ne!(plan.targets(), &[NodeId(2)]);
        }
        // At 600 ms (overloaded, not yet stalls) the cold one takes the read.
        feed(&mut p, 600, 20 * MS);
        p.plan(&req, 20 * MS, &mut rng, &mut plan);
        assert_eq!(plan.targets(), &[NodeId(2)]);
    }

    #[test]
    fn a_coordinator_draws_hwlb_shares_and_passes_over_a_silent_replica() {
        let mut p = Unified::new(&table(&[("warmup_reads", ParamValue::Float(0.0))])).unwrap();
        let nodes = ids(3);
        let mut rng = Rng::seed_from_u64(3);
        let mut plan = Plan::new();
        // Node 2 is cold (hit rate 0.5 against 0.9): HWLB gives it a smaller share.
        for (node, rate) in [(0, 0.9), (1, 0.9), (2, 0.5)] {
            p.on_send(NodeId(node), 0);
            p.on_reply(&hit_rate_reply(node, rate), MS);
        }
        let mut hits = [0u32; 3];
        let mut t = 2 * MS;
        for _ in 0..3_000 {
            t += MS;
            assert_eq!(p.plan(&coordinator_req(&nodes), t, &mut rng, &mut plan), Decision::Send);
            let targets = plan.targets();
            assert_eq!(targets.len(), 2);
            assert_ne!(targets[0], targets[1], "distinct replicas");
            for &n in targets {
                hits[n.index()] += 1;
                p.on_send(n, t);
                p.on_reply(&hit_rate_reply(n.0, [0.9, 0.9, 0.5][n.index()]), t);
            }
        }
        // HWLB's rows leave the cold replica's whole share to its own coordinator: coordinator 0
        // keeps half its reads local and sends the rest to the warm peer.
        assert_eq!(hits, [3_000, 3_000, 0], "the cold replica gets no reads from a warm coordinator");
        // Node 1 stops answering: after 10 of ours in flight and no answer for 200 ms it is
        // passed over, whatever HWLB draws.
        for _ in 0..10 {
            p.on_send(NodeId(1), t);
        }
        t += 300 * MS;
        for _ in 0..200 {
            p.plan(&coordinator_req(&nodes), t, &mut rng, &mut plan);
            assert!(!plan.targets().contains(&NodeId(1)), "{:?}", plan.targets());
            assert_eq!(plan.fallbacks().last(), Some(&NodeId(1)), "the silent replica is the last resort");
        }
    }

    /// Coordinator 0 of replicas 0-2 that report their load, equally warm (0.8): replica 1's
    /// queue is long (20 waiting), replica 2's short.
    fn loaded_coordinator(overrides: &ParamTable) -> Unified {
        let mut p = Unified::new(overrides).unwrap();
        for round in 0..30u64 {
            for (node, queue) in [(0u16, 0u32), (1, 20), (2, 0)] {
                p.on_send(NodeId(node), round * MS);
                p.on_reply(&loaded_reply(node, 0.8, 2.0, 1.0, queue), round * MS);
            }
        }
        p
    }

    #[test]
    fn with_warm_replicas_reporting_their_load_a_coordinator_ranks_by_it_its_own_replica_first() {
        let mut p = loaded_coordinator(&ParamTable::new());
        let nodes = ids(3);
        let mut rng = Rng::seed_from_u64(12);
        let mut plan = Plan::new();
        for _ in 0..200 {
            assert_eq!(p.plan(&coordinator_req(&nodes), 40 * MS, &mut rng, &mut plan), Decision::Send);
            assert_eq!(plan.targets(), &[NodeId(0), NodeId(2)], "own replica, then the short queue");
        }
        // Without the rule (HWLB's draw, queues seen only through this coordinator's own
        // replies, equal here) the long queue takes about half the second reads.
        let mut p = loaded_coordinator(&table(&[("heat_only_while_warming", ParamValue::Bool(false))]));
        let to_long_queue = (0..200)
            .filter(|_| {
                p.plan(&coordinator_req(&nodes), 40 * MS, &mut rng, &mut plan);
                plan.targets().contains(&NodeId(1))
            })
            .count();
        assert!((50..150).contains(&to_long_queue), "HWLB's draw: {to_long_queue} of 200");
    }

    #[test]
    fn a_replica_seen_coming_up_brings_back_hwlbs_draw_for_the_warm_up_window() {
        let mut p = Unified::new(&table(&[("warmup_reads", ParamValue::Float(0.0))])).unwrap();
        for round in 0..30u64 {
            for node in 0..3u16 {
                p.on_send(NodeId(node), round * MS);
                p.on_reply(&loaded_reply(node, 0.8, 2.0, 1.0, 0), round * MS);
            }
        }
        let nodes = ids(3);
        let mut rng = Rng::seed_from_u64(13);
        let mut plan = Plan::new();
        // Replica 2 restarts cold; its answers report a hit rate of 0.1 and no queue: C3 would
        // rank it with the warm one, HWLB's shares leave it to warm.
        let up_ns = 100 * MS;
        p.on_node_up(NodeId(2), NodeCaps::default(), up_ns);
        for i in 0..10u64 {
            p.on_send(NodeId(2), up_ns + i * MS);
            p.on_reply(&loaded_reply(2, 0.1, 2.0, 1.0, 0), up_ns + i * MS);
        }
        let t = up_ns + 20 * MS;
        assert!(!p.ranks_by_load(&coordinator_req(&nodes), &rates(&p, &nodes, t), t));
        for _ in 0..100 {
            p.plan(&coordinator_req(&nodes), t, &mut rng, &mut plan);
            assert_eq!(plan.targets(), &[NodeId(0), NodeId(1)], "HWLB: the cold replica is left to warm");
        }
        // Past HWLB's warm-up window (900 s) the ranking is back.
        let later = up_ns + 901 * 1_000 * MS;
        for node in 0..3u16 {
            p.on_send(NodeId(node), later);
            p.on_reply(&loaded_reply(node, 0.8, 2.0, 1.0, 0), later);
        }
        assert!(p.ranks_by_load(&coordinator_req(&nodes), &rates(&p, &nodes, later), later));
    }

    #[test]
    fn a_coordinator_ranking_by_load_still_passes_over_a_silent_replica_and_a_cold_own_one_draws() {
        let mut p = loaded_coordinator(&ParamTable::new());
        let nodes = ids(3);
        let mut rng = Rng::seed_from_u64(14);
        let mut plan = Plan::new();
        // Replica 2 (the short queue) stops answering: passed over, the long queue reads.
        for _ in 0..10 {
            p.on_send(NodeId(2), 40 * MS);
        }
        let t = 400 * MS;
        for _ in 0..50 {
            p.plan(&coordinator_req(&nodes), t, &mut rng, &mut plan);
            assert_eq!(plan.targets(), &[NodeId(0), NodeId(1)]);
            assert_eq!(plan.fallbacks().last(), Some(&NodeId(2)), "the silent replica is the last resort");
        }
        // A coordinator that restarted does not see itself come up: its own replica, far colder
        // than the others (its own rate is always fresh), sends it back to HWLB's draw.
        let mut p = loaded_coordinator(&ParamTable::new());
        p.on_send(NodeId(0), 40 * MS);
        p.on_reply(&loaded_reply(0, 0.2, 2.0, 1.0, 0), 40 * MS);
        p.health.set_local(NodeId(0));
        p.hwlb.observe(
            &Event::Info {
                node: NodeId(0),
                info: &Feedback {
                    hit_rate: Some(0.2),
                    ..Feedback::default()
                },
            },
            40 * MS,
        );
        let t = 41 * MS;
        assert!(!p.ranks_by_load(&coordinator_req(&nodes), &rates(&p, &nodes, t), t));
    }

    /// The hit rates `p`'s HWLB counts with for `nodes` at `now_ns`.
    fn rates(p: &Unified, nodes: &[NodeId], now_ns: u64) -> Vec<Option<f64>> {
        nodes.iter().map(|&n| p.hwlb.effective_rate(n, now_ns)).collect()
    }
}
