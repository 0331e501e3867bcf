//! The per-request path allocates nothing once every node is known: `pick` (replicas from
//! `ClusterState::replica_locator()`, the policy's choice, the pick's ticket) and the success
//! callback, for every policy the driver can serve.

mod support;

use replica_lb_driver::{ReplicaLbPolicy, DRIVER};
use replica_lb_policy::{Side, POLICIES};
use scylla::frame::response::result::TableSpec;
use scylla::policies::load_balancing::{LoadBalancingPolicy, RoutingInfo};
use scylla::routing::Token;
use std::cell::Cell;
use std::time::Duration;
use support::fake_cql::FakeCluster;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

struct CountingAlloc;

// SAFETY: every call is forwarded unchanged to the system allocator; only a thread-local
// counter is touched besides.
unsafe impl std::alloc::GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: forwarded with the caller's layout.
        unsafe { std::alloc::System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: `ptr` came from `alloc`/`realloc` above with this layout.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: forwarded unchanged.
        unsafe { std::alloc::System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAlloc = CountingAlloc;

fn allocations() -> u64 {
    ALLOCATIONS.with(|c| c.get())
}

#[test]
fn pick_and_success_allocate_nothing() {
    let (rt, cluster) = FakeCluster::six_in_one_dc();
    let session = cluster.session(&rt);
    let state = session.get_cluster_state();
    let spec = TableSpec::borrowed("ks", "t");
    let infos: Vec<RoutingInfo<'_>> = (0..256u64)
        .map(|i| {
            let mut info = RoutingInfo::default();
            info.token = Some(Token::new(i.wrapping_mul(0x9e37_79b9_7f4a_7c15) as i64));
            info.table = Some(&spec);
            info
        })
        .collect();
    for p in POLICIES.iter().filter(|p| p.side.serves(Side::Client)) {
        if p.needs.check(DRIVER.provides, p.name, DRIVER.name).is_err() {
            continue;
        }
        let policy = ReplicaLbPolicy::builder(p.name).shards(1).build().unwrap();
        let request = |info: &RoutingInfo<'_>| {
            let (node, _) = policy.pick(info, &state).unwrap();
            policy.on_request_success(info, Duration::ZERO, node);
        };
        // Warm up: every node mapped, every queue at its working size.
        for info in infos.iter().cycle().take(4_096) {
            request(info);
        }
        let before = allocations();
        for info in infos.iter().cycle().take(10_000) {
            request(info);
        }
        assert_eq!(allocations() - before, 0, "{}: allocations per 10,000 requests", p.name);
        policy.check_quiescent().unwrap();
    }
}
