//! A simulated node: a CPU stage, an optional row cache and disk stage, its own hit-rate
//! tracker, and the knobs faults turn (pause, slow-down, added delay).

use crate::dist::Dist;
use crate::lru::Lru;
use crate::queue::Event;
use replica_lb_policy::hwlb::{HitRateTracker, RatePublisher};
use replica_lb_policy::Rng;
use std::collections::VecDeque;

/// A FIFO service stage with fixed concurrency.
#[derive(Debug)]
pub struct Stage {
    /// Ops served at once.
    pub concurrency: u32,
    /// Ops in service.
    pub busy: u32,
    /// Ops waiting, oldest first.
    pub queue: VecDeque<u32>,
    /// Service-time distribution.
    pub service: Dist,
}

impl Stage {
    /// An idle stage.
    pub fn new(concurrency: u32, service: Dist) -> Self {
        Stage {
            concurrency,
            busy: 0,
            queue: VecDeque::new(),
            service,
        }
    }
}

/// One node. Its fields are laid out in declaration order (`repr(C)`), those an op at the node
/// reads first: the header, the service-time stream, the CPU stage, and the pointers to the
/// disk stage and the row cache fill the first
/// [`Node::HOT_LINES`] cache lines (what the engine prefetches for an upcoming op); the
/// hit-rate tracker, deferred events and gossip state come after. The layout changes no
/// result.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct Node {
    /// Bumped on every crash, so stale events are recognised.
    pub gen: u32,
    /// Replica ops queued or in service.
    pub in_flight: u32,
    /// Zone index (`u16::MAX` = the ideal shared queue, as close as any client's own zone).
    pub zone: u16,
    /// Process running.
    pub up: bool,
    /// Frozen (stop/continue).
    pub paused: bool,
    /// Pauses begun so far: names the current one, so a failure detector's verdict on an
    /// earlier pause does not convict a later, shorter one.
    pub pauses: u32,
    /// Slow-down of the CPU stage.
    pub cpu_factor: f64,
    /// Time-varying slow-down (fluctuation), both stages.
    pub fluct_factor: f64,
    /// Added delay on every message it sends, ns.
    pub added_delay_ns: u64,
    /// EWMA of op residence time, ns (the probe's latency estimate).
    pub latency_ewma_ns: f64,
    /// Service-time randomness.
    pub rng: Rng,
    /// CPU stage (reads, writes, coordinator work).
    pub cpu: Stage,
    /// Slow-down of the disk stage.
    pub disk_factor: f64,
    /// Disk stage (boxed: a pointer in the node's hot lines, its state elsewhere).
    pub disk: Option<Box<Stage>>,
    /// Row cache (boxed, as the disk stage).
    pub cache: Option<Box<Lru>>,
    /// The node's own hit-rate tracker.
    pub tracker: HitRateTracker,
    /// Events that arrived while paused, in order.
    pub deferred: Vec<Event>,
    /// Its hit rate as last published by gossip, and the rule for the next publication.
    pub gossiped: RatePublisher,
}

const _: () = assert!(std::mem::offset_of!(Node, cache) + std::mem::size_of::<Option<Box<Lru>>>() <= Node::HOT_LINES * 64);

impl Node {
    /// The cache lines at the start of a node that an op's arrival, its stages and its reply
    /// read: the header, the service-time stream, the CPU stage and the pointers to the disk
    /// stage and the row cache (see [`Self::prefetch_hot`]).
    pub const HOT_LINES: usize = 3;

    /// Hints the CPU to fetch the node's first [`Self::HOT_LINES`] cache lines (the rest, read
    /// with a row cache or on faults, from memory). No effect on results.
    #[inline(always)]
    pub fn prefetch_hot(&self) {
        crate::prefetch::first_lines(self, Self::HOT_LINES);
    }

    /// Queued plus in-service ops waiting at both stages (excluding those in service).
    pub fn queued(&self) -> u32 {
        self.cpu.queue.len() as u32 + self.disk.as_deref().map_or(0, |d| d.queue.len() as u32)
    }
}
