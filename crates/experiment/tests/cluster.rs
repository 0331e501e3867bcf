//! A real 3-node cluster (RF=3) on loopback: reads back at QUORUM, survives kill -9 during
//! writes, rejects malformed and oversized requests, and ends unreachable reads with a clear
//! error within their time-out. Every node process is killed when a test ends, pass or fail.

mod common;

use common::{http_get, raw_call, test_config, TestCluster, SERIAL};
use replica_lb_launcher::Signal;
use replica_lb_loadgen::keys::{key_bytes, value_for};
use replica_lb_loadgen::LoadOptions;
use replica_lb_node::proto::{self, replica_lb_client::ReplicaLbClient};
use replica_lb_policy::{ConsistencyLevel, NodeId};
use std::time::{Duration, Instant};

const VALUE_BYTES: usize = 64;

async fn lock() -> tokio::sync::MutexGuard<'static, ()> {
    SERIAL.lock().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_then_read_everything_back_at_quorum() {
    let _serial = lock().await;
    for policy in ["naive", "hwlb"] {
        let mut base = test_config();
        base.policy.name = policy.into();
        base.cache_rows = 500; // smaller than the key set: reads hit and miss
        let cluster = TestCluster::up(&format!("readback-{policy}"), 3, base);
        let client = cluster.client().await;
        let keys = 2000;
        let opts = LoadOptions {
            keys,
            value_bytes: VALUE_BYTES,
            cl: ConsistencyLevel::Quorum,
            concurrency: 32,
            timeout_ms: 5000,
        };
        let out = tokio::time::timeout(Duration::from_secs(60), replica_lb_loadgen::load(&client, &opts))
            .await
            .expect("load finishes");
        assert_eq!(out.failed, 0, "load failed: {:?}", out.first_error);
        assert_eq!(out.written, keys);
        for i in 0..keys {
            let key = key_bytes(i);
            let via = client.replicas(&key).0.as_slice()[(i % 3) as usize];
            let r = client
                .get(via, key, ConsistencyLevel::Quorum, 5000)
                .await
                .unwrap_or_else(|e| panic!("{policy}: get {i} via {via}: {e}"));
            assert!(r.found, "{policy}: key {i} not found");
            assert_eq!(r.value, value_for(i, VALUE_BYTES), "{policy}: key {i} has the wrong value");
            assert!(r.replicas_answered >= 2);
        }
        let absent = client
            .get(NodeId(0), key_bytes(keys + 5), ConsistencyLevel::All, 5000)
            .await
            .unwrap();
        assert!(!absent.found);
        // Every node took part, and the counters add up.
        let mut reads = 0;
        for n in &cluster.file.nodes {
            let s = replica_lb_node::client::stats(n.grpc, Duration::from_secs(2)).await.unwrap();
            assert_eq!(s.policy, policy);
            assert_eq!(s.cache_hits + s.cache_misses, s.reads);
            assert!(s.coordinator_reads > 0);
            reads += s.reads;
        }
        assert!(reads >= 2 * keys, "at least CL=2 replica reads per key: {reads}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_write_survives_kill_9_and_restart() {
    let _serial = lock().await;
    let mut cluster = TestCluster::up("kill9", 3, test_config());
    let client = cluster.client().await;
    // A write load at QUORUM, each key through a random replica as coordinator.
    let writer = {
        let client = client.clone();
        tokio::spawn(async move {
            let mut acked = Vec::new();
            let start = Instant::now();
            let mut i = 0u64;
            while start.elapsed() < Duration::from_secs(4) && i < 200_000 {
                let batch: Vec<_> = (i..i + 16)
                    .map(|k| {
                        let client = client.clone();
                        tokio::spawn(async move {
                            let key = key_bytes(k);
                            let via = client.replicas(&key).0.as_slice()[(k % 3) as usize];
                            let r = client
                                .put(via, key, value_for(k, VALUE_BYTES), ConsistencyLevel::Quorum, 2000)
                                .await;
                            (k, r.is_ok())
                        })
                    })
                    .collect();
                for t in batch {
                    let (k, ok) = t.await.unwrap();
                    if ok {
                        acked.push(k);
                    }
                }
                i += 16;
            }
            (acked, i)
        })
    };
    tokio::time::sleep(Duration::from_millis(1500)).await;
    cluster.kill9(2);
    let (acked, attempted) = tokio::time::timeout(Duration::from_secs(30), writer)
        .await
        .expect("writer ends")
        .unwrap();
    assert!(acked.len() > 100, "too few writes acknowledged: {} of {attempted}", acked.len());
    cluster.restart(2);
    cluster.wait_live(&[0, 1, 2], 3, Duration::from_secs(30)).await;
    let mut missing = Vec::new();
    for &k in &acked {
        let key = key_bytes(k);
        let via = NodeId((k % 3) as u16);
        match client.get(via, key, ConsistencyLevel::Quorum, 5000).await {
            Ok(r) if r.found && r.value == value_for(k, VALUE_BYTES) => {}
            other => missing.push((k, format!("{other:?}"))),
        }
    }
    assert!(
        missing.is_empty(),
        "{} of {} acknowledged writes lost, e.g. {:?}",
        missing.len(),
        acked.len(),
        &missing[..missing.len().min(3)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_and_oversized_requests_get_an_error_and_the_node_keeps_serving() {
    let _serial = lock().await;
    let mut base = test_config();
    base.max_value_bytes = 1024;
    base.max_message_bytes = 4096;
    let cluster = TestCluster::up("malformed", 3, base);
    let addr = cluster.file.node(0).unwrap().grpc;
    let mut c = ReplicaLbClient::new(
        tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await
            .unwrap(),
    );
    let put = |key: &[u8], value: Vec<u8>, consistency: i32| proto::PutRequest {
        key: key.to_vec().into(),
        value: value.into(),
        consistency,
        timeout_ms: 2000,
    };
    // Garbage bytes instead of a protobuf message.
    for (path, body) in [
        ("/replica_lb.v1.ReplicaLb/Get", vec![0xff, 0xff, 0xff, 0xff, 0xff]),
        ("/replica_lb.v1.ReplicaLb/Put", vec![0x0a, 0x7f]),
        ("/replica_lb.v1.Internode/ReplicaRead", vec![0x12]),
        ("/replica_lb.v1.ReplicaLb/NoSuchMethod", vec![]),
    ] {
        let e = raw_call(addr, path, body).await.expect_err("a malformed request must fail");
        assert_ne!(e.code(), tonic::Code::Ok, "{path}");
    }
    // Oversized message (above max_message_bytes) and oversized value (above max_value_bytes).
    let e = c.put(put(b"k", vec![7; 8192], 3)).await.expect_err("oversized message");
    assert!(
        matches!(
            e.code(),
            tonic::Code::OutOfRange | tonic::Code::ResourceExhausted | tonic::Code::InvalidArgument
        ),
        "{e:?}"
    );
    let e = c.put(put(b"k", vec![7; 2048], 3)).await.expect_err("oversized value");
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    assert!(e.message().contains("1024"), "{}", e.message());
    // Bad fields: empty key, unknown consistency level, absurd time-out.
    let e = c.put(put(b"", vec![1], 3)).await.expect_err("empty key");
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    let e = c.put(put(b"k", vec![1], 99)).await.expect_err("bad consistency");
    assert!(e.message().contains("99"), "{}", e.message());
    // Multi-key reads: 1 to 1000 keys, each checked.
    let multi = |keys: Vec<&[u8]>| proto::MultiGetRequest {
        keys: keys.into_iter().map(|k| k.to_vec().into()).collect(),
        consistency: 1,
        timeout_ms: 2000,
    };
    let e = c.multi_get(multi(vec![])).await.expect_err("no keys");
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    assert!(e.message().contains("1 to 1000"), "{}", e.message());
    let e = c.multi_get(multi(vec![b"k"; 1001])).await.expect_err("too many keys");
    assert!(e.message().contains("1001 keys"), "{}", e.message());
    let e = c.multi_get(multi(vec![b"k", b""])).await.expect_err("an empty key");
    assert!(e.message().starts_with("keys[1]: key is empty"), "{}", e.message());
    let e = c
        .get(proto::GetRequest {
            key: b"k".to_vec().into(),
            consistency: 1,
            timeout_ms: u32::MAX,
        })
        .await
        .expect_err("bad time-out");
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    // Still serving.
    c.put(put(b"k", b"fine".to_vec(), 3))
        .await
        .expect("a good put works after bad requests");
    let r = c
        .get(proto::GetRequest {
            key: b"k".to_vec().into(),
            consistency: 3,
            timeout_ms: 2000,
        })
        .await
        .expect("a good get works")
        .into_inner();
    assert_eq!(&r.value[..], b"fine");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_that_cannot_reach_cl_replicas_fails_clearly_within_its_timeout() {
    let _serial = lock().await;
    let cluster = TestCluster::up("unreachable", 3, test_config());
    let client = cluster.client().await;
    client
        .put(NodeId(0), key_bytes(1), value_for(1, 8), ConsistencyLevel::All, 2000)
        .await
        .expect("put at ALL");
    // Pause two nodes: before the failure detector notices, reads wait for them and time out.
    cluster.signal(1, Signal::Stop);
    cluster.signal(2, Signal::Stop);
    let timeout_ms = 800;
    let start = Instant::now();
    let e = client
        .get(NodeId(0), key_bytes(1), ConsistencyLevel::Quorum, timeout_ms)
        .await
        .expect_err("QUORUM with 1 of 3 replicas");
    let took = start.elapsed();
    assert!(took < Duration::from_millis(timeout_ms as u64 + 1500), "took {took:?}");
    assert!(
        matches!(e.code(), tonic::Code::DeadlineExceeded | tonic::Code::Unavailable),
        "{e:?}"
    );
    assert!(
        e.message().contains("of 2") || e.message().contains("needs 2"),
        "unclear error: {}",
        e.message()
    );
    // CL ONE still works through the live node.
    let r = client
        .get(NodeId(0), key_bytes(1), ConsistencyLevel::One, 2000)
        .await
        .expect("ONE works");
    assert_eq!(r.value, value_for(1, 8));
    // Once gossip marks them down, the error is immediate and says how many are live.
    cluster.wait_live(&[0], 1, Duration::from_secs(30)).await;
    let start = Instant::now();
    let e = client
        .get(NodeId(0), key_bytes(1), ConsistencyLevel::Quorum, 5000)
        .await
        .expect_err("still unavailable");
    assert!(start.elapsed() < Duration::from_secs(1));
    assert_eq!(e.code(), tonic::Code::Unavailable);
    assert!(e.message().contains("only 1 of"), "{}", e.message());
    // Resume: the cluster serves QUORUM again.
    cluster.signal(1, Signal::Cont);
    cluster.signal(2, Signal::Cont);
    cluster.wait_live(&[0, 1, 2], 3, Duration::from_secs(30)).await;
    let r = client
        .get(NodeId(0), key_bytes(1), ConsistencyLevel::Quorum, 2000)
        .await
        .expect("QUORUM after resume");
    assert_eq!(r.value, value_for(1, 8));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hit_rates_spread_by_gossip_and_metrics_are_served() {
    let _serial = lock().await;
    let mut base = test_config();
    base.hit_rate_tick_ms = 200;
    base.hit_rate_window_ms = 1000;
    let cluster = TestCluster::up("gossip", 3, base);
    let client = cluster.client().await;
    for k in 0..100 {
        client
            .put(NodeId(0), key_bytes(k), value_for(k, 8), ConsistencyLevel::All, 2000)
            .await
            .unwrap();
    }
    // Reads at ONE through each replica stay local (naive): no reply carries a peer's rate,
    // so whatever a node knows of its peers' rates came by gossip.
    let start = Instant::now();
    let mut peers_known = false;
    while start.elapsed() < Duration::from_secs(15) && !peers_known {
        for k in 0..100u64 {
            let key = key_bytes(k);
            for &via in client.replicas(&key).0.as_slice() {
                client.get(via, key.clone(), ConsistencyLevel::One, 2000).await.unwrap();
            }
        }
        let s = replica_lb_node::client::stats(cluster.file.node(0).unwrap().grpc, Duration::from_secs(2))
            .await
            .unwrap();
        assert_eq!(s.remote_reads, 0, "reads at ONE stay local");
        peers_known = s.hit_rate > 0.5 && s.members.iter().filter(|m| m.id != 0).all(|m| m.hit_rate > 0.5);
    }
    assert!(peers_known, "peers' hit rates did not arrive by gossip within 15 s");
    // The Prometheus endpoint.
    let m = cluster.file.node(1).unwrap().metrics;
    let page = http_get(m, "/metrics").await;
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    for name in [
        "reads_total",
        "cache_hits_total",
        "cache_misses_total",
        "hit_ratio",
        "local_reads_total",
        "remote_reads_total",
        "replica_reads_total",
        "disk_queue",
        "requests_in_flight",
    ] {
        assert!(page.contains(&format!("replica_lb_{name}{{node=\"1\"}}")), "{name} missing");
    }
    assert!(http_get(m, "/other").await.starts_with("HTTP/1.1 404"));
}
