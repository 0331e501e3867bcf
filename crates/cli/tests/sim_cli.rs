//! `replica-lb sim run` contracts: output files, summary.json keys, the CSV header, --json, and
//! one-line errors with the scenario line and exit code 2.

mod common;

use std::path::PathBuf;

fn tmp(name: &str) -> PathBuf {
    common::fresh_dir("sim-cli", name)
}

use common::SMALL_SCENARIO as SMALL;

#[test]
fn run_writes_the_contracted_outputs() {
    let dir = tmp("ok");
    let sc = dir.join("tiny.toml");
    std::fs::write(&sc, SMALL).unwrap();
    let out = dir.join("out");
    let o = common::bin()
        .args([
            "sim",
            "run",
            sc.to_str().unwrap(),
            "--policy",
            "naive,random/hwlb",
            "--seed",
            "9",
            "--json",
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["scenario"], "tiny");
    assert_eq!(v["seed"], 9);
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs[0]["policy"], "naive");
    assert_eq!(runs[1]["policy"], "random/hwlb");
    for key in [
        "requests",
        "completed",
        "timeouts",
        "errors",
        "latency_ms",
        "phases",
        "nodes",
        "warmup_s",
        "sim",
    ] {
        assert!(runs[0].get(key).is_some(), "missing {key}");
    }
    for key in ["mean", "p50", "p95", "p99", "p999"] {
        assert!(runs[0]["latency_ms"][key].is_number(), "missing latency_ms.{key}");
    }
    assert_eq!(runs[0]["phases"][0]["name"], "steady");
    assert!(runs[0]["nodes"][0]["replica_reads"].is_number());
    assert!(runs[0]["sim"]["events"].as_u64().unwrap() > 0);
    for key in ["client_bytes", "internode_bytes"] {
        assert!(runs[0]["network"][key].as_u64().unwrap() > 0, "network.{key}");
    }
    assert_eq!(runs[0]["network"]["nic_peak_utilization"], 0.0, "no NIC modelled");
    assert!(runs[0].get("multi").is_none(), "no multi-key requests in this scenario");
    let file: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(file, v);
    let csv = std::fs::read_to_string(out.join("random+hwlb").join("timeseries.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "t_s,node,reads,cache_hits,cache_misses,hit_ratio,local_reads,remote_reads,replica_reads,disk_queue,p50_ms,p99_ms,nic_out_bytes,nic_in_bytes,internode_out_bytes"
    );
    assert_eq!(csv.lines().count(), 1 + 6 * 4);
    assert!(out.join("naive").join("timeseries.csv").exists());
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<svg") && !html.contains("<script"));
    assert!(!out.join("charts").exists(), "charts only with --charts");
}

#[test]
fn charts_writes_every_chart_of_the_report_as_a_file() {
    let dir = tmp("charts");
    let sc = dir.join("tiny.toml");
    std::fs::write(&sc, SMALL).unwrap();
    let out = dir.join("out");
    let o = common::bin()
        .args(["sim", "run", sc.to_str().unwrap(), "--policy", "naive,hwlb", "--charts", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let mut names: Vec<String> = std::fs::read_dir(out.join("charts"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names.len(), html.matches("<svg").count(), "{names:?}");
    for name in [
        "compared-p99-read-latency.svg",
        "cache-hit-ratio-naive.svg",
        "cache-hit-ratio-hwlb.svg",
    ] {
        assert!(names.iter().any(|n| n == name), "{name} not in {names:?}");
    }
    for name in &names {
        let svg = std::fs::read_to_string(out.join("charts").join(name)).unwrap();
        assert!(
            svg.starts_with("<svg xmlns") && svg.ends_with("</svg>") && svg.contains("<style>"),
            "{name}"
        );
    }
}

#[test]
fn scenario_mistakes_are_one_line_with_their_line_and_exit_2() {
    let dir = tmp("bad");
    for (bad, line) in [
        (SMALL.replace("count = 2\n", "count = 2\ncolour = 1\n"), 13),
        (SMALL.replace("replication_factor = 3", "replication_factor = 5"), 4),
        (SMALL.replace("coordinator = \"naive\"", "coordinator = \"round-the-houses\""), 22),
    ] {
        let sc = dir.join("bad.toml");
        std::fs::write(&sc, bad).unwrap();
        let o = common::bin()
            .args(["sim", "run", sc.to_str().unwrap(), "--out", dir.join("o").to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(&format!("bad.toml:{line}:")), "{err}");
    }
    let sc = dir.join("ok.toml");
    std::fs::write(&sc, SMALL).unwrap();
    let o = common::bin()
        .args(["sim", "run", sc.to_str().unwrap(), "--policy", "nope"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let o = common::bin()
        .args(["sim", "run", sc.to_str().unwrap(), "--seed", "x"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

fn summary_of(o: &std::process::Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn set_overrides_a_value_for_the_run_and_reports_bad_ones_on_one_line() {
    let dir = tmp("set");
    let sc = dir.join("tiny.toml");
    std::fs::write(&sc, SMALL).unwrap();
    let run = |sets: &[&str]| {
        let mut args = vec!["sim", "run", sc.to_str().unwrap(), "--json", "--out"];
        let out = dir.join("o");
        args.push(out.to_str().unwrap());
        for s in sets {
            args.extend(["--set", s]);
        }
        common::bin().args(&args).output().unwrap()
    };
    let requests = |v: &serde_json::Value| v["runs"][0]["requests"].as_u64().unwrap();
    let plain = summary_of(&run(&[]));
    // Twice the arrival rate: about twice the requests; the file itself is untouched.
    let doubled = summary_of(&run(&["clients.rate_per_s=1000"]));
    let ratio = requests(&doubled) as f64 / requests(&plain) as f64;
    assert!((1.8..2.2).contains(&ratio), "{ratio}");
    assert_eq!(std::fs::read_to_string(&sc).unwrap(), SMALL);
    // A key the file leaves at its default, and a bare word taken as a string.
    let v = summary_of(&run(&["requests.read_timeout_ms=5000", "policy.coordinator=random"]));
    let label = v["runs"][0]["policy"].as_str().unwrap();
    assert!(label.ends_with("/random"), "{label}");

    for (set, needle) in [
        ("clients.count=0", "tiny.toml:12: clients.count = 0"),
        ("clients.colour=1", "unknown field `colour`"),
        ("phase.1.name=x", "'phase' is a list of 1 tables"),
        ("clients.count", "expected KEY=VALUE"),
    ] {
        let o = run(&[set]);
        assert_eq!(o.status.code(), Some(2), "{set}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{set}: {err}");
    }
}
