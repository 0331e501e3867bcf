//! The network model and multi-key requests on `scenarios/poc-network.toml` (shortened): the
//! fourth seed's observations in direction — latency rising as a NIC nears saturation,
//! compression moving that point, `IN` queries against parallel single reads, and
//! latency-aware routing over token-aware sending reads to nodes that are not replicas.

use replica_lb_metrics::RunMetrics;
use replica_lb_sim::{apply_overrides, parse, parse_list, run_all, Scenario};

fn poc(sets: &[&str]) -> Scenario {
    let path = format!("{}/../../scenarios/poc-network.toml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    let mut sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    sets.push("run.duration_s=6".into());
    let text = apply_overrides(&text, &sets).unwrap_or_else(|e| panic!("{e}"));
    parse(&text, "poc-network").unwrap_or_else(|e| panic!("{}", e.render(&path)))
}

fn run(sc: &Scenario, list: &str) -> Vec<RunMetrics> {
    let specs = parse_list(Some(list), sc).unwrap();
    run_all(sc, &specs, sc.seed, 0, None)
        .unwrap()
        .into_iter()
        .map(|r| r.metrics)
        .collect()
}

fn p99(m: &RunMetrics) -> f64 {
    m.summary.latency_ms.p99
}

fn multi_p99(m: &RunMetrics) -> f64 {
    m.summary.multi.as_ref().expect("multi-key requests").latency_ms.p99
}

fn network(m: &RunMetrics) -> replica_lb_metrics::NetworkSummary {
    m.summary.network.expect("a simulation counts bytes")
}

#[test]
fn single_reads_stay_fast_and_multi_key_requests_pay_for_their_slowest_partition() {
    let r = &run(&poc(&[]), "random")[0];
    let (single, multi) = (p99(r), multi_p99(r));
    assert!(single < 4.0, "single-partition p99 {single} ms");
    assert!(
        (10.0..40.0).contains(&(multi / single)),
        "multi p99 {multi} ms vs single {single} ms"
    );
    let n = network(r);
    assert_eq!(n.internode_bytes, 0, "token-aware CL=ONE reads never leave their coordinator");
    assert!(
        n.client_bytes > 0 && n.nic_peak_utilization > 0.3 && n.nic_peak_utilization < 0.8,
        "{n:?}"
    );
    // Every node-second's bytes add up to the summary.
    let rows = &r.series.node_rows;
    let out: u64 = rows.iter().map(|x| x.nic_out_bytes).sum();
    let inb: u64 = rows.iter().map(|x| x.nic_in_bytes).sum();
    assert_eq!(out + inb, n.client_bytes + 2 * n.internode_bytes);
}

#[test]
fn latency_rises_as_the_nic_nears_saturation_and_compression_moves_the_point() {
    let fast = &run(&poc(&[]), "random")[0];
    let slow = &run(&poc(&["network.nic_gbps=0.65"]), "random")[0];
    let packed = &run(&poc(&["network.nic_gbps=0.65", "network.compression.ratio=0.5"]), "random")[0];
    assert!(network(slow).nic_peak_utilization > network(fast).nic_peak_utilization);
    assert!(
        p99(slow) > 2.0 * p99(fast),
        "p99 at 0.65 Gbps {} vs 1 Gbps {}",
        p99(slow),
        p99(fast)
    );
    assert!(
        network(packed).client_bytes * 10 < network(slow).client_bytes * 6,
        "compressed bytes"
    );
    assert!(p99(packed) < p99(slow) / 2.0, "compressed p99 {} vs {}", p99(packed), p99(slow));
}

#[test]
fn in_queries_load_one_coordinator_and_cross_the_cluster_where_parallel_reads_do_not() {
    let parallel = &run(&poc(&[]), "random")[0];
    let in_query = &run(&poc(&["requests.multi.mode=\"in\""]), "random")[0];
    assert!(network(in_query).internode_bytes > 0);
    assert!(
        multi_p99(in_query) > 2.0 * multi_p99(parallel),
        "IN {} vs parallel {}",
        multi_p99(in_query),
        multi_p99(parallel)
    );
    assert!(p99(in_query) > p99(parallel), "single reads queue behind the IN answers too");
}

#[test]
fn latency_aware_over_token_aware_sends_reads_to_nodes_that_are_not_replicas() {
    let runs = run(&poc(&[]), "random,latency-aware");
    let (random, aware) = (&runs[0], &runs[1]);
    assert_eq!(network(random).internode_bytes, 0);
    assert!(network(aware).internode_bytes > 0, "forwarded reads");
    assert!(
        p99(aware) > p99(random),
        "latency-aware p99 {} vs token-aware random {}",
        p99(aware),
        p99(random)
    );
    let remote: u32 = aware.series.node_rows.iter().map(|r| r.remote_reads).sum();
    assert!(remote > 0, "coordinators that are not replicas forward their reads");
}

#[test]
fn the_network_options_are_checked() {
    let path = format!("{}/../../scenarios/poc-network.toml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    for (set, wanted) in [
        ("network.nic_gbps=0", "network.nic_gbps = 0"),
        ("requests.multi.mode=\"batch\"", "must be \"in\" or \"parallel\""),
        ("requests.multi.keys=1", "requests.multi keys = 1"),
        (
            "clients.candidates=\"everyone\"",
            "must be \"replicas\" or \"replicas-then-others\"",
        ),
        ("requests.value_bytes.mean_bytes=0", "mean_bytes = 0"),
    ] {
        let text = apply_overrides(&text, &[set.to_string()]).unwrap();
        let e = parse(&text, "poc-network")
            .err()
            .unwrap_or_else(|| panic!("{set} accepted"))
            .render("poc.toml");
        assert!(e.contains(wanted), "{set}: {e}");
        assert!(!e.contains('\n'), "one line: {e}");
    }
}
