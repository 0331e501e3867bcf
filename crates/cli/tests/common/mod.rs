//! What the CLI's integration tests share: running the binary and stopping a cluster they
//! started, however the test ends.
// Each test file uses its own part of this module.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_replica-lb");

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

/// Stops the cluster in its directory when dropped: at the end of the test, or when it fails.
pub struct ClusterGuard(pub PathBuf);

impl Drop for ClusterGuard {
    fn drop(&mut self) {
        let _ = Command::new(BIN).args(["cluster", "down", "--dir"]).arg(&self.0).output();
    }
}
