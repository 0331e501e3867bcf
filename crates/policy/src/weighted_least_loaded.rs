//! `weighted-least-loaded` (client side; the (Un)Balance talk's WLLLB, Netflix): score a few
//! candidates by requests in flight weighted by how bad an idea each one is, take the lowest.
//!
//! Per request: consider up to `max_candidates` (8) nodes — all the replicas (shuffled; a
//! random `max_candidates` of them if there are more), then random non-replicas to fill up.
//! Score = `min(in_flight_cap, 1 + in_flight)`, multiplied by
//! - `remote_zone_weight` (4) when the node is not in the client's rack/zone
//!   ([`Event::Topology`]; unknown zones count as local),
//! - `non_replica_weight` (12) when it does not hold the key,
//! - `unhealthy_weight` (64) when it is unhealthy (the Java driver's rule, [`crate::health`]),
//! - `starting_weight` (16) while it starts up: a node up for `t` < `ramp` gets the weight
//!   with probability `1 - t / ramp`, so its traffic ramps up linearly. Each client draws its
//!   own `ramp` uniformly in [`ramp_min_s`, `ramp_max_s`] (30-45 s), so clients do not all
//!   ramp in lockstep; it is drawn from the request RNG on the first plan.
//!
//! The scored nodes are sorted ascending (ties in random order); the other candidates follow
//! as fallbacks. Cost: one pass over at most 8 nodes, no lock — the talk's point was that the
//! driver's own policy (CAS plus a lock per plan) capped a client at 8k of the 20k QPS needed.

use crate::health::{DriverView, HealthRule, MAX_MIN_RESPONSES};
use crate::nodes::NodeTable;
use crate::order::{replicas_first, scratch, shuffle_prefix, sort_by_score, ScoreBuf};
use crate::params::{ParamDefault as D, ParamSpec, ParamTable, Params, PolicyError};
use crate::policy::{Event, Policy};
use crate::rng::Rng;
use crate::types::{Decision, NodeId, Plan, Request, MAX_REPLICAS};

/// The name it is registered under.
pub const NAME: &str = "weighted-least-loaded";

const fn weight(value: f64, description: &'static str, name: &'static str) -> ParamSpec {
    ParamSpec {
        name,
        default: D::Float { value, min: 1.0, max: 1e9 },
        description,
    }
}

/// Its parameters with the talk's defaults.
pub static PARAMS: [ParamSpec; 11] = [
    ParamSpec {
        name: "max_candidates",
        default: D::Int {
            value: 8,
            min: 1,
            max: MAX_REPLICAS as i64,
        },
        description: "how many nodes are scored per request (replicas first, then random others)",
    },
    ParamSpec {
        name: "in_flight_cap",
        default: D::Float {
            value: 32_768.0,
            min: 1.0,
            max: 1e12,
        },
        description: "1 + in-flight is capped at this before weighting",
    },
    weight(4.0, "factor for a node outside the client's rack/zone", "remote_zone_weight"),
    weight(12.0, "factor for a node that does not hold the key", "non_replica_weight"),
    weight(64.0, "factor for an unhealthy node (busy and not answering)", "unhealthy_weight"),
    weight(
        16.0,
        "factor for a starting node, applied with probability 1 - time up / ramp",
        "starting_weight",
    ),
    ParamSpec {
        name: "ramp_min_s",
        default: D::Float {
            value: 30.0,
            min: 0.0,
            max: 86_400.0,
        },
        description: "shortest start-up ramp a client may draw",
    },
    ParamSpec {
        name: "ramp_max_s",
        default: D::Float {
            value: 45.0,
            min: 0.0,
            max: 86_400.0,
        },
        description: "longest start-up ramp a client may draw (>= ramp_min_s)",
    },
    ParamSpec {
        name: "in_flight_threshold",
        default: D::Int {
            value: 10,
            min: 1,
            max: 1_000_000,
        },
        description: "unhealthy rule: requests in flight at which a node counts as busy",
    },
    ParamSpec {
        name: "min_responses",
        default: D::Int {
            value: 2,
            min: 1,
            max: MAX_MIN_RESPONSES as i64,
        },
        description: "unhealthy rule: a busy node with fewer responses in the window is unhealthy",
    },
    ParamSpec {
        name: "response_window_ms",
        default: D::Float {
            value: 200.0,
            min: 0.001,
            max: 3_600_000.0,
        },
        description: "unhealthy rule: the window in which responses are counted",
    },
];

/// The weights of the score, as configured.
#[derive(Clone, Copy, Debug)]
struct Weights {
    in_flight_cap: f64,
    remote_zone: f64,
    non_replica: f64,
    unhealthy: f64,
    starting: f64,
}

/// Weighted least loaded.
#[derive(Debug)]
pub struct WeightedLeastLoaded {
    max_candidates: usize,
    weights: Weights,
    ramp_min_ns: f64,
    ramp_max_ns: f64,
    /// This client's ramp, drawn on the first plan.
    ramp_ns: Option<f64>,
    view: DriverView,
    zones: NodeTable<Option<u32>>,
    local_zone: Option<u32>,
}

impl WeightedLeastLoaded {
    /// Builds it from parameter overrides.
    pub fn new(overrides: &ParamTable) -> Result<Self, PolicyError> {
        let params = Params::resolve(NAME, &PARAMS, overrides)?;
        let (ramp_min_s, ramp_max_s) = (params.f64("ramp_min_s"), params.f64("ramp_max_s"));
        if ramp_max_s < ramp_min_s {
            return Err(PolicyError::BadValue {
                policy: NAME.to_string(),
                param: "ramp_max_s".to_string(),
                value: ramp_max_s.to_string(),
                allowed: format!("must be at least ramp_min_s ({ramp_min_s})"),
            });
        }
        let rule = HealthRule {
            in_flight_threshold: params.i64("in_flight_threshold") as u32,
            min_responses: params.i64("min_responses") as usize,
            response_window_ns: (params.f64("response_window_ms") * 1e6) as u64,
        };
        Ok(WeightedLeastLoaded {
            max_candidates: params.i64("max_candidates") as usize,
            weights: Weights {
                in_flight_cap: params.f64("in_flight_cap"),
                remote_zone: params.f64("remote_zone_weight"),
                non_replica: params.f64("non_replica_weight"),
                unhealthy: params.f64("unhealthy_weight"),
                starting: params.f64("starting_weight"),
            },
            ramp_min_ns: ramp_min_s * 1e9,
            ramp_max_ns: ramp_max_s * 1e9,
            ramp_ns: None,
            view: DriverView::new(rule),
            zones: NodeTable::new(),
            local_zone: None,
        })
    }

    /// This client's start-up ramp, ns, once drawn.
    pub fn ramp_ns(&self) -> Option<f64> {
        self.ramp_ns
    }

    fn is_remote(&self, node: NodeId) -> bool {
        match (self.local_zone, self.zones.value(node)) {
            (Some(local), Some(zone)) => zone != local,
            _ => false,
        }
    }

    /// The score of `node` for `req` at `now_ns` (the starting weight drawn from `rng`).
    fn score(&self, req: &Request<'_>, node: NodeId, now_ns: u64, ramp_ns: f64, rng: &mut Rng) -> f64 {
        let w = &self.weights;
        let in_flight = self.view.in_flight.get(node);
        let mut score = (1.0 + in_flight as f64).min(w.in_flight_cap);
        if self.is_remote(node) {
            score *= w.remote_zone;
        }
        if !req.is_replica(node) {
            score *= w.non_replica;
        }
        if self.view.health.is_unhealthy(node, in_flight, now_ns) {
            score *= w.unhealthy;
        }
        if let Some(up) = self.view.up_since_ns.value(node) {
            let since = now_ns.saturating_sub(up) as f64;
            if since < ramp_ns && rng.chance(1.0 - since / ramp_ns) {
                score *= w.starting;
            }
        }
        score
    }
}

impl Policy for WeightedLeastLoaded {
    fn plan(&mut self, req: &Request<'_>, now_ns: u64, rng: &mut Rng, out: &mut Plan) -> Decision {
        if !req.plannable() {
            return Decision::Unavailable;
        }
        let ramp_ns = match self.ramp_ns {
            Some(r) => r,
            None => {
                let r = self.ramp_min_ns + rng.unit_f64() * (self.ramp_max_ns - self.ramp_min_ns);
                self.ramp_ns = Some(r);
                r
            }
        };
        let (mut order, n) = scratch(req.candidates);
        let order = &mut order[..n];
        let rc = replicas_first(req, order);
        let m = self.max_candidates.max(req.count).min(n);
        let from_replicas = rc.min(m);
        shuffle_prefix(&mut order[..rc], 0, from_replicas, rng);
        shuffle_prefix(&mut order[rc..], 0, m - from_replicas, rng);
        let mut buf = ScoreBuf::new();
        let scores = buf.fill(m, |i| self.score(req, order[i], now_ns, ramp_ns, rng));
        sort_by_score(&mut order[..m], scores);
        out.set_order(order, req.count);
        Decision::Send
    }

    fn observe(&mut self, event: &Event<'_>, now_ns: u64) {
        match *event {
            Event::Topology { zones, local_zone } => {
                for (_, z) in self.zones.iter_mut() {
                    *z = None;
                }
                for &(node, zone) in zones {
                    *self.zones.entry(node) = Some(zone);
                }
                self.local_zone = local_zone;
            }
            _ => self.view.observe(event, now_ns),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ParamValue;
    use crate::testkit::*;

    fn wll() -> WeightedLeastLoaded {
        WeightedLeastLoaded::new(&ParamTable::new()).unwrap()
    }

    #[test]
    fn multiplies_the_stated_weights() {
        let mut p = wll();
        let nodes = ids(4);
        let replicas = [NodeId(0), NodeId(1)];
        let r = Request {
            replicas: Some(&replicas),
            ..req(&nodes, 1)
        };
        // Zones: the client and nodes 0 and 2 in zone 1, nodes 1 and 3 in zone 2.
        p.on_topology(&[(NodeId(0), 1), (NodeId(1), 2), (NodeId(2), 1), (NodeId(3), 2)], Some(1));
        let mut rng = Rng::seed_from_u64(1);
        let now = 100 * S;
        // Node 0: local replica, 15 in flight, unhealthy (no responses): 16 x 64 = 1024.
        for _ in 0..15 {
            p.on_send(NodeId(0), 0);
        }
        assert_eq!(p.score(&r, NodeId(0), now, 30e9, &mut rng), 16.0 * 64.0);
        // Node 1: remote replica, idle: 1 x 4.
        assert_eq!(p.score(&r, NodeId(1), now, 30e9, &mut rng), 4.0);
        // Node 2: local non-replica, 2 in flight: 3 x 12.
        p.on_send(NodeId(2), 0);
        p.on_send(NodeId(2), 0);
        assert_eq!(p.score(&r, NodeId(2), now, 30e9, &mut rng), 36.0);
        // Node 3: remote non-replica: 4 x 12 = 48.
        assert_eq!(p.score(&r, NodeId(3), now, 30e9, &mut rng), 48.0);
        // The plan sorts by score: 1 (4), 2 (36), 3 (48), 0 (1024).
        let mut plan = Plan::new();
        p.plan(&r, now, &mut rng, &mut plan);
        assert_eq!(plan.all(), &[NodeId(1), NodeId(2), NodeId(3), NodeId(0)]);
        // The in-flight factor is capped.
        let mut capped = WeightedLeastLoaded::new(&table(&[("in_flight_cap", ParamValue::Float(5.0))])).unwrap();
        for _ in 0..9 {
            capped.on_send(NodeId(0), 0);
        }
        capped.on_reply(&reply(0, MS), now - MS);
        capped.on_reply(&reply(0, MS), now - MS);
        assert_eq!(capped.score(&req(&nodes, 1), NodeId(0), now, 30e9, &mut rng), 5.0);
    }

    #[test]
    fn ramps_a_starting_node() {
        let mut p = wll();
        let nodes = ids(2);
        let r = req(&nodes, 1);
        let mut rng = Rng::seed_from_u64(2);
        let mut plan = Plan::new();
        p.plan(&r, 0, &mut rng, &mut plan);
        let ramp = p.ramp_ns().unwrap();
        assert!((30e9..=45e9).contains(&ramp), "{ramp}");
        p.on_node_up(NodeId(1), NodeCaps::default(), 0);
        // At a quarter of the ramp the weight applies with probability 3/4.
        let at = (ramp / 4.0) as u64;
        let trials = 20_000;
        let weighted = (0..trials).filter(|_| p.score(&r, NodeId(1), at, ramp, &mut rng) > 1.0).count();
        let share = weighted as f64 / trials as f64;
        assert!((share - 0.75).abs() < 0.015, "{share}");
        // Idle node 0 scores 1, so node 1 is first only when the weight is not applied
        // (and then on a coin flip): 1/4 x 1/2.
        let firsts = (0..trials)
            .filter(|_| {
                p.plan(&r, at, &mut rng, &mut plan);
                plan.targets()[0] == NodeId(1)
            })
            .count();
        let share = firsts as f64 / trials as f64;
        assert!((share - 0.125).abs() < 0.015, "{share}");
        // After the ramp: never weighted.
        assert!((0..1_000).all(|_| p.score(&r, NodeId(1), ramp as u64 + 1, ramp, &mut rng) == 1.0));
    }

    #[test]
    fn considers_replicas_then_random_others_up_to_the_limit() {
        let mut p = WeightedLeastLoaded::new(&table(&[("max_candidates", ParamValue::Int(4))])).unwrap();
        let nodes = ids(10);
        let replicas = [NodeId(7), NodeId(8), NodeId(9)];
        let r = Request {
            replicas: Some(&replicas),
            ..req(&nodes, 1)
        };
        // Replicas are all busy; only the scored non-replica can win.
        for &x in &replicas {
            for _ in 0..20 {
                p.on_send(x, 0);
            }
            p.on_reply(&reply(x.0, MS), 0);
            p.on_reply(&reply(x.0, MS), 0);
        }
        let mut rng = Rng::seed_from_u64(3);
        let mut plan = Plan::new();
        let mut firsts = [0u32; 10];
        for _ in 0..7_000 {
            p.plan(&r, MS, &mut rng, &mut plan);
            assert_eq!(plan.all().len(), 10);
            firsts[plan.targets()[0].index()] += 1;
        }
        // An idle non-replica scores 1 x 12, a healthy replica with 18 in flight 19: the one
        // random non-replica scored wins, each of the 7 about 1/7 of the time.
        assert!(firsts[..7].iter().all(|&f| (850..1_150).contains(&f)), "{firsts:?}");
    }
}
