//! HWLB inside a real Apache Cassandra 5.0 cluster (ignored by default; CI runs it):
//!
//! ```sh
//! cargo test --release -p replica-lb --test cassandra_hwlb -- --ignored
//! ```
//!
//! `cluster up --engine cassandra --nodes 3 --coordinator-policy hwlb` (the plug-in built with
//! Maven on first use), data loaded and read until the row caches are warm, node 2 restarted
//! with empty caches so that the replicas' hit rates differ, then a window of QUORUM reads.
//! Checked over the window, for every coordinator:
//! - its replica choices match its HWLB rows: for every replica, the times it was drawn among
//!   the first k lie within 5 standard deviations of the sum of k x row[j] over the draws (the
//!   plug-in accumulates both);
//! - the orders it returned are what Cassandra did: the reads each node executed on the table
//!   (Cassandra's own counters) equal the times the coordinators put it among the first k, and
//!   all of them together are exactly k per read, so no read contacted a replica twice or too
//!   few (with speculative retry off, a QUORUM read is one data and one digest read);
//! - `cluster switch --coordinator-policy naive` turns HWLB off at run time (and `cluster status`
//!   shows it): no more draws, and every coordinator reads locally first, as Cassandra without
//!   the plug-in.
//!
//! The cluster listens on loopback only and is stopped even when the test fails.

use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::policies::load_balancing::{NodeIdentifier, SingleTargetLoadBalancingPolicy};
use scylla::statement::unprepared::Statement;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

mod common;
use common::{run_ok as run, ClusterGuard as Cluster};

/// Replicas per read (QUORUM of 3).
const K: f64 = 2.0;

/// What one coordinator's plug-in and Cassandra's counters say at one moment.
#[derive(Clone, Debug, Default)]
struct NodeView {
    coordinated: i64,
    draws: i64,
    local_reads: i64,
    /// Reads this node executed on the table (Cassandra's count).
    table_reads: i64,
    /// Per peer address: (chosen, expected, first_k) since the last reset.
    peers: BTreeMap<String, (i64, f64, i64)>,
}

fn on(addr: SocketAddr, cql: &str) -> Statement {
    let mut st = Statement::new(cql);
    st.set_load_balancing_policy(Some(SingleTargetLoadBalancingPolicy::new(NodeIdentifier::NodeAddress(addr), None)));
    st
}

async fn view(s: &Session, addr: SocketAddr) -> NodeView {
    let (coordinated, draws, local_reads) = s
        .query_unpaged(
            on(addr, "SELECT reads_coordinated, draws, local_reads FROM replica_lb_hwlb.node"),
            (),
        )
        .await
        .unwrap()
        .into_rows_result()
        .unwrap()
        .first_row::<(i64, i64, i64)>()
        .unwrap();
    let (table_reads,) = s
        .query_unpaged(
            on(
                addr,
                "SELECT count FROM system_views.local_read_latency WHERE keyspace_name = 'replica_lb' AND table_name = 'kv'",
            ),
            (),
        )
        .await
        .unwrap()
        .into_rows_result()
        .unwrap()
        .first_row::<(i64,)>()
        .unwrap();
    let rows = s
        .query_unpaged(on(addr, "SELECT peer, chosen, expected, first_k FROM replica_lb_hwlb.peers"), ())
        .await
        .unwrap()
        .into_rows_result()
        .unwrap();
    let peers = rows
        .rows::<(String, i64, f64, i64)>()
        .unwrap()
        .map(|r| {
            let (peer, chosen, expected, first_k) = r.unwrap();
            (peer, (chosen, expected, first_k))
        })
        .collect();
    NodeView {
        coordinated,
        draws,
        local_reads,
        table_reads,
        peers,
    }
}

fn bench(d: &str, seconds: &str) -> serde_json::Value {
    let out = std::env::temp_dir().join(format!("rlb-hwlb-bench-{}.json", std::process::id()));
    run(&[
        "bench",
        "--cluster",
        d,
        "--rate",
        "300",
        "--duration-s",
        seconds,
        "--cl",
        "quorum",
        "--keys",
        "20000",
        "--distribution",
        "hotspot",
        "--client-policy",
        "driver-default",
        "--out",
        out.to_str().unwrap(),
    ]);
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let _ = std::fs::remove_file(out);
    r
}

#[test]
#[ignore = "starts a real 3-node Cassandra cluster with the plug-in (~1 GB per node, a few minutes)"]
fn hwlb_inside_cassandra_draws_replicas_as_its_rows_and_cassandra_reads_them() {
    let dir = std::env::temp_dir().join(format!("rlb-cassandra-hwlb-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let d = dir.to_str().unwrap().to_string();
    let cluster = Cluster(dir.clone());
    let started = Instant::now();
    run(&[
        "cluster",
        "up",
        "--engine",
        "cassandra",
        "--nodes",
        "3",
        "--dir",
        &d,
        "--coordinator-policy",
        "hwlb",
        "--row-cache-mb",
        "4",
        "--chunk-cache-mb",
        "0",
        "--hit-rate-tick-ms",
        "1000",
        "--hit-rate-window-ms",
        "4000",
    ]);
    eprintln!("3 Cassandra nodes with the plug-in up in {:.0} s", started.elapsed().as_secs_f64());
    run(&["load", "--cluster", &d, "--keys", "20000", "--value-bytes", "200", "--cl", "all"]);
    let addrs: Vec<SocketAddr> = (1..=3).map(|i| format!("127.0.1.{i}:9042").parse().unwrap()).collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let session = rt.block_on(async {
        let mut b = SessionBuilder::new();
        for a in &addrs {
            b = b.known_node_addr(*a);
        }
        let s = b.build().await.unwrap();
        // Exactly k replicas per read: no speculative extra read.
        s.query_unpaged("ALTER TABLE replica_lb.kv WITH speculative_retry = 'NONE'", ())
            .await
            .unwrap();
        s.await_schema_agreement().await.unwrap();
        s
    });

    // Warm the row caches, then bring node 2 back with empty ones: the rates differ.
    bench(&d, "8");
    run(&["cluster", "restart", "--dir", &d, "--node", "2", "--down-s", "1"]);
    std::thread::sleep(Duration::from_secs(3));
    let before: Vec<NodeView> = rt.block_on(async {
        for a in &addrs {
            s_exec(
                &session,
                *a,
                "UPDATE replica_lb_hwlb.settings SET value = 'now' WHERE name = 'reset_counters'",
            )
            .await;
        }
        let mut v = Vec::new();
        for a in &addrs {
            v.push(view(&session, *a).await);
        }
        v
    });
    let window = bench(&d, "20");
    assert_eq!(window["errors"], 0, "{window}");
    assert_eq!(window["timeouts"], 0, "{window}");
    let completed = window["completed"].as_i64().unwrap();
    let after: Vec<NodeView> = rt.block_on(async {
        let mut v = Vec::new();
        for a in &addrs {
            v.push(view(&session, *a).await);
        }
        v
    });

    // 1. Every coordinator's draws follow its rows.
    let mut first_k_of: BTreeMap<String, i64> = BTreeMap::new();
    let mut coordinated = 0;
    for (c, (b, a)) in before.iter().zip(&after).enumerate() {
        let calls = a.coordinated - b.coordinated;
        let draws = a.draws - b.draws;
        coordinated += calls;
        eprintln!("coordinator {c}: {calls} reads, {draws} HWLB draws; peers {:?}", a.peers);
        assert!(
            draws > 100,
            "coordinator {c} drew {draws} times: HWLB should be active after the restart"
        );
        let mut first_k = 0;
        for (peer, &(chosen, expected, fk)) in &a.peers {
            let bound = 5.0 * expected.max(1.0).sqrt() + 5.0;
            assert!(
                (chosen as f64 - expected).abs() <= bound,
                "coordinator {c}, replica {peer}: drawn {chosen} times, rows say {expected:.1} (bound {bound:.1})"
            );
            *first_k_of.entry(peer.clone()).or_default() += fk;
            first_k += fk;
        }
        assert_eq!(
            first_k as f64,
            K * calls as f64,
            "coordinator {c}: {first_k} replicas first for {calls} reads"
        );
    }
    assert_eq!(coordinated, completed, "every read was coordinated once");
    // 2. What the orders said is what Cassandra read, replica by replica.
    let mut executed_total = 0;
    for (i, (b, a)) in before.iter().zip(&after).enumerate() {
        let executed = a.table_reads - b.table_reads;
        executed_total += executed;
        let peer = format!("127.0.0.{}", i + 1);
        assert_eq!(
            executed, first_k_of[&peer],
            "node {i} executed {executed} reads; coordinators put it first-k {} times",
            first_k_of[&peer]
        );
    }
    assert_eq!(executed_total as f64, K * completed as f64, "k distinct replicas per read");

    // 3. The switch: HWLB off at run time, every coordinator reads locally first.
    run(&["cluster", "switch", "--dir", &d, "--coordinator-policy", "naive"]);
    let off_before: Vec<NodeView> = rt.block_on(async {
        let mut v = Vec::new();
        for a in &addrs {
            v.push(view(&session, *a).await);
        }
        v
    });
    bench(&d, "4");
    for (c, (b, a)) in off_before
        .iter()
        .zip(&rt.block_on(async {
            let mut v = Vec::new();
            for a in &addrs {
                v.push(view(&session, *a).await);
            }
            v
        }))
        .enumerate()
    {
        let calls = a.coordinated - b.coordinated;
        assert!(calls > 100, "coordinator {c}: {calls} reads");
        assert_eq!(a.draws, b.draws, "coordinator {c} drew with HWLB off");
        assert_eq!(a.local_reads - b.local_reads, calls, "coordinator {c} not first in its own order");
    }
    // `cluster status` shows every node running with the plug-in's order switched to naive.
    let status: serde_json::Value = serde_json::from_str(&run(&["cluster", "status", "--dir", &d, "--json"])).unwrap();
    for n in status.as_array().unwrap() {
        assert_eq!(n["state"], "running", "{n}");
        assert_eq!(n["plugin"]["policy"], "naive", "{n}");
        assert!(n["plugin"]["reads_coordinated"].as_u64().unwrap() > 100, "{n}");
    }
    run(&["cluster", "down", "--dir", &d]);
    drop(cluster);
    let _ = std::fs::remove_dir_all(&dir);
}

async fn s_exec(s: &Session, addr: SocketAddr, cql: &str) {
    s.query_unpaged(on(addr, cql), ()).await.unwrap();
}
