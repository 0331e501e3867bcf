//! The policy inside a real scylla driver session, against a fake CQL cluster on loopback
//! (tests/support/fake_cql.rs): a real `ClusterState`, connection pools, and the driver's own
//! execution with retries, speculative execution and client-side time-outs.

mod support;

use replica_lb_driver::{ReplicaLbPolicy, DRIVER};
use replica_lb_policy::{Side, POLICIES};
use scylla::client::execution_profile::{ExecutionProfile, ExecutionProfileBuilder};
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::policies::speculative_execution::SimpleSpeculativeExecutionPolicy;
use scylla::statement::prepared::PreparedStatement;
use std::sync::Arc;
use std::time::Duration;
use support::fake_cql::{Behaviour, FakeCluster};

async fn session(
    cluster: &FakeCluster,
    policy: Arc<ReplicaLbPolicy>,
    profile: impl FnOnce(ExecutionProfileBuilder) -> ExecutionProfileBuilder,
) -> Session {
    let profile = profile(ExecutionProfile::builder().load_balancing_policy(policy)).build();
    SessionBuilder::new()
        .known_node_addr(cluster.contact())
        .fetch_full_schema_metadata(false)
        .default_execution_profile_handle(profile.into_handle())
        .build()
        .await
        .expect("session to the fake cluster")
}

/// Reads keys `0..n`, checking each went to one of the key's replicas.
async fn read_from_replicas(s: &Session, read: &PreparedStatement, n: i64) {
    let state = s.get_cluster_state();
    for k in 0..n {
        let r = s.execute_unpaged(read, (k,)).await.unwrap();
        let token = read.calculate_token(&(k,)).unwrap().expect("a prepared read has a token");
        let replicas = state.get_token_endpoints("ks", "t", token);
        assert_eq!(replicas.len(), 3);
        let coordinator = r.request_coordinator().node().host_id;
        assert!(replicas.iter().any(|(n, _)| n.host_id == coordinator), "key {k}: not a replica");
    }
}

/// Every client-side policy whose needs the driver meets runs in the driver: token-aware,
/// every read served, every pick matched, the runtime quiescent at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_policy_the_driver_can_serve_reads_from_replicas() {
    let cluster = FakeCluster::start(6, 3, |_| "dc1".into()).await;
    let mut served = 0;
    for info in POLICIES.iter().filter(|p| p.side.serves(Side::Client)) {
        let built = ReplicaLbPolicy::builder(info.name).seed(3).build();
        if info.needs.check(DRIVER.provides, info.name, DRIVER.name).is_err() {
            let e = built.unwrap_err().to_string();
            assert!(e.contains(info.name) && e.contains("scylla Rust driver"), "{e}");
            continue;
        }
        let policy = built.unwrap_or_else(|e| panic!("{}: {e}", info.name));
        let s = session(&cluster, policy.clone(), |p| p).await;
        let read = s.prepare("SELECT v FROM ks.t WHERE k = ?").await.unwrap();
        read_from_replicas(&s, &read, 200).await;
        let st = policy.stats();
        assert_eq!(
            (st.picks, st.matched, st.untracked, st.runtime.replies),
            (200, 200, 0, 200),
            "{}: {st:?}",
            info.name
        );
        policy.check_quiescent().unwrap();
        served += 1;
    }
    // random, round-robin, least-outstanding, p2c, peak-ewma, dynamic-snitch, c3,
    // datastax-default, weighted-least-loaded, latency-aware, unified, hwlb-client (not
    // prequal, not oracle).
    assert_eq!(served, 12);
}

/// An unprepared statement has no token: the policy chooses among every node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokenless_requests_spread_over_all_nodes() {
    let cluster = FakeCluster::start(4, 3, |_| "dc1".into()).await;
    let policy = ReplicaLbPolicy::builder("round-robin").build().unwrap();
    let s = session(&cluster, policy.clone(), |p| p).await;
    let before = cluster.served();
    for _ in 0..40 {
        s.query_unpaged("SELECT v FROM ks.t", &[]).await.unwrap();
    }
    let after = cluster.served();
    let per: Vec<u64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
    assert_eq!(per, [10, 10, 10, 10], "round-robin over all nodes");
    assert_eq!(policy.stats().picks, 40);
    policy.check_quiescent().unwrap();
}

/// With a local datacenter, requests stay in it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_datacenter_is_preferred() {
    let cluster = FakeCluster::start(6, 3, |i| if i < 3 { "dc1".into() } else { "dc2".into() }).await;
    let policy = ReplicaLbPolicy::builder("weighted-least-loaded")
        .local_datacenter("dc2")
        .local_rack("r1")
        .build()
        .unwrap();
    let s = session(&cluster, policy.clone(), |p| p).await;
    let read = s.prepare("SELECT v FROM ks.t WHERE k = ?").await.unwrap();
    for k in 0..100i64 {
        let r = s.execute_unpaged(&read, (k,)).await.unwrap();
        let dc = r.request_coordinator().node().datacenter.clone();
        assert_eq!(dc.as_deref(), Some("dc2"));
    }
    policy.check_quiescent().unwrap();
}

/// Picks whose end the driver never reports (client-side time-outs, speculative attempts that
/// lost) expire after the TTL: the in-flight counts come back to zero.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaked_picks_expire_and_counts_return_to_zero() {
    let cluster = FakeCluster::start(3, 3, |_| "dc1".into()).await;
    let ttl = Duration::from_millis(1500);
    let host = |i: usize| uuid::Uuid::from_u128(cluster.nodes[i].host_id);
    for speculative in [false, true] {
        // round-robin keeps choosing the bad node, so its picks leak again and again.
        let policy = ReplicaLbPolicy::builder("round-robin").ticket_ttl(ttl).build().unwrap();
        let s = session(&cluster, policy.clone(), |p| {
            let p = p.request_timeout(Some(Duration::from_millis(100)));
            if !speculative {
                return p;
            }
            p.speculative_execution_policy(Some(Arc::new(SimpleSpeculativeExecutionPolicy {
                max_retry_count: 1,
                retry_interval: Duration::from_millis(20),
            })))
        })
        .await;
        let mut read = s.prepare("SELECT v FROM ks.t WHERE k = ?").await.unwrap();
        read.set_is_idempotent(true);
        // Without speculation node 0 never answers: its picks time out on the client. With
        // it node 0 answers after 60 ms: the speculative attempt wins and node 0's is dropped.
        cluster.set(0, if speculative { Behaviour::Delay(60) } else { Behaviour::Hang });
        let (mut ok, mut failed) = (0, 0);
        for k in 0..30i64 {
            match s.execute_unpaged(&read, (k,)).await {
                Ok(_) => ok += 1,
                Err(_) => failed += 1,
            }
        }
        let st = policy.stats();
        let leaked = policy.in_flight(host(0));
        assert!(leaked >= 3, "speculative={speculative}: picks of node 0 leaked: {leaked}, {st:?}");
        assert_eq!(policy.in_flight(host(1)) + policy.in_flight(host(2)), 0, "{st:?}");
        if speculative {
            assert!(ok == 30 && st.untracked >= 3, "speculative attempts end untracked: {ok} ok, {st:?}");
        } else {
            assert!(failed >= 3 && ok >= 15, "{ok} ok, {failed} timed out");
        }
        // After the TTL nothing counts as in flight any more.
        tokio::time::sleep(ttl + Duration::from_millis(100)).await;
        policy.check_quiescent().unwrap();
        let st = policy.stats();
        assert_eq!((policy.in_flight(host(0)), st.expired), (0, leaked as u64), "{st:?}");
        assert_eq!(st.runtime.sends, st.runtime.replies + st.runtime.failures, "{st:?}");
        assert_eq!(st.runtime.violations, 0);
        cluster.set(0, Behaviour::Answer);
    }
}

/// A node that fails requests: failures end their picks, the driver retries elsewhere, and the
/// counts stay balanced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_end_their_picks() {
    let cluster = FakeCluster::start(3, 3, |_| "dc1".into()).await;
    let policy = ReplicaLbPolicy::builder("datastax-default").seed(5).build().unwrap();
    let s = session(&cluster, policy.clone(), |p| p).await;
    let mut read = s.prepare("SELECT v FROM ks.t WHERE k = ?").await.unwrap();
    read.set_is_idempotent(true);
    cluster.set(2, Behaviour::Fail);
    for k in 0..100i64 {
        let _ = s.execute_unpaged(&read, (k,)).await;
    }
    let st = policy.stats();
    assert!(st.runtime.failures > 0, "{st:?}");
    assert_eq!(st.picks, 100);
    policy.check_quiescent().unwrap();
}

/// A SimpleStrategy keyspace's replicas are read from the ring (no shard computed per
/// replica): every pick lands on one of the driver's own replicas of the token, in the local
/// datacenter when one is set, and over many picks on each of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simple_strategy_replicas_are_the_drivers() {
    use std::collections::BTreeSet;
    for rf in [1, 2, 3, 5] {
        // Two datacenters, alternating: the filter by datacenter keeps a part of the replicas.
        let cluster = FakeCluster::start(6, rf, |i| format!("dc{}", 1 + i % 2)).await;
        for local in [None, Some("dc1"), Some("dc2")] {
            let mut builder = ReplicaLbPolicy::builder("random").seed(7);
            if let Some(dc) = local {
                builder = builder.local_datacenter(dc);
            }
            let policy = builder.build().unwrap();
            let s = session(&cluster, policy.clone(), |p| p).await;
            let state = s.get_cluster_state();
            let ks = state.get_keyspace("ks").expect("the fake keyspace");
            for info in support::fake_cql::spread_routing_infos(64) {
                let (token, table) = (info.token.unwrap(), info.table.unwrap());
                let expected: BTreeSet<_> = state
                    .replica_locator()
                    .replicas_for_token(token, &ks.strategy, local, table)
                    .into_iter()
                    .map(|(n, shard)| (n.host_id, shard))
                    .collect();
                let mut seen = BTreeSet::new();
                for _ in 0..100 {
                    let (node, shard) =
                        scylla::policies::load_balancing::LoadBalancingPolicy::pick(policy.as_ref(), &info, &state).expect("a live node");
                    if !expected.is_empty() {
                        seen.insert((node.host_id, shard.expect("a replica's shard")));
                    }
                    scylla::policies::load_balancing::LoadBalancingPolicy::on_request_success(
                        policy.as_ref(),
                        &info,
                        Duration::from_micros(5),
                        node,
                    );
                }
                assert_eq!(seen, expected, "rf {rf}, local {local:?}, token {token:?}");
            }
            policy.check_quiescent().unwrap();
        }
    }
}
