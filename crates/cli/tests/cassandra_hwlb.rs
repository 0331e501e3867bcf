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
//!   the plug-in;
//! - switched to `unified` and node 2 restarted again: every coordinator leaves the cold node
//!   out of its reads, warm-up reads are sent (none fails) and reach node 2.
//!
//! `each_table_is_balanced_by_its_own_hit_rates` (per-table hit rates, docs/cassandra-hwlb.md):
//! one cluster with the plug-in (its query handler installed), two row-cached tables, node 2
//! warm for table `a` and cold for table `b`, the others warm for both. QUORUM reads of both
//! tables through every coordinator: node 2 serves its share of `a`'s reads and few of `b`'s,
//! each table's reads are exactly k per read, and the virtual tables show the rates per table.
//!
//! The clusters listen on loopback only and are stopped even when a test fails.

use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::policies::load_balancing::{NodeIdentifier, SingleTargetLoadBalancingPolicy};
use scylla::statement::prepared::PreparedStatement;
use scylla::statement::unprepared::Statement;
use scylla::statement::Consistency;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
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
    let _one = common::one_cluster();
    let (cluster, d) = Cluster::cassandra(
        "hwlb",
        &[
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
        ],
    );
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

    // 4. unified's warm-up reads: node 2, restarted again, is cold; every coordinator leaves it
    //    out of its reads and reads it in the background instead (the query handler sends).
    run(&["cluster", "switch", "--dir", &d, "--coordinator-policy", "unified"]);
    run(&["cluster", "restart", "--dir", &d, "--node", "2", "--down-s", "1"]);
    std::thread::sleep(Duration::from_secs(3));
    let snapshot = || {
        rt.block_on(async {
            let (mut w, mut v) = (Vec::new(), Vec::new());
            for a in &addrs {
                w.push(warmup(&session, *a).await);
                v.push(view(&session, *a).await);
            }
            (w, v)
        })
    };
    let (w_before, v_before) = snapshot();
    let window = bench(&d, "10");
    assert_eq!(window["errors"], 0, "{window}");
    assert_eq!(window["timeouts"], 0, "{window}");
    let (w_after, v_after) = snapshot();
    let delta = |i: usize, f: fn(&[i64; 4]) -> i64| f(&w_after[i]) - f(&w_before[i]);
    let left_out: i64 = (0..3).map(|i| delta(i, |w| w[0])).sum();
    let sent: i64 = (0..3).map(|i| delta(i, |w| w[1])).sum();
    let failed: i64 = (0..3).map(|i| delta(i, |w| w[3])).sum();
    let node2_reads = v_after[2].table_reads - v_before[2].table_reads;
    eprintln!("unified warm-up: {left_out} reads left node 2 out, {sent} warm-up reads sent, {failed} failed; node 2 executed {node2_reads} reads");
    for c in 0..3 {
        assert!(
            delta(c, |w| w[0]) > 100,
            "coordinator {c} left the cold node out of {} reads",
            delta(c, |w| w[0])
        );
    }
    assert!(sent > 50, "{sent} warm-up reads sent");
    assert_eq!(failed, 0, "warm-up reads failed");
    assert!(node2_reads > 0, "the warm-up reads reached node 2");
    run(&["cluster", "restart", "--dir", &d, "--node", "2", "--down-s", "1"]);
    warm_gate_with_the_plugin(&d);
    metrics_over_jmx(&d);
    run(&["cluster", "down", "--dir", &d]);
    cluster.remove();
}

/// A node's plug-in warm-up counters: reads that left a cold replica out, warm-up reads sent,
/// skipped and failed.
async fn warmup(s: &Session, addr: SocketAddr) -> [i64; 4] {
    let (left_out, sent, skipped, failed) = s
        .query_unpaged(
            on(
                addr,
                "SELECT cold_left_out, warmup_reads, warmup_skipped, warmup_failures FROM replica_lb_hwlb.node",
            ),
            (),
        )
        .await
        .unwrap()
        .into_rows_result()
        .unwrap()
        .first_row::<(i64, i64, i64, i64)>()
        .unwrap();
    [left_out, sent, skipped, failed]
}

async fn s_exec(s: &Session, addr: SocketAddr, cql: &str) {
    s.query_unpaged(on(addr, cql), ()).await.unwrap();
}

/// Rows per table in the per-table test.
const TABLE_ROWS: i32 = 2000;
/// The node left cold for table `b` (id 2: 127.0.0.3, clients reach it at 127.0.1.3).
const COLD: usize = 2;

/// Runs `jobs` (a prepared read and its key) with `concurrency` workers; the reads that failed.
async fn read_all(s: &Arc<Session>, jobs: Vec<(PreparedStatement, i32)>, concurrency: usize) -> usize {
    let jobs = Arc::new(jobs);
    let next = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let (s, jobs, next, failed) = (s.clone(), jobs.clone(), next.clone(), failed.clone());
        workers.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((st, key)) = jobs.get(i) else { break };
                if let Err(e) = s.execute_unpaged(st, (*key,)).await {
                    if failed.fetch_add(1, Ordering::Relaxed) < 3 {
                        eprintln!("read of key {key} failed: {e}");
                    }
                }
            }
        }));
    }
    for w in workers {
        w.await.unwrap();
    }
    failed.load(Ordering::Relaxed)
}

/// `st` at consistency `cl`, sent to the node clients reach at `target` (or token-aware when None).
fn prepared(st: &PreparedStatement, cl: Consistency, target: Option<SocketAddr>) -> PreparedStatement {
    let mut p = st.clone();
    p.set_consistency(cl);
    if let Some(addr) = target {
        p.set_load_balancing_policy(Some(SingleTargetLoadBalancingPolicy::new(NodeIdentifier::NodeAddress(addr), None)));
    }
    p
}

/// Reads node `addr` executed on table `pertable.{table}` since it started (Cassandra's count).
async fn executed(s: &Session, addr: SocketAddr, table: &str) -> i64 {
    let q = format!("SELECT count FROM system_views.local_read_latency WHERE keyspace_name = 'pertable' AND table_name = '{table}'");
    s.query_unpaged(on(addr, &q), ())
        .await
        .unwrap()
        .into_rows_result()
        .unwrap()
        .first_row::<(i64,)>()
        .unwrap()
        .0
}

/// Prints every node's cumulative row-cache counts of both tables at the end of `phase` (what
/// explains a share that surprised: misses since the warm-up, or none).
async fn print_cache_counts(s: &Session, clients: &[SocketAddr], phase: &str) {
    for (n, c) in clients.iter().enumerate() {
        eprintln!(
            "{phase}, node {n}: row cache (hits, misses) a {:?} b {:?}",
            cache_counts(s, *c, "a").await,
            cache_counts(s, *c, "b").await
        );
    }
}

/// Node `addr`'s cumulative row-cache (hits, misses) of `pertable.{table}` (the plug-in's counts).
async fn cache_counts(s: &Session, addr: SocketAddr, table: &str) -> (i64, i64) {
    let q = format!("SELECT cache_hits, cache_misses FROM replica_lb_hwlb.tables WHERE table_name = 'pertable.{table}'");
    s.query_unpaged(on(addr, &q), ())
        .await
        .unwrap()
        .into_rows_result()
        .unwrap()
        .first_row::<(i64, i64)>()
        .unwrap()
}

/// What coordinator `addr` plans reads of `pertable.{table}` with: each peer's gossiped rate for
/// the table (None: the peer gave none, its node-wide rate counts).
async fn table_rates(s: &Session, addr: SocketAddr, table: &str) -> BTreeMap<String, Option<f64>> {
    let q = format!("SELECT peer, hit_rate FROM replica_lb_hwlb.table_rates WHERE table_name = 'pertable.{table}'");
    s.query_unpaged(on(addr, &q), ())
        .await
        .unwrap()
        .into_rows_result()
        .unwrap()
        .rows::<(String, Option<f64>)>()
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

#[test]
#[ignore = "starts a real 3-node Cassandra cluster with the plug-in (~1 GB per node, about two minutes)"]
fn each_table_is_balanced_by_its_own_hit_rates() {
    let _one = common::one_cluster();
    let started = Instant::now();
    let (cluster, d) = Cluster::cassandra(
        "pertable",
        &[
            "--coordinator-policy",
            "naive",
            "--row-cache-mb",
            "16",
            "--chunk-cache-mb",
            "0",
            "--hit-rate-tick-ms",
            "500",
            "--hit-rate-window-ms",
            "1000",
        ],
    );
    let clients: Vec<SocketAddr> = (1..=3).map(|i| format!("127.0.1.{i}:9042").parse().unwrap()).collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut b = SessionBuilder::new();
        for a in &clients {
            b = b.known_node_addr(*a);
        }
        let s = Arc::new(b.build().await.unwrap());
        for (n, c) in clients.iter().enumerate() {
            let (mode,): (String,) = s
                .query_unpaged(on(*c, "SELECT table_rates FROM replica_lb_hwlb.node"), ())
                .await
                .unwrap()
                .into_rows_result()
                .unwrap()
                .first_row()
                .unwrap();
            assert_eq!(mode, "per-table", "node {n}: the harness installs the query handler");
        }
        s.query_unpaged(
            "CREATE KEYSPACE pertable WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
            (),
        )
        .await
        .unwrap();
        for t in ["a", "b"] {
            // Whole rows cached; exactly k replicas per read (no speculative extra read).
            let ddl = format!(
                "CREATE TABLE pertable.{t} (k int PRIMARY KEY, v text) \
                 WITH caching = {{'keys': 'ALL', 'rows_per_partition': 'ALL'}} AND speculative_retry = 'NONE'"
            );
            s.query_unpaged(ddl, ()).await.unwrap();
        }
        s.await_schema_agreement().await.unwrap();
        // Every node knows both tables before the first write goes to it.
        let deadline = Instant::now() + Duration::from_secs(60);
        for c in &clients {
            loop {
                let known = s
                    .query_unpaged(
                        on(*c, "SELECT table_name FROM system_schema.tables WHERE keyspace_name = 'pertable'"),
                        (),
                    )
                    .await
                    .unwrap()
                    .into_rows_result()
                    .unwrap()
                    .rows_num();
                if known == 2 {
                    break;
                }
                assert!(Instant::now() < deadline, "{c} does not know both tables after 60 s");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        s.refresh_metadata().await.unwrap();
        let value = "v".repeat(200);
        for t in ["a", "b"] {
            let mut ins = s.prepare(format!("INSERT INTO pertable.{t} (k, v) VALUES (?, ?)")).await.unwrap();
            ins.set_consistency(Consistency::All);
            for k in 0..TABLE_ROWS {
                s.execute_unpaged(&ins, (k, value.as_str())).await.unwrap();
            }
        }
        let read_a = s.prepare("SELECT v FROM pertable.a WHERE k = ?").await.unwrap();
        let read_b = s.prepare("SELECT v FROM pertable.b WHERE k = ?").await.unwrap();

        // Warm the row caches at ONE through each node, which reads itself (naive): nodes 0 and
        // 1 both tables, node 2 table a only. Two passes: misses, then hits.
        let mut warm = Vec::new();
        for (n, c) in clients.iter().enumerate() {
            for (t, st) in [("a", &read_a), ("b", &read_b)] {
                if n == COLD && t == "b" {
                    continue;
                }
                let p = prepared(st, Consistency::One, Some(*c));
                for _ in 0..2 {
                    warm.extend((0..TABLE_ROWS).map(|k| (p.clone(), k)));
                }
            }
        }
        assert_eq!(read_all(&s, warm, 16).await, 0, "warm-up reads failed");
        for (n, c) in clients.iter().enumerate() {
            let (a, b) = (executed(&s, *c, "a").await, executed(&s, *c, "b").await);
            eprintln!("after the warm-up, node {n}: executed a {a} b {b}");
        }
        print_cache_counts(&s, &clients, "after the warm-up").await;
        let cold_b = executed(&s, clients[COLD], "b").await;
        assert_eq!(cold_b, 0, "node {COLD} read table b during the warm-up");
    });
    eprintln!("tables loaded and warmed at {:.0} s", started.elapsed().as_secs_f64());
    run(&["cluster", "switch", "--dir", &d, "--coordinator-policy", "hwlb"]);

    // QUORUM reads of both tables through every coordinator (the driver's token-aware choice),
    // keys spread over the tables: first to settle the rates, then the measured window.
    let reads_per_table = 3000usize;
    let (before, after, window_reads) = rt.block_on(async {
        let mut b = SessionBuilder::new();
        for a in &clients {
            b = b.known_node_addr(*a);
        }
        let s = Arc::new(b.build().await.unwrap());
        let read_a = prepared(
            &s.prepare("SELECT v FROM pertable.a WHERE k = ?").await.unwrap(),
            Consistency::Quorum,
            None,
        );
        let read_b = prepared(
            &s.prepare("SELECT v FROM pertable.b WHERE k = ?").await.unwrap(),
            Consistency::Quorum,
            None,
        );
        let jobs = |n: usize, salt: u64| -> Vec<(PreparedStatement, i32)> {
            (0..2 * n)
                .map(|i| {
                    let h = (i as u64 + salt).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
                    let key = (h % TABLE_ROWS as u64) as i32;
                    (if i % 2 == 0 { read_a.clone() } else { read_b.clone() }, key)
                })
                .collect()
        };
        // Settle until every coordinator plans with node COLD as warm as its peers for a and cold
        // for b. Time alone is not enough: a table idle since the warm-up keeps the ratio of its
        // last reads (its misses decay with its hits), and once its rate climbs back a change
        // under 0.1 is held back up to 5 s by the publication rule (0.895 was seen 6 s in).
        let settle_deadline = Instant::now() + Duration::from_secs(40);
        let mut settling_batches = 0u64;
        loop {
            settling_batches += 1;
            assert_eq!(
                read_all(&s, jobs(500, settling_batches * 10_000), 8).await,
                0,
                "settling reads failed"
            );
            let mut settled = true;
            for c in &clients {
                let a = table_rates(&s, *c, "a").await;
                let b = table_rates(&s, *c, "b").await;
                let cold = format!("127.0.0.{}", COLD + 1);
                settled &= a.len() == 3 && a.values().all(|r| r.is_some_and(|r| r >= 0.95));
                settled &= b.get(&cold).copied().flatten().is_some_and(|r| r < 0.5);
            }
            if settled {
                break;
            }
            assert!(
                Instant::now() < settle_deadline,
                "after {settling_batches} batches of 1,000 reads the coordinators still do not see node {COLD} \
                 as warm as its peers for a (>= 0.95) and cold for b (< 0.5)"
            );
        }
        eprintln!("rates settled after {settling_batches} batches of 1,000 reads");
        // No pause: a table not read for a window (1 s here) leaves the gossiped set.
        let mut before = Vec::new();
        print_cache_counts(&s, &clients, "after the settling reads").await;
        for c in &clients {
            before.push((executed(&s, *c, "a").await, executed(&s, *c, "b").await));
        }
        let measured = {
            let (s, jobs) = (s.clone(), jobs(reads_per_table, 7));
            tokio::spawn(async move { read_all(&s, jobs, 8).await })
        };
        // While the reads run: what the coordinators plan with, and that they plan per table.
        tokio::time::sleep(Duration::from_secs(2)).await;
        for (n, c) in clients.iter().enumerate() {
            let (mode, table_reads): (String, i64) = s
                .query_unpaged(on(*c, "SELECT table_rates, table_reads FROM replica_lb_hwlb.node"), ())
                .await
                .unwrap()
                .into_rows_result()
                .unwrap()
                .first_row()
                .unwrap();
            let a = table_rates(&s, *c, "a").await;
            let b = table_rates(&s, *c, "b").await;
            eprintln!("coordinator {n}: {mode}, {table_reads} reads planned per table; rates a {a:?}, b {b:?}");
            assert_eq!(mode, "per-table");
            assert!(
                table_reads > 500,
                "coordinator {n}: {table_reads} reads planned with their table's rates"
            );
            let cold = format!("127.0.0.{}", COLD + 1);
            let rate_a = a.get(&cold).copied().flatten();
            let rate_b = b.get(&cold).copied().flatten();
            assert!(
                matches!((rate_a, rate_b), (Some(ra), Some(rb)) if ra > 0.8 && rb < 0.5),
                "coordinator {n} sees node {COLD}'s rates a {rate_a:?}, b {rate_b:?}: warm and cold expected"
            );
        }
        assert_eq!(measured.await.unwrap(), 0, "measured reads failed");
        let mut after = Vec::new();
        print_cache_counts(&s, &clients, "after the measured reads").await;
        for c in &clients {
            after.push((executed(&s, *c, "a").await, executed(&s, *c, "b").await));
        }
        (before, after, reads_per_table)
    });

    // Each table's reads, replica by replica: exactly k per read, and node 2 gets its share of
    // a's (as warm as its peers) and few of b's (cold).
    let mut share_of_cold = Vec::new();
    for (t, idx) in [("a", 0usize), ("b", 1usize)] {
        let per_node: Vec<i64> = before
            .iter()
            .zip(&after)
            .map(|(b, a)| if idx == 0 { a.0 - b.0 } else { a.1 - b.1 })
            .collect();
        let total: i64 = per_node.iter().sum();
        eprintln!("table {t}: replica reads per node {per_node:?}");
        assert_eq!(total as f64, K * window_reads as f64, "table {t}: k replicas per read");
        share_of_cold.push(per_node[COLD] as f64 / total as f64);
    }
    let (a, b) = (share_of_cold[0], share_of_cold[1]);
    eprintln!("node {COLD}'s share of the replica reads: table a {a:.3}, table b {b:.3}");
    assert!(
        a > 0.2,
        "node {COLD} is as warm as its peers for table a, yet served {a:.3} of its reads"
    );
    assert!(
        b < 0.15 && b < a / 2.0,
        "node {COLD} is cold for table b, yet served {b:.3} of its reads (a: {a:.3})"
    );
    eprintln!("done in {:.0} s", started.elapsed().as_secs_f64());
    run(&["cluster", "down", "--dir", &d]);
    cluster.remove();
}

/// `warmup status` and `warmup wait` with the plug-in (its per-table counters): under load every
/// node is read and named with its source; node 2, just restarted cold, is not warm while
/// nobody reads it, and the wait says so at its time-out (exit 1).
fn warm_gate_with_the_plugin(d: &str) {
    common::warmup_wait_times_out_on_unread_node_2();
    let status = common::warmup_status_under_load(d, 20000, "plugin");
    eprintln!("warmup status with the plug-in after node 2's restart: {status}");
}

/// The plug-in's metrics in Cassandra's registry, read back over JMX with `nodetool sjk mx` as
/// docs/cassandra-hwlb.md shows: node 0's reads coordinated, and its per-peer count for node 2.
fn metrics_over_jmx(d: &str) {
    let value = |bean: &str| -> f64 {
        let args = ["sjk", "mx", "-mg", "-b", bean, "-f", "Value"];
        let out = replica_lb_cassandra::nodetool(std::path::Path::new(d), 0, &args).unwrap_or_else(|e| panic!("{e}"));
        out.lines()
            .rev()
            .find_map(|l| l.trim().parse::<f64>().ok())
            .unwrap_or_else(|| panic!("no number for {bean}: {out}"))
    };
    let coordinated = value("org.apache.cassandra.metrics:type=ReplicaLb,name=ReadsCoordinated");
    let first_k = value("org.apache.cassandra.metrics:type=ReplicaLb,scope=127.0.0.3_7000,name=FirstK");
    eprintln!("over JMX: node 0 coordinated {coordinated} reads, node 2 among the first k of {first_k}");
    assert!(
        coordinated > 0.0 && first_k > 0.0 && first_k <= coordinated,
        "{coordinated} {first_k}"
    );
}
