//! The event queue: events ordered by (time, sequence). The sequence number breaks ties in
//! insertion order, so a run is a pure function of its inputs. The engine schedules typed
//! [`Event`]s; the queue keeps them packed into 32-byte entries (the kind rides in the key's low
//! bits, under the sequence number), compared as one `u128`.
//!
//! Two structures hold them: a 4-ary min-heap, and a FIFO lane for messages on the network.
//! Messages mostly take the same one-way delay, so each is due no earlier than the one sent
//! before it: such a message is appended to the lane (already in key order) instead of being
//! sifted through the heap. A message due earlier than the lane's last entry (another zone, a
//! jitter draw) goes to the heap. `pop` takes the smaller key of the heap's root and the
//! lane's head, so the order is exactly that of one heap.

use crate::lane::Lane;

/// A slab record named by index and generation: an event about a record freed (or reused)
/// since it was scheduled is recognised and ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ref {
    /// The slot.
    pub index: u32,
    /// The slot's generation when the event was scheduled.
    pub gen: u32,
}

/// Which stage of a node served an op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StageKind {
    /// The CPU (cache lookups, coordinator work).
    Cpu,
    /// The disk (cache misses).
    Disk,
}

/// What happens, with what it is about.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Event {
    /// A client issues its next request.
    Arrival {
        /// The client.
        client: u32,
    },
    /// A request reaches its coordinator.
    AtCoordinator {
        /// The request.
        req: Ref,
    },
    /// A replica op reaches its node.
    AtReplica {
        /// The op.
        op: Ref,
        /// The op's node (the op record says so too; carried so that the node's record can be
        /// fetched before the event is handled).
        node: u16,
    },
    /// A stage finished serving an op.
    StageDone {
        /// The op.
        op: Ref,
        /// The stage.
        stage: StageKind,
        /// The node's generation when the service started (a crash since voids it).
        node_gen: u32,
        /// The op's node (carried for prefetching, as in `AtReplica`).
        node: u16,
    },
    /// A replica's reply reaches the requester.
    ReplyArrives {
        /// The op.
        op: Ref,
        /// The op's requester (carried for prefetching, as `AtReplica`'s node).
        requester: u32,
    },
    /// The coordinator's answer reaches the client.
    AtClient {
        /// The request.
        req: Ref,
    },
    /// A speculative-retry timer.
    Speculate {
        /// The request.
        req: Ref,
    },
    /// A requester's policy-runtime timer (stale unless it is the requester's pending one).
    RuntimeTimer {
        /// The requester.
        requester: u32,
    },
    /// A probe reaches its node.
    ProbeAtNode {
        /// Who sent it.
        requester: u32,
        /// The node probed.
        node: u16,
    },
    /// A probe's answer reaches its requester.
    ProbeReply {
        /// Who sent the probe.
        requester: u32,
        /// The node that answered.
        node: u16,
        /// Its requests in flight.
        in_flight: u32,
        /// Its latency estimate, microseconds.
        latency_us: u32,
    },
    /// A gossiped hit rate arrives.
    Gossip {
        /// Whose rate.
        node: u16,
        /// Only this requester (a restarted node catching up), or everyone.
        only: Option<u32>,
        /// The rate.
        rate: f64,
    },
    /// The next fault action.
    Fault {
        /// Its index in the fault plan.
        action: u32,
    },
    /// Failure detector: peers see a node down.
    SeenDown {
        /// The node.
        node: u16,
        /// Its generation when it went down.
        gen: u32,
    },
    /// Peers see a node up.
    SeenUp {
        /// The node.
        node: u16,
        /// Its generation when it came up.
        gen: u32,
    },
    /// A fluctuation step.
    Fluctuate {
        /// The fluctuation's index in the fault plan.
        fault: u32,
    },
    /// Once per second: trackers, gossip, disk-queue samples, progress.
    Tick,
}

/// The packed form the heap keeps: a kind and three integers (fixed size, no pointers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Kind {
    Arrival,
    AtCoordinator,
    AtReplica,
    StageDone,
    ReplyArrives,
    AtClient,
    Speculate,
    RuntimeTimer,
    ProbeAtNode,
    ProbeReply,
    Gossip,
    Fault,
    SeenDown,
    SeenUp,
    Fluctuate,
    Tick,
}

impl Event {
    #[inline(always)]
    fn pack(self) -> (Kind, u32, u32, u64) {
        use Event as E;
        match self {
            E::Arrival { client } => (Kind::Arrival, client, 0, 0),
            E::AtCoordinator { req } => (Kind::AtCoordinator, req.index, req.gen, 0),
            E::AtReplica { op, node } => (Kind::AtReplica, op.index, op.gen, node as u64),
            E::StageDone { op, stage, node_gen, node } => {
                let disk = (stage == StageKind::Disk) as u64;
                (
                    Kind::StageDone,
                    op.index,
                    op.gen,
                    (node as u64) << 48 | (node_gen as u64) << 1 | disk,
                )
            }
            E::ReplyArrives { op, requester } => (Kind::ReplyArrives, op.index, op.gen, requester as u64),
            E::AtClient { req } => (Kind::AtClient, req.index, req.gen, 0),
            E::Speculate { req } => (Kind::Speculate, req.index, req.gen, 0),
            E::RuntimeTimer { requester } => (Kind::RuntimeTimer, requester, 0, 0),
            E::ProbeAtNode { requester, node } => (Kind::ProbeAtNode, requester, node as u32, 0),
            E::ProbeReply {
                requester,
                node,
                in_flight,
                latency_us,
            } => (
                Kind::ProbeReply,
                requester,
                node as u32,
                (in_flight as u64) << 32 | latency_us as u64,
            ),
            E::Gossip { node, only, rate } => (Kind::Gossip, node as u32, only.map_or(0, |r| r + 1), rate.to_bits()),
            E::Fault { action } => (Kind::Fault, action, 0, 0),
            E::SeenDown { node, gen } => (Kind::SeenDown, node as u32, gen, 0),
            E::SeenUp { node, gen } => (Kind::SeenUp, node as u32, gen, 0),
            E::Fluctuate { fault } => (Kind::Fluctuate, fault, 0, 0),
            E::Tick => (Kind::Tick, 0, 0, 0),
        }
    }

    #[inline(always)]
    fn unpack(kind: Kind, a: u32, b: u32, c: u64) -> Event {
        use Event as E;
        let r = Ref { index: a, gen: b };
        match kind {
            Kind::Arrival => E::Arrival { client: a },
            Kind::AtCoordinator => E::AtCoordinator { req: r },
            Kind::AtReplica => E::AtReplica { op: r, node: c as u16 },
            Kind::StageDone => E::StageDone {
                op: r,
                stage: if c & 1 == 1 { StageKind::Disk } else { StageKind::Cpu },
                node_gen: (c >> 1) as u32,
                node: (c >> 48) as u16,
            },
            Kind::ReplyArrives => E::ReplyArrives {
                op: r,
                requester: c as u32,
            },
            Kind::AtClient => E::AtClient { req: r },
            Kind::Speculate => E::Speculate { req: r },
            Kind::RuntimeTimer => E::RuntimeTimer { requester: a },
            Kind::ProbeAtNode => E::ProbeAtNode {
                requester: a,
                node: b as u16,
            },
            Kind::ProbeReply => E::ProbeReply {
                requester: a,
                node: b as u16,
                in_flight: (c >> 32) as u32,
                latency_us: c as u32,
            },
            Kind::Gossip => E::Gossip {
                node: a as u16,
                only: b.checked_sub(1),
                rate: f64::from_bits(c),
            },
            Kind::Fault => E::Fault { action: a },
            Kind::SeenDown => E::SeenDown { node: a as u16, gen: b },
            Kind::SeenUp => E::SeenUp { node: a as u16, gen: b },
            Kind::Fluctuate => E::Fluctuate { fault: a },
            Kind::Tick => E::Tick,
        }
    }
}

/// Every kind, indexed by its discriminant.
const KINDS: [Kind; 16] = [
    Kind::Arrival,
    Kind::AtCoordinator,
    Kind::AtReplica,
    Kind::StageDone,
    Kind::ReplyArrives,
    Kind::AtClient,
    Kind::Speculate,
    Kind::RuntimeTimer,
    Kind::ProbeAtNode,
    Kind::ProbeReply,
    Kind::Gossip,
    Kind::Fault,
    Kind::SeenDown,
    Kind::SeenUp,
    Kind::Fluctuate,
    Kind::Tick,
];
/// Bits of the key below the sequence number, holding the kind.
const KIND_BITS: u32 = 4;
const _: () = assert!(KINDS.len() == 1 << KIND_BITS && KINDS[Kind::Tick as usize] as usize == Kind::Tick as usize);

/// One scheduled event, packed into 32 bytes: `key` is the time (high 64 bits), then the
/// sequence number, then the kind, so entries order by one `u128` comparison. Aligned to its
/// size, so that no entry straddles two cache lines.
#[derive(Clone, Copy, Debug)]
#[repr(align(32))]
struct Entry {
    key: u128,
    a: u32,
    b: u32,
    c: u64,
}

/// Whether an event is a message on the network (a candidate for the FIFO lane).
#[inline(always)]
fn is_message(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::AtCoordinator | Kind::AtReplica | Kind::ReplyArrives | Kind::AtClient | Kind::ProbeAtNode | Kind::ProbeReply
    )
}

/// Children per heap entry: a 4-ary heap is half as deep as a binary one, and an entry's four
/// children (128 bytes) span two or three cache lines, so a sift through a heap of tens of
/// thousands of events (a large cluster) misses the cache about half as often.
const ARITY: usize = 4;

/// The earliest of the (up to [`ARITY`]) siblings starting at index `first` (`None`: no such
/// entry). Keys are unique (the sequence number is part of them), so the earliest is unique.
#[inline(always)]
fn min_child(heap: &[Entry], first: usize) -> Option<usize> {
    let end = heap.len().min(first + ARITY);
    if first >= end {
        return None;
    }
    let mut best = first;
    for i in first + 1..end {
        if heap[i].key < heap[best].key {
            best = i;
        }
    }
    Some(best)
}

/// The simulator's agenda.
///
/// A popped event stays at the root until the next push or pop: the engine handles it and
/// usually schedules one follow-up, which then simply replaces the root (one sift down instead
/// of a pop's sift down plus a push's sift up). The order is exactly that of a plain heap.
#[derive(Debug)]
pub struct Queue {
    heap: Vec<Entry>,
    /// Messages in key order (each appended entry's key is at least the last one's).
    lane: Lane<Entry>,
    seq: u64,
    /// Whether `heap[0]` was already handed out by `pop` and is only a placeholder.
    root_taken: bool,
}

impl Default for Queue {
    fn default() -> Self {
        Queue::new()
    }
}

impl Queue {
    /// An empty agenda.
    pub fn new() -> Self {
        Queue {
            heap: Vec::with_capacity(1 << 12),
            lane: Lane::with_capacity(1 << 12, Entry { key: 0, a: 0, b: 0, c: 0 }),
            seq: 0,
            root_taken: false,
        }
    }

    /// Schedules `event` at `t_ns`.
    #[inline]
    pub fn push(&mut self, t_ns: u64, event: Event) {
        self.seq += 1;
        debug_assert!(self.seq < 1 << (64 - KIND_BITS));
        let (kind, a, b, c) = event.pack();
        let e = Entry {
            key: (t_ns as u128) << 64 | (self.seq << KIND_BITS | kind as u64) as u128,
            a,
            b,
            c,
        };
        if is_message(kind) && self.lane.back().is_none_or(|last| last.key <= e.key) {
            self.lane.push_back(e);
            return;
        }
        if self.root_taken {
            // The root was handed out: `e` takes its place.
            self.root_taken = false;
            self.sink_from_root(e);
            return;
        }
        // Sift up with `e` held aside: parents move down into the hole, `e` is written once.
        self.heap.push(e);
        let heap = &mut self.heap[..];
        let mut i = heap.len() - 1;
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if heap[parent].key <= e.key {
                break;
            }
            heap[i] = heap[parent];
            i = parent;
        }
        heap[i] = e;
    }

    /// The earliest event and its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(u64, Event)> {
        if self.root_taken {
            self.remove_root();
        }
        let top = match (self.heap.first(), self.lane.front()) {
            (Some(root), Some(head)) if head.key < root.key => self.lane.pop_front(),
            (None, Some(_)) => self.lane.pop_front(),
            (Some(&root), _) => {
                self.root_taken = true;
                root
            }
            (None, None) => return None,
        };
        let kind = KINDS[(top.key & ((1 << KIND_BITS) - 1)) as usize];
        Some(((top.key >> 64) as u64, Event::unpack(kind, top.a, top.b, top.c)))
    }

    /// The event most likely to come after the one `pop` just gave: the earliest waiting
    /// (the handler may still schedule an earlier one). For prefetching its records while the
    /// current event is handled; it changes nothing in the order.
    #[inline]
    pub fn peek_next(&self) -> Option<Event> {
        let heap_min = if self.root_taken {
            min_child(&self.heap, 1).map(|i| &self.heap[i])
        } else {
            self.heap.first()
        };
        let e = match (heap_min, self.lane.front()) {
            (Some(h), Some(l)) => {
                if l.key < h.key {
                    l
                } else {
                    h
                }
            }
            (Some(h), None) => h,
            (None, Some(l)) => l,
            (None, None) => return None,
        };
        Some(Event::unpack(KINDS[(e.key & ((1 << KIND_BITS) - 1)) as usize], e.a, e.b, e.c))
    }

    /// The two events most likely to come next (see [`Self::peek_next`]): the earliest two
    /// waiting, for prefetching the records of the second one while the current event is
    /// handled (and the records those records name for the first). It changes nothing in the
    /// order.
    #[inline]
    pub fn peek_two(&self) -> (Option<Event>, Option<Event>) {
        fn earlier<'a>(x: Option<&'a Entry>, y: Option<&'a Entry>) -> Option<&'a Entry> {
            match (x, y) {
                (Some(a), Some(b)) => Some(if b.key < a.key { b } else { a }),
                (a, None) => a,
                (None, b) => b,
            }
        }
        let h = &self.heap;
        // The heap's two earliest: its root and its earliest child, or (the root handed out)
        // the earliest of the subheaps' roots and the earliest of the other roots and that
        // one's children.
        let (h1, h2) = if self.root_taken {
            match min_child(h, 1) {
                Some(m) => {
                    let mut second = min_child(h, ARITY * m + 1).map(|i| &h[i]);
                    for i in (1..=ARITY).filter(|&i| i != m) {
                        second = earlier(second, h.get(i));
                    }
                    (Some(&h[m]), second)
                }
                None => (None, None),
            }
        } else {
            (h.first(), min_child(h, 1).map(|i| &h[i]))
        };
        let (l1, l2) = (self.lane.get(0), self.lane.get(1));
        let (first, second) = match (h1, l1) {
            (Some(a), Some(b)) if b.key < a.key => (Some(b), earlier(h1, l2)),
            (Some(_), _) => (h1, earlier(h2, l1)),
            (None, _) => (l1, l2),
        };
        let unpack = |e: &Entry| Event::unpack(KINDS[(e.key & ((1 << KIND_BITS) - 1)) as usize], e.a, e.b, e.c);
        (first.map(unpack), second.map(unpack))
    }

    /// Removes the root (already handed out): the last entry fills its place.
    #[inline]
    fn remove_root(&mut self) {
        self.root_taken = false;
        let last = self.heap.pop().expect("a taken root is in the heap");
        if !self.heap.is_empty() {
            self.sift_down_from_root(last);
        }
    }

    /// Puts `e` at the root and sinks it while a child is earlier (a new event is often due
    /// soon, so it stops early).
    #[inline]
    fn sink_from_root(&mut self, e: Entry) {
        let mut hole = 0;
        while let Some(child) = min_child(&self.heap, ARITY * hole + 1) {
            if e.key <= self.heap[child].key {
                break;
            }
            self.heap[hole] = self.heap[child];
            hole = child;
        }
        self.heap[hole] = e;
    }

    /// Fills the hole at the root with `e`: the hole first sinks to the bottom along the
    /// earliest children, then `e` rises from there (it usually belongs near the bottom, so this
    /// takes fewer comparisons than sinking `e` itself).
    #[inline]
    fn sift_down_from_root(&mut self, e: Entry) {
        let mut hole = 0;
        while let Some(child) = min_child(&self.heap, ARITY * hole + 1) {
            self.heap[hole] = self.heap[child];
            hole = child;
        }
        let heap = &mut self.heap[..];
        while hole > 0 {
            let parent = (hole - 1) / ARITY;
            if heap[parent].key <= e.key {
                break;
            }
            heap[hole] = heap[parent];
            hole = parent;
        }
        heap[hole] = e;
    }

    /// Events waiting.
    pub fn len(&self) -> usize {
        self.heap.len() - self.root_taken as usize + self.lane.len()
    }

    /// Whether none wait.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With nothing pushed in between, the peeked event is the one popped next.
    #[test]
    fn peek_next_names_the_next_pop() {
        let mut q = Queue::new();
        for (t, c) in [(9, 1), (3, 2), (7, 3), (3, 4), (12, 5)] {
            q.push(t, Event::Arrival { client: c });
        }
        q.push(
            8,
            Event::AtReplica {
                op: Ref { index: 1, gen: 0 },
                node: 3,
            },
        );
        let (mut popped, mut peeked) = (Vec::new(), Vec::new());
        while let Some((_, e)) = q.pop() {
            popped.push(e);
            peeked.push(q.peek_next());
        }
        assert_eq!(popped.len(), 6);
        for (i, p) in peeked.iter().enumerate() {
            assert_eq!(*p, popped.get(i + 1).copied(), "after pop {i}");
        }
    }

    /// With nothing pushed in between, `peek_two` names the next two pops.
    #[test]
    fn peek_two_names_the_next_two_pops() {
        let mut q = Queue::new();
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for i in 0..200u32 {
            let t = next() % 1000;
            if i % 3 == 0 {
                q.push(t, Event::Arrival { client: i });
            } else {
                q.push(
                    t,
                    Event::ReplyArrives {
                        op: Ref { index: i, gen: 0 },
                        requester: i,
                    },
                );
            }
        }
        let (mut popped, mut peeked) = (Vec::new(), Vec::new());
        while let Some((_, e)) = q.pop() {
            popped.push(e);
            peeked.push(q.peek_two());
        }
        for (i, &(a, b)) in peeked.iter().enumerate() {
            assert_eq!((a, b), (popped.get(i + 1).copied(), popped.get(i + 2).copied()), "after pop {i}");
        }
    }

    #[test]
    fn earliest_first_ties_in_insertion_order() {
        let mut q = Queue::new();
        q.push(5, Event::Arrival { client: 1 });
        q.push(3, Event::Arrival { client: 2 });
        q.push(5, Event::Arrival { client: 3 });
        let order: Vec<(u64, Event)> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, [2, 1, 3].map(|c| (if c == 2 { 3 } else { 5 }, Event::Arrival { client: c })));
    }

    /// Pushes and pops interleaved as the engine does (a handler schedules zero, one or several
    /// events after each pop) come out in the order of a plain stable sort by time.
    #[test]
    fn interleaved_pushes_and_pops_keep_time_then_insertion_order() {
        let mut q = Queue::new();
        let mut model: Vec<(u64, u64, Event)> = Vec::new(); // (time, insertion, event)
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let (mut now, mut inserted, mut popped) = (0u64, 0u64, 0usize);
        for _ in 0..20_000 {
            for _ in 0..next() % 3 + (q.len() < 2) as u64 {
                // Coarse times, so that ties are common.
                // Half are messages (the FIFO lane when in order), mostly at one delay.
                let r = next();
                let (t, event) = if r % 2 == 0 {
                    (now + next() % 8, Event::Arrival { client: inserted as u32 })
                } else {
                    let delay = if r % 7 == 1 { next() % 8 } else { 5 };
                    let req = Ref {
                        index: inserted as u32,
                        gen: 0,
                    };
                    (now + delay, Event::AtReplica { op: req, node: 1 })
                };
                q.push(t, event);
                model.push((t, inserted, event));
                inserted += 1;
            }
            model.sort_by_key(|&(t, i, _)| std::cmp::Reverse((t, i)));
            let want = model.pop().map(|(t, _, e)| (t, e));
            assert_eq!(q.pop(), want);
            assert_eq!(q.len(), model.len());
            now = want.map_or(now, |(t, _)| t);
            popped += 1;
        }
        assert!(popped == 20_000 && inserted > 20_000);
    }

    #[test]
    fn every_event_survives_packing() {
        let r = Ref { index: 7, gen: u32::MAX };
        let all = [
            Event::Arrival { client: 9 },
            Event::AtCoordinator { req: r },
            Event::AtReplica { op: r, node: u16::MAX },
            Event::StageDone {
                op: r,
                stage: StageKind::Disk,
                node_gen: u32::MAX,
                node: u16::MAX,
            },
            Event::StageDone {
                op: r,
                stage: StageKind::Cpu,
                node_gen: 3,
                node: 5,
            },
            Event::ReplyArrives {
                op: r,
                requester: u32::MAX,
            },
            Event::AtClient { req: r },
            Event::Speculate { req: r },
            Event::RuntimeTimer { requester: 4 },
            Event::ProbeAtNode { requester: 4, node: 63 },
            Event::ProbeReply {
                requester: 4,
                node: 2,
                in_flight: u32::MAX,
                latency_us: 12,
            },
            Event::Gossip {
                node: 1,
                only: Some(0),
                rate: 0.25,
            },
            Event::Gossip {
                node: 1,
                only: None,
                rate: 1.0,
            },
            Event::Fault { action: 2 },
            Event::SeenDown { node: 5, gen: 6 },
            Event::SeenUp { node: 5, gen: 7 },
            Event::Fluctuate { fault: 1 },
            Event::Tick,
        ];
        for e in all {
            let (k, a, b, c) = e.pack();
            assert_eq!(Event::unpack(k, a, b, c), e);
        }
    }
}
