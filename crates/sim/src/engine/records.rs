//! The records the engine keeps in its slabs: a replica op ([`Op`]) and a client request
//! ([`Req`]), each named by slot index and generation.

use super::multi::NO_PARENT;
use super::slab::Slot;
use super::NO_NODE;
use crate::scenario::FeedbackModel;
use replica_lb_policy::Feedback;
use replica_lb_runtime::{DispatchId, Ticket};

/// What a replica op does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum OpKind {
    #[default]
    Read,
    Write,
    /// The coordinator's own CPU work for a request.
    Coordinate,
}

/// Where an op is in its life.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum OpState {
    #[default]
    Live,
    /// Lost in a crash; failed (ConnectionLost) when peers see the node down.
    Dropped,
}

/// A replica op. Aligned to 32 bytes, so that each of its 96 lies in exactly two cache lines
/// (unaligned, one in three would straddle three, and the engine's two-line prefetch would
/// miss the third).
#[derive(Clone, Copy, Debug, Default)]
#[repr(align(32))]
pub(super) struct Op {
    pub(super) gen: u32,
    pub(super) req: u32,
    pub(super) req_gen: u32,
    pub(super) node: u16,
    pub(super) requester: u32,
    pub(super) requester_gen: u32,
    pub(super) node_gen: u32,
    pub(super) kind: OpKind,
    pub(super) state: OpState,
    pub(super) local: bool,
    pub(super) outcome_given: bool,
    /// A shadow read: its reply feeds the policy but does not count towards the request.
    pub(super) shadow: bool,
    /// It holds one of its node's read threads (`node.read_threads`) until it replies.
    pub(super) holds_read_thread: bool,
    /// Disk reads it still has to make (a miss makes `node.disk_reads_per_miss` on average).
    pub(super) disk_reads_left: u8,
    /// The send's ticket in its requester's runtime.
    pub(super) ticket: Ticket,
    pub(super) key: u64,
    pub(super) sent_ns: u64,
    pub(super) arrived_ns: u64,
    pub(super) service_ns: u64,
    /// The replica's state when it replied (hit rate, queued ops, ops in flight); the service
    /// time is `service_ns`. Kept compact: this struct is copied on the hot path.
    pub(super) fb_hit_rate: f64,
    pub(super) fb_queue_len: u32,
    pub(super) fb_in_flight: u32,
}

impl Op {
    /// The feedback record of its reply under `model`: the hit rate when replies carry it
    /// (`feedback.piggyback`), the load when they carry that (`feedback.load_reports`).
    pub(super) fn feedback(&self, model: &FeedbackModel) -> Feedback {
        let load = model.load_reports;
        Feedback {
            hit_rate: (model.piggyback && self.fb_hit_rate >= 0.0).then_some(self.fb_hit_rate),
            queue_len: load.then_some(self.fb_queue_len),
            service_time_ns: load.then_some(self.service_ns),
            in_flight: load.then_some(self.fb_in_flight),
        }
    }
}

impl Slot for Op {
    fn generation(&self) -> u32 {
        self.gen
    }
    fn set_generation(&mut self, g: u32) {
        self.gen = g;
    }
}

/// A client request (or a partition of a multi-key one). Aligned to a cache line, so that it
/// lies in exactly two.
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
pub(super) struct Req {
    pub(super) gen: u32,
    pub(super) client: u32,
    pub(super) key: u64,
    pub(super) group: u32,
    pub(super) write: bool,
    pub(super) measured: bool,
    pub(super) needed: u8,
    pub(super) replies: u8,
    pub(super) answered: bool,
    pub(super) coord: u16,
    pub(super) issued_ns: u64,
    pub(super) n_ops: u8,
    pub(super) ops: [u32; crate::scenario::MAX_OPS_PER_REQUEST],
    pub(super) fallback: u16,
    /// The replica reads or writes, in the runtime of the requester that sent them.
    pub(super) dispatch: Option<DispatchId>,
    /// The generation of the requester when it made `dispatch` (a restarted coordinator has
    /// a new runtime, which must not be told about the old one's dispatches).
    pub(super) dispatch_gen: u32,
    /// The requester that made `dispatch` (its replica reads' sender): a speculative send goes
    /// through its runtime, read from here because the request's first op may already be freed.
    pub(super) dispatch_requester: u32,
    /// The client's choice of coordinator, in the client's runtime (coordinator routing).
    pub(super) client_dispatch: Option<DispatchId>,
    /// The multi-key request this is one partition of (`NO_PARENT`: a single read), and its
    /// generation.
    pub(super) parent: u32,
    pub(super) parent_gen: u32,
}

impl Default for Req {
    fn default() -> Self {
        Req {
            gen: 0,
            client: 0,
            key: 0,
            group: 0,
            write: false,
            measured: false,
            needed: 0,
            replies: 0,
            answered: false,
            coord: NO_NODE,
            issued_ns: 0,
            n_ops: 0,
            ops: [0; crate::scenario::MAX_OPS_PER_REQUEST],
            fallback: NO_NODE,
            dispatch: None,
            dispatch_gen: 0,
            dispatch_requester: 0,
            client_dispatch: None,
            parent: NO_PARENT,
            parent_gen: 0,
        }
    }
}

const _: () = assert!(std::mem::size_of::<Op>() <= 96 && std::mem::size_of::<Req>() <= 128);

/// Bytes a request in flight holds: its record and its deadline (for a memory estimate).
pub(crate) const REQUEST_BYTES: usize = std::mem::size_of::<Req>() + std::mem::size_of::<(u64, u32, u32)>();
/// Bytes a replica op in flight holds: its record and about one queued event.
pub(crate) const OP_BYTES: usize = std::mem::size_of::<Op>() + 32;

impl Slot for Req {
    fn generation(&self) -> u32 {
        self.gen
    }
    fn set_generation(&mut self, g: u32) {
        self.gen = g;
    }
}

/// A waiting request, as its runtime hands it back: (request slot, generation).
pub(super) type ReqKey = (u32, u32);

impl Op {
    /// The node index of a coordinator requester.
    pub(super) fn node_of_requester(&self, clients: usize) -> usize {
        self.requester as usize - clients
    }
}
