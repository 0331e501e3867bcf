//! Fail fast, fail clean: a place the results cannot go, a consistency level the replication
//! factor cannot meet, a run that cannot fit in memory and a sample too large are each refused
//! before any work, with exit code 2 and one line naming the bad value (no panic, no
//! backtrace).

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn tmp(name: &str) -> PathBuf {
    common::fresh_dir("fail-fast", name)
}

/// A scenario that would simulate for hours: a refusal that comes within a second came before
/// the simulation.
fn long() -> String {
    common::SMALL_SCENARIO.replace("duration_s = 6", "duration_s = 36000")
}

fn write_scenario(dir: &Path, text: &str) -> String {
    let p = dir.join("long.toml");
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

/// Runs `replica-lb ARGS` with the memory a run may take capped (so that every machine
/// answers alike); its exit code, its stderr, and how long it took.
fn refused(args: &[&str]) -> (i32, String, Duration) {
    let start = Instant::now();
    let o = common::bin().args(args).env("REPLICA_LB_MEMORY_MB", "4000").output().unwrap();
    let took = start.elapsed();
    (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stderr).into_owned(), took)
}

/// The refusal every case must give: exit 2, one line, no panic, fast.
fn assert_clean_refusal(what: &str, (code, err, took): &(i32, String, Duration), needles: &[&str]) {
    assert_eq!(*code, 2, "{what}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{what}: one line: {err}");
    assert!(!err.contains("panicked") && !err.contains("backtrace"), "{what}: {err}");
    for n in needles {
        assert!(err.contains(n), "{what}: '{n}' not in: {err}");
    }
    assert!(*took < Duration::from_secs(1), "{what}: took {took:?}");
}

#[test]
fn an_output_folder_that_cannot_take_the_results_is_refused_before_the_run() {
    let dir = tmp("out");
    let sc = write_scenario(&dir, &long());
    let file = dir.join("a-file");
    std::fs::write(&file, "x").unwrap();
    let foreign = dir.join("notes");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("mine.txt"), "keep me").unwrap();
    let below_file = file.join("out");
    for (what, out, needle) in [
        ("an existing file", file.to_str().unwrap(), "is a file, not a folder"),
        ("below a file", below_file.to_str().unwrap(), "cannot create the folder"),
        ("/proc", "/proc/replica-lb-x", "cannot create the folder"),
        ("a folder of other files", foreign.to_str().unwrap(), "not a replica-lb run"),
    ] {
        for cmd in [
            vec!["sim", "run", sc.as_str(), "--out", out],
            vec!["tournament", "--scenarios", sc.as_str(), "--out", out],
            vec!["demo", "--out", out],
        ] {
            let r = refused(&cmd);
            assert_clean_refusal(&format!("{} with {what}", cmd[0]), &r, &[needle, "--out"]);
        }
    }
    assert_eq!(std::fs::read_to_string(foreign.join("mine.txt")).unwrap(), "keep me");
    let r = refused(&[
        "bench",
        "--contact-points",
        "127.0.0.1:1",
        "--rate",
        "10",
        "--duration-s",
        "1",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_clean_refusal("bench --out a folder", &r, &["is a folder"]);
}

#[test]
fn a_consistency_level_above_the_replication_factor_is_refused() {
    let dir = tmp("cl");
    let sc = write_scenario(
        &dir,
        &long()
            .replace("replication_factor = 3", "replication_factor = 1")
            .replace("\"quorum\"", "\"two\""),
    );
    let out = dir.join("o");
    let r = refused(&["sim", "run", &sc, "--out", out.to_str().unwrap()]);
    assert_clean_refusal(
        "CL two at RF 1",
        &r,
        &[
            "long.toml:",
            "requests.consistency = \"two\" needs 2 replicas",
            "replication_factor = 1",
        ],
    );
}

/// Values inside the documented limits that cannot fit in memory: refused with the estimate
/// and the key to change.
#[test]
fn a_run_that_cannot_fit_in_memory_is_refused_with_its_estimate() {
    let dir = tmp("memory");
    let short = common::SMALL_SCENARIO.to_string();
    let sc = write_scenario(&dir, &short);
    let out = dir.join("o");
    let out = out.to_str().unwrap();
    for (what, sets, key) in [
        // Over a large key space (a small one is cached by key, whatever the capacity).
        (
            "2^30 cached rows",
            vec!["node.cache_rows=1073741824", "clients.keys.count=1099511627776"],
            "node.cache_rows",
        ),
        ("1e9 requests/s", vec!["clients.rate_per_s=1e9"], "clients.rate_per_s"),
        (
            "4,096 nodes for 36,000 s",
            vec!["cluster.nodes=4096", "run.duration_s=36000"],
            "run.duration_s",
        ),
    ] {
        let mut args = vec!["sim", "run", sc.as_str(), "--out", out];
        for s in &sets {
            args.extend(["--set", s]);
        }
        let r = refused(&args);
        assert_clean_refusal(
            what,
            &r,
            &[
                "the run needs about",
                " of memory and ",
                "4.0 GB is available",
                &format!("lower {key}"),
            ],
        );
    }
    let r = refused(&[
        "sim",
        "run",
        sc.as_str(),
        "--out",
        out,
        "--set",
        "node.cache_rows=1073741824",
        "--set",
        "clients.keys.count=1099511627776",
    ]);
    assert!(!Path::new(out).join("summary.json").exists() && r.0 == 2);
    // The same check guards the tournament.
    let big = dir.join("big.toml");
    let big_text = short
        .replace("cache_rows = 500", "cache_rows = 1073741824")
        .replace("count = 5000,", "count = 1099511627776,");
    assert_ne!(big_text, short);
    std::fs::write(&big, big_text).unwrap();
    let t_out = dir.join("t");
    let r = refused(&[
        "tournament",
        "--scenarios",
        big.to_str().unwrap(),
        "--quick",
        "--out",
        t_out.to_str().unwrap(),
    ]);
    assert_clean_refusal("tournament", &r, &["lower node.cache_rows"]);
    let r = refused(&["sim", "run", sc.as_str(), "--out", out, "--set", "node.cache_rows=1073741825"]);
    assert_clean_refusal("past the limit", &r, &["node.cache_rows"]);
}

#[test]
fn a_sample_has_a_stated_maximum() {
    for draws in ["1e12", "10000001", "0"] {
        let r = refused(&[
            "hwlb",
            "sample",
            "--hit-rates",
            "0,0.8,0.8",
            "--cl",
            "2",
            "--draws",
            draws,
            "--seed",
            "1",
        ]);
        assert_clean_refusal(draws, &r, &["--draws", "[1, 10000000]"]);
    }
}
