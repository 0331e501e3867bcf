//! Exactly-once accounting of sends, replies and failures.
//!
//! Every request a caller sends goes out under a [`DispatchId`] (one per planned request) and
//! every node it is sent to gets a [`Ticket`]. A ticket ends exactly once, by a reply or a
//! failure; the ledger refuses a second ending ([`Accounting::Duplicate`]) and a ticket it never
//! issued ([`Accounting::Unknown`]), so a policy's in-flight counts can neither drift nor
//! underflow. A dispatch is freed when its caller has closed it (no more sends will follow)
//! and every ticket of it has ended; a reply that comes after that (a reply to a request the
//! caller already gave up on) is [`Accounting::Late`], which is normal and ignored.
//!
//! Slots are reused through a free list, so the steady state allocates nothing.

use replica_lb_policy::{NodeId, MAX_REPLICAS};

/// Hints the CPU to fetch the cache line holding `*r` (no effect on results).
#[inline(always)]
pub(crate) fn prefetch<T: ?Sized>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never dereferences; the address is that of a live reference.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>((r as *const T).cast::<i8>())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}

/// Hints the CPU to fetch the first `bytes` bytes of `*r` (whole cache lines; no effect on
/// results).
#[inline(always)]
pub(crate) fn prefetch_bytes<T>(r: &T, bytes: usize) {
    let start = (r as *const T).cast::<u8>();
    let mut offset = 0;
    while offset < bytes.min(std::mem::size_of::<T>()) {
        // The address of byte `offset` of `*r` (in bounds: `offset < size_of::<T>()`).
        let p = start.wrapping_add(offset);
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch never dereferences; the address lies within `*r`.
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>())
        };
        #[cfg(not(target_arch = "x86_64"))]
        let _ = p;
        offset += 64;
    }
}

/// One planned request's sends. Copy it freely: it is two integers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct DispatchId {
    slot: u32,
    gen: u32,
}

/// One send of a dispatch to one node: hand it back with the reply or the failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Ticket {
    dispatch: DispatchId,
    pos: u8,
}

impl Ticket {
    /// The dispatch this send belongs to.
    pub fn dispatch(self) -> DispatchId {
        self.dispatch
    }
}

impl DispatchId {
    /// The ticket of the `i`-th send of this dispatch (the plan's targets come first, in
    /// order, then extra sends in the order they were made).
    pub fn ticket(self, i: usize) -> Ticket {
        assert!(i < MAX_REPLICAS, "a dispatch has at most {MAX_REPLICAS} sends");
        Ticket {
            dispatch: self,
            pos: i as u8,
        }
    }
}

/// Why a reply or failure was not counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accounting {
    /// The dispatch was already closed and fully ended (a reply after the caller gave up):
    /// normal, ignored.
    Late,
    /// This send already ended once: a caller bug.
    Duplicate,
    /// No such send was ever made: a caller bug.
    Unknown,
}

/// Sends whose node a slot keeps inline; a dispatch with more sends keeps all of them in a
/// spill entry of [`MAX_REPLICAS`] nodes (speculative and fallback sends past a small replica
/// set: rare).
const INLINE: usize = 4;

/// No slot / no spill entry.
const NONE: u32 = u32::MAX;

/// One dispatch, packed into 32 bytes (two to a cache line): with thousands of senders each
/// send and each end touches its slot cold, so a slot is one line, not three. Aligned to its
/// size, so that it never straddles two lines.
#[derive(Clone, Debug)]
#[repr(align(32))]
struct Slot {
    gen: u32,
    /// While the slot is free: the next free slot ([`NONE`]: the last). While live: the spill
    /// entry holding its nodes once it has more than [`INLINE`] sends ([`NONE`]: none).
    link: u32,
    /// Bit i set: send i has ended.
    ended: u64,
    /// The nodes of sends 0..INLINE (all of them while `sent <= INLINE`).
    nodes: [NodeId; INLINE],
    live: bool,
    closed: bool,
    sent: u8,
}

const _: () = assert!(std::mem::size_of::<Slot>() <= 32);

impl Default for Slot {
    fn default() -> Self {
        Slot {
            gen: 0,
            link: NONE,
            ended: 0,
            nodes: [NodeId(0); INLINE],
            live: false,
            closed: false,
            sent: 0,
        }
    }
}

impl Slot {
    fn open_sends(&self) -> u32 {
        self.sent as u32 - self.ended.count_ones()
    }
}

/// The ledger: every dispatch still open or with a send still out. Laid out in declaration
/// order (`repr(C)`): the header every send and end reads first, the spill entries (rare)
/// last.
#[derive(Clone, Debug)]
#[repr(C)]
pub struct Ledger {
    slots: Vec<Slot>,
    /// The first free slot, the head of a list threaded through the free slots' `link`
    /// (last freed first, so the slot reused is the one touched last).
    free: u32,
    outstanding: u64,
    open: u64,
    /// Dispatches with more than [`INLINE`] sends (rare): boxed, so the ledger's header is one
    /// short run of bytes.
    spill: Box<Spill>,
}

/// The nodes of dispatches with more than [`INLINE`] sends.
#[derive(Clone, Debug, Default)]
struct Spill {
    /// All of a dispatch's nodes, by send position.
    entries: Vec<[NodeId; MAX_REPLICAS]>,
    /// Entries not in use.
    free: Vec<u32>,
}

impl Default for Ledger {
    fn default() -> Self {
        Ledger {
            slots: Vec::new(),
            free: NONE,
            spill: Box::default(),
            outstanding: 0,
            open: 0,
        }
    }
}

impl Ledger {
    /// An empty ledger.
    pub fn new() -> Self {
        Ledger::default()
    }

    /// Opens a dispatch with no sends yet.
    pub fn open(&mut self) -> DispatchId {
        let (id, _) = self.claim();
        id
    }

    /// Takes a free slot (or a new one) for a dispatch: live, open, nothing sent; counted open.
    #[inline]
    fn claim(&mut self) -> (DispatchId, &mut Slot) {
        let slot = if self.free != NONE {
            let slot = self.free;
            self.free = self.slots[slot as usize].link;
            slot
        } else {
            self.slots.push(Slot::default());
            (self.slots.len() - 1) as u32
        };
        self.open += 1;
        let s = &mut self.slots[slot as usize];
        debug_assert!(!s.live);
        s.gen = s.gen.wrapping_add(1);
        s.link = NONE;
        s.live = true;
        s.closed = false;
        s.sent = 0;
        s.ended = 0;
        (DispatchId { slot, gen: s.gen }, s)
    }

    /// Hints the CPU to fetch the slot the next dispatch will take (no effect on results):
    /// for a caller that knows a dispatch is coming, while it does other work.
    #[inline]
    pub fn prefetch_next(&self) {
        if let Some(s) = self.slots.get(self.free as usize) {
            prefetch(s);
        }
    }

    /// Hints the CPU to fetch the slot `ticket` ends in (no effect on results).
    #[inline]
    pub fn prefetch_ticket(&self, ticket: Ticket) {
        if let Some(s) = self.slots.get(ticket.dispatch.slot as usize) {
            prefetch(s);
        }
    }

    /// Opens a dispatch with one send, to `node`, already closed (no more sends will follow):
    /// [`Self::open`], [`Self::send`] and [`Self::close`] in one step, for the common cycle of
    /// one request to one node. Freed when its ticket ends.
    #[inline]
    pub fn send_one(&mut self, node: NodeId) -> Ticket {
        let (id, s) = self.claim();
        s.closed = true;
        s.sent = 1;
        s.nodes[0] = node;
        self.outstanding += 1;
        Ticket { dispatch: id, pos: 0 }
    }

    /// The node of send `pos` of slot `slot` (which has made it).
    #[inline]
    fn node_at(&self, slot: &Slot, pos: u8) -> NodeId {
        debug_assert!(pos < slot.sent);
        if slot.link == NONE {
            slot.nodes[pos as usize]
        } else {
            self.spill.entries[slot.link as usize][pos as usize]
        }
    }

    /// Records a send of dispatch `id` to `node`; `None` when the dispatch is closed or gone,
    /// already sent to `node`, or full.
    pub fn send(&mut self, id: DispatchId, node: NodeId) -> Option<Ticket> {
        let s = self.slots.get(id.slot as usize)?;
        if !s.live || s.gen != id.gen || s.closed || s.sent as usize >= MAX_REPLICAS {
            return None;
        }
        if (0..s.sent).any(|p| self.node_at(s, p) == node) {
            return None;
        }
        let pos = s.sent;
        if (pos as usize) < INLINE {
            self.slots[id.slot as usize].nodes[pos as usize] = node;
        } else {
            if pos as usize == INLINE {
                // The first send past the inline ones: every node moves to a spill entry.
                let mut all = [NodeId(0); MAX_REPLICAS];
                all[..INLINE].copy_from_slice(&s.nodes);
                let e = match self.spill.free.pop() {
                    Some(e) => {
                        self.spill.entries[e as usize] = all;
                        e
                    }
                    None => {
                        self.spill.entries.push(all);
                        (self.spill.entries.len() - 1) as u32
                    }
                };
                self.slots[id.slot as usize].link = e;
            }
            let e = self.slots[id.slot as usize].link;
            self.spill.entries[e as usize][pos as usize] = node;
        }
        let s = &mut self.slots[id.slot as usize];
        s.sent += 1;
        self.outstanding += 1;
        Some(Ticket { dispatch: id, pos })
    }

    /// Ends the send `ticket`; returns the node it went to.
    #[inline]
    pub fn end(&mut self, ticket: Ticket) -> Result<NodeId, Accounting> {
        let id = ticket.dispatch;
        let Some(s) = self.slots.get_mut(id.slot as usize) else {
            return Err(Accounting::Unknown);
        };
        if !s.live || s.gen != id.gen {
            // A generation this slot had: the dispatch ended and was freed. A future generation
            // was never issued.
            return if id.gen.wrapping_sub(s.gen) as i32 <= 0 && id.gen != 0 {
                Err(Accounting::Late)
            } else {
                Err(Accounting::Unknown)
            };
        }
        if ticket.pos >= s.sent {
            return Err(Accounting::Unknown);
        }
        let bit = 1u64 << ticket.pos;
        if s.ended & bit != 0 {
            return Err(Accounting::Duplicate);
        }
        s.ended |= bit;
        let s = &self.slots[id.slot as usize];
        let node = self.node_at(s, ticket.pos);
        debug_assert!(self.outstanding > 0, "sends out would underflow");
        self.outstanding -= 1;
        self.free_if_done(id.slot);
        Ok(node)
    }

    /// The sends of `id` that have not ended yet, with their tickets.
    pub fn open_sends(&self, id: DispatchId) -> impl Iterator<Item = (Ticket, NodeId)> + '_ {
        let s = self.slots.get(id.slot as usize).filter(|s| s.live && s.gen == id.gen);
        s.into_iter().flat_map(move |s| {
            (0..s.sent)
                .filter(move |&p| s.ended & (1u64 << p) == 0)
                .map(move |p| (Ticket { dispatch: id, pos: p }, self.node_at(s, p)))
        })
    }

    /// Marks `id` closed: no more sends will follow; freed once every send has ended.
    /// Closing a dispatch twice, or one already gone, does nothing.
    pub fn close(&mut self, id: DispatchId) {
        if let Some(s) = self.slots.get_mut(id.slot as usize) {
            if s.live && s.gen == id.gen && !s.closed {
                s.closed = true;
                self.free_if_done(id.slot);
            }
        }
    }

    #[inline]
    fn free_if_done(&mut self, slot: u32) {
        let s = &mut self.slots[slot as usize];
        if s.closed && s.open_sends() == 0 {
            s.live = false;
            if s.link != NONE {
                self.spill.free.push(s.link);
            }
            s.link = self.free;
            self.free = slot;
            self.open -= 1;
        }
    }

    /// Sends out to `node` right now. A diagnostic: it walks every live dispatch (the hot path
    /// keeps no count per node, so a sender costs nothing per node of a large cluster).
    pub fn in_flight(&self, node: NodeId) -> u32 {
        let mut n = 0;
        for s in self.slots.iter().filter(|s| s.live) {
            for p in 0..s.sent {
                if s.ended & (1u64 << p) == 0 && self.node_at(s, p) == node {
                    n += 1;
                }
            }
        }
        n
    }

    /// Sends out to any node right now.
    pub fn outstanding(&self) -> u64 {
        self.outstanding
    }

    /// Dispatches not freed yet (open, or closed with sends still out).
    pub fn live_dispatches(&self) -> u64 {
        self.open
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_send_ends_exactly_once() {
        let mut l = Ledger::new();
        let id = l.open();
        let a = l.send(id, NodeId(2)).unwrap();
        let b = l.send(id, NodeId(5)).unwrap();
        assert_eq!(a, id.ticket(0));
        assert_eq!(b, id.ticket(1));
        assert!(l.send(id, NodeId(2)).is_none(), "one send per node per dispatch");
        assert_eq!((l.in_flight(NodeId(2)), l.in_flight(NodeId(5)), l.outstanding()), (1, 1, 2));
        assert_eq!(l.end(a), Ok(NodeId(2)));
        assert_eq!(l.end(a), Err(Accounting::Duplicate));
        assert_eq!(l.end(id.ticket(7)), Err(Accounting::Unknown));
        assert_eq!(l.in_flight(NodeId(2)), 0);
        l.close(id);
        assert_eq!(l.live_dispatches(), 1, "a send is still out");
        assert!(l.send(id, NodeId(3)).is_none(), "closed");
        assert_eq!(l.end(b), Ok(NodeId(5)));
        assert_eq!((l.live_dispatches(), l.outstanding()), (0, 0));
        assert_eq!(l.end(b), Err(Accounting::Late), "the dispatch is gone");
    }

    #[test]
    fn a_one_send_dispatch_is_closed_and_freed_by_its_end() {
        let mut l = Ledger::new();
        let t = l.send_one(NodeId(3));
        assert_eq!((l.in_flight(NodeId(3)), l.outstanding(), l.live_dispatches()), (1, 1, 1));
        assert!(l.send(t.dispatch(), NodeId(4)).is_none(), "closed: no more sends");
        assert_eq!(l.end(t), Ok(NodeId(3)));
        assert_eq!((l.in_flight(NodeId(3)), l.outstanding(), l.live_dispatches()), (0, 0, 0));
        assert_eq!(l.end(t), Err(Accounting::Late), "freed with its only send");
        // Its slot is reused, under a new generation.
        let u = l.send_one(NodeId(3));
        assert_eq!(u.dispatch().slot, t.dispatch().slot);
        assert_ne!(u, t);
        assert_eq!(l.end(t), Err(Accounting::Late));
        assert_eq!(l.end(u), Ok(NodeId(3)));
    }

    #[test]
    fn slots_are_reused_and_old_tickets_stay_late() {
        let mut l = Ledger::new();
        let first = l.open();
        let t = l.send(first, NodeId(0)).unwrap();
        l.end(t).unwrap();
        l.close(first);
        let second = l.open();
        assert_eq!(second.slot, first.slot);
        assert_ne!(second.gen, first.gen);
        assert_eq!(l.end(t), Err(Accounting::Late));
        let u = l.send(second, NodeId(0)).unwrap();
        assert_eq!(l.open_sends(second).collect::<Vec<_>>(), [(u, NodeId(0))]);
        assert_eq!(l.end(u), Ok(NodeId(0)));
        assert_eq!(l.end(DispatchId { slot: 9, gen: 1 }.ticket(0)), Err(Accounting::Unknown));
    }

    #[test]
    fn a_dispatch_past_the_inline_sends_spills_and_frees_its_spill() {
        let mut l = Ledger::new();
        for round in 0..3 {
            let id = l.open();
            let tickets: Vec<Ticket> = (0..10u16).map(|n| l.send(id, NodeId(n)).unwrap()).collect();
            assert!(l.send(id, NodeId(7)).is_none(), "one send per node, spilled ones too");
            assert_eq!(l.in_flight(NodeId(7)), 1);
            assert_eq!(l.outstanding(), 10);
            let open: Vec<NodeId> = l.open_sends(id).map(|(_, n)| n).collect();
            assert_eq!(open, (0..10u16).map(NodeId).collect::<Vec<_>>());
            for (n, &t) in tickets.iter().enumerate().rev() {
                assert_eq!(l.end(t), Ok(NodeId(n as u16)));
            }
            l.close(id);
            assert_eq!((l.outstanding(), l.live_dispatches()), (0, 0));
            assert_eq!(l.spill.entries.len(), 1, "round {round}: the spill entry is reused");
        }
        // A reused slot starts inline again.
        let t = l.send_one(NodeId(42));
        assert_eq!(l.end(t), Ok(NodeId(42)));
    }

    #[test]
    fn in_flight_counts_every_open_send_to_a_node() {
        let mut l = Ledger::new();
        let a = l.send_one(NodeId(1));
        let b = l.send_one(NodeId(1));
        let id = l.open();
        let c = l.send(id, NodeId(1)).unwrap();
        l.send(id, NodeId(2)).unwrap();
        assert_eq!((l.in_flight(NodeId(1)), l.in_flight(NodeId(2)), l.in_flight(NodeId(3))), (3, 1, 0));
        l.end(a).unwrap();
        l.end(c).unwrap();
        assert_eq!(l.in_flight(NodeId(1)), 1);
        l.end(b).unwrap();
        assert_eq!(l.in_flight(NodeId(1)), 0);
    }
}
