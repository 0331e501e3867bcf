//! The event queue: events ordered by (time, sequence). The sequence number breaks ties in
//! insertion order, so a run is a pure function of its inputs. The engine schedules typed
//! [`Event`]s; the queue keeps them packed into 32-byte entries (the kind rides in the key's low
//! bits, under the sequence number), compared as one `u128`.
//!
//! A calendar: the near future is a ring of buckets of `2^shift` ns each (the width set from
//! the expected event rate, so a bucket holds a couple of events; the ring spanning tens of
//! milliseconds); an event is
//! appended to its bucket unsorted, in constant time. When the clock reaches a bucket, its
//! entries (and any from the far heap that fall in it) are sorted and taken in order; an event
//! scheduled into the bucket being taken is inserted in order. Events beyond the ring's
//! horizon (ticks, time-outs far ahead) wait in a 4-ary min-heap until their bucket comes.
//! The order is exactly that of one heap: every key of a later bucket is larger than every key
//! of an earlier one. (A heap of a 300-node cluster's thousands of pending events cost a
//! third of the simulator's instructions in its sifts.)

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
    /// Failure detector: peers, clients or both see a node down.
    SeenDown {
        /// The node.
        node: u16,
        /// Its generation when it went down.
        gen: u32,
        /// Who sees it now.
        audience: Audience,
    },
    /// Failure detector: a node paused since its pause number `pause` has said nothing for
    /// `failure_detection_ms`; peers see it down if it is still in that pause.
    PauseConvicted {
        /// The node.
        node: u16,
        /// Which of its pauses ([`crate::engine::node::Node::pauses`] when it began).
        pause: u32,
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

/// Who sees a node down at a [`Event::SeenDown`]: the nodes' failure detector and the clients'
/// reset connections can tell at different times (`run.client_failure_detection_ms`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Audience {
    /// Peers and clients at once.
    Everyone,
    /// The other nodes (coordinators) only.
    Peers,
    /// The clients only.
    Clients,
}

impl Audience {
    /// Whether the other nodes are in it.
    pub fn peers(self) -> bool {
        self != Audience::Clients
    }

    /// Whether the clients are in it.
    pub fn clients(self) -> bool {
        self != Audience::Peers
    }

    /// Whether a requester is in it: a client (`client`) or a node's coordinator.
    pub fn includes(self, client: bool) -> bool {
        if client {
            self.clients()
        } else {
            self.peers()
        }
    }
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
    PauseConvicted,
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
            E::SeenDown { node, gen, audience } => (Kind::SeenDown, node as u32, gen, audience as u64),
            E::PauseConvicted { node, pause } => (Kind::PauseConvicted, node as u32, pause, 0),
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
            Kind::SeenDown => E::SeenDown {
                node: a as u16,
                gen: b,
                audience: match c {
                    0 => Audience::Everyone,
                    1 => Audience::Peers,
                    _ => Audience::Clients,
                },
            },
            Kind::PauseConvicted => E::PauseConvicted { node: a as u16, pause: b },
            Kind::SeenUp => E::SeenUp { node: a as u16, gen: b },
            Kind::Fluctuate => E::Fluctuate { fault: a },
            Kind::Tick => E::Tick,
        }
    }
}

/// Every kind, indexed by its discriminant.
const KINDS: [Kind; 17] = [
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
    Kind::PauseConvicted,
    Kind::SeenUp,
    Kind::Fluctuate,
    Kind::Tick,
];
/// Bits of the key below the sequence number, holding the kind.
const KIND_BITS: u32 = 5;
const _: () = assert!(KINDS.len() <= 1 << KIND_BITS && KINDS[Kind::Tick as usize] as usize == Kind::Tick as usize);

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

/// Children per far-heap entry: a 4-ary heap is half as deep as a binary one.
const ARITY: usize = 4;

/// The ring spans about this far ahead, ns (a disk read, a client's next request), in at
/// least [`MIN_BUCKETS`] and at most [`MAX_BUCKETS`] buckets.
const HORIZON_NS: u64 = 64_000_000;
const MIN_BUCKETS: usize = 1 << 10;
const MAX_BUCKETS: usize = 1 << 20;

/// The widest bucket, 2^this ns (about a second).
const MAX_SHIFT: u32 = 30;

/// No slot: an empty bucket, the end of a list.
const NIL: u32 = u32::MAX;

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

/// The time of an entry, ns.
#[inline(always)]
fn time_of(e: &Entry) -> u64 {
    (e.key >> 64) as u64
}

#[inline(always)]
fn unpack(e: &Entry) -> Event {
    Event::unpack(KINDS[(e.key & ((1 << KIND_BITS) - 1)) as usize], e.a, e.b, e.c)
}

/// The simulator's agenda (see the [module docs](self)).
#[derive(Debug)]
pub struct Queue {
    /// The ring: bucket `b` (absolute number: time >> `shift`) is the list starting at
    /// `heads[b & mask]` (`NIL`: empty), linked through `links`, its entries in `entries` (a
    /// slab whose free slots are linked through `links` too). Flat arrays: appending an event
    /// touches a 4-byte head and a slot freed recently, not a bucket's own vector.
    heads: Vec<u32>,
    entries: Vec<Entry>,
    links: Vec<u32>,
    /// The first free slot (`NIL`: none).
    free: u32,
    /// The ring's length minus one (a power of two minus one).
    mask: u64,
    /// Entries in the ring.
    in_ring: usize,
    /// Bucket width, 2^shift ns.
    shift: u32,
    /// The absolute number of the bucket being taken.
    cur: u64,
    /// Its entries, sorted; those from `pos` on are still waiting.
    current: Vec<Entry>,
    pos: usize,
    /// Events beyond the ring's horizon when scheduled, as a 4-ary min-heap.
    far: Vec<Entry>,
    seq: u64,
}

impl Default for Queue {
    fn default() -> Self {
        Queue::new()
    }
}

impl Queue {
    /// An empty agenda for about a hundred thousand events a second.
    pub fn new() -> Self {
        Queue::for_rate(100_000.0)
    }

    /// An empty agenda for about `events_per_s` events a second (the bucket width and the
    /// ring's length follow from it). Any rate gives the same order; only the speed depends
    /// on it.
    pub fn for_rate(events_per_s: f64) -> Self {
        let gap_ns = if events_per_s > 0.0 { 1e9 / events_per_s } else { 1e4 };
        let bucket_ns = (2.0 * gap_ns).clamp(1.0, (1u64 << MAX_SHIFT) as f64) as u64;
        let shift = 63 - bucket_ns.max(1).leading_zeros();
        let buckets = ((HORIZON_NS >> shift) as usize).next_power_of_two().clamp(MIN_BUCKETS, MAX_BUCKETS);
        Queue::with_layout(shift, buckets)
    }

    /// An empty agenda with buckets of 2^`shift` ns, `buckets` (a power of two) of them.
    fn with_layout(shift: u32, buckets: usize) -> Self {
        assert!(buckets.is_power_of_two() && shift <= MAX_SHIFT);
        Queue {
            heads: vec![NIL; buckets],
            entries: Vec::with_capacity(1 << 10),
            links: Vec::with_capacity(1 << 10),
            free: NIL,
            mask: buckets as u64 - 1,
            in_ring: 0,
            shift,
            cur: 0,
            current: Vec::with_capacity(64),
            pos: 0,
            far: Vec::with_capacity(1 << 8),
            seq: 0,
        }
    }

    /// Schedules `event` at `t_ns` (not before the last event taken).
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
        let bucket = t_ns >> self.shift;
        if bucket <= self.cur {
            // The bucket being taken (or, scheduled at a deadline handled before the event
            // just taken, an earlier one): in order among the waiting entries (usually last).
            let waiting = &self.current[self.pos..];
            let at = self.pos + waiting.partition_point(|x| x.key < e.key);
            self.current.insert(at, e);
        } else if bucket - self.cur <= self.mask {
            let slot = match self.free {
                NIL => {
                    self.entries.push(e);
                    self.links.push(NIL);
                    (self.entries.len() - 1) as u32
                }
                slot => {
                    self.free = self.links[slot as usize];
                    self.entries[slot as usize] = e;
                    slot
                }
            };
            let head = &mut self.heads[(bucket & self.mask) as usize];
            self.links[slot as usize] = *head;
            *head = slot;
            self.in_ring += 1;
        } else {
            self.push_far(e);
        }
    }

    /// The earliest event and its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(u64, Event)> {
        if self.pos == self.current.len() && !self.advance() {
            return None;
        }
        let e = self.current[self.pos];
        self.pos += 1;
        Some((time_of(&e), unpack(&e)))
    }

    /// Moves to the next bucket with events (sorted into `current`); false when none is left.
    #[cold]
    fn advance(&mut self) -> bool {
        self.current.clear();
        self.pos = 0;
        loop {
            if self.in_ring == 0 {
                // Nothing in the ring: jump to the far heap's earliest bucket.
                let Some(first) = self.far.first() else {
                    return false;
                };
                self.cur = self.cur.max(time_of(first) >> self.shift);
            } else {
                self.cur += 1;
            }
            let head = &mut self.heads[(self.cur & self.mask) as usize];
            let mut slot = std::mem::replace(head, NIL);
            while slot != NIL {
                let i = slot as usize;
                self.current.push(self.entries[i]);
                slot = std::mem::replace(&mut self.links[i], self.free);
                self.free = i as u32;
                self.in_ring -= 1;
            }
            while self.far.first().is_some_and(|f| time_of(f) >> self.shift <= self.cur) {
                let f = self.pop_far();
                self.current.push(f);
            }
            if !self.current.is_empty() {
                if self.current.len() > 1 {
                    self.current.sort_unstable_by_key(|e| e.key);
                }
                return true;
            }
        }
    }

    /// The two events most likely to come next: the earliest two waiting (the handler may
    /// still schedule earlier ones), for prefetching the records of the second one while the
    /// current event is handled (and the records those records name for the first). A hint:
    /// it looks a few buckets ahead at most, and changes nothing in the order.
    #[inline]
    pub fn peek_two(&self) -> (Option<Event>, Option<Event>) {
        let waiting = &self.current[self.pos..];
        if waiting.len() >= 2 {
            return (Some(unpack(&waiting[0])), Some(unpack(&waiting[1])));
        }
        let (mut first, mut second) = (waiting.first(), None::<&Entry>);
        // The next non-empty buckets (unsorted: their two smallest), then the far heap's root.
        let mut seen = 0;
        for ahead in 1..=8u64 {
            if self.in_ring == 0 {
                break;
            }
            let mut slot = self.heads[((self.cur + ahead) & self.mask) as usize];
            while slot != NIL {
                let e = &self.entries[slot as usize];
                if first.is_none_or(|f| e.key < f.key) {
                    second = first;
                    first = Some(e);
                } else if second.is_none_or(|s| e.key < s.key) {
                    second = Some(e);
                }
                seen += 1;
                slot = self.links[slot as usize];
            }
            if first.is_some() && second.is_some() && seen >= 2 {
                break;
            }
        }
        if let Some(f) = self.far.first() {
            if first.is_none_or(|x| f.key < x.key) {
                second = first;
                first = Some(f);
            } else if second.is_none_or(|x| f.key < x.key) {
                second = Some(f);
            }
        }
        (first.map(unpack), second.map(unpack))
    }

    /// The event most likely to come next (see [`Self::peek_two`]).
    #[inline]
    pub fn peek_next(&self) -> Option<Event> {
        self.peek_two().0
    }

    /// Puts `e` into the far heap.
    fn push_far(&mut self, e: Entry) {
        // Sift up with `e` held aside: parents move down into the hole, `e` is written once.
        self.far.push(e);
        let heap = &mut self.far[..];
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

    /// Takes the far heap's root: the hole sinks to the bottom along the earliest children,
    /// then the last entry rises from there.
    fn pop_far(&mut self) -> Entry {
        let root = self.far[0];
        let last = self.far.pop().expect("a root is in the heap");
        if self.far.is_empty() {
            return root;
        }
        let mut hole = 0;
        while let Some(child) = min_child(&self.far, ARITY * hole + 1) {
            self.far[hole] = self.far[child];
            hole = child;
        }
        let heap = &mut self.far[..];
        while hole > 0 {
            let parent = (hole - 1) / ARITY;
            if heap[parent].key <= last.key {
                break;
            }
            heap[hole] = heap[parent];
            hole = parent;
        }
        heap[hole] = last;
        root
    }

    /// Events waiting.
    pub fn len(&self) -> usize {
        self.current.len() - self.pos + self.in_ring + self.far.len()
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
        // Exact with one bucket for everything; with small buckets it looks a few ahead only
        // (a hint), so it names the next two nearly always.
        assert_eq!(peek_two_of(Queue::with_layout(MAX_SHIFT, 1024)), 200);
        assert!(peek_two_of(Queue::with_layout(2, 4096)) >= 180);
    }

    /// How many of 200 peeks named the next two pops.
    fn peek_two_of(mut q: Queue) -> usize {
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
        peeked
            .iter()
            .enumerate()
            .filter(|&(i, &(a, b))| (a, b) == (popped.get(i + 1).copied(), popped.get(i + 2).copied()))
            .count()
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
        // One bucket for everything; buckets of 2 ns in a ring of 16 (far events in the heap);
        // buckets of 8 ns in a ring of 1,024.
        for (shift, buckets) in [(MAX_SHIFT, 1024), (1, 16), (3, 1024)] {
            interleaved(Queue::with_layout(shift, buckets));
        }
    }

    fn interleaved(mut q: Queue) {
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
                    // Now and then far ahead (beyond a small ring).
                    let ahead = if r % 10 == 0 { 40 + next() % 200 } else { next() % 8 };
                    (now + ahead, Event::Arrival { client: inserted as u32 })
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
            Event::SeenDown {
                node: 5,
                gen: 6,
                audience: Audience::Everyone,
            },
            Event::SeenDown {
                node: 5,
                gen: 6,
                audience: Audience::Peers,
            },
            Event::SeenDown {
                node: 5,
                gen: 6,
                audience: Audience::Clients,
            },
            Event::PauseConvicted { node: 4, pause: 3 },
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
