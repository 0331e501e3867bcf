//! The four seed experiments, on the shipped scenario files (shortened where the full run is
//! long), asserting the effects the seeds report. Run with `--release`: each takes seconds.

use replica_lb_metrics::RunMetrics;
use replica_lb_sim::{apply_overrides, parse, parse_list, run_all, Scenario};

fn scenario(name: &str) -> Scenario {
    scenario_with(name, &[])
}

/// A shipped scenario with `--set`-style overrides applied, as `sim run --set` does.
fn scenario_with(name: &str, sets: &[&str]) -> Scenario {
    let path = format!("{}/../../scenarios/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let text = apply_overrides(&text, &sets).unwrap_or_else(|e| panic!("{e}"));
    parse(&text, name).unwrap_or_else(|e| panic!("{}", e.render(&path)))
}

fn run(sc: &Scenario, list: &str) -> Vec<RunMetrics> {
    let specs = parse_list(Some(list), sc).unwrap();
    run_all(sc, &specs, sc.seed, 0, None)
        .unwrap()
        .into_iter()
        .map(|r| r.metrics)
        .collect()
}

fn phase(m: &RunMetrics, name: &str) -> replica_lb_metrics::LatencyStats {
    m.summary.phases.iter().find(|p| p.name == name).unwrap().latency_ms
}

/// Misses/s of the restarted node and its peers' mean over `after-restart`.
fn restart_misses(m: &RunMetrics) -> (f64, f64) {
    let node = m.series.highlight.expect("a node restarted");
    let p = m.series.phases.iter().find(|p| p.name == "after-restart").unwrap();
    let secs = (p.end_s - p.start_s) as f64;
    let misses = |n| m.series.node_total(n, p.start_s, p.end_s).cache_misses as f64 / secs;
    let peers: Vec<f64> = (0..m.series.nodes).filter(|&n| n != node).map(misses).collect();
    (misses(node), peers.iter().sum::<f64>() / peers.len() as f64)
}

#[test]
fn cold_restart_naive_overloads_the_cold_node_and_hwlb_does_not() {
    // The full scenario: 300 s of warm-up plus 780 s, about a second per policy in release.
    let sc = scenario("cold-restart");
    let runs = run(&sc, "naive,hwlb");
    let (naive, hwlb) = (&runs[0], &runs[1]);

    let (own, peers) = restart_misses(naive);
    assert!(own >= 2.0 * peers, "naive: restarted node {own:.0} misses/s vs peers {peers:.0}");
    let (steady, after) = (phase(naive, "steady"), phase(naive, "after-restart"));
    assert!(
        after.mean >= 1.5 * steady.mean,
        "naive: mean {:.2} ms after restart vs {:.2} steady",
        after.mean,
        steady.mean
    );

    let (own, peers) = restart_misses(hwlb);
    assert!(
        (own - peers).abs() <= 0.3 * peers,
        "hwlb: restarted node {own:.0} misses/s vs peers {peers:.0}"
    );
    let (steady, after) = (phase(hwlb, "steady"), phase(hwlb, "after-restart"));
    assert!(
        after.p99 <= 1.3 * steady.p99,
        "hwlb: p99 {:.2} ms after restart vs {:.2} steady",
        after.p99,
        steady.p99
    );
    // Both warm within the run; HWLB sends the cold node less work, so it warms more slowly.
    let warm_naive = naive.summary.warmup_s.expect("naive: the cold node warms within the run");
    let warm = hwlb.summary.warmup_s.expect("hwlb: the cold node warms within the run");
    assert!(
        warm > warm_naive && warm < sc.run.duration_s as f64,
        "warm-up: hwlb {warm:.0} s, naive {warm_naive:.0} s, run {} s",
        sc.run.duration_s
    );
    // Both see the same workload before the fault.
    assert_eq!(naive.summary.requests, hwlb.summary.requests);
}

#[test]
fn warm_up_reads_keep_latency_at_steady_with_the_restarted_nodes_misses_level() {
    // The full scenario twice: hwlb as published, and with warm-up reads.
    let published = &run(&scenario("cold-restart"), "hwlb")[0];
    let warming = &run(&scenario_with("cold-restart", &["policy.params.hwlb.warmup_reads=1"]), "hwlb")[0];
    // The background reads give the cold node its peers' misses per second, as HWLB's shares
    // do, so it warms at about the same pace.
    let (own, peers) = restart_misses(warming);
    assert!(
        own <= 1.15 * peers && own >= peers / 1.15,
        "warm-up reads: restarted node {own:.0} misses/s vs peers {peers:.0}"
    );
    let warm = |m: &RunMetrics| m.summary.warmup_s.expect("the cold node warms within the run");
    assert!(
        warm(warming) <= 1.3 * warm(published),
        "warm-up {:.0} s with warm-up reads vs {:.0} s without",
        warm(warming),
        warm(published)
    );
    let (steady, after) = (phase(warming, "steady"), phase(warming, "after-restart"));
    assert!(
        after.mean <= 1.1 * steady.mean && after.p99 <= 1.1 * steady.p99,
        "after the restart mean {:.2} / p99 {:.2} ms vs steady {:.2} / {:.2}",
        after.mean,
        after.p99,
        steady.mean,
        steady.p99
    );
    // Published hwlb cannot keep the mean there: the cold node serves its share of reads.
    let (steady, after) = (phase(published, "steady"), phase(published, "after-restart"));
    assert!(after.mean > 1.1 * steady.mean, "{:.2} vs {:.2}", after.mean, steady.mean);
}

#[test]
fn c3_beats_the_field_at_the_tail_under_time_varying_service() {
    let mut sc = scenario("c3-time-varying");
    sc.run.duration_s = 10; // 200,000 measured requests per policy
    let runs = run(&sc, "c3,dynamic-snitch,round-robin,random");
    let c3 = runs[0].summary.latency_ms.p999;
    for other in &runs[1..] {
        let p = other.summary.latency_ms.p999;
        assert!(c3 < p, "c3 p99.9 {c3} ms is not below {} {p} ms", other.summary.policy);
    }
}

/// p99.9 of c3 over the oracle's on c3-time-varying (10 s measured) with `clients` clients
/// (and C3's concurrency weight n set to match, as the design asks).
fn c3_over_oracle(clients: u32) -> (f64, f64) {
    let count = format!("clients.count={clients}");
    let weight = format!("policy.params.c3.concurrency_weight={clients}");
    let sc = scenario_with("c3-time-varying", &[&count, &weight, "run.duration_s=10"]);
    let runs = run(&sc, "c3,oracle");
    (runs[0].summary.latency_ms.p999, runs[1].summary.latency_ms.p999)
}

#[test]
#[ignore = "unmet at the design's 150 clients: c3 p99.9 is 2.2-2.4x the oracle's (full run 144 vs 65 ms; this 10 s run 155 vs 64 ms). The published C3 is information-limited here: a client hears of a server only by sending to it. See results/2026-11-24-c3-vs-oracle.md: within 1.5x up to ~50 clients (15: 1.28x, 50: 1.51x, 150: 2.21x), and at 150 clients sharing their feedback takes it to 1.26x"]
fn c3_stays_within_one_and_a_half_times_the_oracle() {
    let (c3, oracle) = c3_over_oracle(150);
    assert!(c3 <= 1.5 * oracle, "c3 p99.9 {c3} ms vs oracle {oracle} ms");
}

#[test]
fn c3_nears_the_oracle_when_each_client_hears_enough() {
    // The same 20,000 requests/s from 15 clients instead of 150: each client sends (and hears
    // back) ten times as often, and C3 is within 1.5x of the oracle at p99.9. With 150 it is
    // much further off: the gap is the feedback a client gets, not the ranking.
    let (c3_few, oracle_few) = c3_over_oracle(15);
    assert!(
        c3_few <= 1.5 * oracle_few,
        "15 clients: c3 p99.9 {c3_few} ms vs oracle {oracle_few} ms"
    );
    let (c3_many, oracle_many) = c3_over_oracle(150);
    let (few, many) = (c3_few / oracle_few, c3_many / oracle_many);
    assert!(
        many >= 1.5 * few,
        "c3/oracle at p99.9: {many:.2} with 150 clients vs {few:.2} with 15"
    );
}

#[test]
fn weighted_least_loaded_cuts_the_median_across_zones() {
    let mut sc = scenario("zones-gc-pause");
    sc.run.duration_s = 40;
    sc.phases.clear();
    let runs = run(&sc, "random,weighted-least-loaded");
    let (random, wll) = (runs[0].summary.latency_ms.p50, runs[1].summary.latency_ms.p50);
    assert!(wll < random, "weighted-least-loaded p50 {wll} ms vs token-aware random {random} ms");
}

#[test]
fn queueing_tail_ordering_least_outstanding_p2c_random() {
    let mut sc = scenario("queueing-16");
    sc.run.duration_s = 30;
    let runs = run(&sc, "least-outstanding,p2c,random,ideal");
    let p99: Vec<f64> = runs.iter().map(|r| r.summary.latency_ms.p99).collect();
    assert!(
        p99[0] < p99[1] && p99[1] < p99[2],
        "p99 least-outstanding {} / p2c {} / random {}",
        p99[0],
        p99[1],
        p99[2]
    );
    assert!(p99[3] <= p99[0], "the shared queue {} is the lower bound ({})", p99[3], p99[0]);
}

#[test]
fn shadow_reads_load_the_other_replicas_and_feed_the_policy() {
    // The authors' setting, 2 s measured: 10% of reads also read the key's 2 other replicas.
    let short = ["run.duration_s=2"];
    let with = scenario_with("c3-time-varying-published", &short);
    let without = scenario_with(
        "c3-time-varying-published",
        &["run.duration_s=2", "requests.shadow_read_fraction=0"],
    );
    let go = |sc: &Scenario| {
        let specs = parse_list(Some("c3"), sc).unwrap();
        let mut r = run_all(sc, &specs, sc.seed, 1, None).unwrap();
        let r = r.remove(0);
        assert_eq!(r.audit, Ok(()), "the runtime's accounting of shadow reads");
        let m = &r.metrics;
        let served: u64 = (0..m.series.nodes).map(|n| m.series.node_total(n, 0, 2).reads as u64).sum();
        (m.summary.requests, served, r.runtime.feedback_replies, r.runtime.sends)
    };
    let (req_with, served_with, fb_with, sends_with) = go(&with);
    let (req_without, served_without, fb_without, _) = go(&without);
    // The same arrivals: shadow reads never delay or replace the request's own read.
    assert_eq!(req_with, req_without);
    let extra = served_with as f64 / served_without as f64;
    assert!(
        (1.17..1.23).contains(&extra),
        "servers served {extra:.3}x the reads, expected ~1.2x"
    );
    let fb = fb_with as f64 / fb_without as f64;
    assert!((1.17..1.23).contains(&fb), "the policy heard {fb:.3}x the replies, expected ~1.2x");
    // Every shadow read is a counted send of the runtime, never an extra completed request.
    assert!(sends_with as f64 > 1.17 * req_with as f64);
}

/// `unified` against the best of the field where each part of it was chosen (docs/unified.md),
/// shortened: in the textbook queue it matches least-outstanding and weighted-least-loaded; across
/// zones through one GC pause it keeps the dynamic snitch's p99 without its time-outs, and beats
/// peak-EWMA's p99.9; on the cold restart it has HWLB's after-restart latency and fewer time-outs.
#[test]
fn unified_keeps_up_with_the_best_of_the_field_in_each_scenario() {
    let mut sc = scenario("queueing-16");
    sc.run.duration_s = 30;
    let runs = run(&sc, "unified,least-outstanding,weighted-least-loaded");
    let p99: Vec<f64> = runs.iter().map(|r| r.summary.latency_ms.p99).collect();
    assert!(p99[0] <= 1.05 * p99[1].min(p99[2]), "queueing-16 p99: unified / lo / wll {p99:?}");

    let mut sc = scenario("zones-gc-pause");
    sc.run.duration_s = 40;
    let runs = run(&sc, "unified,dynamic-snitch,peak-ewma");
    let (u, snitch, ewma) = (&runs[0].summary, &runs[1].summary, &runs[2].summary);
    assert!(
        u.latency_ms.p99 <= 1.05 * snitch.latency_ms.p99,
        "zones p99: unified {} vs dynamic-snitch {}",
        u.latency_ms.p99,
        snitch.latency_ms.p99
    );
    assert!(
        u.timeouts * 10 < snitch.timeouts,
        "zones time-outs: unified {} vs dynamic-snitch {}",
        u.timeouts,
        snitch.timeouts
    );
    assert!(
        u.latency_ms.p999 < ewma.latency_ms.p999,
        "zones p99.9: unified {} vs peak-ewma {}",
        u.latency_ms.p999,
        ewma.latency_ms.p999
    );

    let sc = scenario_with("cold-restart", &["policy.params.hwlb.warmup_reads=1"]);
    let runs = run(&sc, "unified,hwlb,c3");
    let after = |m: &RunMetrics| phase(m, "after-restart").mean;
    assert!(
        after(&runs[0]) <= 1.02 * after(&runs[1]),
        "after-restart mean: unified {} vs hwlb {}",
        after(&runs[0]),
        after(&runs[1])
    );
    assert!(
        after(&runs[0]) < after(&runs[2]),
        "after-restart mean: unified {} vs c3 {}",
        after(&runs[0]),
        after(&runs[2])
    );
    let timeouts: Vec<u64> = runs.iter().map(|r| r.summary.timeouts).collect();
    assert!(timeouts[0] < timeouts[1] * 2 / 3, "time-outs: unified / hwlb / c3 {timeouts:?}");
}
