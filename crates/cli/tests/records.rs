//! What a run records and how it counts: percentiles over every request (a time-out at the
//! read time-out) in `sim run` and the tournament alike, what was asked (overrides, policies,
//! seed, version) in summary.json and the report, and a re-run replacing its folder whole.

mod common;

use serde_json::Value;
use std::path::{Path, PathBuf};

fn tmp(name: &str) -> PathBuf {
    common::fresh_dir("records", name)
}

/// Three nodes, one of them down for the whole run and never seen down (the failure detector
/// takes a minute): the reads a client sends to it, about a third, time out (at 200 ms); the
/// others answer within a few milliseconds.
const ONE_DOWN: &str = r#"name = "one-down"
description = "3 nodes, 1 Gbps NICs, node 0 down."
[cluster]
nodes = 3
replication_factor = 3
[node]
cpu_concurrency = 4
cpu_service = { dist = "exponential", mean_us = 200 }
[network]
nic_gbps = 1.0
[clients]
count = 2
token_aware = true
arrival = "poisson"
rate_per_s = 2000
keys = { pattern = "uniform", count = 5000 }
[requests]
consistency = "one"
read_timeout_ms = 200
[run]
warmup_s = 1
duration_s = 4
failure_detection_ms = 60000
[policy]
coordinator = "naive"
compare = ["naive", "c3"]
[[phase]]
name = "late"
start_s = 2
end_s = 4
[[fault]]
kind = "restart"
node = 0
at_s = 0
duration_s = 10
"#;

fn scenario(dir: &Path) -> String {
    let p = dir.join("one-down.toml");
    std::fs::write(&p, ONE_DOWN).unwrap();
    p.to_str().unwrap().to_string()
}

fn json_of(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Takes `wall_s` out of a run (the one figure that differs between identical runs).
fn without_wall(mut run: Value) -> Value {
    run["sim"].as_object_mut().unwrap().remove("wall_s");
    run
}

#[test]
fn time_outs_are_in_the_tail_and_the_tournament_gives_the_same_figures() {
    let dir = tmp("tail");
    let sc = scenario(&dir);
    let out = dir.join("run");
    let stdout = common::run_ok(&["sim", "run", &sc, "--seed", "3", "--out", out.to_str().unwrap()]);
    let v = json_of(&out.join("summary.json"));
    for run in v["runs"].as_array().unwrap() {
        let (requests, timeouts) = (run["requests"].as_f64().unwrap(), run["timeouts"].as_f64().unwrap());
        assert!((0.2..0.5).contains(&(timeouts / requests)), "a third time out: {run}");
        // Every request: the p99 is the time-out; the completed ones' is below it.
        assert_eq!(run["latency_all_ms"]["p99"], 200.0, "{run}");
        assert!(run["latency_ms"]["p99"].as_f64().unwrap() < 20.0, "{run}");
        for key in ["mean", "p50", "p95", "p99", "p999"] {
            assert!(run["latency_all_ms"][key].is_number(), "latency_all_ms.{key}");
            assert!(run["phases"][0]["latency_all_ms"][key].is_number(), "phases latency_all_ms.{key}");
        }
        assert_eq!(run["phases"][0]["latency_all_ms"]["p99"], 200.0);
    }
    // The table leads with every request.
    let header = stdout.lines().next().unwrap();
    assert!(
        header.find("every request").unwrap() < header.find("completed only").unwrap(),
        "{stdout}"
    );

    let t_out = dir.join("tournament");
    common::run_ok(&[
        "tournament",
        "--scenarios",
        &sc,
        "--quick",
        "--seed",
        "3",
        "--out",
        t_out.to_str().unwrap(),
    ]);
    let board = json_of(&t_out.join("leaderboard.json"));
    let t_summary = json_of(&t_out.join("one-down").join("summary.json"));
    for (i, run) in v["runs"].as_array().unwrap().iter().enumerate() {
        let row = &board["scenarios"][0]["results"][i];
        assert_eq!(row["policy"], run["policy"]);
        assert_eq!(row["p99_ms"], run["latency_all_ms"]["p99"], "the same p99");
        assert_eq!(row["p999_ms"], run["latency_all_ms"]["p999"], "the same p99.9");
        assert_eq!(row["mean_ms"], run["latency_all_ms"]["mean"], "the same mean");
        // At the time-out, ranked by the failed share over 1%.
        let failed = row["failed_fraction"].as_f64().unwrap();
        assert!((row["p99_rank_ms"].as_f64().unwrap() - 200.0 * failed / 0.01).abs() < 0.01, "{row}");
        assert_eq!(
            without_wall(t_summary["runs"][i].clone()),
            without_wall(run.clone()),
            "the same run"
        );
    }
}

#[test]
fn a_run_records_what_was_asked_and_replaces_its_folder_whole() {
    let dir = tmp("asked");
    let sc = scenario(&dir);
    let out = dir.join("run");
    let out_s = out.to_str().unwrap();
    common::run_ok(&[
        "sim",
        "run",
        &sc,
        "--out",
        out_s,
        "--set",
        "clients.rate_per_s=1000",
        "--set",
        "network.nic_gbps=0.65",
    ]);
    let v = json_of(&out.join("summary.json"));
    assert_eq!(
        v["overrides"],
        serde_json::json!(["clients.rate_per_s=1000", "network.nic_gbps=0.65"])
    );
    assert_eq!(v["policies"], serde_json::json!(["naive", "c3"]));
    assert_eq!(
        (v["seed"].as_u64(), v["version"].as_str()),
        (Some(1), Some(env!("CARGO_PKG_VERSION")))
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("Edited for this run with --set: clients.rate_per_s=1000 (the file: 2000), network.nic_gbps=0.65 (the file: 1.0)."),
        "{html}"
    );
    let as_run = html.lines().find(|l| l.contains("As run:")).unwrap();
    assert!(as_run.contains("0.65 Gbps NICs") && !as_run.contains(" 1 Gbps"), "{as_run}");
    assert!(html.contains("<code>network.nic_gbps=0.65</code>"));
    assert!(out.join("c3").join("timeseries.csv").exists());

    // Again, one policy: nothing of the first run stays beside the new summary.
    std::fs::write(out.join("report.png"), "an earlier screenshot").unwrap();
    common::run_ok(&[
        "sim",
        "run",
        &sc,
        "--out",
        out_s,
        "--policy",
        "naive",
        "--set",
        "clients.rate_per_s=1000",
    ]);
    let mut left: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(left, ["naive", "report.html", "summary.json"]);
    let v = json_of(&out.join("summary.json"));
    assert_eq!(
        (v["policies"].clone(), v["overrides"].clone()),
        (serde_json::json!(["naive"]), serde_json::json!(["clients.rate_per_s=1000"]))
    );
}
