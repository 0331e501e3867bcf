//! Simulation speed on the cold-restart scenario (single-threaded): simulated requests per
//! second of wall time is printed by `replica-lb sim run` too; this bench tracks it over time.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use replica_lb_sim::{parse, parse_list, Sim};

fn cold_restart(c: &mut Criterion) {
    let path = format!("{}/../../scenarios/cold-restart.toml", env!("CARGO_MANIFEST_DIR"));
    let mut sc = parse(&std::fs::read_to_string(path).expect("scenario file"), "cold-restart").expect("valid scenario");
    // 100 s of warm-up plus the first 220 s (steady, restart, after-restart): 320,000 requests.
    sc.run.warmup_ns = 100_000_000_000;
    sc.run.duration_s = 220;
    let mut group = c.benchmark_group("cold-restart");
    group.sample_size(10);
    group.throughput(Throughput::Elements(320_000));
    for item in ["naive", "hwlb"] {
        let spec = parse_list(Some(item), &sc).expect("policy")[0].clone();
        group.bench_function(item, |b| {
            b.iter(|| Sim::new(&sc, &spec, 42).expect("builds").run(None).simulated_requests)
        });
    }
    group.finish();
}

criterion_group!(benches, cold_restart);
criterion_main!(benches);
