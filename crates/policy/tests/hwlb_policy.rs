//! The `hwlb` policy end to end: rates arrive as feedback, plans are cached per replica group
//! and recomputed only when rates change, the steps-aside rules switch to the naive behaviour.

use replica_lb_policy::hwlb::{HwlbPlan, PlanConfig};
use replica_lb_policy::{build, Event, Failure, Feedback, NodeCaps, NodeId, ParamTable, Plan, Policy, Reply, Request, Rng};

const MS: u64 = 1_000_000;
const NODES: [NodeId; 3] = [NodeId(0), NodeId(1), NodeId(2)];

fn hwlb() -> Box<dyn Policy> {
    build("hwlb", &ParamTable::new()).unwrap().policy
}

fn tell(p: &mut dyn Policy, node: u16, rate: f64, now_ns: u64) {
    let reply = Reply {
        node: NodeId(node),
        latency_ns: MS,
        feedback: Feedback {
            hit_rate: Some(rate),
            ..Feedback::default()
        },
    };
    p.observe(&Event::Reply(&reply), now_ns);
}

fn request(local: Option<NodeId>, count: usize) -> Request<'static> {
    Request {
        candidates: &NODES,
        replicas: None,
        count,
        local,
        group: 1,
    }
}

/// Plans `draws` requests and returns how often each node was a target, and how often the
/// plan's first fallback was each node.
fn count(p: &mut dyn Policy, req: &Request<'_>, now_ns: u64, draws: u32) -> ([u32; 3], [u32; 3]) {
    let mut rng = Rng::seed_from_u64(99);
    let mut plan = Plan::new();
    let (mut targets, mut extra) = ([0u32; 3], [0u32; 3]);
    for _ in 0..draws {
        p.plan(req, now_ns, &mut rng, &mut plan);
        assert_eq!(plan.count(), req.count);
        for t in plan.targets() {
            targets[t.index()] += 1;
        }
        assert!(plan.fallbacks().iter().all(|f| !plan.targets().contains(f)));
        if let Some(f) = plan.fallbacks().first() {
            extra[f.index()] += 1;
        }
    }
    (targets, extra)
}

fn close(got: u32, draws: u32, expect: f64) -> bool {
    let f = got as f64 / draws as f64;
    let se = (expect * (1.0 - expect) / draws as f64).sqrt().max(1e-9);
    (f - expect).abs() <= 5.0 * se
}

#[test]
fn cold_coordinator_follows_its_row() {
    let mut p = hwlb();
    tell(p.as_mut(), 0, 0.0, 0);
    tell(p.as_mut(), 1, 0.8, 0);
    tell(p.as_mut(), 2, 0.8, 0);
    let expected = HwlbPlan::compute(&[0.0, 0.8, 0.8], 2, &PlanConfig::default());
    for c in 0..3 {
        let draws = 200_000;
        let (targets, _) = count(p.as_mut(), &request(Some(NodeId(c)), 2), 10 * MS, draws);
        for (j, (&got, &share)) in targets.iter().zip(expected.row(c as usize)).enumerate() {
            let want = 2.0 * share;
            assert!(
                close(got, draws, want),
                "coordinator {c} replica {j}: {} vs {want}",
                got as f64 / draws as f64
            );
        }
    }
}

#[test]
fn plans_are_recomputed_only_when_rates_change() {
    let mut p = replica_lb_policy::hwlb::Hwlb::new(&ParamTable::new()).unwrap();
    tell(&mut p, 0, 0.1, 0);
    tell(&mut p, 1, 0.8, 0);
    tell(&mut p, 2, 0.8, 0);
    count(&mut p, &request(Some(NodeId(0)), 2), 0, 10_000);
    assert_eq!(p.recomputes(), 1);
    tell(&mut p, 1, 0.8, 5 * MS); // same value, newer: nothing to recompute
    count(&mut p, &request(Some(NodeId(0)), 2), 6 * MS, 10_000);
    assert_eq!(p.recomputes(), 1);
    tell(&mut p, 0, 0.2, 7 * MS);
    count(&mut p, &request(Some(NodeId(0)), 2), 8 * MS, 10);
    assert_eq!(p.recomputes(), 2);
}

#[test]
fn a_stale_peer_counts_as_095_for_the_request() {
    let mut p = replica_lb_policy::hwlb::Hwlb::new(&ParamTable::new()).unwrap();
    tell(&mut p, 0, 0.5, 0);
    tell(&mut p, 1, 0.5, 0);
    tell(&mut p, 2, 0.0, 0);
    let req = request(Some(NodeId(0)), 1);
    count(&mut p, &req, 0, 1); // the first request tells the policy which node is local
    let fresh = p.current_plan(&req, 1000 * MS);
    assert!((fresh.shares[2] - 0.2).abs() < 1e-12, "{:?}", fresh.shares); // r = 2, 2, 1
                                                                          // Node 0 is local (never stale); node 1 and node 2 are stale after 1 s -> 0.95.
    let stale = p.current_plan(&req, 1001 * MS);
    assert!(
        (stale.shares[1] - stale.shares[2]).abs() < 1e-12 && stale.shares[1] > 0.45,
        "{:?}",
        stale.shares
    );
}

#[test]
fn unknown_and_forgotten_peers_count_as_cold() {
    let mut p = replica_lb_policy::hwlb::Hwlb::new(&ParamTable::new()).unwrap();
    tell(&mut p, 0, 0.8, 0);
    tell(&mut p, 1, 0.8, 0);
    let req = request(Some(NodeId(0)), 2);
    let plan = p.current_plan(&req, 0);
    assert!(
        plan.active() && (plan.shares[2] - 1.0 / 11.0).abs() < 1e-12,
        "node 2 unknown -> 0.0: {:?}",
        plan.shares
    );
    tell(&mut p, 2, 0.8, 0);
    assert!(!p.current_plan(&req, 0).active());
    p.observe(
        &Event::Failure {
            node: NodeId(2),
            failure: Failure::ConnectionLost,
        },
        0,
    );
    assert!(
        (p.current_plan(&req, 0).shares[2] - 1.0 / 11.0).abs() < 1e-12,
        "a dropped peer is forgotten"
    );
    tell(&mut p, 2, 0.8, 0);
    p.observe(&Event::NodeDown { node: NodeId(2) }, 0);
    assert!(p.current_plan(&req, 0).active(), "a down peer is forgotten");
}

#[test]
fn an_old_peer_without_rates_turns_hwlb_off() {
    let mut p = hwlb();
    tell(p.as_mut(), 0, 0.0, 0);
    tell(p.as_mut(), 1, 0.9, 0);
    p.observe(
        &Event::NodeUp {
            node: NodeId(2),
            caps: NodeCaps { reports_hit_rate: false },
        },
        0,
    );
    // Cold local node 0 would forward most reads under HWLB; the naive rule keeps it first.
    let (targets, _) = count(p.as_mut(), &request(Some(NodeId(0)), 2), 0, 20_000);
    assert_eq!(targets[0], 20_000);
    assert!(close(targets[1], 20_000, 0.5) && close(targets[2], 20_000, 0.5));
}

#[test]
fn equally_warm_replicas_get_the_naive_split() {
    let mut p = hwlb();
    for n in 0..3 {
        tell(p.as_mut(), n, 0.8, 0);
    }
    let (targets, _) = count(p.as_mut(), &request(Some(NodeId(1)), 2), 0, 20_000);
    assert_eq!(targets[1], 20_000);
}

#[test]
fn the_extra_replica_is_uniform_among_the_unselected() {
    let mut p = hwlb();
    tell(p.as_mut(), 0, 0.2, 0);
    tell(p.as_mut(), 1, 0.6, 0);
    tell(p.as_mut(), 2, 0.9, 0);
    let draws = 100_000;
    let (targets, extra) = count(p.as_mut(), &request(Some(NodeId(2)), 1), 0, draws);
    // With k = 1 the extra is uniform over the two unselected: P(extra = j) = (1 - p_j) / 2.
    for j in 0..3 {
        let p_j = targets[j] as f64 / draws as f64;
        assert!(
            close(extra[j], draws, (1.0 - p_j) / 2.0),
            "extra {j}: {extra:?} targets {targets:?}"
        );
    }
    let no_extra: ParamTable = [("extra_replica".to_string(), replica_lb_policy::ParamValue::Bool(false))].into();
    let mut p = build("hwlb", &no_extra).unwrap().policy;
    tell(p.as_mut(), 0, 0.2, 0);
    let (_, extra) = count(p.as_mut(), &request(Some(NodeId(2)), 1), 0, 100);
    assert_eq!(extra, [0, 0, 0]);
}

#[test]
fn a_coordinator_that_is_not_a_replica_uses_the_shares() {
    let mut p = hwlb();
    tell(p.as_mut(), 0, 0.0, 0);
    tell(p.as_mut(), 1, 0.5, 0);
    tell(p.as_mut(), 2, 0.75, 0);
    let draws = 200_000;
    let (targets, _) = count(p.as_mut(), &request(Some(NodeId(7)), 1), 0, draws);
    for (j, want) in [1.0 / 7.0, 2.0 / 7.0, 4.0 / 7.0].into_iter().enumerate() {
        assert!(close(targets[j], draws, want), "{targets:?}");
    }
}

#[test]
fn switched_off_it_behaves_as_naive() {
    let off: ParamTable = [("enabled".to_string(), replica_lb_policy::ParamValue::Bool(false))].into();
    let mut p = build("hwlb", &off).unwrap().policy;
    tell(p.as_mut(), 0, 0.0, 0);
    tell(p.as_mut(), 1, 0.9, 0);
    tell(p.as_mut(), 2, 0.9, 0);
    let (targets, _) = count(p.as_mut(), &request(Some(NodeId(0)), 2), 0, 1000);
    assert_eq!(targets[0], 1000);
}

#[test]
fn a_peer_turning_stale_without_news_changes_the_plan() {
    let mut p = replica_lb_policy::hwlb::Hwlb::new(&ParamTable::new()).unwrap();
    tell(&mut p, 0, 0.95, 0);
    tell(&mut p, 1, 0.9, 0);
    tell(&mut p, 2, 0.0, 0);
    let req = request(Some(NodeId(0)), 1);
    // Fresh: node 2 is cold and gets little work from coordinator 0.
    let (targets, _) = count(&mut p, &req, 1000 * MS, 10_000);
    assert!(targets[2] < 1_000, "{targets:?}");
    assert_eq!(p.recomputes(), 1);
    // 1 ms later node 2's rate (and node 1's) is stale -> 0.95: all equally warm, naive split,
    // so the local node takes everything with k = 1.
    let (targets, _) = count(&mut p, &req, 1001 * MS, 10_000);
    assert_eq!(p.recomputes(), 2, "the cached plan must notice the ageing");
    assert_eq!(targets[0], 10_000, "{targets:?}");
}

fn hwlb_with(params: &[(&str, f64)]) -> Box<dyn Policy> {
    let mut table = ParamTable::new();
    for &(name, value) in params {
        table.insert(name.to_string(), replica_lb_policy::ParamValue::Float(value));
    }
    build("hwlb", &table).unwrap().policy
}

/// Plans `draws` requests at `now_ns`; how often each node was a target and a background read.
fn targets_and_background(p: &mut dyn Policy, req: &Request<'_>, now_ns: u64, draws: u32) -> ([u32; 3], [u32; 3]) {
    let mut rng = Rng::seed_from_u64(5);
    let mut plan = Plan::new();
    let (mut targets, mut background) = ([0u32; 3], [0u32; 3]);
    for _ in 0..draws {
        plan.clear();
        p.plan(req, now_ns, &mut rng, &mut plan);
        assert_eq!(plan.count(), req.count);
        for t in plan.targets() {
            targets[t.index()] += 1;
        }
        if let Some(b) = plan.background() {
            assert!(!plan.targets().contains(&b), "a background read of a target");
            background[b.index()] += 1;
        }
    }
    (targets, background)
}

#[test]
fn warm_up_reads_keep_a_restarted_node_off_the_request_path_until_it_is_warm() {
    let mut p = hwlb_with(&[("warmup_reads", 1.0)]);
    let t0 = 10 * MS;
    p.observe(
        &Event::NodeUp {
            node: NodeId(0),
            caps: NodeCaps::default(),
        },
        t0,
    );
    tell(p.as_mut(), 0, 0.1, t0);
    tell(p.as_mut(), 1, 0.8, t0);
    tell(p.as_mut(), 2, 0.8, t0);
    // QUORUM from coordinator 1: both reads go to the warm nodes (0.2 misses per read each);
    // the cold node reads in the background at the pace that gives it as many misses: 0.2 /
    // 0.9 of the requests.
    let draws = 20_000;
    let (targets, background) = targets_and_background(p.as_mut(), &request(Some(NodeId(1)), 2), t0, draws);
    assert_eq!(targets, [0, draws, draws]);
    assert!(close(background[0], draws, 0.2 / 0.9), "{background:?}");
    assert_eq!(&background[1..], [0, 0]);
    // Half the share: half the pace.
    let mut half = hwlb_with(&[("warmup_reads", 0.5)]);
    half.observe(
        &Event::NodeUp {
            node: NodeId(0),
            caps: NodeCaps::default(),
        },
        t0,
    );
    for (node, rate) in [(0, 0.1), (1, 0.8), (2, 0.8)] {
        tell(half.as_mut(), node, rate, t0);
    }
    let (_, background) = targets_and_background(half.as_mut(), &request(Some(NodeId(1)), 2), t0, draws);
    assert!(close(background[0], draws, 0.1 / 0.9), "{background:?}");
    // The cold node as coordinator reads from the warm ones too.
    let (targets, _) = targets_and_background(p.as_mut(), &request(Some(NodeId(0)), 2), t0, 1000);
    assert_eq!(targets, [0, 1000, 1000]);
    // CL=ALL cannot avoid it: HWLB as published.
    let (targets, background) = targets_and_background(p.as_mut(), &request(Some(NodeId(1)), 3), t0, 100);
    assert_eq!((targets, background), ([100; 3], [0; 3]));
    // Once within 0.05 of the warmest it takes its HWLB share again.
    tell(p.as_mut(), 0, 0.77, t0 + MS);
    let (targets, background) = targets_and_background(p.as_mut(), &request(Some(NodeId(1)), 2), t0 + MS, 20_000);
    assert!(targets[0] > 5_000 && background == [0; 3], "{targets:?} {background:?}");
}

#[test]
fn the_slow_start_ramps_the_warm_up_pace_up_from_zero() {
    let mut p = hwlb_with(&[("warmup_reads", 1.0), ("warmup_ramp_s", 10.0)]);
    let t0 = 10 * MS;
    p.observe(
        &Event::NodeUp {
            node: NodeId(0),
            caps: NodeCaps::default(),
        },
        t0,
    );
    let draws = 20_000;
    // Left out of the reads from its first moment back; read in the background at 0, a quarter,
    // half, then the whole of the pace that gives it its peers' misses (0.2 / 0.9).
    for (after_ms, fraction) in [(0, 0.0), (2_500, 0.25), (5_000, 0.5), (10_000, 1.0), (30_000, 1.0)] {
        let t = t0 + after_ms * MS;
        for (node, rate) in [(0, 0.1), (1, 0.8), (2, 0.8)] {
            tell(p.as_mut(), node, rate, t);
        }
        let (targets, background) = targets_and_background(p.as_mut(), &request(Some(NodeId(1)), 2), t, draws);
        assert_eq!(targets, [0, draws, draws], "{after_ms} ms after coming up");
        assert!(
            close(background[0], draws, fraction * 0.2 / 0.9),
            "{after_ms} ms after coming up: {background:?}"
        );
    }
}

/// (From a coordinator that is not a replica, which reads by the shares themselves: a warm
/// replica-coordinator's own row may leave out the cold node altogether.)
#[test]
fn a_node_colder_for_good_is_not_starved_after_the_warm_up_window() {
    let mut p = hwlb_with(&[("warmup_reads", 1.0), ("warmup_window_s", 60.0)]);
    let t0 = 10 * MS;
    p.observe(
        &Event::NodeUp {
            node: NodeId(0),
            caps: NodeCaps::default(),
        },
        t0,
    );
    let later = t0 + 61_000 * MS;
    for (t, avoided) in [(t0, true), (later, false)] {
        tell(p.as_mut(), 0, 0.5, t);
        tell(p.as_mut(), 1, 0.8, t);
        tell(p.as_mut(), 2, 0.8, t);
        let (targets, background) = targets_and_background(p.as_mut(), &request(None, 1), t, 10_000);
        assert_eq!(targets[0] == 0, avoided, "{targets:?}");
        assert_eq!(background[0] > 0, avoided, "{background:?}");
    }
}

#[test]
fn warm_up_reads_are_off_by_default() {
    let mut p = hwlb();
    p.observe(
        &Event::NodeUp {
            node: NodeId(0),
            caps: NodeCaps::default(),
        },
        0,
    );
    tell(p.as_mut(), 0, 0.0, 0);
    tell(p.as_mut(), 1, 0.8, 0);
    tell(p.as_mut(), 2, 0.8, 0);
    let (targets, background) = targets_and_background(p.as_mut(), &request(None, 2), MS, 10_000);
    assert!(targets[0] > 0 && background == [0; 3], "{targets:?} {background:?}");
}
