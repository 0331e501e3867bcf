//! `cluster rolling-restart` on a real 3-node cluster of node processes, and the input checks
//! of it and of `warmup`. The cluster tests are ignored by default (they start processes and
//! take about a minute); CI runs them in its end-to-end step:
//! `cargo test -p replica-lb --test rolling_restart -- --ignored`.
//! Every node they start is stopped when they end, pass or fail.

use serde_json::Value;
use std::process::{Child, Stdio};
use std::time::Duration;

mod common;
use common::{bin, fresh_dir, one_cluster, run, run_ok, wait_exit, ClusterGuard};

/// A small cluster: 3 nodes, 1,000 keys written (every node holds them all and caches them all).
fn cluster(name: &str) -> (ClusterGuard, String) {
    let dir = fresh_dir("rolling", name);
    let d = dir.to_str().expect("UTF-8").to_string();
    let guard = ClusterGuard(dir);
    run_ok(&["cluster", "up", "--nodes", "3", "--dir", &d, "--policy", "hwlb"]);
    run_ok(&["load", "--cluster", &d, "--keys", "1000"]);
    (guard, d)
}

/// An open-loop read load in the background, stopped (killed) when dropped.
struct Load(Child);

impl Load {
    fn start(d: &str, seconds: u32) -> Load {
        let child = bin()
            .args([
                "bench",
                "--cluster",
                d,
                "--keys",
                "1000",
                "--rate",
                "900",
                "--duration-s",
                &seconds.to_string(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("bench starts");
        Load(child)
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn record(d: &str) -> Value {
    let text = std::fs::read_to_string(std::path::Path::new(d).join("rolling-restart.json")).expect("the record is written");
    serde_json::from_str(&text).expect("the record is JSON")
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("a number: {v}"))
}

#[test]
#[ignore = "starts a real 3-node cluster and restarts each node (about 40 s)"]
fn the_warm_gate_takes_the_next_node_down_only_once_the_last_is_warm() {
    let _one = one_cluster();
    let (guard, d) = cluster("warm");
    let _load = Load::start(&d, 120);
    std::thread::sleep(Duration::from_secs(6));
    let mut child = bin()
        .args([
            "cluster",
            "rolling-restart",
            "--dir",
            &d,
            "--gate",
            "warm",
            "--window-s",
            "3",
            "--timeout-s",
            "40",
            "--down-s",
            "0.5",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rolling-restart starts");
    let status = wait_exit(&mut child, Duration::from_secs(180));
    let out = child.wait_with_output().expect("output");
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(status.success(), "{text}");
    let r = record(&d);
    assert_eq!(r["gate"], "warm", "{r}");
    let nodes = r["nodes"].as_array().expect("nodes");
    assert_eq!(nodes.len(), 3, "{r}");
    for (k, n) in nodes.iter().enumerate() {
        assert_eq!(n["node"], k as u64);
        assert!(f(&n["up_at_s"]) >= f(&n["down_at_s"]) + 0.5, "{n}");
        let warm_at = f(&n["warm_at_s"]);
        assert!(warm_at >= f(&n["up_at_s"]) + 3.0, "a whole window after it came back: {n}");
        assert_eq!(n["warmth"], "warm", "{n}");
        assert_eq!(n["timed_out"], false, "{n}");
        if let Some(next) = nodes.get(k + 1) {
            assert!(
                f(&next["down_at_s"]) >= warm_at,
                "the next node went down before this one was warm: {r}"
            );
        }
        assert_eq!(n["hit_ratios"].as_object().map(|m| m.len()), Some(3), "{n}");
    }
    assert_eq!((r["restarted"].as_u64(), r["timeouts"].as_u64()), (Some(3), Some(0)), "{r}");
    let span = f(&nodes[2]["warm_at_s"]) - f(&nodes[0]["down_at_s"]);
    assert!((f(&r["duration_s"]) - span).abs() < 1e-6, "first kill to the last warm: {r}");
    guard.remove();
}

#[test]
#[ignore = "starts a real 3-node cluster and restarts each node (about 20 s)"]
fn a_node_nobody_reads_is_not_warm_and_the_gate_gives_up_at_its_time_out() {
    let _one = one_cluster();
    let (guard, d) = cluster("unread");
    let (code, out, err) = run(&[
        "cluster",
        "rolling-restart",
        "--dir",
        &d,
        "--window-s",
        "1",
        "--timeout-s",
        "3",
        "--down-s",
        "0",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("not read (not warm)"), "{err}");
    assert!(out.contains("0 seen warm"), "{out}");
    let r = record(&d);
    for n in r["nodes"].as_array().expect("nodes") {
        assert!(n["warm_at_s"].is_null(), "{n}");
        assert_eq!(n["warmth"], "unread", "{n}");
        assert_eq!(n["timed_out"], true, "{n}");
    }
    // A fixed interval: the same record, the interval in it.
    let (code, out, err) = run(&["cluster", "rolling-restart", "--dir", &d, "--interval-s", "1", "--window-s", "1"]);
    assert_eq!(code, 0, "{out}{err}");
    let r = record(&d);
    assert_eq!((r["gate"].as_str(), r["interval_s"].as_f64()), (Some("watch"), Some(1.0)), "{r}");
    guard.remove();
}

#[test]
fn bad_input_is_refused_with_one_line_and_exit_2() {
    let cases: [(&[&str], &str); 6] = [
        (
            &[
                "cluster",
                "rolling-restart",
                "--dir",
                "/nonexistent",
                "--gate",
                "warm",
                "--interval-s",
                "5",
            ],
            "cannot be used with",
        ),
        (
            &["cluster", "rolling-restart", "--dir", "/nonexistent", "--within", "11"],
            "from 0 to 10",
        ),
        (&["cluster", "rolling-restart", "--dir", "/nonexistent", "--gate", "hot"], "hot"),
        (
            &["warmup", "status", "--contact-points", "localhost:9042"],
            "'localhost:9042' is not IP or IP:PORT",
        ),
        (&["warmup", "wait", "--contact-points", "127.0.0.1", "--timeout-s", "0"], "0"),
        (
            &["warmup", "wait", "--contact-points", "127.0.0.1", "--within", "-1"],
            "from 0 to 10",
        ),
    ];
    for (args, says) in cases {
        let (code, out, err) = run(args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: one line: {err}");
    }
}

#[test]
fn a_cluster_that_does_not_answer_is_exit_2() {
    // Nothing listens on this port of loopback.
    let (code, out, err) = run(&["warmup", "wait", "--contact-points", "127.0.0.1:1", "--timeout-s", "5"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("127.0.0.1:1"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// A scenario whose restart fault has a warm gate, for `experiment --real`: 3 nodes, each
/// restarted once the last is warm (3 s window, 15 s time-out).
const GATED: &str = r#"name = "gated-short"
seed = 5
[cluster]
nodes = 3
replication_factor = 3
[node]
cpu_concurrency = 2
cpu_service = { dist = "exponential", mean_us = 150 }
disk_concurrency = 3
disk_service = { dist = "exponential", mean_us = 2000 }
cache_rows = 3000
[clients]
count = 1
arrival = "poisson"
rate_per_s = 600
keys = { pattern = "uniform", count = 2000 }
[requests]
consistency = "quorum"
warmup_consistency = "all"
read_timeout_ms = 5000
[run]
warmup_s = 5
duration_s = 80
[feedback]
hit_rate_tick_s = 1
hit_rate_window_s = 6
gossip = true
[policy]
client = "random"
coordinator = "hwlb"
[[phase]]
name = "rolling"
start_s = 5
end_s = 80
[[fault]]
kind = "restart"
nodes = [0, 1, 2]
at_s = 5
duration_s = 1
gate = "warm"
gate_window_s = 3
gate_timeout_s = 15
"#;

#[test]
#[ignore = "an experiment on a real 3-node cluster (about 100 s)"]
fn a_scenarios_gated_restart_runs_on_the_real_cluster_at_the_gates_pace() {
    let _one = one_cluster();
    let dir = fresh_dir("rolling", "experiment");
    let scenario = dir.join("gated.toml");
    std::fs::write(&scenario, GATED).expect("writable");
    let (out, clusters) = (dir.join("out"), dir.join("clusters"));
    let _guard = ClusterGuard(clusters.join("hwlb"));
    let (code, stdout, stderr) = run(&[
        "experiment",
        scenario.to_str().expect("UTF-8"),
        "--real",
        "--policy",
        "hwlb",
        "--out",
        out.to_str().expect("UTF-8"),
        "--cluster-dir",
        clusters.to_str().expect("UTF-8"),
    ]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let text = std::fs::read_to_string(out.join("summary.json")).expect("summary.json");
    let summary: Value = serde_json::from_str(&text).expect("JSON");
    let roll = &summary["runs"][0]["rolling_restarts"][0];
    assert_eq!(
        (roll["gate"].as_str(), roll["planned"].as_u64(), roll["restarted"].as_u64()),
        (Some("warm"), Some(3), Some(3)),
        "{roll}"
    );
    let nodes = roll["nodes"].as_array().expect("nodes");
    for (k, n) in nodes.iter().enumerate() {
        assert_eq!(n["node"], k as u64, "{n}");
        let up = f(&n["up_at_s"]);
        assert!(up >= f(&n["down_at_s"]) + 1.0, "down 1 s: {n}");
        // The next node waits for this one: warm, or its time-out.
        let released = n["warm_at_s"].as_f64().unwrap_or(up + 15.0);
        if let Some(next) = nodes.get(k + 1) {
            assert!(f(&next["down_at_s"]) + 0.5 >= released, "{roll}");
        }
    }
    eprintln!("gated restart on the real cluster: {}", roll);
}
