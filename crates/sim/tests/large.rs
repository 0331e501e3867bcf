//! The production-scale scenarios, shortened: 300 nodes in 3 zones run with exact accounting,
//! the lost zone serves nothing while down, a rolling restart takes the zone's nodes one after
//! another; and clusters past 64 nodes spread plans that are not token-aware over every node.

use replica_lb_sim::{parse, parse_list, run_all, Scenario};

const S: u64 = 1_000_000_000;

fn load(name: &str) -> Scenario {
    let path = format!("{}/../../scenarios/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    parse(&std::fs::read_to_string(path).unwrap(), name).unwrap()
}

/// Shortened to `warmup_s` + `duration_s` at a tenth of the load, phases dropped.
fn short(mut sc: Scenario, warmup_s: u64, duration_s: u32) -> Scenario {
    sc.run.warmup_ns = warmup_s * S;
    sc.run.duration_s = duration_s;
    sc.phases.clear();
    if let replica_lb_sim::scenario::Arrival::Poisson { rate_per_s } = &mut sc.clients.arrival {
        *rate_per_s /= 10.0;
    }
    sc
}

#[test]
fn a_lost_zone_serves_nothing_and_every_ledger_balances() {
    let mut sc = short(load("large-zone-outage"), 2, 12);
    assert_eq!((sc.cluster.nodes, sc.cluster.zone_names.len()), (300, 3));
    let f = &mut sc.faults[0];
    assert_eq!(f.nodes.len(), 100);
    f.at_ns = 3 * S as i64;
    f.duration_ns = Some(5 * S);
    let specs = parse_list(Some("naive,hwlb"), &sc).unwrap();
    for r in run_all(&sc, &specs, 3, 2, None).unwrap() {
        assert_eq!(r.audit, Ok(()), "{}", r.spec.label);
        let s = &r.metrics.summary;
        assert!(s.completed > 0 && s.errors == 0, "{}: {s:?}", r.spec.label);
        let series = &r.metrics.series;
        // Zone b (nodes 1, 4, ...) is down over seconds [3, 8) of measured time, seen down 2 s
        // later at most: nothing reaches it in [6, 8).
        for n in (1..300).step_by(3) {
            assert_eq!(series.node_total(n, 6, 8).reads, 0, "node {n} served while down");
        }
        assert!(series.node_total(0, 6, 8).reads > 0);
    }
}

#[test]
fn a_rolling_restart_takes_the_zone_one_node_after_another() {
    let mut sc = short(load("large-rolling-restart"), 2, 10);
    let f = &mut sc.faults[0];
    assert_eq!((f.nodes[..3].to_vec(), f.stagger_ns), (vec![0, 3, 6], 3 * S));
    f.at_ns = S as i64;
    let specs = parse_list(Some("hwlb"), &sc).unwrap();
    let r = &run_all(&sc, &specs, 3, 1, None).unwrap()[0];
    assert_eq!(r.audit, Ok(()));
    // Node 0 goes down at 1 s, node 3 at 4 s, node 6 at 7 s, node 9 at 10 s (the end).
    let downs: Vec<&str> = r
        .metrics
        .series
        .markers
        .iter()
        .filter(|m| m.label.ends_with(" down"))
        .map(|m| m.label.as_str())
        .collect();
    assert_eq!(downs, ["node 0 down", "node 3 down", "node 6 down"]);
    assert_eq!(r.metrics.series.highlight, Some(0));
}

#[test]
fn plans_that_are_not_token_aware_spread_over_a_large_cluster() {
    let mut sc = short(load("large-zone-outage"), 1, 3);
    sc.faults.clear();
    sc.clients.token_aware = false;
    let specs = parse_list(Some("random/naive"), &sc).unwrap();
    let r = &run_all(&sc, &specs, 3, 1, None).unwrap()[0];
    assert_eq!(r.audit, Ok(()));
    // Coordinators' local reads: every node coordinates some requests, not only the first 64.
    let coordinating = (0..300)
        .filter(|&n| r.metrics.series.node_total(n, 0, 3).local_reads + r.metrics.series.node_total(n, 0, 3).remote_reads > 0)
        .count();
    assert!(coordinating > 290, "{coordinating} of 300 nodes coordinated");
}
