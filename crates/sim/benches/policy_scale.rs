//! The cost of a simulated request at 300 nodes against 3, per policy (issue 37's target:
//! every policy's requests per second on `large-rolling-restart` at least 0.7 of its own on
//! `cold-restart`, on the same binary). Both scenarios shortened so that a sample takes about
//! a second: `cold-restart` 100 s of warm-up and 120 s measured (the restart at 100 s), the
//! 300-node rolling restart 20 s of warm-up and 20 s measured (restarts from 5 s). Criterion
//! reports each as simulated requests per second (`thrpt`); the ratio of a policy's two rows
//! is the figure the target is about. docs/performance.md has the full-length runs.
//!
//! ```text
//! cargo bench -p replica-lb-sim --bench policy_scale                  # naive hwlb unified c3 dynamic-snitch
//! POLICIES=random,least-outstanding cargo bench -p replica-lb-sim --bench policy_scale
//! ```

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use replica_lb_sim::{apply_overrides, parse, parse_list, Scenario, Sim};

fn scenario(file: &str, sets: &[&str]) -> Scenario {
    let path = format!("{}/../../scenarios/{file}.toml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("scenario file");
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    parse(&apply_overrides(&text, &sets).expect("overrides apply"), file).expect("valid scenario")
}

fn policy_scale(c: &mut Criterion) {
    let policies = std::env::var("POLICIES").unwrap_or_else(|_| "naive,hwlb,unified,c3,dynamic-snitch".to_string());
    let small = scenario(
        "cold-restart",
        &[
            "run.warmup_s=100",
            "run.duration_s=120",
            "phase.0.end_s=90",
            "phase.1.start_s=95",
            "phase.1.end_s=115",
            "fault.0.at_s=90",
            "fault.0.duration_s=5",
        ],
    );
    let large = scenario(
        "large-rolling-restart",
        &[
            "run.warmup_s=20",
            "run.duration_s=20",
            "phase.0.start_s=2",
            "phase.0.end_s=5",
            "phase.1.start_s=5",
            "phase.1.end_s=20",
            "fault.0.at_s=5",
        ],
    );
    for policy in policies.split(',') {
        let mut group = c.benchmark_group(format!("policy-scale/{policy}"));
        group.sample_size(10);
        for (name, sc) in [("3-nodes", &small), ("300-nodes", &large)] {
            let spec = parse_list(Some(policy), sc).expect("policy")[0].clone();
            let requests = Sim::new(sc, &spec, sc.seed).expect("builds").run(None).simulated_requests;
            group.throughput(Throughput::Elements(requests));
            group.bench_function(name, |b| {
                b.iter(|| Sim::new(sc, &spec, sc.seed).expect("builds").run(None).simulated_requests)
            });
        }
        group.finish();
    }
}

criterion_group!(benches, policy_scale);
criterion_main!(benches);
