//! A node that cannot start says which part failed and why, on one line, and exits non-zero:
//! a port already bound, a data directory that cannot be opened, seeds that never answer, a
//! bad configuration.

mod common;

use replica_lb_node::NodeConfig;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs a node with `cfg` and returns (exit code, stderr); kills it after 20 s.
fn run_node(name: &str, cfg_text: &str) -> (i32, String) {
    let dir = common::temp_dir(name);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("node.toml");
    std::fs::write(&path, cfg_text).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_replica-lb-node"))
        .arg("--config")
        .arg(&path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            let _ = std::fs::remove_dir_all(&dir);
            panic!("node {name} did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    use std::io::Read;
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    (status.code().unwrap_or(-1), err)
}

fn config(name: &str) -> NodeConfig {
    let any = SocketAddr::from(([127, 0, 0, 1], 0));
    NodeConfig {
        grpc_addr: any,
        metrics_addr: any,
        gossip_addr: any,
        data_dir: common::temp_dir(name).join("data"),
        ..NodeConfig::default()
    }
}

#[test]
fn startup_failures_name_the_part_and_the_reason() {
    // A gRPC port already taken.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut c = config("bind");
    c.grpc_addr = taken.local_addr().unwrap();
    let (code, err) = run_node("bind", &c.to_toml());
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("cannot bind the gRPC address") && err.contains(&c.grpc_addr.to_string()),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");

    // A data directory that is a file.
    let file = std::env::temp_dir().join(format!("replica-lb-test-{}-not-a-dir", std::process::id()));
    std::fs::write(&file, "x").unwrap();
    let mut c = config("datadir");
    c.data_dir = file.clone();
    let (code, err) = run_node("datadir", &c.to_toml());
    let _ = std::fs::remove_file(&file);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("cannot open the data directory"), "{err}");

    // Seeds that never answer.
    let mut c = config("seeds");
    c.seeds = vec!["127.0.0.1:9".into()];
    c.seed_timeout_ms = 500;
    let (code, err) = run_node("seeds", &c.to_toml());
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("cannot reach any seed") && err.contains("127.0.0.1:9"), "{err}");

    // Bad configuration: exit code 2, the key named.
    let (code, err) = run_node("badkey", "no_such_key = 1\n");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no_such_key"), "{err}");
    let (code, err) = run_node("badpolicy", "[policy]\nname = \"nope\"\n");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("nope"), "{err}");
}
