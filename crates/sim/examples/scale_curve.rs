//! The simulator's speed against cluster size (docs/performance.md, "Simulator at scale"):
//! `c3-time-varying` at the same per-node load at every size (400 requests/s and 3 clients per
//! node), sizes interleaved in rounds so that a busy host slows every size alike, and the
//! median of the rounds per size, in simulated requests per second of CPU time (the thread's
//! own, from `/proc/thread-self/schedstat`: steadier than wall time on a shared host) and per
//! second of wall time.
//!
//! ```text
//! cargo run --release -p replica-lb-sim --example scale_curve [-- ROUNDS [POLICY [NODES...]]]
//! ```
//!
//! Defaults: 3 rounds, `random`, 50 500 2000 nodes; 5 measured seconds after 2 of warm-up.

use replica_lb_sim::{apply_overrides, parse, parse_list, Sim};
use std::time::Instant;

/// CPU time this thread has run, ns (`None` where the kernel does not say).
fn thread_cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rounds: usize = args.first().map_or(3, |a| a.parse().expect("ROUNDS: a whole number"));
    let policy = args.get(1).cloned().unwrap_or_else(|| "random".to_string());
    let sizes: Vec<usize> = if args.len() > 2 {
        args[2..].iter().map(|a| a.parse().expect("NODES: whole numbers")).collect()
    } else {
        vec![50, 500, 2000]
    };
    let path = format!("{}/../../scenarios/c3-time-varying.toml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("scenarios/c3-time-varying.toml");
    // (requests, CPU s, wall s) per size, per round.
    let mut results: Vec<Vec<(u64, f64, f64)>> = vec![Vec::new(); sizes.len()];
    for round in 1..=rounds {
        for (i, &n) in sizes.iter().enumerate() {
            let sets = [
                format!("cluster.nodes={n}"),
                format!("clients.count={}", n * 3),
                format!("clients.rate_per_s={}", n * 400),
                "run.duration_s=5".to_string(),
            ];
            let edited = apply_overrides(&text, &sets).expect("overrides apply");
            let sc = parse(&edited, "c3-time-varying").expect("valid scenario");
            let spec = parse_list(Some(policy.as_str()), &sc).expect("policy")[0].clone();
            let (cpu0, wall0) = (thread_cpu_ns(), Instant::now());
            let out = Sim::new(&sc, &spec, sc.seed).expect("builds").run(None);
            let wall = wall0.elapsed().as_secs_f64();
            let cpu = match (cpu0, thread_cpu_ns()) {
                (Some(a), Some(b)) => (b - a) as f64 / 1e9,
                _ => wall,
            };
            let r = out.simulated_requests;
            eprintln!(
                "round {round}: {n:>5} nodes: {r} requests, {cpu:.2} CPU s ({:.2} M/CPU-s), {wall:.2} s wall ({:.2} M/s)",
                r as f64 / cpu / 1e6,
                r as f64 / wall / 1e6
            );
            results[i].push((r, cpu, wall));
        }
    }
    println!(
        "| nodes | clients | requests | M requests / CPU-s | M requests / s wall | vs {} nodes (CPU) |",
        sizes[0]
    );
    println!("|---:|---:|---:|---:|---:|---:|");
    let mut base = None;
    for (i, &n) in sizes.iter().enumerate() {
        let mut per_cpu: Vec<f64> = results[i].iter().map(|&(r, c, _)| r as f64 / c / 1e6).collect();
        let mut per_wall: Vec<f64> = results[i].iter().map(|&(r, _, w)| r as f64 / w / 1e6).collect();
        let (c, w) = (median(&mut per_cpu), median(&mut per_wall));
        let b = *base.get_or_insert(c);
        println!(
            "| {n} | {} | {:.2} M | {c:.2} | {w:.2} | {:.2} |",
            n * 3,
            results[i][0].0 as f64 / 1e6,
            c / b
        );
    }
}
