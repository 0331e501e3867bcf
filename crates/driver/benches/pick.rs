//! Per-request cost of each adapted policy (`pick`, then `on_request_success` with the
//! measured latency) against the driver's own token-aware `DefaultPolicy` (`pick`, then its
//! `on_request_success`), on the same real `ClusterState`: a driver session connected to a
//! fake 6-node cluster on loopback (tests/support/fake_cql.rs), keyspace RF=3, a prepared
//! statement's routing info with tokens spread over the ring. Single thread, and with every
//! core picking at once (each thread's requests timed while all run). Both include the two
//! clock readings the driver makes around every attempt whatever the policy.
//!
//! `cargo bench -p replica-lb-driver --bench pick`

#[path = "../tests/support/fake_cql.rs"]
mod fake_cql;

use criterion::{criterion_group, criterion_main, Criterion};
use replica_lb_driver::{ReplicaLbPolicy, DRIVER};
use replica_lb_policy::{Side, POLICIES};
use scylla::cluster::ClusterState;
use scylla::policies::load_balancing::{DefaultPolicy, LatencyAwarenessBuilder, LoadBalancingPolicy, RoutingInfo};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

const TOKENS: usize = 1024;

/// One request as the driver makes it: pick, read the clock, (send), success callback with
/// the time since the attempt started.
#[inline]
fn request(policy: &dyn LoadBalancingPolicy, info: &RoutingInfo<'_>, state: &ClusterState) {
    let (node, _) = policy.pick(info, state).expect("a live replica");
    let start = Instant::now();
    policy.on_request_success(info, start.elapsed(), node);
}

fn run(policy: &dyn LoadBalancingPolicy, infos: &[RoutingInfo<'_>], state: &ClusterState, iters: u64) -> Duration {
    let start = Instant::now();
    for i in 0..iters as usize {
        request(policy, &infos[i % TOKENS], state);
    }
    start.elapsed()
}

fn bench(c: &mut Criterion) {
    let (rt, cluster) = fake_cql::FakeCluster::six_in_one_dc();
    let session = cluster.session(&rt);
    let state = session.get_cluster_state();
    assert_eq!(state.get_nodes_info().len(), 6);
    let infos = fake_cql::spread_routing_infos(TOKENS);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());

    // The driver's latency awareness runs an updater task: build it inside the runtime.
    let aware = {
        let _guard = rt.enter();
        DefaultPolicy::builder().latency_awareness(LatencyAwarenessBuilder::new()).build()
    };
    let mut policies: Vec<(String, Arc<dyn LoadBalancingPolicy>)> = vec![
        ("driver-default".into(), DefaultPolicy::builder().build()),
        ("driver-default + latency awareness".into(), aware),
    ];
    for info in POLICIES.iter().filter(|p| p.side.serves(Side::Client)) {
        if info.needs.check(DRIVER.provides, info.name, DRIVER.name).is_ok() {
            let p: Arc<dyn LoadBalancingPolicy> = ReplicaLbPolicy::builder(info.name).seed(1).build().unwrap();
            policies.push((info.name.to_string(), p));
        }
    }
    // One shard: a single policy state shared by every thread (the contended design).
    let shared: Arc<dyn LoadBalancingPolicy> = ReplicaLbPolicy::builder("c3").seed(1).shards(1).build().unwrap();
    policies.push(("c3 (1 shard)".into(), shared));
    let mut g = c.benchmark_group("pick+success/1 thread");
    for (name, p) in &policies {
        g.bench_function(name.as_str(), |b| b.iter_custom(|iters| run(p.as_ref(), &infos, &state, iters)));
    }
    g.finish();
    let mut g = c.benchmark_group(format!("pick+success/{threads} threads"));
    for (name, p) in &policies {
        g.bench_function(name.as_str(), |b| {
            b.iter_custom(|iters| {
                let barrier = Barrier::new(threads);
                std::thread::scope(|s| {
                    let handles: Vec<_> = (0..threads)
                        .map(|_| {
                            s.spawn(|| {
                                barrier.wait();
                                run(p.as_ref(), &infos, &state, iters)
                            })
                        })
                        .collect();
                    handles.into_iter().map(|h| h.join().unwrap()).max().unwrap()
                })
            })
        });
    }
    g.finish();
    drop(session);
    drop(cluster);
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
