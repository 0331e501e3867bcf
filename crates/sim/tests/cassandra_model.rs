//! The simulator's model of Cassandra as shipped, where the real runs showed it wrong
//! (results/2026-11-27-simulator-model-of-cassandra.md): a failure detector that convicts a
//! frozen node, and a percentile speculative retry driven by the coordinators' read latency;
//! and (results/2026-11-28-simulator-model-of-cassandra-2.md) the nodes as the rig runs them:
//! read threads, a throttled disk, a restarted process's start, the driver's reset connections.
//! Run with `--release`.

use replica_lb_metrics::RunMetrics;
use replica_lb_sim::{apply_overrides, parse, parse_list, run_all};

fn run(name: &str, list: &str, sets: &[&str]) -> RunMetrics {
    run_seed(name, list, sets, None)
}

/// As [`run`], with seed `seed` (the scenario's own when `None`).
fn run_seed(name: &str, list: &str, sets: &[&str], seed: Option<u64>) -> RunMetrics {
    let path = format!("{}/../../scenarios/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let text = apply_overrides(&text, &sets).unwrap_or_else(|e| panic!("{e}"));
    let sc = parse(&text, name).unwrap_or_else(|e| panic!("{}", e.render(&path)));
    let specs = parse_list(Some(list), &sc).unwrap();
    let mut runs = run_all(&sc, &specs, seed.unwrap_or(sc.seed), 0, None).unwrap();
    assert_eq!(runs.len(), 1);
    runs.remove(0).metrics
}

/// The latency of phase `name` (completed reads).
fn phase(m: &RunMetrics, name: &str) -> replica_lb_metrics::LatencyStats {
    m.summary.phases.iter().find(|p| p.name == name).unwrap().latency_ms
}

/// Reads node `n` served per second from `from_s` to `to_s`.
fn reads_per_s(m: &RunMetrics, n: usize, from_s: u32, to_s: u32) -> f64 {
    m.series.node_total(n, from_s, to_s).reads as f64 / (to_s - from_s) as f64
}

#[test]
fn a_frozen_node_is_seen_down_once_the_failure_detector_convicts_it() {
    // Node 1 is frozen for 20 s from t = 20 s. The driver's default policy sends it a third of
    // the reads as coordinator: each times out (2 s) until it is seen down.
    let convicted = run("gc-pause-cassandra", "random/naive", &["run.failure_detection_ms=5000"]);
    let never = run("gc-pause-cassandra", "random/naive", &["run.failure_detection_ms=30000"]);
    let (c, n) = (convicted.summary.timeouts, never.summary.timeouts);
    // About 100 reads/s for 5 s against about 100/s for the whole 20 s.
    assert!((400..700).contains(&c), "convicted after 5 s: {c} time-outs");
    assert!(n >= 1_700, "never convicted: {n} time-outs");
    // Seen up again after it resumes (t = 40 s, up_detection_ms 1 s): it serves its share.
    let before = reads_per_s(&convicted, 1, 5, 20);
    let after = reads_per_s(&convicted, 1, 45, 60);
    assert!(
        after >= 0.8 * before,
        "node 1 after the pause {after:.0} reads/s, before {before:.0}"
    );
}

#[test]
fn a_percentile_retry_bounds_the_reads_of_a_saturated_disk() {
    // Node 1's disk is 5x slower from t = 20 to 40 s; `naive` keeps reading it. The threshold
    // (a percentile of the coordinators' read latency over about a minute, re-read every 5 s)
    // starts at the steady p99 and rises slowly, so most reads that wait on node 1 are retried
    // elsewhere.
    let m = run("slow-disk-cassandra", "naive", &[]);
    let (slow, before) = (phase(&m, "slow"), phase(&m, "before"));
    assert!(
        slow.p99 < 10.0 * before.p99,
        "slow phase p99 {:.1} ms, before {:.1}",
        slow.p99,
        before.p99
    );
    // With the threshold at a minute-old p99 of the whole cluster, not the slow replica's
    // own last second, the retry fires within tens of milliseconds.
    let never = run("slow-disk-cassandra", "naive", &["requests.speculative_retry=none"]);
    let unretried = phase(&never, "slow");
    assert!(
        slow.p99 < 0.5 * unretried.p99,
        "retried {:.1} ms, never {:.1}",
        slow.p99,
        unretried.p99
    );
}

#[test]
fn a_killed_node_is_seen_down_by_its_clients_at_once_and_by_its_peers_later() {
    // cold-restart-cassandra: node 2 killed at t = 60 s for 10 s; its peers convict it after
    // 19 s (measured), the driver sees its connections reset after 0.1 s. The peers' reads to
    // it are rescued by the speculative retry; the clients send it nothing while it is down.
    let split = run("cold-restart-cassandra", "naive", &[]);
    assert!(split.summary.timeouts < 50, "{} time-outs", split.summary.timeouts);
    // Clients as slow as the peers keep choosing it as coordinator: about a third of the reads
    // sent while it is down time out.
    let slow = run("cold-restart-cassandra", "naive", &["run.client_failure_detection_ms=19000"]);
    assert!(slow.summary.timeouts > 500, "{} time-outs", slow.summary.timeouts);
}

/// Node `n`'s row-cache misses per second from `from_s` to `to_s` against its peers' mean.
fn misses_against_peers(m: &RunMetrics, n: usize, from_s: u32, to_s: u32) -> f64 {
    let misses = |i: usize| m.series.node_total(i, from_s, to_s).cache_misses as f64;
    let peers: Vec<f64> = (0..3).filter(|&i| i != n).map(misses).collect();
    misses(n) / (peers.iter().sum::<f64>() / peers.len() as f64)
}

#[test]
fn a_blocked_disk_holds_the_read_threads_that_hits_need_too() {
    // Node 1's throttle falls to 44 reads/s at t = 20 s. With Cassandra's 8 read threads its
    // misses soon hold them all, its hits wait behind them, its replies slow down and the
    // dynamic snitch moves its reads elsewhere. With threads enough for every read, its hits
    // stay fast, the truncated median sees nothing and the snitch keeps reading it.
    let threads = run("slow-disk-cassandra", "dynamic-snitch", &[]);
    let unbounded = run("slow-disk-cassandra", "dynamic-snitch", &["node.read_threads=1000"]);
    let (t, u) = (reads_per_s(&threads, 1, 25, 40), reads_per_s(&unbounded, 1, 25, 40));
    let before = reads_per_s(&threads, 1, 5, 20);
    assert!(
        t < 0.1 * before,
        "8 threads: node 1 served {t:.0} reads/s in the fault, {before:.0} before"
    );
    assert!(
        u > 0.8 * before,
        "unbounded: node 1 served {u:.0} reads/s in the fault, {before:.0} before"
    );
}

#[test]
fn a_restarted_node_serves_once_its_process_has_started() {
    // Killed at t = 60 s, started at t = 70 s, serving 15 s later (restart_start_ms).
    let m = run("cold-restart-cassandra", "naive", &[]);
    assert_eq!(reads_per_s(&m, 2, 61, 85), 0.0, "node 2 served reads while starting");
    let back = reads_per_s(&m, 2, 90, 100);
    assert!(back > 100.0, "node 2 served {back:.0} reads/s after its start");
    let at_once = run("cold-restart-cassandra", "naive", &["run.restart_start_ms=0"]);
    assert!(
        reads_per_s(&at_once, 2, 72, 85) > 100.0,
        "without a start, node 2 serves from t = 70 s"
    );
}

#[test]
fn the_driver_fails_the_reads_of_a_killed_coordinator_at_once() {
    // The driver's connections to the killed node reset: the reads it was coordinating end as
    // errors (the real runs: 14-22), none waits for the 5 s time-out.
    let m = run("cold-restart-cassandra", "dynamic-snitch", &[]);
    assert_eq!(m.summary.timeouts, 0);
    assert!((1..50).contains(&m.summary.errors), "{} errors", m.summary.errors);
}

#[test]
fn the_snitch_reads_a_restarted_node_cold_or_leaves_it_unread_by_seed() {
    // The restarted node's first local reads miss, its partition index is read again, and its
    // disk's throttle is near saturation: where they queue long enough for it to score itself
    // more than twice its peers, it orders itself last and nobody reads it (the real snitch's
    // "unread" outcome, x0.00-0.04); otherwise it reads itself cold, as a third of the reads'
    // coordinator (x1.49-1.78 in the real runs).
    let cold = run_seed("cold-restart-cassandra", "dynamic-snitch", &[], Some(1));
    let unread = run_seed("cold-restart-cassandra", "dynamic-snitch", &[], Some(6));
    let (c, u) = (misses_against_peers(&cold, 2, 90, 120), misses_against_peers(&unread, 2, 90, 120));
    assert!((1.3..2.0).contains(&c), "seed 1: x{c:.2}");
    assert!(u < 0.05, "seed 6: x{u:.2}");
}
