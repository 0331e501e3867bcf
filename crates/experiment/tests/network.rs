//! Bytes on the wire and multi-key requests on a real 3-node cluster: every node counts the
//! gRPC messages it sends and receives (client and internode, each message once), Stats and
//! Prometheus show the counters, an experiment's per-second series carries them, and `bench
//! --multi` completes every request in both modes with the fourth seed's effect: one `IN`
//! request for K keys costs more internode bytes than K token-aware single reads. Every node
//! process is killed when a test ends, pass or fail.
//!
//! The clusters for the two modes have RF = 2: with RF equal to the number of nodes every node
//! holds every key, so an `IN` request's coordinator would be a replica of each of its keys and
//! both modes would cost the same; a real cluster has more nodes than replicas.

mod common;

use common::{http_get, node_command, raw_call, temp_dir, test_config, TestCluster, SERIAL};
use replica_lb_experiment::{PolicyRun, RealPlan, RunOptions};
use replica_lb_launcher::Signal;
use replica_lb_loadgen::keys::key_spec;
use replica_lb_loadgen::report::{BenchNetwork, BenchReport};
use replica_lb_loadgen::{Arrivals, BenchOptions, ClientPolicy, LoadOptions, MultiMode, MultiOptions};
use replica_lb_node::proto::StatsResponse;
use replica_lb_policy::{ConsistencyLevel, ParamTable, PolicyChoice, Side};
use std::time::{Duration, Instant};

const KEYS: u64 = 400;
const VALUE_BYTES: usize = 200;
const MULTI: usize = 20;

/// The cluster's byte counters, summed over its nodes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Bytes {
    client_in: u64,
    client_out: u64,
    internode_in: u64,
    internode_out: u64,
    multi_gets: u64,
}

impl Bytes {
    fn of(nodes: &[StatsResponse]) -> Bytes {
        let mut b = Bytes::default();
        for s in nodes {
            b.client_in += s.client_received_bytes;
            b.client_out += s.client_sent_bytes;
            b.internode_in += s.internode_received_bytes;
            b.internode_out += s.internode_sent_bytes;
            b.multi_gets += s.coordinator_multi_gets;
        }
        b
    }

    fn since(self, before: Bytes) -> Bytes {
        Bytes {
            client_in: self.client_in - before.client_in,
            client_out: self.client_out - before.client_out,
            internode_in: self.internode_in - before.internode_in,
            internode_out: self.internode_out - before.internode_out,
            multi_gets: self.multi_gets - before.multi_gets,
        }
    }

    /// As bench reports it.
    fn network(self) -> BenchNetwork {
        BenchNetwork {
            client_bytes: self.client_in + self.client_out,
            internode_bytes: self.internode_out,
        }
    }
}

fn stats(rt: &replica_lb_loadgen::ClientRuntime, cluster: &TestCluster) -> Vec<StatsResponse> {
    cluster
        .file
        .nodes
        .iter()
        .map(|n| rt.block_on(replica_lb_node::client::stats(n.grpc, Duration::from_secs(2))).unwrap())
        .collect()
}

fn bytes(rt: &replica_lb_loadgen::ClientRuntime, cluster: &TestCluster) -> Bytes {
    Bytes::of(&stats(rt, cluster))
}

fn bench_options(cl: ConsistencyLevel, timeout_ms: u32) -> BenchOptions {
    BenchOptions {
        rate: 60.0,
        duration_s: 2.0,
        cl,
        keys: key_spec("uniform", KEYS, 0.0, 0.0).unwrap(),
        read_fraction: 1.0,
        value_bytes: VALUE_BYTES,
        timeout_ms,
        max_in_flight: 10_000,
        arrivals: Arrivals::Poisson,
        seed: 5,
        verify: true,
        zone: None,
    }
}

/// `bench --multi 20 --multi-mode MODE` at `cl`; the client policy's ledger must be even after.
fn bench_multi(
    rt: &replica_lb_loadgen::ClientRuntime,
    cluster: &TestCluster,
    mode: MultiMode,
    cl: ConsistencyLevel,
    timeout_ms: u32,
) -> BenchReport {
    let client = rt.block_on(cluster.client());
    let mut policy = ClientPolicy::new(&replica_lb_loadgen::token_aware_random().unwrap(), 9).unwrap();
    let multi = MultiOptions { keys: MULTI, mode };
    let report = replica_lb_loadgen::bench_multi(
        rt.handle(),
        &client,
        &mut policy,
        &bench_options(cl, timeout_ms),
        &multi,
        &mut |_| {},
    )
    .unwrap();
    policy.check_quiescent().unwrap_or_else(|e| panic!("{e}"));
    report
}

fn load(rt: &replica_lb_loadgen::ClientRuntime, cluster: &TestCluster, keys: u64) {
    let client = rt.block_on(cluster.client());
    let opts = LoadOptions {
        keys,
        value_bytes: VALUE_BYTES,
        cl: ConsistencyLevel::All,
        concurrency: 16,
        timeout_ms: 5000,
    };
    let out = rt.block_on(replica_lb_loadgen::load(&client, &opts));
    assert_eq!(out.failed, 0, "load failed: {:?}", out.first_error);
}

/// A 3-node cluster with RF = 2.
fn rf2_cluster(name: &str) -> TestCluster {
    let mut base = test_config();
    base.replication_factor = 2;
    base.cache_rows = 1000;
    TestCluster::up(name, 3, base)
}

/// The value of a Prometheus sample line `NAME{node="ID"} VALUE`.
fn sample(page: &str, name: &str, node: u32) -> u64 {
    let prefix = format!("replica_lb_{name}{{node=\"{node}\"}} ");
    let line = page
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("{name} missing"));
    line[prefix.len()..].parse::<f64>().unwrap() as u64
}

fn check_multi_report(r: &BenchReport, mode: &str) {
    assert!(r.requests > 60, "{mode}: {r:?}");
    assert_eq!((r.completed, r.errors, r.timeouts), (r.requests, 0, 0), "{mode}: {r:?}");
    let m = r.multi.as_ref().expect("the report's multi");
    assert_eq!((m.requests, m.completed), (r.requests, r.completed), "{mode}");
    assert_eq!((r.multi_mode, r.multi_keys), (Some(mode), Some(MULTI)));
    assert!(m.latency_ms.p50 > 0.0 && m.latency_ms.p99 >= m.latency_ms.p50, "{mode}: {m:?}");
    assert_eq!(m.latency_ms.p99, r.latency_ms.p99, "every request is a multi-key request");
}

#[test]
fn bytes_are_counted_exactly_and_in_requests_cost_more_internode_bytes_than_parallel_reads() {
    let rt = replica_lb_loadgen::client_runtime(2).unwrap();
    let _serial = rt.block_on(SERIAL.lock());
    let cluster = rf2_cluster("bytes");
    let client = rt.block_on(cluster.client());

    // Writes: every value crosses from the client to its coordinator, and to the other replica.
    let start = bytes(&rt, &cluster);
    load(&rt, &cluster, KEYS);
    let loaded = bytes(&rt, &cluster).since(start);
    let written = KEYS * VALUE_BYTES as u64;
    assert!(loaded.client_in >= written, "{loaded:?}");
    assert!(loaded.internode_out >= written, "{loaded:?}");
    // At CL=ALL every internode call has its reply before the client's: each byte was counted
    // once sent and once received.
    assert_eq!(loaded.internode_in, loaded.internode_out, "{loaded:?}");
    assert_eq!(loaded.multi_gets, 0);

    // One Get, encoded by hand, through a replica of its key at CL=ONE (read locally): the node
    // counts exactly the bytes on the wire, gRPC's 5-byte header included, and no internode.
    let key = 7u64;
    let via = client.replicas(key.to_string().as_bytes()).0.as_slice()[0];
    let node = cluster.file.node(via.0 as u32).unwrap();
    // GetRequest { key: "7" (field 1), consistency: ONE (field 2), timeout_ms: 2000 (field 3) }.
    let request = vec![0x0a, 0x01, b'7', 0x10, 0x01, 0x18, 0xd0, 0x0f];
    let before = Bytes::of(&[rt
        .block_on(replica_lb_node::client::stats(node.grpc, Duration::from_secs(2)))
        .unwrap()]);
    let reply = rt
        .block_on(raw_call(node.grpc, "/replica_lb.v1.ReplicaLb/Get", request.clone()))
        .unwrap();
    let after = Bytes::of(&[rt
        .block_on(replica_lb_node::client::stats(node.grpc, Duration::from_secs(2)))
        .unwrap()]);
    let d = after.since(before);
    assert!(reply.len() > VALUE_BYTES, "the reply carries the value: {} bytes", reply.len());
    assert_eq!(
        (d.client_in, d.client_out, d.internode_in, d.internode_out),
        (request.len() as u64 + 5, reply.len() as u64 + 5, 0, 0),
        "one Get at CL=ONE on a replica"
    );

    // bench --multi 20 in both modes, at ONE and at QUORUM, the same seed (the same keys).
    let mut runs = Vec::new();
    for cl in [ConsistencyLevel::One, ConsistencyLevel::Quorum] {
        for (mode, name) in [(MultiMode::Parallel, "parallel"), (MultiMode::In, "in")] {
            let before = bytes(&rt, &cluster);
            let r = bench_multi(&rt, &cluster, mode, cl, 2000);
            let d = bytes(&rt, &cluster).since(before);
            check_multi_report(&r, name);
            // Bench's own figure is the nodes' counters over the run: nothing else ran.
            assert_eq!(r.network, Some(d.network()), "{name} at {cl:?}: {d:?}");
            let values = r.completed * (MULTI * VALUE_BYTES) as u64;
            assert!(
                d.client_out >= values,
                "{name} at {cl:?}: every value read reaches the client: {d:?}"
            );
            let in_requests = if mode == MultiMode::In { r.requests } else { 0 };
            assert_eq!(d.multi_gets, in_requests, "{name} at {cl:?}");
            eprintln!(
                "{name} at {cl:?}: {} requests, p50 {:.2} ms, p99 {:.2} ms; per request: client {} B, internode {} B",
                r.requests,
                r.latency_ms.p50,
                r.latency_ms.p99,
                d.network().client_bytes / r.requests,
                d.internode_out / r.requests
            );
            runs.push((cl, mode, r.requests, d));
        }
    }
    let [(_, _, n1, p_one), (_, _, n2, in_one), (_, _, n3, p_quorum), (_, _, n4, in_quorum)] = runs[..] else {
        unreachable!()
    };
    assert!(n1 == n2 && n2 == n3 && n3 == n4, "one schedule: {n1} {n2} {n3} {n4}");
    // Token-aware single reads at ONE are served by their coordinator: no internode bytes.
    assert_eq!((p_one.internode_in, p_one.internode_out), (0, 0), "{p_one:?}");
    // The IN request's coordinator is a replica of its first key only: it reads the others
    // from other nodes (a third of them here), at ONE as at QUORUM.
    assert!(in_one.internode_out >= n2 * (MULTI * VALUE_BYTES) as u64 / 6, "{in_one:?}");
    assert!(p_quorum.internode_out >= n3 * (MULTI * VALUE_BYTES) as u64, "{p_quorum:?}");
    assert!(
        in_quorum.internode_out as f64 > 1.15 * p_quorum.internode_out as f64,
        "IN {in_quorum:?} vs parallel {p_quorum:?}"
    );
    // ...while one request and one reply per K keys cost the client link less.
    let client = |b: Bytes| b.client_in + b.client_out;
    assert!(client(in_quorum) < client(p_quorum), "IN {in_quorum:?} vs parallel {p_quorum:?}");

    // Prometheus shows the same counters as Stats (no traffic in between).
    for n in &cluster.file.nodes {
        let page = rt.block_on(http_get(n.metrics, "/metrics"));
        let s = rt.block_on(replica_lb_node::client::stats(n.grpc, Duration::from_secs(2))).unwrap();
        let got = [
            sample(&page, "client_received_bytes_total", n.id),
            sample(&page, "client_sent_bytes_total", n.id),
            sample(&page, "internode_received_bytes_total", n.id),
            sample(&page, "internode_sent_bytes_total", n.id),
            sample(&page, "coordinator_multi_gets_total", n.id),
        ];
        let want = [
            s.client_received_bytes,
            s.client_sent_bytes,
            s.internode_received_bytes,
            s.internode_sent_bytes,
            s.coordinator_multi_gets,
        ];
        assert_eq!(got, want, "node {}", n.id);
        assert!(page.contains("# TYPE replica_lb_internode_sent_bytes_total counter"));
    }

    // Every key read by an IN request went through the coordinators' policy runtime like a
    // single read: each ledger is even.
    let deadline = Instant::now() + Duration::from_secs(10);
    for s in stats(&rt, &cluster) {
        assert_eq!(s.policy_violations, 0, "node {}", s.node_id);
        let mut s = s;
        while s.policy_sends != s.policy_ended {
            assert!(
                Instant::now() < deadline,
                "node {}: {} sends, {} ended",
                s.node_id,
                s.policy_sends,
                s.policy_ended
            );
            std::thread::sleep(Duration::from_millis(50));
            let addr = cluster.file.node(s.node_id).unwrap().grpc;
            s = rt.block_on(replica_lb_node::client::stats(addr, Duration::from_secs(2))).unwrap();
        }
    }
}

#[test]
fn a_multi_key_request_fails_as_a_whole_when_a_replica_stops() {
    let rt = replica_lb_loadgen::client_runtime(2).unwrap();
    let _serial = rt.block_on(SERIAL.lock());
    let cluster = rf2_cluster("multi-stopped");
    load(&rt, &cluster, KEYS);
    // Node 1 stops: at CL=ALL nearly every request of 20 keys has a key it holds (2 in 3 do).
    cluster.signal(1, Signal::Stop);
    let mut reports = Vec::new();
    for mode in [MultiMode::Parallel, MultiMode::In] {
        reports.push(bench_multi(&rt, &cluster, mode, ConsistencyLevel::All, 400));
    }
    cluster.signal(1, Signal::Cont);
    for r in reports {
        // Each request ends once, whole: a time-out (or, once gossip saw the node down, an
        // error), never one per key.
        assert!(r.requests > 60, "{r:?}");
        assert_eq!(r.errors + r.timeouts + r.completed, r.requests, "{r:?}");
        assert!(r.completed <= 1 && r.timeouts > 0, "{r:?}");
        let m = r.multi.unwrap();
        assert_eq!((m.requests, m.completed), (r.requests, r.completed));
    }
}

#[test]
fn an_experiments_series_and_summary_carry_the_nodes_bytes() {
    let _serial = SERIAL.blocking_lock();
    let mut base = test_config();
    base.cache_rows = 1000;
    let plan = RealPlan {
        name: "bytes".into(),
        nodes: 3,
        node_zones: vec![0; 3],
        base,
        key_count: 300,
        keys: key_spec("uniform", 300, 0.0, 0.0).unwrap(),
        value_bytes: VALUE_BYTES,
        rate_per_s: 100.0,
        arrivals: Arrivals::Poisson,
        read_fraction: 1.0,
        cl: ConsistencyLevel::Quorum,
        warmup_cl: ConsistencyLevel::All,
        warmup_s: 0.0,
        duration_s: 4,
        phases: vec![],
        faults: vec![],
        rolls: vec![],
        timeout_ms: 2000,
        seed: 3,
        nic_bits_per_s: Some(1e9),
    };
    let run = PolicyRun {
        label: "naive".into(),
        coordinator: PolicyChoice::new("naive", Side::Coordinator, ParamTable::new()).unwrap(),
        client: replica_lb_loadgen::token_aware_random().unwrap(),
    };
    let dir = temp_dir("experiment-bytes");
    let mut opts = RunOptions {
        cluster_dir: dir.clone(),
        command: node_command(),
        progress: &mut |_| {},
    };
    let m = replica_lb_experiment::run_real(&plan, &run, &mut opts);
    let _ = std::fs::remove_dir_all(&dir);
    let m = m.unwrap();
    let completed = m.summary.completed;
    assert!(completed > 250, "{:?}", m.summary);
    // Every second of the run, every node sent and received; at QUORUM some of it to its peers.
    for t in 0..m.series.seconds - 1 {
        for n in 0..3 {
            let s = m.series.node(t, n);
            assert!(s.nic_out_bytes > 0 && s.nic_in_bytes > 0, "second {t}, node {n}: {s:?}");
            assert!(
                s.internode_out_bytes > 0 && s.internode_out_bytes <= s.nic_out_bytes,
                "second {t}, node {n}: {s:?}"
            );
        }
    }
    let net = m.summary.network.expect("summary.json's network");
    assert!(net.client_bytes >= completed * VALUE_BYTES as u64, "{net:?}");
    // Each read at QUORUM (RF 3) reads one other replica: its value crosses between nodes.
    assert!(net.internode_bytes >= completed * VALUE_BYTES as u64, "{net:?}");
    // The busiest node-second against the plan's 1 Gbps NIC: a small load, a small share.
    assert!(
        net.nic_peak_utilization > 0.0 && net.nic_peak_utilization < 0.1,
        "against 1 Gbps: {net:?}"
    );
    let csv = replica_lb_metrics::csv::timeseries_csv(&m.series);
    let all_row = csv.lines().find(|l| l.starts_with("1,all,")).unwrap();
    let cols: Vec<&str> = all_row.split(',').collect();
    let nic_out: u64 = cols[12].parse().unwrap();
    let internode_out: u64 = cols[14].parse().unwrap();
    assert!(nic_out > internode_out && internode_out > 0, "{all_row}");
}
