//! The adapter's state without the driver's types: one policy in its runtime, the node table
//! and the open tickets, driven by host ids, times and outcomes.
//!
//! [`crate::ReplicaLbPolicy`] keeps one `Core` behind a mutex and holds it only for the few
//! tens of nanoseconds a decision or a callback takes (no I/O, no allocation once every node
//! is known, no await). Everything here is deterministic given its inputs, which is what the
//! unit and concurrency tests drive.

use crate::inflight::Tickets;
use crate::nodes::{Liveness, NodeKey, NodeTable};
use policy::{Failure, Feedback, NodeCaps, NodeId, Request, MAX_REPLICAS};
use runtime::{Runtime, RuntimeStats, Submitted, Ticket};

/// Request group of requests without a token (no replica set to name).
const TOKENLESS_GROUP: u64 = u64::MAX - 1;

/// How an attempt ended, as the driver reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The node answered (a result, or an error about the request itself).
    Reply,
    /// The node failed the attempt.
    Failed(Failure),
}

/// Counters of the adapter, beyond the runtime's own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AdapterStats {
    /// The runtime's counters (sends, replies, failures, ...).
    pub runtime: RuntimeStats,
    /// Picks that opened a ticket.
    pub picks: u64,
    /// Attempt ends matched to a pick's ticket.
    pub matched: u64,
    /// Attempt ends with no ticket (retries, fallback and speculative attempts, late ends):
    /// counted as a send ended at once.
    pub untracked: u64,
    /// Tickets that expired (their end was never observed) or were pushed out by the bound.
    pub expired: u64,
    /// Tickets open now.
    pub open: u64,
    /// Picks the policy could not plan (its answer was not a send), served by the first live
    /// candidate instead.
    pub overridden: u64,
    /// Callbacks about hosts beyond the node table's bound, ignored.
    pub unmapped: u64,
}

/// One policy, its runtime, its nodes and its open tickets.
pub struct Core {
    rt: Runtime<()>,
    nodes: NodeTable,
    tickets: Tickets,
    last_now: u64,
    next_sweep_ns: u64,
    stats: AdapterStats,
}

impl Core {
    /// A core over `rt` for a client in `local_dc` / `local_rack`, with `tickets`' bounds.
    pub fn new(rt: Runtime<()>, nodes: NodeTable, tickets: Tickets) -> Self {
        Core {
            rt,
            nodes,
            tickets,
            last_now: 0,
            next_sweep_ns: 0,
            stats: AdapterStats::default(),
        }
    }

    /// The policy's registered name.
    pub fn name(&self) -> &'static str {
        self.rt.name()
    }

    /// A monotonic clock from the caller's (threads may read it in any order).
    fn clock(&mut self, now_ns: u64) -> u64 {
        self.last_now = self.last_now.max(now_ns);
        self.last_now
    }

    /// Maps a node, telling the policy of liveness and zone changes.
    fn map(&mut self, key: &NodeKey<'_>, live: bool, now: u64) -> Option<NodeId> {
        let m = self.nodes.map(key, live)?;
        if m.new_zone_info {
            let zones = self.nodes.zones();
            self.rt.set_topology(&zones, self.nodes.local_zone());
        }
        match m.liveness {
            Some(Liveness::WentDown) => self.rt.on_node_down(m.id, now),
            Some(Liveness::CameUp) => self.rt.on_node_up(m.id, NodeCaps::default(), now),
            None => {}
        }
        Some(m.id)
    }

    /// Chooses one of `seen` (nodes with whether each is live now, at most
    /// [`MAX_REPLICAS`] are read) for a request: token-aware when `seen` are the key's
    /// replicas. Returns the position in `seen` of the chosen node, which counts as sent, or
    /// `None` when no node is live.
    pub fn pick<'k>(&mut self, seen: impl IntoIterator<Item = (NodeKey<'k>, bool)>, token_aware: bool, now_ns: u64) -> Option<usize> {
        let now = self.clock(now_ns);
        self.sweep(now);
        let mut live = [NodeId(0); MAX_REPLICAS];
        let mut pos = [0u8; MAX_REPLICAS];
        let mut n = 0;
        let mut group: u64 = 0xcbf2_9ce4_8422_2325;
        for (i, (key, is_live)) in seen.into_iter().take(MAX_REPLICAS).enumerate() {
            let Some(id) = self.map(&key, is_live, now) else {
                continue;
            };
            group = (group ^ id.0 as u64).wrapping_mul(0x0100_0000_01b3);
            if is_live {
                live[n] = id;
                pos[n] = i as u8;
                n += 1;
            }
        }
        if n == 0 {
            return None;
        }
        let req = Request {
            candidates: &live[..n],
            replicas: None,
            count: 1,
            local: None,
            group: if token_aware { group } else { TOKENLESS_GROUP },
        };
        let chosen = match self.rt.submit(&req, now, || ()) {
            Submitted::Send(d) => {
                self.rt.close(d.id);
                d.targets().next()
            }
            Submitted::Queued => {
                // The driver cannot hold a request back (pick answers at once): the builder
                // refuses rate control, so this is a policy bug; drop the waiting request.
                self.rt.cancel_waiting(|_| true, |_| {});
                None
            }
            Submitted::Unavailable | Submitted::Rejected => None,
        };
        let (node, ticket) = match chosen {
            Some(c) => c,
            None => {
                // Serve the request anyway, and count the send so every end balances.
                self.stats.overridden += 1;
                let id = self.rt.dispatch_fixed(&live[..1], now);
                self.rt.close(id);
                (live[0], id.ticket(0))
            }
        };
        self.stats.picks += 1;
        if let Some(evicted) = self.tickets.opened(node, ticket, now) {
            self.expire_ticket(evicted, now);
        }
        let k = live[..n].iter().position(|&x| x == node).unwrap_or(0);
        Some(pos[k] as usize)
    }

    /// An attempt on `key` that took `latency_ns` ended at `now_ns` with `outcome`.
    pub fn complete(&mut self, key: &NodeKey<'_>, latency_ns: u64, outcome: Outcome, now_ns: u64) {
        let now = self.clock(now_ns);
        self.sweep(now);
        // The node answered or failed: it is there (its liveness is read at the next pick).
        let Some(node) = self.nodes.get(key.host_id).or_else(|| self.map(key, true, now)) else {
            self.stats.unmapped += 1;
            return;
        };
        let ticket = match self.tickets.take(node, now.saturating_sub(latency_ns)) {
            Some(t) => {
                self.stats.matched += 1;
                t
            }
            None => {
                self.stats.untracked += 1;
                let id = self.rt.dispatch_fixed(&[node], now);
                self.rt.close(id);
                id.ticket(0)
            }
        };
        // A ticket issued here cannot be refused; a refusal is counted by the runtime.
        let _ = match outcome {
            Outcome::Reply => self.rt.on_reply(ticket, latency_ns, Feedback::default(), now),
            Outcome::Failed(f) => self.rt.on_failure(ticket, f, now),
        };
    }

    /// Expires old tickets, at most about every 1/16 of the TTL.
    fn sweep(&mut self, now: u64) {
        if now < self.next_sweep_ns {
            return;
        }
        self.next_sweep_ns = now + (self.tickets.ttl_ns / 16).max(1);
        let mut expired = [Ticket::default(); 64];
        loop {
            let mut n = 0;
            // Collect in batches: the runtime cannot be called while the tickets are borrowed.
            let mut more = false;
            self.tickets.expire(now, |t| {
                if n < expired.len() {
                    expired[n] = t;
                    n += 1;
                } else {
                    more = true;
                }
            });
            for &t in &expired[..n] {
                self.expire_ticket(t, now);
            }
            if !more {
                break;
            }
        }
    }

    fn expire_ticket(&mut self, ticket: Ticket, now: u64) {
        self.stats.expired += 1;
        let _ = self.rt.on_failure(ticket, Failure::Timeout, now);
    }

    /// Expires every ticket older than the TTL at `now_ns` (also done on the way by picks and
    /// callbacks).
    pub fn settle(&mut self, now_ns: u64) {
        let now = self.clock(now_ns);
        self.next_sweep_ns = 0;
        self.sweep(now);
    }

    /// Requests in flight to the node with host id `host` as its policy counts them.
    pub fn in_flight(&self, host: uuid::Uuid) -> u32 {
        self.nodes.get(host).map_or(0, |id| self.rt.in_flight(id))
    }

    /// Sends out now, over all nodes.
    pub fn outstanding(&self) -> u64 {
        self.rt.outstanding()
    }

    /// The counters.
    pub fn stats(&self) -> AdapterStats {
        AdapterStats {
            runtime: self.rt.stats(),
            open: self.tickets.open() as u64,
            ..self.stats
        }
    }

    /// Checks that nothing is left open: every ticket ended, the runtime quiescent.
    pub fn check_quiescent(&self) -> Result<(), String> {
        if self.tickets.open() != 0 {
            return Err(format!("{}: {} tickets still open", self.rt.name(), self.tickets.open()));
        }
        self.rt.check_quiescent()
    }
}
