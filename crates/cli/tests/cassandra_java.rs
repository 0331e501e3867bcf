//! The Apache Cassandra Java driver in the load path, end to end on a real Apache Cassandra 5.0
//! cluster (ignored by default; CI runs it):
//!
//! ```sh
//! cargo test --release -p replica-lb --test cassandra_java -- --ignored
//! ```
//!
//! `cluster up --engine cassandra --nodes 3` (Cassandra as shipped), `load`, then the same
//! open-loop `bench` through the Java driver's own DefaultLoadBalancingPolicy (`--driver java`,
//! the runner built with Maven on first use) and through the scylla Rust driver's
//! `driver-default`, side by side; then through the Java driver with replica-lb's `unified`
//! (`ReplicaLbLoadBalancingPolicy`, java/driver-policy). The cluster listens on loopback only and is stopped even
//! when the test fails; the whole test takes under 3 minutes here once the jars are cached.

use std::path::Path;

mod common;
use common::{run_ok as run, ClusterGuard as Cluster};

fn bench(dir: &Path, driver: &str, policy: &str) -> serde_json::Value {
    let out = dir.join(format!("bench-{driver}-{policy}.json"));
    let d = dir.to_str().unwrap();
    let stdout = run(&[
        "bench",
        "--cluster",
        d,
        "--driver",
        driver,
        "--client-policy",
        policy,
        "--rate",
        "200",
        "--duration-s",
        "6",
        "--cl",
        "one",
        "--timeout-ms",
        "2000",
        "--out",
        out.to_str().unwrap(),
    ]);
    eprintln!("{driver}:\n{stdout}");
    serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap()
}

#[test]
#[ignore = "starts a real 3-node Cassandra cluster (~1 GB per node) and a JVM of the Java driver"]
fn bench_through_the_java_driver() {
    // A row cache, for the warm gate's checks at the end (the benches do not depend on it).
    let (cluster, d) = Cluster::cassandra("java", &["--row-cache-mb", "16"]);
    run(&["load", "--cluster", &d, "--keys", "2000", "--cl", "all"]);

    let java = bench(&cluster.0, "java", "default");
    let rust = bench(&cluster.0, "rust", "driver-default");
    for (name, r) in [("java", &java), ("rust", &rust)] {
        eprintln!(
            "{name}: requests {} completed {} errors {} timeouts {} p50 {} p99 {} p99.9 {} coordinators {}",
            r["requests"],
            r["completed"],
            r["errors"],
            r["timeouts"],
            r["latency_ms"]["p50"],
            r["latency_ms"]["p99"],
            r["latency_ms"]["p999"],
            r["coordinators"]
        );
        // The same report, key for key.
        let keys = |v: &serde_json::Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(r), keys(&rust), "{name}: the report's keys");
    }
    assert_eq!(java["transport"], "java");
    assert_eq!(java["client_policy"], "java:default");
    assert!(java["adapter"].is_null(), "the driver's own policy has no counters");
    assert_eq!(rust["transport"], "cql");
    let requests = java["requests"].as_u64().unwrap();
    let completed = java["completed"].as_u64().unwrap();
    assert!(requests > 800 && completed > 0, "{java}");
    assert_eq!(
        completed + java["errors"].as_u64().unwrap() + java["timeouts"].as_u64().unwrap(),
        requests,
        "every request ended once"
    );
    assert!(completed * 100 >= requests * 99, "a healthy cluster answers: {java}");
    assert!(java["latency_ms"]["p9999"].is_number());
    // Token-aware over three replicas of each key: every node coordinates a good share.
    let coordinators = java["coordinators"].as_object().unwrap();
    assert_eq!(coordinators.len(), 3, "{coordinators:?}");
    for (node, n) in coordinators {
        assert!(n.as_u64().unwrap() * 6 >= completed, "{node} coordinated {n} of {completed}");
        assert!(node.starts_with("127.0.1."), "{node}: the address the node advertises");
    }
    let total: u64 = coordinators.values().map(|n| n.as_u64().unwrap()).sum();
    assert_eq!(total, completed);

    // A replica-lb policy inside the Java driver: every read planned by it, every pick's end
    // matched (in-flight counts that cannot drift), the same coordinators' addresses.
    let unified = bench(&cluster.0, "java", "unified");
    eprintln!("java:unified: {unified}");
    assert_eq!(unified["client_policy"], "java:unified");
    let completed = unified["completed"].as_u64().unwrap();
    assert!(completed * 100 >= unified["requests"].as_u64().unwrap() * 99, "{unified}");
    let a = &unified["adapter"];
    assert!(a["picks"].as_u64().unwrap() >= completed, "every read planned: {a}");
    assert_eq!(a["overridden"], 0, "{a}");
    assert!(a["matched"].as_u64().unwrap() * 100 >= completed * 99, "attempt ends matched: {a}");
    assert!(a["open"].as_u64().unwrap() <= 5, "tickets left open: {a}");
    let coordinators = unified["coordinators"].as_object().unwrap();
    assert!(coordinators.keys().all(|n| n.starts_with("127.0.1.")), "{coordinators:?}");

    warm_gate_on_cassandra_as_shipped(&d);
    run(&["cluster", "down", "--dir", &d]);
    cluster.remove();
}

/// `warmup status` and `warmup wait` on Cassandra as shipped (the row cache's counters in
/// `system_views.caches`): warm caches under load are warm (exit 0); a node restarted cold and
/// not read is not, and the wait says so at its time-out (exit 1).
fn warm_gate_on_cassandra_as_shipped(d: &str) {
    common::warmup_status_under_load(d, 2000, "row-cache");
    let (code, out, err) = common::run_under_load(
        d,
        2000,
        &[
            "warmup",
            "wait",
            "--contact-points",
            "127.0.1.1",
            "--window-s",
            "3",
            "--timeout-s",
            "300",
        ],
    );
    // A node the driver sends few reads to fills its cache last: every key read once takes it
    // a minute or two at 300 reads/s over 2,000 keys.
    assert_eq!(code, 0, "warm caches under load: {out}{err}");
    assert!(out.contains("every node warm after"), "{out}");
    run(&["cluster", "restart", "--dir", d, "--node", "2", "--down-s", "1"]);
    common::warmup_wait_times_out_on_unread_node_2();
}
