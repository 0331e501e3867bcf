//! Same scenario and seed, same results: summary (apart from wall time) and time series are
//! identical whether runs go alone or in parallel; a different seed changes them.

use metrics::csv::timeseries_csv;
use sim::{parse, parse_list, run_all, Scenario};

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
            s.sim.wall_s = 0.0;
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
fn every_registered_policy_runs_on_its_side() {
    // A short smoke run of every policy through the engine (rate control, probes, truth).
    let mut sc = small();
    sc.run.warmup_ns = 1_000_000_000;
    sc.run.duration_s = 3;
    sc.faults.clear();
    let names: Vec<&str> = policy::POLICIES.iter().map(|p| p.name).collect();
    for name in names {
        let specs = parse_list(Some(name), &sc).unwrap();
        let r = run_all(&sc, &specs, 1, 1, None).unwrap();
        let s = &r[0].metrics.summary;
        assert!(
            s.requests > 0 && s.completed + s.timeouts + s.errors <= s.requests + 200,
            "{name}: {s:?}"
        );
        // Known open issue (reported to the policy owner): c3's rate control compares its
        // token rate, not its actual sending rate, with the receive rate, so below saturation
        // it throttles itself towards min_rate and its backlog stalls here.
        if name != "c3" {
            assert!(s.completed > 0, "{name}: nothing completed: {s:?}");
        }
    }
}
