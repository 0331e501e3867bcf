//! Small builders shared by the policies' unit tests.

use crate::params::ParamTable;
use crate::params::ParamValue;
pub use crate::policy::{Event, Policy};
pub use crate::types::*;

/// Node ids 0..n.
pub fn ids(n: u16) -> Vec<NodeId> {
    (0..n).map(NodeId).collect()
}

/// A client-side request choosing `count` of `candidates` (all of them replicas).
pub fn req(candidates: &[NodeId], count: usize) -> Request<'_> {
    Request {
        candidates,
        replicas: None,
        count,
        local: None,
        group: 0,
    }
}

/// A reply with a latency and no feedback.
pub fn reply(node: u16, latency_ns: u64) -> Reply {
    Reply {
        node: NodeId(node),
        latency_ns,
        feedback: Feedback::default(),
    }
}

/// A parameter table from (name, value) pairs.
pub fn table(pairs: &[(&str, ParamValue)]) -> ParamTable {
    pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
}

/// Milliseconds in nanoseconds.
pub const MS: u64 = 1_000_000;
/// Seconds in nanoseconds.
pub const S: u64 = 1_000_000_000;

/// Counts heap allocations made by the current thread (the unit tests' global allocator), so
/// tests can assert that the request path allocates nothing.
pub struct CountingAlloc;

std::thread_local! {
    static ALLOCATIONS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

// SAFETY: every call is forwarded unchanged to the system allocator; only a thread-local
// counter is touched besides.
unsafe impl std::alloc::GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: forwarded with the caller's layout.
        unsafe { std::alloc::System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: `ptr` came from `alloc`/`realloc` above with this layout.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: forwarded unchanged.
        unsafe { std::alloc::System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAlloc = CountingAlloc;

/// Heap allocations made by this thread so far.
pub fn allocations() -> u64 {
    ALLOCATIONS.with(|c| c.get())
}

/// One call per kind of event, for the unit tests: each hands the policy one [`Event`].
pub trait Feed {
    /// [`Event::Sent`].
    fn on_send(&mut self, node: NodeId, now_ns: u64);
    /// [`Event::Reply`].
    fn on_reply(&mut self, reply: &Reply, now_ns: u64);
    /// [`Event::Failure`].
    fn on_failure(&mut self, node: NodeId, failure: Failure, now_ns: u64);
    /// [`Event::Info`].
    fn on_info(&mut self, node: NodeId, info: &Feedback, now_ns: u64);
    /// [`Event::NodeUp`].
    fn on_node_up(&mut self, node: NodeId, caps: NodeCaps, now_ns: u64);
    /// [`Event::ProbeReply`].
    fn on_probe_reply(&mut self, reply: &ProbeReply, now_ns: u64);
    /// [`Event::Truth`].
    fn on_truth(&mut self, truth: &NodeTruth, now_ns: u64);
    /// [`Event::Topology`].
    fn on_topology(&mut self, zones: &[(NodeId, u32)], local_zone: Option<u32>);
}

impl<P: Policy + ?Sized> Feed for P {
    fn on_send(&mut self, node: NodeId, now_ns: u64) {
        self.observe(&Event::Sent { node }, now_ns);
    }
    fn on_reply(&mut self, reply: &Reply, now_ns: u64) {
        self.observe(&Event::Reply(reply), now_ns);
    }
    fn on_failure(&mut self, node: NodeId, failure: Failure, now_ns: u64) {
        self.observe(&Event::Failure { node, failure }, now_ns);
    }
    fn on_info(&mut self, node: NodeId, info: &Feedback, now_ns: u64) {
        self.observe(&Event::Info { node, info }, now_ns);
    }
    fn on_node_up(&mut self, node: NodeId, caps: NodeCaps, now_ns: u64) {
        self.observe(&Event::NodeUp { node, caps }, now_ns);
    }
    fn on_probe_reply(&mut self, reply: &ProbeReply, now_ns: u64) {
        self.observe(&Event::ProbeReply(reply), now_ns);
    }
    fn on_truth(&mut self, truth: &NodeTruth, now_ns: u64) {
        self.observe(&Event::Truth(truth), now_ns);
    }
    fn on_topology(&mut self, zones: &[(NodeId, u32)], local_zone: Option<u32>) {
        self.observe(&Event::Topology { zones, local_zone }, 0);
    }
}
