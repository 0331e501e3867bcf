//! Against a real Cassandra or ScyllaDB cluster of at least 3 nodes (ignored by default):
//!
//! ```sh
//! RLB_CASSANDRA_CONTACT=127.0.0.1:9042 cargo test --release -p replica-lb-driver --test cassandra -- --ignored
//! ```
//!
//! Creates keyspace `rlb_driver_test` (SimpleStrategy, RF=3) and a table, writes 200 rows,
//! then reads them through `c3` with prepared statements: every read must succeed and go to a
//! replica of its key, every pick must be matched by its attempt's end, and the policy must be
//! quiescent at the end. Without the variable the test says so and passes.

use replica_lb_driver::ReplicaLbPolicy;
use scylla::client::execution_profile::ExecutionProfile;
use scylla::client::session_builder::SessionBuilder;
use scylla::statement::Consistency;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real cluster: set RLB_CASSANDRA_CONTACT=HOST:PORT"]
async fn c3_reads_on_a_real_cluster() {
    let Ok(contact) = std::env::var("RLB_CASSANDRA_CONTACT") else {
        eprintln!("RLB_CASSANDRA_CONTACT is not set: nothing to test against");
        return;
    };
    let policy = ReplicaLbPolicy::builder("c3").seed(7).build().unwrap();
    let profile = ExecutionProfile::builder()
        .load_balancing_policy(policy.clone())
        .consistency(Consistency::One)
        .build();
    let s = SessionBuilder::new()
        .known_node(&contact)
        .default_execution_profile_handle(profile.into_handle())
        .build()
        .await
        .expect("a session to RLB_CASSANDRA_CONTACT");
    assert!(s.get_cluster_state().get_nodes_info().len() >= 3, "needs at least 3 nodes");
    s.query_unpaged(
        "CREATE KEYSPACE IF NOT EXISTS rlb_driver_test WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
        &[],
    )
    .await
    .unwrap();
    s.query_unpaged("CREATE TABLE IF NOT EXISTS rlb_driver_test.kv (k bigint PRIMARY KEY, v text)", &[])
        .await
        .unwrap();
    s.await_schema_agreement().await.unwrap();
    s.refresh_metadata().await.unwrap();
    let write = s.prepare("INSERT INTO rlb_driver_test.kv (k, v) VALUES (?, ?)").await.unwrap();
    for k in 0..200i64 {
        s.execute_unpaged(&write, (k, format!("value {k}"))).await.unwrap();
    }
    let before = policy.stats();
    let read = s.prepare("SELECT v FROM rlb_driver_test.kv WHERE k = ?").await.unwrap();
    let state = s.get_cluster_state();
    for k in 0..200i64 {
        let r = s.execute_unpaged(&read, (k,)).await.unwrap();
        let coordinator = r.request_coordinator().node().host_id;
        let rows = r.into_rows_result().unwrap();
        let (v,): (String,) = rows.single_row().unwrap();
        assert_eq!(v, format!("value {k}"));
        let token = read.calculate_token(&(k,)).unwrap().unwrap();
        let replicas = state.get_token_endpoints("rlb_driver_test", "kv", token);
        assert_eq!(replicas.len(), 3);
        assert!(replicas.iter().any(|(n, _)| n.host_id == coordinator), "key {k}: not a replica");
    }
    let after = policy.stats();
    assert_eq!(after.picks - before.picks, 200, "{after:?}");
    assert_eq!(after.matched - before.matched, 200, "{after:?}");
    policy.check_quiescent().unwrap();
    eprintln!("c3 on a real cluster: {after:?}");
}
