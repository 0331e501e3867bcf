//! A simulated node: a CPU stage, an optional row cache and disk stage, its own hit-rate
//! tracker, and the knobs faults turn (pause, slow-down, added delay).

use crate::dist::Dist;
use crate::lru::Lru;
use crate::queue::Event;
use policy::hwlb::{HitRateTracker, RatePublisher};
use policy::Rng;
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

/// One node.
#[derive(Debug)]
pub struct Node {
    /// Zone index (`u16::MAX` = the ideal shared queue, as close as any client's own zone).
    pub zone: u16,
    /// Process running.
    pub up: bool,
    /// Frozen (stop/continue).
    pub paused: bool,
    /// Bumped on every crash, so stale events are recognised.
    pub gen: u32,
    /// CPU stage (reads, writes, coordinator work).
    pub cpu: Stage,
    /// Disk stage.
    pub disk: Option<Stage>,
    /// Row cache.
    pub cache: Option<Lru>,
    /// The node's own hit-rate tracker.
    pub tracker: HitRateTracker,
    /// Service-time randomness.
    pub rng: Rng,
    /// Slow-down of the CPU stage.
    pub cpu_factor: f64,
    /// Slow-down of the disk stage.
    pub disk_factor: f64,
    /// Time-varying slow-down (fluctuation), both stages.
    pub fluct_factor: f64,
    /// Added delay on every message it sends, ns.
    pub added_delay_ns: u64,
    /// Replica ops queued or in service.
    pub in_flight: u32,
    /// Events that arrived while paused, in order.
    pub deferred: Vec<Event>,
    /// Its hit rate as last published by gossip, and the rule for the next publication.
    pub gossiped: RatePublisher,
    /// EWMA of op residence time, ns (the probe's latency estimate).
    pub latency_ewma_ns: f64,
}

impl Node {
    /// Queued plus in-service ops waiting at both stages (excluding those in service).
    pub fn queued(&self) -> u32 {
        self.cpu.queue.len() as u32 + self.disk.as_ref().map_or(0, |d| d.queue.len() as u32)
    }
}
