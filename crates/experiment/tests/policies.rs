//! Every registered policy runs on the real cluster through the shared policy runtime, with the
//! same contract as in the simulator: every send the runtime counts ends exactly once (on the
//! nodes, for coordinator policies; in the load generator, for client policies), client reads
//! carry the coordinator's feedback record, Prequal's probes travel over gRPC, zones reach the
//! policies, and a policy whose needs a real cluster cannot meet (`oracle`) is refused.

mod common;

use common::{test_config, TestCluster, SERIAL};
use replica_lb_loadgen::keys::key_spec;
use replica_lb_loadgen::{Arrivals, BenchOptions, ClientPolicy, LoadOptions};
use replica_lb_policy::{ConsistencyLevel, ParamTable, PolicyChoice, Side, POLICIES};
use std::time::{Duration, Instant};

const KEYS: u64 = 300;

fn bench_options(cl: ConsistencyLevel, read_fraction: f64, seed: u64) -> BenchOptions {
    BenchOptions {
        rate: 300.0,
        duration_s: 1.5,
        cl,
        keys: key_spec("uniform", KEYS, 0.0, 0.0).unwrap(),
        read_fraction,
        value_bytes: 32,
        timeout_ms: 2000,
        max_in_flight: 10_000,
        arrivals: Arrivals::Poisson,
        seed,
        verify: true,
        zone: Some(0),
    }
}

fn load(rt: &replica_lb_loadgen::ClientRuntime, client: &replica_lb_node::client::ClusterClient) {
    let opts = LoadOptions {
        keys: KEYS,
        value_bytes: 32,
        cl: ConsistencyLevel::All,
        concurrency: 16,
        timeout_ms: 5000,
    };
    let out = rt.block_on(replica_lb_loadgen::load(client, &opts));
    assert_eq!(out.failed, 0, "load failed: {:?}", out.first_error);
}

#[test]
fn every_client_policy_keeps_the_contract_through_the_load_generator() {
    let rt = replica_lb_loadgen::client_runtime(2).unwrap();
    let _serial = rt.block_on(SERIAL.lock());
    let mut base = test_config();
    base.cache_rows = 100;
    let cluster = TestCluster::up_in_zones("client-policies", 3, 3, base);
    let client = rt.block_on(cluster.client());
    assert_eq!(
        client.zones().iter().map(|z| z.1).collect::<Vec<_>>(),
        [0, 1, 2],
        "the nodes' zones reach the client"
    );
    load(&rt, &client);
    let oracle = PolicyChoice::new("oracle", Side::Client, ParamTable::new()).unwrap();
    let e = ClientPolicy::new(&oracle, 1).err().unwrap();
    assert!(e.contains("'oracle'") && e.contains("'truth'"), "{e}");
    for info in POLICIES.iter().filter(|p| p.side.serves(Side::Client) && p.name != "oracle") {
        let choice = PolicyChoice::new(info.name, Side::Client, ParamTable::new()).unwrap();
        let mut policy = ClientPolicy::new(&choice, 7).unwrap();
        let opts = bench_options(ConsistencyLevel::One, 1.0, 3);
        let report = replica_lb_loadgen::bench(rt.handle(), &client, &mut policy, &opts, &mut |_| {}).unwrap();
        let name = info.name;
        assert!(report.completed > 300, "{name}: {report:?}");
        assert_eq!((report.errors, report.timeouts), (0, 0), "{name}: {report:?}");
        assert_eq!(report.client_policy, name);
        policy.check_quiescent().unwrap_or_else(|e| panic!("{e}"));
        let s = policy.stats();
        assert_eq!(
            (s.sends, s.replies, s.failures),
            (report.completed, report.completed, 0),
            "{name}: {s:?}"
        );
        // Every read reply carries the coordinator's feedback record.
        assert_eq!(report.feedback_replies, report.completed, "{name}");
        if name == "prequal" {
            assert!(report.probes_sent > 300, "{name}: {report:?}");
            assert!(s.probe_replies > report.probes_sent / 2, "{name}: probes answered: {s:?}");
        } else {
            assert_eq!(report.probes_sent, 0, "{name}");
        }
    }
}

#[test]
fn every_coordinator_policy_ends_every_send_exactly_once_on_the_nodes() {
    let rt = replica_lb_loadgen::client_runtime(2).unwrap();
    let _serial = rt.block_on(SERIAL.lock());
    let mut base = test_config();
    base.policy.name = "oracle".into();
    let e = base.validate().err().unwrap().to_string();
    assert!(e.contains("'oracle'") && e.contains("'truth'") && e.contains("nodes"), "{e}");
    for info in POLICIES.iter().filter(|p| p.side.serves(Side::Coordinator) && p.name != "oracle") {
        let name = info.name;
        let mut base = test_config();
        base.policy.name = name.into();
        base.cache_rows = 100;
        let cluster = TestCluster::up(&format!("coordinator-{name}"), 3, base);
        let client = rt.block_on(cluster.client());
        load(&rt, &client);
        let mut policy = ClientPolicy::new(&replica_lb_loadgen::token_aware_random().unwrap(), 5).unwrap();
        let opts = bench_options(ConsistencyLevel::Quorum, 0.9, 4);
        let report = replica_lb_loadgen::bench(rt.handle(), &client, &mut policy, &opts, &mut |_| {}).unwrap();
        assert!(report.completed > 300, "{name}: {report:?}");
        assert_eq!((report.errors, report.timeouts), (0, 0), "{name}: {report:?}");
        // Once the last background write is acknowledged, every node's ledger is even.
        let deadline = Instant::now() + Duration::from_secs(10);
        for n in &cluster.file.nodes {
            loop {
                let s = rt.block_on(replica_lb_node::client::stats(n.grpc, Duration::from_secs(2))).unwrap();
                assert_eq!(s.policy, name);
                assert_eq!(s.policy_violations, 0, "{name}: node {}", n.id);
                if s.policy_sends == s.policy_ended {
                    assert!(s.policy_sends >= s.coordinator_reads, "{name}: node {}: {s:?}", n.id);
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "{name}: node {}: {} sends, {} ended",
                    n.id,
                    s.policy_sends,
                    s.policy_ended
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}
