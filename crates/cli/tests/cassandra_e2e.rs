//! End to end on a real Apache Cassandra 5.0 cluster (ignored by default; CI runs it):
//!
//! ```sh
//! cargo test --release -p replica-lb --test cassandra_e2e -- --ignored
//! ```
//!
//! `cluster up --engine cassandra --nodes 3` (Cassandra's jars fetched with Maven on first use),
//! `load` through the driver, a CL=ONE read traced to show that the coordinator the client chose
//! served it itself, `bench` with `driver-default` and with `c3` while node 1 is stopped for 8 s
//! (the seeds' GC pause), `cluster delay` seen through the proxy, `cluster restart`, and `cluster
//! down`; and an experiment interrupted (SIGTERM) once its cluster is up, which must stop every
//! node and the proxy. The clusters listen on loopback only and are stopped even when a test
//! fails.

use scylla::client::session_builder::SessionBuilder;
use scylla::statement::Consistency;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;

use std::time::{Duration, Instant};

mod common;
use common::{run_ok as run, ClusterGuard as Cluster};

fn bench_json(dir: &Path, policy: &str, pause_node: Option<&str>) -> serde_json::Value {
    let out = dir.join(format!("bench-{policy}.json"));
    let d = dir.to_str().unwrap().to_string();
    let pauser = pause_node.map(|node| {
        let (d, node) = (d.clone(), node.to_string());
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(4));
            run(&["cluster", "pause", "--dir", &d, "--node", &node, "--for-s", "8"]);
        })
    });
    run(&[
        "bench",
        "--cluster",
        &d,
        "--rate",
        "300",
        "--duration-s",
        "16",
        "--cl",
        "one",
        "--timeout-ms",
        "2000",
        "--client-policy",
        policy,
        "--out",
        out.to_str().unwrap(),
    ]);
    if let Some(p) = pauser {
        p.join().unwrap();
    }
    serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap()
}

/// A CQL OPTIONS request through `addr`; returns how long the answer took.
fn options_round_trip(addr: &str) -> Duration {
    let mut s = TcpStream::connect(addr).unwrap();
    let start = Instant::now();
    s.write_all(&[0x04, 0, 0, 1, 0x05, 0, 0, 0, 0]).unwrap();
    let mut header = [0u8; 9];
    s.read_exact(&mut header).unwrap();
    assert_eq!((header[0], header[4]), (0x84, 0x06), "SUPPORTED");
    start.elapsed()
}

#[test]
#[ignore = "starts a real 3-node Cassandra cluster (~1 GB per node, a few minutes)"]
fn cassandra_cluster_load_bench_and_faults() {
    let _one = common::one_cluster();
    let (cluster, d) = Cluster::cassandra("e2e", &["--coordinator-policy", "naive"]);
    let status: serde_json::Value = serde_json::from_str(&run(&["cluster", "status", "--dir", &d, "--json"])).unwrap();
    let nodes = status.as_array().unwrap();
    assert_eq!(nodes.len(), 3);
    assert!(nodes.iter().all(|n| n["state"] == "running" && n["cql"] == true), "{status}");

    run(&["load", "--cluster", &d, "--keys", "2000", "--cl", "all"]);

    // The coordinator serves a CL=ONE read itself (GossipingPropertyFileSnitch, dynamic snitch
    // off): every traced event of the read happens on the coordinator. Speculative retry is off
    // meanwhile: on JVMs still compiling, a slow local read would otherwise also be sent to the
    // next replica (Cassandra's "99p" default), which is not the choice this checks.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let s = SessionBuilder::new().known_node("127.0.1.1:9042").build().await.unwrap();
        let speculative = |value: &'static str| format!("ALTER TABLE replica_lb.kv WITH speculative_retry = '{value}'");
        s.query_unpaged(speculative("NONE"), ()).await.unwrap();
        s.await_schema_agreement().await.unwrap();
        let mut read = s.prepare("SELECT v FROM replica_lb.kv WHERE k = ?").await.unwrap();
        read.set_consistency(Consistency::One);
        read.set_tracing(true);
        for i in 0..20u64 {
            let key = i.to_be_bytes().to_vec();
            let r = s.execute_unpaged(&read, (key,)).await.unwrap();
            let id = r.tracing_id().unwrap();
            let mut info = s.get_tracing_info(&id).await;
            for _ in 0..20 {
                if info.as_ref().is_ok_and(|t| !t.events.is_empty()) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
                info = s.get_tracing_info(&id).await;
            }
            let info = info.unwrap();
            let coordinator = info.coordinator.unwrap();
            assert!(
                info.nodes().iter().all(|n| *n == coordinator),
                "read {i} touched {:?}, coordinator {coordinator}",
                info.nodes()
            );
        }
        s.query_unpaged(speculative("99p"), ()).await.unwrap();
        s.await_schema_agreement().await.unwrap();
    });

    // The seeds' GC pause, through the real driver: the driver's DefaultPolicy keeps sending
    // to the stopped node until its requests time out; c3 moves off it.
    let default = bench_json(&cluster.0, "driver-default", Some("1"));
    let c3 = bench_json(&cluster.0, "c3", Some("1"));
    for (name, r) in [("driver-default", &default), ("c3", &c3)] {
        eprintln!(
            "GC pause, {name}: requests {} completed {} timeouts {} p50 {} p99 {} p99.9 {} coordinators {}",
            r["requests"],
            r["completed"],
            r["timeouts"],
            r["latency_ms"]["p50"],
            r["latency_ms"]["p99"],
            r["latency_ms"]["p999"],
            r["coordinators"]
        );
        assert_eq!(r["transport"], "cql");
        assert!(r["latency_ms"]["p9999"].is_number());
    }
    assert_eq!(c3["adapter"]["picks"], c3["requests"]);
    let (t_default, t_c3) = (default["timeouts"].as_u64().unwrap(), c3["timeouts"].as_u64().unwrap());
    assert!(
        t_default >= 50,
        "the stopped node must cost the default policy time-outs: {t_default}"
    );
    assert!(t_c3 * 4 < t_default, "c3 {t_c3} time-outs vs driver-default {t_default}");

    // An added delay on node 0, through its proxy only.
    run(&["cluster", "delay", "--dir", &d, "--node", "0", "--ms", "60"]);
    std::thread::sleep(Duration::from_millis(300));
    let slow = options_round_trip("127.0.1.1:9042");
    let fast = options_round_trip("127.0.1.2:9042");
    assert!(
        slow >= Duration::from_millis(60) && fast < Duration::from_millis(60),
        "delayed {slow:?}, other {fast:?}"
    );
    run(&["cluster", "delay", "--dir", &d, "--node", "0", "--ms", "0"]);

    // kill -9 and back on the same data.
    run(&["cluster", "restart", "--dir", &d, "--node", "2", "--down-s", "1"]);
    let status: serde_json::Value = serde_json::from_str(&run(&["cluster", "status", "--dir", &d, "--json"])).unwrap();
    assert!(status.as_array().unwrap().iter().all(|n| n["cql"] == true), "{status}");

    run(&["cluster", "down", "--dir", &d]);
    let status: serde_json::Value = serde_json::from_str(&run(&["cluster", "status", "--dir", &d, "--json"])).unwrap();
    assert!(status.as_array().unwrap().iter().all(|n| n["state"] == "down"), "{status}");
    cluster.remove();
}

/// Whether process `pid` still runs (a zombie waiting for its parent counts as stopped).
fn running(pid: u32) -> bool {
    replica_lb_launcher::process_state(pid).is_some_and(|state| state != 'Z')
}

#[test]
#[ignore = "starts a real 3-node Cassandra cluster (~40 s)"]
fn an_interrupted_experiment_stops_its_cassandra_cluster() {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    let _one = common::one_cluster();
    let dir = common::fresh_dir("cassandra-e2e", "interrupt");
    let clusters = dir.join("clusters");
    let guard = Cluster(clusters.clone());
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/gc-pause-cassandra.toml");
    let mut experiment = Command::new(common::BIN)
        .arg("experiment")
        .arg(&scenario)
        .args(["--engine", "cassandra", "--policy", "dynamic-snitch", "--out"])
        .arg(dir.join("out"))
        .arg("--cluster-dir")
        .arg(&clusters)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = experiment.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("experiment: {line}");
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) if line.contains("answer CQL") => break,
            Ok(_) => {}
            Err(e) => {
                let _ = experiment.kill();
                panic!("the cluster did not start within 300 s: {e}");
            }
        }
    }
    let cluster: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(clusters.join("cluster.json")).unwrap()).unwrap();
    let pid = |v: &serde_json::Value| u32::try_from(v.as_u64().unwrap()).unwrap();
    let mut pids: Vec<u32> = cluster["nodes"].as_array().unwrap().iter().map(|n| pid(&n["pid"])).collect();
    pids.push(pid(&cluster["proxy_pid"]));
    assert_eq!(pids.len(), 4, "three nodes and the proxy: {cluster}");
    assert!(pids.iter().all(|&p| running(p)), "{pids:?} run before the interrupt");

    replica_lb_launcher::send_signal(experiment.id(), replica_lb_launcher::Signal::Term).unwrap();
    let status = common::wait_exit(&mut experiment, Duration::from_secs(60));
    assert_eq!(status.code(), Some(130), "an interrupted experiment exits 130");
    let left: Vec<u32> = pids.iter().copied().filter(|&p| running(p)).collect();
    assert!(left.is_empty(), "still running after the interrupt: {left:?}");
    guard.remove();
    let _ = std::fs::remove_dir_all(&dir);
}
