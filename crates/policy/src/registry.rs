//! Every policy by name: its side, a one-line description, its parameters, and how to build it
//! from a table of overrides. Scenario files, node configurations and `replica-lb policies`
//! all go through here.

use crate::baselines::{least_outstanding, oracle, p2c, random, round_robin};
use crate::needs::{Need, Needs};
use crate::params::{ParamSpec, ParamTable, Params, PolicyError};
use crate::policy::Policy;
use crate::types::Side;
use crate::{c3, datastax, dynamic_snitch, hwlb, latency_aware, naive, peak_ewma, prequal, unified, weighted_least_loaded};

/// One registered policy.
pub struct PolicyInfo {
    /// The name used everywhere (`hwlb`, `c3`, ...).
    pub name: &'static str,
    /// Which decisions it makes.
    pub side: Side,
    /// One line: what it does.
    pub description: &'static str,
    /// Its parameters with the published defaults.
    pub params: &'static [ParamSpec],
    /// What it needs from its caller beyond the plain contract ([`crate::needs`]).
    pub needs: Needs,
    /// Whether, as a client policy, it ranks a driver's whole token-aware query plan (the
    /// key's replicas, then the other nodes) and so may choose a coordinator that is not a
    /// replica (the Java driver's default, weighted-least-loaded, latency-aware). A caller
    /// that offers non-replica coordinators offers them only to these; the others choose among
    /// the replicas, as token-aware wrappers do.
    pub plans_beyond_replicas: bool,
    /// Whether, as a client policy through a driver, it learns every node's hit rate off the
    /// request path (the driver polls them; `hwlb-client`) rather than from replies.
    pub polls_hit_rates: bool,
    /// Whether it is made to run in the driver and inside the database together (`unified`,
    /// which the README tells operators to install in both): where clients go through
    /// coordinators, a bare name in a run item sets both sides, so a comparison measures it as
    /// it is deployed. Other policies of side `both` set one side, the scenario's `both_side`.
    pub both_sides_together: bool,
    build: fn(&ParamTable) -> Result<Box<dyn Policy>, PolicyError>,
}

fn boxed<P: Policy + 'static>(built: Result<P, PolicyError>) -> Result<Box<dyn Policy>, PolicyError> {
    built.map(|p| Box::new(p) as Box<dyn Policy>)
}

/// The catalogue, in the order listings show it.
pub static POLICIES: &[PolicyInfo] = &[
    PolicyInfo {
        name: naive::NAME,
        side: Side::Coordinator,
        description: "pre-HWLB coordinator: read locally if a replica, the other CL-1 replicas uniformly at random",
        params: &naive::PARAMS,
        needs: Needs::NONE,
        plans_beyond_replicas: false,
        polls_hit_rates: false,
        both_sides_together: false,
        build: |o| boxed(naive::Naive::new(o)),
    },
    PolicyInfo {
        name: hwlb::policy::NAME,
        side: Side::Coordinator,
        description: "heat-weighted load balancing: equal cache misses per replica, local work kept, exact systematic sampling",
        params: &hwlb::policy::PARAMS,
        needs: Needs::of(&[Need::Feedback]),
        plans_beyond_replicas: false,
        polls_hit_rates: false,
        both_sides_together: false,
        build: |o| boxed(hwlb::Hwlb::new(o)),
    },
    PolicyInfo {
        name: hwlb::policy::CLIENT_NAME,
        side: Side::Client,
        description: "HWLB at the client (CL=ONE): each read's coordinator drawn with HWLB's shares, from hit rates in replies or polled",
        params: &hwlb::policy::PARAMS,
        needs: Needs::of(&[Need::Feedback]),
        plans_beyond_replicas: false,
        polls_hit_rates: true,
        both_sides_together: false,
        build: |o| boxed(hwlb::Hwlb::new_client(o)),
    },
    PolicyInfo {
        name: random::NAME,
        side: Side::Both,
        description: "uniformly random targets among the candidates",
        params: &random::PARAMS,
        needs: Needs::NONE,
        plans_beyond_replicas: false,
        polls_hit_rates: false,
        both_sides_together: false,
        build: |o| boxed(random::Random::new(o)),
    },
    PolicyInfo {
        name: round_robin::NAME,
        side: Side::Both,
        description: "candidates in topology order, rotated by one position per request",
        params: &round_robin::PARAMS,
        needs: Needs::NONE,
        plans_beyond_replicas: false,
        polls_hit_rates: false,
        both_sides_together: false,
        build: |o| boxed(round_robin::RoundRobin::new(o)),
    },
    PolicyInfo {
        name: least_outstanding::NAME,
        side: Side::Both,
        description: "fewest requests in flight from this sender (full scan, random tie-break)",
        params: &least_outstanding::PARAMS,
        needs: Needs::NONE,
        plans_beyond_replicas: false,
        polls_hit_rates: false,
        both_sides_together: false,
        build: |o| boxed(least_outstanding::LeastOutstanding::new(o)),
    },
    PolicyInfo {
        name: p2c::NAME,
        side: Side::Both,
        description: "power of two choices: two random candidates, the one with fewer requests in flight",
        params: &p2c::PARAMS,
        needs: Needs::NONE,
        plans_beyond_replicas: false,
        polls_hit_rates: false,
        both_sides_together: false,
        build: |o| boxed(p2c::P2c::new(o)),
    },
    PolicyInfo {
        name: peak_ewma::NAME,
        side: Side::Both,
        description: "power of two choices on peak-EWMA round-trip time x (pending + 1) (Finagle, tower/Linkerd)",
        params: &peak_ewma::PARAMS,
        needs: Needs::NONE,
        plans_beyond_replicas: false,
        polls_hit_rates: false,
        both_sides_together: false,
        build: |o| boxed(peak_ewma::PeakEwma::new(o)),
    },
    PolicyInfo {
        name: dynamic_snitch::policy::NAME,
        side: Side::Both,
        description: "Cassandra dynamic snitch: median latency scores, topology order unless 10% worse than sorted",
        params: &dynamic_snitch::policy::PARAMS,
        needs: Needs::NONE,
        plans_beyond_replicas: false,
        polls_hit_rates: false,
        both_sides_together: false,
        build: |o| boxed(dynamic_snitch::DynamicSnitch::new(o)),
    },
    PolicyInfo {
        name: c3::policy::NAME,
        side: Side::Both,
        description: "C3: rank by (R - 1/mu) + (1 + os*n + q)^3/mu, cubic rate control per server, per-group backlog",
        params: &c3::policy::PARAMS,
        needs: Needs::of(&[Need::Feedback]),
        plans_beyond_replicas: false,
        polls_hit_rates: false,
        both_sides_together: false,
        build: |o| boxed(c3::C3::new(o)),
    },
    PolicyInfo {
        name: datastax::NAME,
        side: Side::Client,
        description: "Java driver 4 default: shuffled replicas, newly-up and unhealthy replicas demoted, p2c on the first two",
        params: &datastax::PARAMS,
        needs: Needs::NONE,
        plans_beyond_replicas: true,
        polls_hit_rates: false,
        both_sides_together: false,
        build: |o| boxed(datastax::DataStaxDefault::new(o)),
    },
    PolicyInfo {
        name: weighted_least_loaded::NAME,
        side: Side::Client,
        description: "(Un)Balance talk: up to 8 nodes scored by in-flight x zone, replica, unhealthy and start-up weights",
        params: &weighted_least_loaded::PARAMS,
        needs: Needs::of(&[Need::Topology]),
        plans_beyond_replicas: true,
        polls_hit_rates: false,
        both_sides_together: false,
        build: |o| boxed(weighted_least_loaded::WeightedLeastLoaded::new(o)),
    },
    PolicyInfo {
        name: latency_aware::NAME,
        side: Side::Client,
        description: "Scylla Rust driver with latency awareness: nodes averaging > 2x the best are moved to the back",
        params: &latency_aware::PARAMS,
        needs: Needs::NONE,
        plans_beyond_replicas: true,
        polls_hit_rates: false,
        both_sides_together: false,
        build: |o| boxed(latency_aware::LatencyAware::new(o)),
    },
    PolicyInfo {
        name: prequal::policy::NAME,
        side: Side::Client,
        description: "Prequal: pool of <= 16 probed (RIF, latency), hot-cold rule: coldest lowest latency, else lowest RIF",
        params: &prequal::policy::PARAMS,
        needs: Needs::of(&[Need::Probes]),
        plans_beyond_replicas: false,
        polls_hit_rates: false,
        both_sides_together: false,
        build: |o| boxed(prequal::Prequal::new(o)),
    },
    PolicyInfo {
        name: unified::NAME,
        side: Side::Both,
        description: "C3's estimators (own in-flight first with a service time, expected response time without), HWLB's shares at a coordinator, busy and silent nodes passed over",
        params: &unified::PARAMS,
        needs: Needs::of(&[Need::Feedback]),
        plans_beyond_replicas: false,
        polls_hit_rates: false,
        both_sides_together: true,
        build: |o| boxed(unified::Unified::new(o)),
    },
    PolicyInfo {
        name: oracle::NAME,
        side: Side::Both,
        description: "simulation only: lowest (1 + true queue) x true mean service time (model = expected-response: counts the free slots)",
        params: &oracle::PARAMS,
        needs: Needs::of(&[Need::Truth]),
        plans_beyond_replicas: false,
        polls_hit_rates: false,
        both_sides_together: false,
        build: |o| boxed(oracle::Oracle::new(o)),
    },
];

/// A policy instance with what the registry knows of it: its name, side and effective
/// parameters live here (a report or an error message reads them from here), the instance
/// only plans and observes.
pub struct Built {
    /// The registered name (`hwlb`, ...), or a caller's own name for a stand-in.
    pub name: &'static str,
    /// Which decisions it makes.
    pub side: Side,
    /// The effective parameters (defaults with overrides), for reports.
    pub params: Params,
    /// What it needs from its caller beyond the plain contract.
    pub needs: Needs,
    /// The instance.
    pub policy: Box<dyn Policy>,
}

impl std::fmt::Debug for Built {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Built")
            .field("name", &self.name)
            .field("side", &self.side)
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

impl PolicyInfo {
    /// Whether it makes decisions of side `wanted` (client or coordinator); the error names
    /// the policy and both sides.
    pub fn check_side(&self, wanted: Side) -> Result<(), PolicyError> {
        match self.side.serves(wanted) {
            true => Ok(()),
            false => Err(PolicyError::WrongSide {
                policy: self.name.to_string(),
                side: self.side.as_str(),
                wanted: wanted.as_str(),
            }),
        }
    }

    /// A new instance with parameter `overrides`, with its name, side and effective
    /// parameters.
    pub fn instantiate(&'static self, overrides: &ParamTable) -> Result<Built, PolicyError> {
        let params = Params::resolve(self.name, self.params, overrides)?;
        Ok(Built {
            name: self.name,
            side: self.side,
            params,
            needs: self.needs,
            policy: (self.build)(overrides)?,
        })
    }
}

/// The registered policy called `name`.
pub fn find(name: &str) -> Result<&'static PolicyInfo, PolicyError> {
    POLICIES.iter().find(|p| p.name == name).ok_or_else(|| PolicyError::UnknownPolicy {
        name: name.to_string(),
        known: names().join(", "),
    })
}

/// Every registered name.
pub fn names() -> Vec<&'static str> {
    POLICIES.iter().map(|p| p.name).collect()
}

/// Builds the policy `name` with parameter `overrides`.
pub fn build(name: &str, overrides: &ParamTable) -> Result<Built, PolicyError> {
    find(name)?.instantiate(overrides)
}

/// The registered policy `name` for decisions of side `wanted` (client or coordinator),
/// failing clearly when the policy works on the other side.
pub fn find_for(name: &str, wanted: Side) -> Result<&'static PolicyInfo, PolicyError> {
    let info = find(name)?;
    info.check_side(wanted)?;
    Ok(info)
}

/// Builds the policy `name` for decisions of side `wanted` (client or coordinator), failing
/// clearly when the policy works on the other side.
pub fn build_for(name: &str, wanted: Side, overrides: &ParamTable) -> Result<Built, PolicyError> {
    find_for(name, wanted)?.instantiate(overrides)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ParamValue;
    use crate::testkit::Feed;

    #[test]
    fn every_policy_builds_with_defaults_and_reports_its_name_and_side() {
        for info in POLICIES {
            let b = build(info.name, &ParamTable::new()).unwrap();
            assert_eq!((b.name, b.side), (info.name, info.side));
            assert_eq!(b.params.values().count(), info.params.len());
        }
    }

    #[test]
    fn the_field_is_registered_under_its_names() {
        assert_eq!(
            names(),
            [
                "naive",
                "hwlb",
                "hwlb-client",
                "random",
                "round-robin",
                "least-outstanding",
                "p2c",
                "peak-ewma",
                "dynamic-snitch",
                "c3",
                "datastax-default",
                "weighted-least-loaded",
                "latency-aware",
                "prequal",
                "unified",
                "oracle",
            ]
        );
        for info in POLICIES {
            assert!(!info.description.contains('\n'), "{}: one line", info.name);
            for spec in info.params {
                assert!(!spec.description.is_empty(), "{}.{}", info.name, spec.name);
            }
        }
    }

    #[test]
    fn every_policy_plans_distinct_candidates_under_feedback() {
        use crate::rng::Rng;
        use crate::types::{Decision, Feedback, NodeCaps, NodeId, NodeTruth, Plan, ProbeReply, Reply, Request};
        let nodes: Vec<NodeId> = (0..16).map(NodeId).collect();
        let mut rng = Rng::seed_from_u64(9);
        for info in POLICIES {
            let mut p = build(info.name, &ParamTable::new()).unwrap().policy;
            p.on_topology(&[(NodeId(0), 0), (NodeId(1), 1)], Some(0));
            let mut plan = Plan::new();
            let mut probes = Vec::new();
            let mut now = 0u64;
            for round in 0..2_000u64 {
                now += 1_000_000;
                let n = 1 + (round % 16) as usize;
                let count = 1 + (round as usize / 16) % n;
                let replicas = &nodes[..n.min(3)];
                let req = Request {
                    candidates: &nodes[..n],
                    replicas: if round % 3 == 0 { Some(replicas) } else { None },
                    count,
                    local: if round % 5 == 0 {
                        Some(nodes[(round % n as u64) as usize])
                    } else {
                        None
                    },
                    group: (n as u64) << 8 | count as u64,
                };
                match p.plan(&req, now, &mut rng, &mut plan) {
                    Decision::Send => {
                        assert_eq!(plan.count(), count, "{}", info.name);
                        let all = plan.all();
                        for (i, x) in all.iter().enumerate() {
                            assert!(req.candidates.contains(x), "{}: {x} is not a candidate", info.name);
                            assert!(!all[..i].contains(x), "{}: {x} planned twice: {plan:?}", info.name);
                        }
                        for &t in plan.targets() {
                            p.on_send(t, now);
                            let feedback = Feedback {
                                hit_rate: Some(0.9),
                                queue_len: Some((t.0 as u32 * 7 + round as u32) % 13),
                                service_time_ns: Some(1_000_000 + t.0 as u64 * 100_000),
                                in_flight: Some(3),
                            };
                            if round % 7 == 0 {
                                p.on_failure(t, crate::Failure::Timeout, now + 500_000);
                            } else {
                                p.on_reply(
                                    &Reply {
                                        node: t,
                                        latency_ns: 2_000_000,
                                        feedback,
                                    },
                                    now + 500_000,
                                );
                            }
                        }
                    }
                    Decision::Wait { retry_at_ns } => assert!(retry_at_ns > now, "{}", info.name),
                    Decision::Unavailable => panic!("{}: unavailable with {n} candidates, count {count}", info.name),
                }
                probes.clear();
                p.probes(&req, now, &mut rng, &mut probes);
                for probe in &probes {
                    let answer = ProbeReply {
                        node: probe.node,
                        in_flight: (round % 11) as u32,
                        latency_ns: 1_000_000,
                    };
                    p.on_probe_reply(&answer, now + 100_000);
                }
                if round % 50 == 0 {
                    p.on_node_up(nodes[(round % 16) as usize], NodeCaps::default(), now);
                    let truth = NodeTruth {
                        node: nodes[(round % 16) as usize],
                        queue_len: 3,
                        service_time_mean_ns: 1e6,
                        concurrency: 2,
                    };
                    p.on_truth(&truth, now);
                }
            }
            let empty = Request {
                candidates: &[],
                replicas: None,
                count: 1,
                local: None,
                group: 0,
            };
            assert_eq!(p.plan(&empty, now, &mut rng, &mut plan), Decision::Unavailable, "{}", info.name);
        }
    }

    #[test]
    fn the_request_path_allocates_nothing_in_steady_state() {
        use crate::rng::Rng;
        use crate::testkit::allocations;
        use crate::types::{Decision, Feedback, NodeCaps, NodeId, Plan, ProbeReply, Reply, Request};
        let nodes: Vec<NodeId> = (0..16).map(NodeId).collect();
        for info in POLICIES {
            let mut p = build(info.name, &ParamTable::new()).unwrap().policy;
            let mut rng = Rng::seed_from_u64(5);
            let mut plan = Plan::new();
            let mut probes = Vec::with_capacity(64);
            let mut now = 0u64;
            // Every node seen once (the only growth of per-node state).
            for &node in &nodes {
                p.on_node_up(node, NodeCaps::default(), 0);
            }
            let mut cycle = |p: &mut Box<dyn Policy>, now: &mut u64, i: u64, rng: &mut Rng| {
                *now += 100_000;
                let req = Request {
                    candidates: &nodes[..3 + (i % 14) as usize],
                    replicas: None,
                    count: 1 + (i % 2) as usize,
                    local: None,
                    group: i % 14,
                };
                if p.plan(&req, *now, rng, &mut plan) == Decision::Send {
                    for &t in plan.targets() {
                        p.on_send(t, *now);
                        let feedback = Feedback {
                            hit_rate: Some(0.5 + (t.0 % 4) as f64 * 0.1),
                            queue_len: Some(2),
                            service_time_ns: Some(1_000_000),
                            in_flight: Some(1),
                        };
                        p.on_reply(
                            &Reply {
                                node: t,
                                latency_ns: 1_500_000,
                                feedback,
                            },
                            *now + 1,
                        );
                    }
                }
                probes.clear();
                p.probes(&req, *now, rng, &mut probes);
                for probe in &probes {
                    p.on_probe_reply(
                        &ProbeReply {
                            node: probe.node,
                            in_flight: (i % 5) as u32,
                            latency_ns: 1_000_000,
                        },
                        *now + 1,
                    );
                }
            };
            for i in 0..20_000 {
                cycle(&mut p, &mut now, i, &mut rng);
            }
            let before = allocations();
            for i in 0..20_000 {
                cycle(&mut p, &mut now, i, &mut rng);
            }
            assert_eq!(allocations() - before, 0, "{} allocated on the request path", info.name);
        }
        // The counter does count.
        let before = allocations();
        let v: Vec<u8> = Vec::with_capacity(8);
        std::hint::black_box(&v);
        assert_eq!(allocations() - before, 1);
    }

    /// A caller may skip news (`Event::Info`: gossip) for a policy that does not declare
    /// [`Need::Feedback`] (the simulator does, for a cluster's thousands of clients): every
    /// such policy decides the same with and without it.
    #[test]
    fn news_changes_nothing_without_the_feedback_need() {
        use crate::rng::Rng;
        use crate::types::{Decision, Feedback, NodeId, Plan, Reply, Request};
        let nodes: Vec<NodeId> = (0..8).map(NodeId).collect();
        for info in POLICIES.iter().filter(|i| !i.needs.has(Need::Feedback)) {
            let run = |news: bool| {
                let mut p = build(info.name, &ParamTable::new()).unwrap().policy;
                let (mut rng, mut plan, mut order) = (Rng::seed_from_u64(7), Plan::new(), Vec::new());
                for i in 0..2_000u64 {
                    let now = i * 1_000_000;
                    if news {
                        let info = Feedback {
                            hit_rate: Some((i % 10) as f64 / 10.0),
                            queue_len: Some((i % 7) as u32),
                            service_time_ns: Some(i * 1_000),
                            in_flight: Some((i % 3) as u32),
                        };
                        p.on_info(nodes[(i % 8) as usize], &info, now);
                    }
                    let req = Request {
                        candidates: &nodes[..3 + (i % 5) as usize],
                        replicas: None,
                        count: 1 + (i % 2) as usize,
                        local: (i % 3 == 0).then_some(NodeId(0)),
                        group: i % 5,
                    };
                    let decision = p.plan(&req, now, &mut rng, &mut plan);
                    order.push((decision, plan.all().to_vec()));
                    if decision == Decision::Send {
                        for &t in plan.targets() {
                            p.on_send(t, now);
                            let reply = Reply {
                                node: t,
                                latency_ns: 1_000_000 + (t.0 as u64) * 300_000,
                                feedback: Feedback::default(),
                            };
                            p.on_reply(&reply, now + 500_000);
                        }
                    }
                }
                order
            };
            assert!(run(true) == run(false), "{} decides differently with news", info.name);
        }
    }

    #[test]
    fn errors_name_the_bad_input() {
        let e = build("nope", &ParamTable::new()).err().unwrap().to_string();
        assert!(e.contains("'nope'") && e.contains("hwlb"), "{e}");
        let mut o = ParamTable::new();
        o.insert("hit_rate_cap".into(), ParamValue::Float(1.5));
        let e = build("hwlb", &o).err().unwrap().to_string();
        assert!(e.contains("hit_rate_cap") && e.contains("1.5"), "{e}");
        let e = build_for("hwlb", Side::Client, &ParamTable::new()).err().unwrap().to_string();
        assert!(e.contains("coordinator side"), "{e}");
    }
}
