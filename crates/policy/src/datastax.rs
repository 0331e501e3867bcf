//! `datastax-default`: the DataStax/Apache Cassandra Java driver 4 `DefaultLoadBalancingPolicy`
//! (client side), with its "slow replica avoidance" on as it is by default.
//!
//! Per request: the replicas come first, shuffled; the other candidates follow in a
//! round-robin rotation. With more than 2 replicas:
//! 1. the most recently up replica (up less than `newly_up_ms` ago, from
//!    [`Event::NodeUp`]) that sits in position 0 or 1 is moved behind the other replicas
//!    with probability `demote_probability` (the driver's "1d4 != 1"), so a restarted node warms
//!    up on a quarter of its share;
//! 2. otherwise, when no replica is newly up, the unhealthy replicas ([`crate::health`]: at
//!    least 10 in flight and fewer than 2 responses in the last 200 ms) go behind the healthy
//!    ones, but only when 0 < unhealthy < replicas / 2 (a majority must stay healthy);
//! 3. finally the first two replicas are swapped if the first has more requests in flight
//!    (power of two choices).
//!
//! As in the driver, steps 1-3 apply only with more than 2 replicas. A simulator should call
//! `Event::NodeUp` when a node restarts (and may at start-up: then the newest one is demoted for
//! the first minute, as the real driver would).

use crate::health::{DriverView, HealthRule, MAX_MIN_RESPONSES};
use crate::order::{move_back, partition_stable, replicas_first, scratch, shuffle_prefix};
use crate::params::{ParamDefault as D, ParamSpec, ParamTable, Params, PolicyError};
use crate::policy::{Event, Policy};
use crate::rng::Rng;
use crate::types::{Decision, NodeId, Plan, Request};

/// The name it is registered under.
pub const NAME: &str = "datastax-default";

/// Its parameters with the driver's defaults.
pub static PARAMS: [ParamSpec; 6] = [
    ParamSpec {
        name: "slow_avoidance",
        default: D::Bool(true),
        description: "false = the driver's basic policy (shuffled replicas, no health or newly-up rules)",
    },
    ParamSpec {
        name: "newly_up_ms",
        default: D::Float {
            value: 60_000.0,
            min: 0.0,
            max: 86_400_000.0,
        },
        description: "a replica up for less than this is 'newly up' and may be demoted",
    },
    ParamSpec {
        name: "demote_probability",
        default: D::Float {
            value: 0.75,
            min: 0.0,
            max: 1.0,
        },
        description: "chance that a newly-up replica in position 0 or 1 is moved behind the others",
    },
    ParamSpec {
        name: "in_flight_threshold",
        default: D::Int {
            value: 10,
            min: 1,
            max: 1_000_000,
        },
        description: "requests in flight at which a replica counts as busy",
    },
    ParamSpec {
        name: "min_responses",
        default: D::Int {
            value: 2,
            min: 1,
            max: MAX_MIN_RESPONSES as i64,
        },
        description: "a busy replica with fewer responses than this in the window is unhealthy",
    },
    ParamSpec {
        name: "response_window_ms",
        default: D::Float {
            value: 200.0,
            min: 0.001,
            max: 3_600_000.0,
        },
        description: "the window in which responses are counted",
    },
];

/// The Java driver 4 default load-balancing policy.
#[derive(Debug)]
pub struct DataStaxDefault {
    slow_avoidance: bool,
    newly_up_ns: u64,
    demote_probability: f64,
    view: DriverView,
    round_robin: u64,
}

impl DataStaxDefault {
    /// Builds it from parameter overrides.
    pub fn new(overrides: &ParamTable) -> Result<Self, PolicyError> {
        let params = Params::resolve(NAME, &PARAMS, overrides)?;
        let rule = HealthRule {
            in_flight_threshold: params.i64("in_flight_threshold") as u32,
            min_responses: params.i64("min_responses") as usize,
            response_window_ns: (params.f64("response_window_ms") * 1e6) as u64,
        };
        Ok(DataStaxDefault {
            slow_avoidance: params.bool("slow_avoidance"),
            newly_up_ns: (params.f64("newly_up_ms") * 1e6) as u64,
            demote_probability: params.f64("demote_probability"),
            view: DriverView::new(rule),
            round_robin: 0,
        })
    }

    /// Steps 1-3 on the shuffled replicas `order[..rc]` (rc > 2).
    fn avoid_slow_replicas(&self, order: &mut [NodeId], now_ns: u64, rng: &mut Rng) {
        let rc = order.len();
        debug_assert!(rc > 2);
        // The most recently up replica still inside the newly-up window (first one on ties).
        let mut newest: Option<(usize, u64)> = None;
        for (i, &node) in order.iter().enumerate() {
            if let Some(up) = self.view.up_since_ns.value(node) {
                if now_ns.saturating_sub(up) < self.newly_up_ns && newest.is_none_or(|(_, t)| up > t) {
                    newest = Some((i, up));
                }
            }
        }
        match newest {
            None => {
                let unhealthy = order.iter().filter(|&&node| self.view.is_unhealthy(node, now_ns)).count();
                if unhealthy > 0 && (unhealthy as f64) < rc as f64 / 2.0 {
                    partition_stable(order, |node| self.view.is_unhealthy(node, now_ns));
                }
            }
            Some((pos, _)) => {
                if pos <= 1 && rng.chance(self.demote_probability) {
                    move_back(order, pos, rc - 1);
                }
            }
        }
        if self.view.in_flight.get(order[0]) > self.view.in_flight.get(order[1]) {
            order.swap(0, 1);
        }
    }
}

impl Policy for DataStaxDefault {
    fn plan(&mut self, req: &Request<'_>, now_ns: u64, rng: &mut Rng, out: &mut Plan) -> Decision {
        if !req.plannable() {
            return Decision::Unavailable;
        }
        let (mut order, n) = scratch(req.candidates);
        let order = &mut order[..n];
        let rc = replicas_first(req, order);
        if rc > 1 {
            shuffle_prefix(&mut order[..rc], 0, rc, rng);
        }
        if self.slow_avoidance && rc > 2 {
            self.avoid_slow_replicas(&mut order[..rc], now_ns, rng);
        }
        let rest = n - rc;
        if rest > 1 {
            order[rc..].rotate_left((self.round_robin % rest as u64) as usize);
            self.round_robin = self.round_robin.wrapping_add(1);
        }
        out.set_order(order, req.count);
        Decision::Send
    }

    fn observe(&mut self, event: &Event<'_>, now_ns: u64) {
        self.view.observe(event, now_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ParamValue;
    use crate::testkit::*;

    fn rf3() -> DataStaxDefault {
        DataStaxDefault::new(&ParamTable::new()).unwrap()
    }

    #[test]
    fn replicas_first_shuffled_then_the_rest() {
        let mut p = rf3();
        let nodes = ids(6);
        let replicas = [NodeId(4), NodeId(1), NodeId(5)];
        let r = Request {
            replicas: Some(&replicas),
            ..req(&nodes, 1)
        };
        let mut rng = Rng::seed_from_u64(1);
        let mut plan = Plan::new();
        let mut firsts = [0u32; 6];
        for _ in 0..3_000 {
            p.plan(&r, 0, &mut rng, &mut plan);
            let all = plan.all();
            assert_eq!(all.len(), 6);
            assert!(all[..3].iter().all(|x| replicas.contains(x)), "{all:?}");
            firsts[plan.targets()[0].index()] += 1;
        }
        for &r in &replicas {
            assert!((900..1_100).contains(&firsts[r.index()]), "{firsts:?}");
        }
    }

    #[test]
    fn demotes_a_newly_up_replica_three_times_out_of_four() {
        let mut p = rf3();
        let nodes = ids(3);
        p.on_node_up(NodeId(2), NodeCaps::default(), 10 * S);
        let mut rng = Rng::seed_from_u64(7);
        let mut plan = Plan::new();
        let trials = 40_000;
        let mut first = 0u32;
        for _ in 0..trials {
            p.plan(&req(&nodes, 1), 20 * S, &mut rng, &mut plan);
            if plan.targets()[0] == NodeId(2) {
                first += 1;
            }
        }
        // Position 0 after the shuffle: 1/3; kept there with probability 1/4 -> 1/12. (From
        // position 1 it goes to the back as well; the p2c swap cannot promote it since no
        // requests are in flight.)
        let share = first as f64 / trials as f64;
        assert!((share - 1.0 / 12.0).abs() < 0.01, "{share}");
        // After the newly-up window it is an ordinary replica again.
        let mut first = 0u32;
        for _ in 0..trials {
            p.plan(&req(&nodes, 1), 71 * S, &mut rng, &mut plan);
            if plan.targets()[0] == NodeId(2) {
                first += 1;
            }
        }
        let share = first as f64 / trials as f64;
        assert!((share - 1.0 / 3.0).abs() < 0.01, "{share}");
    }

    #[test]
    fn never_demotes_with_probability_zero_or_two_replicas() {
        let mut p = DataStaxDefault::new(&table(&[("demote_probability", ParamValue::Float(0.0))])).unwrap();
        let nodes = ids(3);
        p.on_node_up(NodeId(0), NodeCaps::default(), 0);
        let mut rng = Rng::seed_from_u64(2);
        let mut plan = Plan::new();
        let mut first = 0;
        for _ in 0..3_000 {
            p.plan(&req(&nodes, 1), S, &mut rng, &mut plan);
            first += (plan.targets()[0] == NodeId(0)) as u32;
        }
        assert!((900..1_100).contains(&first), "{first}");
        let mut p = rf3();
        let two = ids(2);
        p.on_node_up(NodeId(0), NodeCaps::default(), 0);
        let mut first = 0;
        for _ in 0..2_000 {
            p.plan(&req(&two, 1), S, &mut rng, &mut plan);
            first += (plan.targets()[0] == NodeId(0)) as u32;
        }
        assert!((900..1_100).contains(&first), "two replicas: no rules apply ({first})");
    }

    #[test]
    fn unhealthy_replica_goes_back_only_as_a_minority() {
        let mut p = rf3();
        let nodes = ids(5);
        let mut rng = Rng::seed_from_u64(3);
        let mut plan = Plan::new();
        let now = 10 * S;
        // Node 3: 10 in flight, no response in the last 200 ms -> unhealthy.
        for _ in 0..10 {
            p.on_send(NodeId(3), 0);
        }
        // Node 1: 10 in flight but answering briskly -> healthy.
        for _ in 0..12 {
            p.on_send(NodeId(1), 0);
        }
        p.on_reply(&reply(1, MS), now - 50 * MS);
        p.on_reply(&reply(1, MS), now - 10 * MS);
        for _ in 0..2_000 {
            p.plan(&req(&nodes, 1), now, &mut rng, &mut plan);
            assert_eq!(plan.all()[4], NodeId(3), "{plan:?}");
            // p2c: node 1 (10 in flight) never stays ahead of an idle second replica.
            assert_ne!(plan.targets()[0], NodeId(1));
        }
        // Two unhealthy of five is still a minority; three is not (2.5 is the bound).
        for node in [0u16, 2] {
            for _ in 0..10 {
                p.on_send(NodeId(node), 0);
            }
        }
        let mut moved = 0;
        for _ in 0..2_000 {
            p.plan(&req(&nodes, 1), now, &mut rng, &mut plan);
            if plan.all()[2..].iter().all(|x| [0, 2, 3].contains(&x.0)) {
                moved += 1;
            }
        }
        // With three unhealthy nothing is moved: the unhealthy are last only by chance (1/10).
        assert!(moved < 400, "{moved}");
    }

    #[test]
    fn basic_policy_without_slow_avoidance() {
        let mut p = DataStaxDefault::new(&table(&[("slow_avoidance", ParamValue::Bool(false))])).unwrap();
        let nodes = ids(3);
        for _ in 0..10 {
            p.on_send(NodeId(0), 0);
        }
        let mut rng = Rng::seed_from_u64(4);
        let mut plan = Plan::new();
        let mut first = 0;
        for _ in 0..3_000 {
            p.plan(&req(&nodes, 1), S, &mut rng, &mut plan);
            first += (plan.targets()[0] == NodeId(0)) as u32;
        }
        assert!((900..1_100).contains(&first), "{first}");
    }
}
