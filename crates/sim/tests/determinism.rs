//! Same scenario and seed, same results: summary (apart from wall time) and time series are
//! identical whether runs go alone or in parallel; a different seed changes them.

use replica_lb_metrics::csv::timeseries_csv;
use replica_lb_sim::{parse, parse_list, run_all, Scenario};

fn small() -> Scenario {
    let path = format!("{}/../../scenarios/cold-restart.toml", env!("CARGO_MANIFEST_DIR"));
    let mut sc = parse(&std::fs::read_to_string(path).unwrap(), "cold-restart").unwrap();
    sc.run.warmup_ns = 20_000_000_000;
    sc.run.duration_s = 40;
    sc.phases.clear();
    for f in &mut sc.faults {
        f.at_ns = 10_000_000_000;
        f.duration_ns = Some(5_000_000_000);
    }
    sc
}

fn fingerprint(sc: &Scenario, list: &str, seed: u64, threads: usize) -> Vec<(String, String)> {
    let specs = parse_list(Some(list), sc).unwrap();
    run_all(sc, &specs, seed, threads, None)
        .unwrap()
        .into_iter()
        .map(|r| {
            let mut s = r.metrics.summary.clone();
            if let replica_lb_metrics::RunStats::Sim(x) = &mut s.run {
                x.wall_s = 0.0;
            }
            (serde_json::to_string(&s).unwrap(), timeseries_csv(&r.metrics.series))
        })
        .collect()
}

#[test]
fn same_seed_same_bytes() {
    let sc = small();
    let a = fingerprint(&sc, "naive,hwlb", 5, 2);
    let b = fingerprint(&sc, "naive,hwlb", 5, 1);
    assert_eq!(a, b);
    let c = fingerprint(&sc, "naive,hwlb", 6, 2);
    assert_ne!(a[0], c[0]);
}

#[test]
fn every_registered_policy_runs_on_each_of_its_sides_with_exact_accounting() {
    // A short run of every policy through the engine on each side it serves, through a node
    // crash and restart (rate control, probes, truth, lost requests, a fresh runtime after
    // the restart), auditing every runtime's ledger against the simulator's own records.
    let mut sc = small();
    sc.run.warmup_ns = 1_000_000_000;
    sc.run.duration_s = 8;
    for f in &mut sc.faults {
        f.at_ns = 2_000_000_000;
        f.duration_ns = Some(2_000_000_000);
    }
    for info in replica_lb_policy::POLICIES {
        let mut items = Vec::new();
        if info.side.serves(replica_lb_policy::Side::Client) {
            items.push(format!("{}/naive", info.name));
        }
        if info.side.serves(replica_lb_policy::Side::Coordinator) {
            items.push(format!("random/{}", info.name));
        }
        for item in items {
            let specs = parse_list(Some(&item), &sc).unwrap();
            let r = &run_all(&sc, &specs, 1, 1, None).unwrap()[0];
            let s = &r.metrics.summary;
            assert!(s.completed > 0, "{item}: nothing completed: {s:?}");
            assert!(s.completed + s.timeouts + s.errors <= s.requests + 200, "{item}: {s:?}");
            assert_eq!(r.audit, Ok(()), "{item}");
            let rt = r.runtime;
            assert!(rt.sends >= s.completed && rt.replies > 0, "{item}: {rt:?}");
            assert_eq!(rt.violations, 0, "{item}");
            if info.name == "prequal" {
                assert!(rt.probes_sent > 0 && rt.probe_replies > 0, "{item}: {rt:?}");
            }
            if info.name == "c3" || info.name == "hwlb" {
                assert!(rt.feedback_replies > 0, "{item}: {rt:?}");
            }
        }
    }
}

#[test]
fn a_read_its_coordinator_cannot_serve_ends_at_its_client_too() {
    // Two of the three replicas down at once: a coordinator cannot reach QUORUM and fails the
    // read at once (Cassandra's UnavailableException). The client's send to that coordinator
    // must end with it, or the client counts it in flight forever (the audit sees the leak).
    let mut sc = small();
    sc.run.warmup_ns = 1_000_000_000;
    sc.run.duration_s = 8;
    for f in &mut sc.faults {
        f.nodes = vec![1, 2];
        f.at_ns = 2_000_000_000;
        f.duration_ns = Some(3_000_000_000);
    }
    for item in ["random/naive", "c3/c3", "unified"] {
        let specs = parse_list(Some(item), &sc).unwrap();
        let r = &run_all(&sc, &specs, 1, 1, None).unwrap()[0];
        let s = &r.metrics.summary;
        assert!(s.errors > 0, "{item}: no read failed at its coordinator: {s:?}");
        assert_eq!(r.audit, Ok(()), "{item}");
    }
}
