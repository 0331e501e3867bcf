//! The event queue: a binary heap keyed by (time, sequence). The sequence number breaks ties
//! in insertion order, so a run is a pure function of its inputs.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// What happens (the payload fields' meaning depends on the kind; see the engine).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A client issues its next request (`a` = client).
    Arrival,
    /// A request reaches its coordinator (`a` = request, `b` = generation).
    AtCoordinator,
    /// A replica op reaches its node (`a` = op).
    AtReplica,
    /// A stage finished serving an op (`a` = op, `b` = stage: 0 cpu, 1 disk, 2 coordinator).
    StageDone,
    /// A replica's reply reaches the requester (`a` = op).
    ReplyArrives,
    /// The coordinator's answer reaches the client (`a` = request, `b` = generation).
    AtClient,
    /// A speculative-retry timer (`a` = request, `b` = generation).
    Speculate,
    /// Retry a rate-limited backlog (`a` = requester, `b` = group).
    RetryBacklog,
    /// A probe reaches its node (`a` = requester, `b` = node).
    ProbeAtNode,
    /// A probe's answer reaches the requester (`a` = requester, `b` = node, `c` = in-flight
    /// count in the high 32 bits and latency estimate in us in the low 32).
    ProbeReply,
    /// A gossiped hit rate arrives (`a` = node, `b` = 0 for everyone or target requester + 1,
    /// `c` = rate bits).
    Gossip,
    /// The next fault action (`a` = action index).
    Fault,
    /// Failure detector: peers see node `a` down (`b` = node generation).
    SeenDown,
    /// Peers see node `a` up (`b` = node generation).
    SeenUp,
    /// A fluctuation step of fault `a`.
    Fluctuate,
    /// Once per second: trackers, gossip, disk-queue samples, progress.
    Tick,
}

/// One scheduled event.
#[derive(Clone, Copy, Debug)]
pub struct Event {
    /// When, ns.
    pub t: u64,
    seq: u64,
    /// What.
    pub kind: Kind,
    /// First payload.
    pub a: u32,
    /// Second payload.
    pub b: u32,
    /// Third payload.
    pub c: u64,
}

impl PartialEq for Event {
    fn eq(&self, other: &Self) -> bool {
        self.t == other.t && self.seq == other.seq
    }
}
impl Eq for Event {}
impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Event {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap and we want the earliest first.
        (other.t, other.seq).cmp(&(self.t, self.seq))
    }
}

/// The simulator's agenda.
#[derive(Debug, Default)]
pub struct Queue {
    heap: BinaryHeap<Event>,
    seq: u64,
}

impl Queue {
    /// An empty agenda.
    pub fn new() -> Self {
        Queue {
            heap: BinaryHeap::with_capacity(1 << 12),
            seq: 0,
        }
    }

    /// Schedules an event.
    #[inline]
    pub fn push(&mut self, t: u64, kind: Kind, a: u32, b: u32, c: u64) {
        self.seq += 1;
        self.heap.push(Event {
            t,
            seq: self.seq,
            kind,
            a,
            b,
            c,
        });
    }

    /// Re-schedules a deferred event at a later time, keeping its payload.
    pub fn repush(&mut self, t: u64, e: Event) {
        self.push(t, e.kind, e.a, e.b, e.c);
    }

    /// The earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<Event> {
        self.heap.pop()
    }

    /// Events waiting.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether none wait.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_ties_in_insertion_order() {
        let mut q = Queue::new();
        q.push(5, Kind::Tick, 1, 0, 0);
        q.push(3, Kind::Tick, 2, 0, 0);
        q.push(5, Kind::Tick, 3, 0, 0);
        let order: Vec<u32> = std::iter::from_fn(|| q.pop()).map(|e| e.a).collect();
        assert_eq!(order, vec![2, 1, 3]);
    }
}
