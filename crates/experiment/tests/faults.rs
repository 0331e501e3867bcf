//! Faults on a real 3-node cluster (RF=3): a 20 s SIGSTOP/SIGCONT pause of one node during a
//! QUORUM write load loses no acknowledged write and the cluster keeps answering (the only
//! failures are requests the paused node itself was coordinating); a restart after some time
//! down brings the node back with its data and an empty cache; reply delays and a slower disk
//! are set and cleared at run time. Every node process is killed when a test ends, pass or fail.

mod common;

use common::{test_config, TestCluster, SERIAL};

use replica_lb_loadgen::keys::key_bytes;
use replica_lb_node::proto::FaultsRequest;
use replica_lb_policy::{ConsistencyLevel, NodeId};
use std::time::{Duration, Instant};

const PAUSED: u32 = 2;

fn value(k: u64) -> bytes::Bytes {
    bytes::Bytes::from(format!("pause-test-value-{k}"))
}

/// One write of the load: key, coordinator, when it was sent (since the load's start), result.
struct Write {
    key: u64,
    via: u32,
    sent: Duration,
    ok: Result<(), String>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_20_s_pause_during_quorum_writes_loses_no_acknowledged_write() {
    let _serial = SERIAL.lock().await;
    let cluster = TestCluster::up("pause", 3, test_config());
    let client = cluster.client().await;
    let timeout_ms = 2000u32;
    let (pause_at, pause_for, load_for) = (Duration::from_secs(4), Duration::from_secs(20), Duration::from_secs(30));

    // The pause, from a plain thread (the launcher blocks), at `pause_at`.
    let dir = cluster.dir.clone();
    let pauser = std::thread::spawn(move || {
        std::thread::sleep(pause_at);
        let t0 = Instant::now();
        let r = replica_lb_launcher::pause_node(&dir, PAUSED, pause_for);
        (r, t0.elapsed())
    });

    // An open-loop write load at QUORUM: 100 writes/s, key k through node k % 3, each write on
    // its own task so a hung coordinator holds up nothing else.
    let start = Instant::now();
    let mut tasks = Vec::new();
    let mut k = 0u64;
    while start.elapsed() < load_for && k < 10_000 {
        let next = start + Duration::from_millis(10 * k);
        tokio::time::sleep_until(next.into()).await;
        let client = client.clone();
        let via = (k % 3) as u32;
        let sent = start.elapsed();
        tasks.push(tokio::spawn(async move {
            let ok = client
                .put(NodeId(via as u16), key_bytes(k), value(k), ConsistencyLevel::Quorum, timeout_ms)
                .await
                .map(|_| ())
                .map_err(|s| format!("{:?}: {}", s.code(), s.message()));
            Write { key: k, via, sent, ok }
        }));
        k += 1;
    }
    let mut writes = Vec::new();
    for t in tasks {
        writes.push(
            tokio::time::timeout(Duration::from_secs(30), t)
                .await
                .expect("every write ends")
                .unwrap(),
        );
    }
    let (paused, took) = pauser.join().unwrap();
    paused.expect("pause and resume");
    assert!(took >= pause_for, "the pause lasted {took:?}");

    // The cluster kept answering: every write through the two live coordinators succeeded
    // (QUORUM = 2 of 3 was always reachable); writes through the paused node failed only when
    // it could not have answered (sent during the pause, or within one time-out before it).
    let window = (
        pause_at.saturating_sub(Duration::from_millis(timeout_ms as u64 + 500)),
        pause_at + pause_for + Duration::from_secs(2),
    );
    let mut failed_in_window = 0;
    for w in &writes {
        if let Err(e) = &w.ok {
            assert_eq!(w.via, PAUSED, "write {} via live node {} failed at {:?}: {e}", w.key, w.via, w.sent);
            assert!(
                w.sent >= window.0 && w.sent <= window.1,
                "write {} via node {PAUSED} failed outside the pause ({:?}): {e}",
                w.key,
                w.sent
            );
            failed_in_window += 1;
        }
    }
    let during: Vec<&Write> = writes
        .iter()
        .filter(|w| w.sent > pause_at + Duration::from_secs(1) && w.sent < pause_at + pause_for)
        .collect();
    let ok_during = during.iter().filter(|w| w.ok.is_ok()).count();
    assert!(ok_during > 1000, "only {ok_during} writes succeeded during the pause");
    assert!(failed_in_window > 0, "writes through the paused node should have failed");

    // No acknowledged write is lost: every one reads back at QUORUM, through every coordinator,
    // once the paused node is back.
    cluster.wait_live(&[0, 1, 2], 3, Duration::from_secs(30)).await;
    let acked: Vec<&Write> = writes.iter().filter(|w| w.ok.is_ok()).collect();
    assert!(acked.len() > 2000, "too few writes acknowledged: {}", acked.len());
    for w in &acked {
        let via = NodeId((w.key % 3) as u16);
        let r = client
            .get(via, key_bytes(w.key), ConsistencyLevel::Quorum, 5000)
            .await
            .unwrap_or_else(|e| panic!("read of acknowledged key {} via {via}: {e}", w.key));
        assert!(r.found, "acknowledged key {} is missing", w.key);
        assert_eq!(r.value, value(w.key), "acknowledged key {} has the wrong value", w.key);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_after_down_time_keeps_data_and_empties_the_cache() {
    let _serial = SERIAL.lock().await;
    let mut cluster = TestCluster::up("restart-down", 3, test_config());
    let client = cluster.client().await;
    for k in 0..200u64 {
        client
            .put(NodeId((k % 3) as u16), key_bytes(k), value(k), ConsistencyLevel::All, 5000)
            .await
            .unwrap();
    }
    // Warm node 1's cache with reads at ALL.
    for k in 0..200u64 {
        client.get(NodeId(0), key_bytes(k), ConsistencyLevel::All, 5000).await.unwrap();
    }
    let addr = cluster.file.node(1).unwrap().grpc;
    let before = replica_lb_node::client::stats(addr, Duration::from_secs(2)).await.unwrap();
    assert!(before.cache_rows >= 150, "cache not warm: {}", before.cache_rows);

    let dir = cluster.dir.clone();
    let t0 = Instant::now();
    let child = tokio::task::spawn_blocking(move || {
        replica_lb_launcher::restart_node_after(&dir, 1, Duration::from_secs(2), &common::node_command(), Duration::from_secs(30))
    })
    .await
    .unwrap()
    .expect("restart");
    cluster.children.push(child);
    assert!(t0.elapsed() >= Duration::from_secs(2), "down for less than 2 s");
    cluster.file = replica_lb_launcher::ClusterFile::load(&cluster.dir).unwrap();
    let after = replica_lb_node::client::stats(addr, Duration::from_secs(2)).await.unwrap();
    assert_eq!(after.cache_rows, 0, "a restarted node starts with an empty cache");
    assert!(after.uptime_ms < before.uptime_ms + 2000);
    cluster.wait_live(&[0, 1, 2], 3, Duration::from_secs(30)).await;
    // Its data is intact: read at ONE straight through it... via a coordinator that picks
    // itself first is not guaranteed, so read at ALL (every replica must answer).
    for k in 0..200u64 {
        let r = client.get(NodeId(1), key_bytes(k), ConsistencyLevel::All, 5000).await.unwrap();
        assert_eq!(r.value, value(k));
    }
    let warm = replica_lb_node::client::stats(addr, Duration::from_secs(2)).await.unwrap();
    assert!(
        warm.cache_misses >= 150,
        "reads after the restart went to disk: {}",
        warm.cache_misses
    );

    // A reply delay and a slower disk are set and cleared at run time; bad values are refused.
    let set = |req: FaultsRequest| replica_lb_launcher::set_faults(&cluster.dir, 1, req);
    let r = set(FaultsRequest {
        reply_delay_ms: Some(30),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(r.reply_delay_ms, 30);
    let t = Instant::now();
    // Node 0 coordinates at ALL, so it waits for node 1's delayed reply.
    client.get(NodeId(0), key_bytes(7), ConsistencyLevel::All, 5000).await.unwrap();
    assert!(t.elapsed() >= Duration::from_millis(30));
    // Every message node 1 sends is delayed, its answers to clients too (as in the simulator).
    let t = Instant::now();
    client.get(NodeId(1), key_bytes(7), ConsistencyLevel::One, 5000).await.unwrap();
    assert!(t.elapsed() >= Duration::from_millis(30), "node 1's own answer was not delayed");
    let r = set(FaultsRequest {
        reply_delay_ms: Some(0),
        slow_disk: Some(true),
        slow_disk_factor: Some(3.0),
    })
    .unwrap();
    assert_eq!((r.reply_delay_ms, r.slow_disk, r.slow_disk_factor), (0, true, 3.0));
    let bad = set(FaultsRequest {
        slow_disk_factor: Some(-1.0),
        reply_delay_ms: Some(5),
        ..Default::default()
    });
    assert!(bad.is_err());
    let r = set(FaultsRequest {
        slow_disk: Some(false),
        slow_disk_factor: Some(1.0),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(
        (r.reply_delay_ms, r.slow_disk, r.slow_disk_factor),
        (0, false, 1.0),
        "a refused request changes nothing"
    );
}
