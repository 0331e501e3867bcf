//! A simulated node: a CPU stage, an optional row cache and disk stage, its own hit-rate
//! tracker, and the knobs faults turn (pause, slow-down, added delay).

use crate::dist::Dist;
use crate::lru::Lru;
use crate::queue::Event;
use replica_lb_policy::hwlb::{HitRateTracker, RatePublisher};
use replica_lb_policy::Rng;
use replica_lb_workload::placement::mix64;
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

/// A token bucket in front of a disk (Linux blk-throttle's read limit), kept as a virtual
/// schedule (GCRA): each read the disk is handed gets the moment the bucket lets it through,
/// first come first served; the disk stage serves it from then on.
#[derive(Debug)]
pub struct Throttle {
    /// Reads let through per second, before a disk slow-down divides it.
    pub reads_per_s: f64,
    /// How far ahead of the rate an idle bucket lets reads through, ns.
    pub burst_ns: f64,
    /// The bucket's theoretical arrival time: when the next read would pass at the bare rate, ns.
    pub tat_ns: f64,
    /// The release times of the reads waiting in the disk stage's queue, in its order.
    pub ready_ns: VecDeque<u64>,
}

impl Throttle {
    /// An idle, full bucket.
    pub fn new(reads_per_s: f64, burst_ns: f64) -> Self {
        Throttle {
            reads_per_s,
            burst_ns,
            tat_ns: 0.0,
            ready_ns: VecDeque::new(),
        }
    }

    /// When a read handed to the disk at `now_ns` passes the bucket, the rate divided by
    /// `slow_factor`; the bucket counts it.
    pub fn admit(&mut self, now_ns: u64, slow_factor: f64) -> u64 {
        let interval_ns = 1e9 * slow_factor / self.reads_per_s;
        let pass_ns = (now_ns as f64).max(self.tat_ns - self.burst_ns);
        self.tat_ns = self.tat_ns.max(pass_ns) + interval_ns;
        pass_ns.ceil() as u64
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
    /// Replica reads holding one of the node's read threads (`node.read_threads`).
    pub read_busy: u32,
    /// Replica reads waiting for a read thread, oldest first.
    pub read_waiting: VecDeque<u32>,
    /// Pages of the partition index (`node.index_pages`; 0 without).
    pub index_pages: u32,
    /// The throttle in front of the disk stage (`node.disk_iops`), if any.
    pub throttle: Option<Box<Throttle>>,
    /// The partition index's pages in the page cache (`node.index_pages`): one bit a page.
    pub index_cached: Option<Box<[u64]>>,
    /// The node's own hit-rate tracker.
    pub tracker: HitRateTracker,
    /// Events that arrived while paused, in order.
    pub deferred: Vec<Event>,
    /// Its hit rate as last published by gossip, and the rule for the next publication.
    pub gossiped: RatePublisher,
}

const _: () = assert!(std::mem::offset_of!(Node, cache) + std::mem::size_of::<Option<Box<Lru>>>() <= Node::HOT_LINES * 64);

impl Node {
    /// Whether the index page holding `key` was in the page cache; it is now. `true` without
    /// a modelled index.
    pub fn index_page_cached(&mut self, key: u64) -> bool {
        let Some(bits) = self.index_cached.as_deref_mut() else {
            return true;
        };
        // Keys lie in the index in token order: a hash, not their numbering, picks the page.
        let page = index_page(key, self.index_pages);
        let (word, bit) = ((page / 64) as usize, 1u64 << (page % 64));
        let cached = bits[word] & bit != 0;
        bits[word] |= bit;
        cached
    }

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

    /// Ops waiting at both stages and for a read thread (excluding those in service).
    pub fn queued(&self) -> u32 {
        let disk = self.disk.as_deref().map_or(0, |d| d.queue.len() as u32);
        self.cpu.queue.len() as u32 + disk + self.read_waiting.len() as u32
    }
}

/// The index page of `key` among `pages`: keys in token order, a fixed mix of the key
/// (splitmix64's, the ring's [`mix64`]) standing in for its token.
fn index_page(key: u64, pages: u32) -> u64 {
    mix64(key.wrapping_add(0x9e37_79b9_7f4a_7c15)) % u64::from(pages.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_throttle_lets_a_burst_through_then_keeps_its_rate() {
        // 220 reads/s, 100 ms of burst: an idle bucket lets 23 reads through at once (the one at
        // the rate and 22 ahead of it), then one every 1/220 s; slowed 5x, one every 1/44 s.
        let mut t = Throttle::new(220.0, 100e6);
        let passes: Vec<u64> = (0..30).map(|_| t.admit(1_000_000_000, 1.0)).collect();
        assert!(passes[..23].iter().all(|&p| p == 1_000_000_000), "{passes:?}");
        let gap = 1e9_f64 / 220.0;
        let steady = passes[24..].windows(2).all(|w| ((w[1] - w[0]) as f64 - gap).abs() <= 1.0);
        assert!(passes[23] > 1_000_000_000 && steady, "{passes:?}");
        // Idle for a second: the burst is back, not more.
        let later = 3_000_000_000;
        let burst = (0..30).filter(|_| t.admit(later, 1.0) == later).count();
        assert_eq!(burst, 23);
        let mut slow = Throttle::new(220.0, 0.0);
        let (a, b) = (slow.admit(0, 5.0), slow.admit(0, 5.0));
        assert_eq!((a, b), (0, (1e9_f64 * 5.0 / 220.0).ceil() as u64));
    }

    #[test]
    fn index_pages_are_read_once_each() {
        let mut node = Node {
            gen: 0,
            in_flight: 0,
            zone: 0,
            up: true,
            paused: false,
            pauses: 0,
            cpu_factor: 1.0,
            fluct_factor: 1.0,
            added_delay_ns: 0,
            latency_ewma_ns: 0.0,
            rng: Rng::seed_from_u64(1),
            cpu: Stage::new(1, Dist::new("constant", 1.0, None, None).unwrap()),
            disk_factor: 1.0,
            disk: None,
            cache: None,
            read_busy: 0,
            read_waiting: VecDeque::new(),
            throttle: None,
            index_pages: 10,
            index_cached: Some(vec![0u64; 1].into_boxed_slice()),
            tracker: HitRateTracker::new(1, 1, 0),
            deferred: Vec::new(),
            gossiped: RatePublisher::new(),
        };
        // 1,000 keys over 10 pages: the first look-up of each page misses, none after.
        let misses = (0..1000u64).filter(|&k| !node.index_page_cached(k)).count();
        assert_eq!(misses, 10);
        assert!((0..1000u64).all(|k| node.index_page_cached(k)));
        node.index_cached = None;
        assert!(node.index_page_cached(5), "no index modelled: nothing to read");
    }
}
