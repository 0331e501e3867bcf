//! `replica-lb tournament` contracts: the three leaderboard files, the JSON keys, ratios to the
//! best non-oracle policy, determinism for a seed, and one-line errors with exit code 2.

mod common;

use std::path::{Path, PathBuf};

fn tmp(name: &str) -> PathBuf {
    common::fresh_dir("tournament", name)
}

/// A small coordinator-routed scenario (a cache, QUORUM reads).
const CACHED: &str = r#"name = "tiny-cache"
[cluster]
nodes = 3
replication_factor = 3
[node]
cpu_concurrency = 2
cpu_service = { dist = "exponential", mean_us = 200 }
disk_concurrency = 4
disk_service = { dist = "exponential", mean_us = 2000 }
cache_rows = 500
[clients]
count = 2
arrival = "poisson"
rate_per_s = 500
keys = { pattern = "hot-set", count = 5000, hot_keys = 500, hot_fraction = 0.9 }
[requests]
consistency = "quorum"
[run]
warmup_s = 2
duration_s = 4
[policy]
coordinator = "naive"
"#;

/// A small directly-routed queueing scenario (every client policy applies, and `ideal`).
const QUEUE: &str = r#"name = "tiny-queue"
[cluster]
nodes = 4
replication_factor = 4
routing = "direct"
[node]
cpu_concurrency = 1
cpu_service = { dist = "exponential", mean_us = 400 }
[clients]
count = 2
token_aware = true
arrival = "poisson"
rate_per_s = 6000
keys = { pattern = "uniform", count = 100 }
[requests]
consistency = "one"
[run]
warmup_s = 1
duration_s = 3
[policy]
client = "random"
compare = ["random", "least-outstanding", "ideal"]
"#;

fn scenarios(dir: &Path) -> String {
    let (a, b) = (dir.join("tiny-cache.toml"), dir.join("tiny-queue.toml"));
    std::fs::write(&a, CACHED).unwrap();
    std::fs::write(&b, QUEUE).unwrap();
    format!("{},{}", a.display(), b.display())
}

fn run(dir: &Path, out: &str, extra: &[&str]) -> serde_json::Value {
    let out = dir.join(out);
    let list = scenarios(dir);
    let o = common::bin()
        .args(["tournament", "--out", out.to_str().unwrap(), "--scenarios", &list, "--seed", "5"])
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for f in [
        "leaderboard.json",
        "leaderboard.md",
        "leaderboard.html",
        "tiny-cache/summary.json",
        "tiny-queue/summary.json",
    ] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    serde_json::from_str(&std::fs::read_to_string(out.join("leaderboard.json")).unwrap()).unwrap()
}

#[test]
fn every_applicable_policy_is_ranked_against_the_best_real_one() {
    let dir = tmp("all");
    let board = run(&dir, "out", &["--policies", "random,least-outstanding,hwlb,oracle,c3,ideal"]);
    let scenarios = board["scenarios"].as_array().unwrap();
    assert_eq!(scenarios.len(), 2);
    for s in scenarios {
        let results = s["results"].as_array().unwrap();
        let real: Vec<&serde_json::Value> = results
            .iter()
            .filter(|r| r["policy"] != "oracle" && r["policy"] != "ideal")
            .collect();
        let best = real
            .iter()
            .map(|r| r["p99_ratio_to_best"].as_f64().unwrap())
            .fold(f64::INFINITY, f64::min);
        assert!((best - 1.0).abs() < 1e-12, "{}: best real ratio {best}", s["scenario"]);
        for r in results {
            for key in [
                "policy",
                "mean_ms",
                "p99_ms",
                "p999_ms",
                "timeouts",
                "p99_ratio_to_best",
                "p999_ratio_to_best",
            ] {
                assert!(r.get(key).is_some(), "{key} missing in {r}");
            }
            assert!(r["p99_ms"].as_f64().unwrap() > 0.0);
        }
    }
    // The cache scenario runs them on the coordinators and leaves out the ideal shared queue,
    // which needs direct routing; the queue scenario runs them on the clients, ideal included.
    let names = |i: usize| -> Vec<String> {
        scenarios[i]["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["policy"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(0), ["random", "least-outstanding", "hwlb", "oracle", "c3"]);
    assert!(names(1).contains(&"ideal".to_string()), "{:?}", names(1));
    let overall = board["overall"].as_array().unwrap();
    assert!(overall
        .iter()
        .all(|o| o["p99_geomean_ratio"].as_f64().unwrap() > 0.0 && o.get("p999_geomean_ratio").is_some()));
    // Deterministic for a seed.
    let again = run(&dir, "again", &["--policies", "random,least-outstanding,hwlb,oracle,c3,ideal"]);
    assert_eq!(board, again);
}

#[test]
fn quick_runs_each_scenarios_own_list() {
    let dir = tmp("quick");
    let board = run(&dir, "out", &["--quick"]);
    let queue = &board["scenarios"][1]["results"];
    let names: Vec<&str> = queue.as_array().unwrap().iter().map(|r| r["policy"].as_str().unwrap()).collect();
    assert_eq!(names, ["random", "least-outstanding", "ideal"]);
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let dir = tmp("bad");
    let list = scenarios(&dir);
    let cases: [(&[&str], &str); 3] = [
        (&["--scenarios", &list, "--policies", "random,nope"], "nope"),
        (&["--scenarios", "does-not-exist"], "does-not-exist"),
        (
            &["--scenarios", &format!("{list},{}", dir.join("tiny-queue.toml").display())],
            "listed twice",
        ),
    ];
    for (args, needle) in cases {
        let o = common::bin()
            .args(["tournament", "--out", dir.join("o").to_str().unwrap()])
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{err}");
    }
}
