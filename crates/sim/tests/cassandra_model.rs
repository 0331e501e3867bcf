//! The simulator's model of Cassandra as shipped, where the real runs showed it wrong
//! (results/2026-11-27-simulator-model-of-cassandra.md): a failure detector that convicts a
//! frozen node, and a percentile speculative retry driven by the coordinators' read latency.
//! Run with `--release`.

use replica_lb_metrics::RunMetrics;
use replica_lb_sim::{apply_overrides, parse, parse_list, run_all};

fn run(name: &str, list: &str, sets: &[&str]) -> RunMetrics {
    let path = format!("{}/../../scenarios/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let text = apply_overrides(&text, &sets).unwrap_or_else(|e| panic!("{e}"));
    let sc = parse(&text, name).unwrap_or_else(|e| panic!("{}", e.render(&path)));
    let specs = parse_list(Some(list), &sc).unwrap();
    let mut runs = run_all(&sc, &specs, sc.seed, 0, None).unwrap();
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
