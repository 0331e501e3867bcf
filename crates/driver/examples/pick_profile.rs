//! One request as the driver makes it (`pick`, two clock readings, `on_request_success`), in
//! a loop, for instruction counts that a busy machine does not disturb (criterion's times on a
//! shared machine vary by a third; callgrind's counts repeat to the instruction):
//!
//! ```sh
//! cargo build --release -p replica-lb-driver --example pick_profile
//! valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*measured*' \
//!     target/release/examples/pick_profile c3 20000
//! callgrind_annotate --inclusive=yes callgrind.out.<pid>
//! ```
//!
//! "Collected" divided by the number of requests is the cost of one request in instructions
//! (crates/driver/PERF.md has them for every policy). The first argument is a replica-lb
//! policy name, `--default-policy` (the driver's token-aware `DefaultPolicy`) or `--clock-only`
//! (only the clock readings and the loop); the second the number of requests measured (after 20,000
//! unmeasured ones that map every node and size every queue). Same cluster and tokens as
//! `benches/pick.rs`. Without valgrind it prints the wall time per request (noisy on a shared
//! machine).

#[path = "../tests/support/fake_cql.rs"]
mod fake_cql;

use replica_lb_driver::ReplicaLbPolicy;
use scylla::cluster::ClusterState;
use scylla::policies::load_balancing::{DefaultPolicy, LoadBalancingPolicy, RoutingInfo};
use std::sync::Arc;
use std::time::Instant;

const TOKENS: usize = 1024;

#[inline(never)]
fn measured(policy: &dyn LoadBalancingPolicy, infos: &[RoutingInfo<'_>], state: &ClusterState, n: usize) {
    for i in 0..n {
        let info = &infos[i % TOKENS];
        let (node, _) = policy.pick(info, state).expect("a live replica");
        let start = Instant::now();
        policy.on_request_success(info, start.elapsed(), node);
    }
}

#[inline(never)]
fn measured_clock_only(n: usize) {
    for _ in 0..n {
        let start = std::hint::black_box(Instant::now());
        std::hint::black_box(start.elapsed());
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_else(|| "c3".into());
    let n: usize = args.next().map_or(100_000, |s| s.parse().expect("a number of requests"));
    let (rt, cluster) = fake_cql::FakeCluster::six_in_one_dc();
    let session = cluster.session(&rt);
    let state = session.get_cluster_state();
    let infos = fake_cql::spread_routing_infos(TOKENS);
    /// What the loop measures: a flag for the two baselines, else a registered policy's name.
    enum Subject {
        ClockOnly,
        DefaultPolicy,
        ReplicaLb(String),
    }
    let subject = match name.as_str() {
        "--clock-only" => Subject::ClockOnly,
        "--default-policy" => Subject::DefaultPolicy,
        _ => Subject::ReplicaLb(name.clone()),
    };
    if matches!(subject, Subject::ClockOnly) {
        let t = Instant::now();
        measured_clock_only(n);
        println!(
            "clock readings only: {:.1} ns per request",
            t.elapsed().as_nanos() as f64 / n as f64
        );
        return;
    }
    let policy: Arc<dyn LoadBalancingPolicy> = match &subject {
        Subject::ReplicaLb(policy) => ReplicaLbPolicy::builder(policy)
            .seed(1)
            .build()
            .expect("a policy the driver can serve"),
        _ => DefaultPolicy::builder().build(),
    };
    warm_up(policy.as_ref(), &infos, &state);
    let t = Instant::now();
    measured(policy.as_ref(), &infos, &state, n);
    println!("{name}: {:.1} ns per request", t.elapsed().as_nanos() as f64 / n as f64);
}

/// The same loop, not measured: every node mapped, every queue at its working size.
#[inline(never)]
fn warm_up(policy: &dyn LoadBalancingPolicy, infos: &[RoutingInfo<'_>], state: &ClusterState) {
    for i in 0..20_000 {
        let info = &infos[i % TOKENS];
        let (node, _) = policy.pick(info, state).expect("a live replica");
        policy.on_request_success(info, std::time::Duration::from_micros(1), node);
    }
}
