//! What the CLI's integration tests share: running the binary and stopping a cluster they
//! started, however the test ends.
// Each test file uses its own part of this module.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

/// A small scenario (3 nodes, RF 3, QUORUM, a cache and a disk; 5 s of warm-up, 6 measured):
/// a run of it takes a fraction of a second.
pub const SMALL_SCENARIO: &str = r#"name = "tiny"
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
warmup_s = 5
duration_s = 6
[policy]
coordinator = "naive"
[[phase]]
name = "steady"
start_s = 0
end_s = 3
"#;

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_replica-lb");

/// A command running the binary under test, to add arguments to.
pub fn bin() -> Command {
    Command::new(BIN)
}

/// An empty directory for test `name` of test binary `binary`, in the temporary directory and
/// named after this process (left behind for a look after a failure).
pub fn fresh_dir(binary: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("replica-lb-{binary}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("the temporary directory is writable");
    d
}

/// Runs `replica-lb ARGS`: exit code, stdout, stderr.
pub fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN).args(args).output().expect("binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `replica-lb ARGS`, which must succeed; its stdout.
pub fn run_ok(args: &[&str]) -> String {
    let (code, out, err) = run(args);
    assert!(code == 0, "replica-lb {} (exit {code}): {out}{err}", args.join(" "));
    out
}

/// Waits for `child` to exit, at most `limit` (then the test fails; the caller's guard stops
/// what it started).
pub fn wait_exit(child: &mut std::process::Child, limit: std::time::Duration) -> std::process::ExitStatus {
    let start = std::time::Instant::now();
    loop {
        if let Some(s) = child.try_wait().expect("the child can be waited for") {
            return s;
        }
        assert!(start.elapsed() < limit, "the process did not exit within {limit:?}");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// One real cluster at a time in a test binary: its tests run in parallel threads, and every
/// cluster listens on the same loopback addresses. A test that starts one holds the guard to its
/// end (a test that panicked while holding it does not block the next).
pub fn one_cluster() -> std::sync::MutexGuard<'static, ()> {
    static ONE_CLUSTER: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE_CLUSTER.lock().unwrap_or_else(|e| e.into_inner())
}

/// Stops the cluster in its directory when dropped: at the end of the test, or when it fails.
pub struct ClusterGuard(pub PathBuf);

impl Drop for ClusterGuard {
    fn drop(&mut self) {
        let _ = Command::new(BIN).args(["cluster", "down", "--dir"]).arg(&self.0).output();
    }
}

impl ClusterGuard {
    /// Starts a 3-node Cassandra cluster in a fresh directory named after `name` and this
    /// process (`cluster up --engine cassandra --nodes 3` plus `extra` flags), and returns its
    /// guard and the directory as a flag value. Says how long the start took.
    pub fn cassandra(name: &str, extra: &[&str]) -> (ClusterGuard, String) {
        let dir = std::env::temp_dir().join(format!("rlb-cassandra-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let d = dir.to_str().expect("a UTF-8 temporary directory").to_string();
        let guard = ClusterGuard(dir);
        let started = std::time::Instant::now();
        let mut args = vec!["cluster", "up", "--engine", "cassandra", "--nodes", "3", "--dir", &d];
        args.extend_from_slice(extra);
        run_ok(&args);
        eprintln!(
            "3 Cassandra nodes up in {:.0} s ({})",
            started.elapsed().as_secs_f64(),
            extra.join(" ")
        );
        (guard, d)
    }
}

impl ClusterGuard {
    /// Stops the cluster and removes its directory: the end of a test that passed (a failed
    /// test stops the cluster on drop and leaves the directory for a look).
    pub fn remove(self) {
        let dir = self.0.clone();
        drop(self);
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Runs `replica-lb ARGS` while a read load runs on the cluster in `dir` (`bench` at 300
/// reads/s over `keys` keys, started 3 s before and stopped after, at most 10 minutes): exit
/// code, stdout, stderr.
pub fn run_under_load(dir: &str, keys: u32, args: &[&str]) -> (i32, String, String) {
    let mut load = Command::new(BIN)
        .args([
            "bench",
            "--cluster",
            dir,
            "--keys",
            &keys.to_string(),
            "--rate",
            "300",
            "--duration-s",
            "600",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("bench starts");
    std::thread::sleep(std::time::Duration::from_secs(3));
    let out = run(args);
    let _ = load.kill();
    let _ = load.wait();
    out
}

/// `warmup status --json` on the local Cassandra cluster in `dir` under a read load over `keys`
/// keys: every one of its 3 nodes answers from `source` (`plugin` or `row-cache`) with reads in
/// the window. The status, for more checks.
pub fn warmup_status_under_load(dir: &str, keys: u32, source: &str) -> serde_json::Value {
    let (code, out, err) = run_under_load(
        dir,
        keys,
        &["warmup", "status", "--contact-points", "127.0.1.1", "--window-s", "3", "--json"],
    );
    assert_eq!(code, 0, "{out}{err}");
    let status: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let nodes = status["nodes"].as_array().expect("nodes");
    assert_eq!(nodes.len(), 3, "{status}");
    for n in nodes {
        assert_eq!(n["source"], source, "{n}");
        assert!(n["reads"].as_u64().is_some_and(|r| r > 0), "{n}");
        assert!(n["misses_per_read"].is_number(), "{n}");
    }
    status
}

/// `warmup wait --node 127.0.1.3` on the local Cassandra cluster (127.0.1.1..3) while nobody reads:
/// node 2 is not warm, and the wait says so at its 6 s time-out, naming it (exit 1).
pub fn warmup_wait_times_out_on_unread_node_2() {
    let args = [
        "warmup",
        "wait",
        "--contact-points",
        "127.0.1.1",
        "--node",
        "127.0.1.3",
        "--window-s",
        "2",
        "--timeout-s",
        "6",
    ];
    let (code, out, err) = run(&args);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("127.0.1.3 not read (not warm)") && err.contains("--timeout-s"),
        "{err}"
    );
}
