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

impl std::ops::AddAssign for AdapterStats {
    fn add_assign(&mut self, o: AdapterStats) {
        self.runtime += o.runtime;
        self.picks += o.picks;
        self.matched += o.matched;
        self.untracked += o.untracked;
        self.expired += o.expired;
        self.open += o.open;
        self.overridden += o.overridden;
        self.unmapped += o.unmapped;
    }
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

    /// Tells the policy news about the node with `host` that came outside a reply (a hit rate
    /// polled off the request path). Ignored for a host no pick has met yet: the policy knows
    /// nothing of it either, and the next poll tells it again.
    pub fn info(&mut self, host: uuid::Uuid, feedback: &Feedback, now_ns: u64) {
        let now = self.clock(now_ns);
        if let Some(id) = self.nodes.get(host) {
            self.rt.on_info(id, feedback, now);
        }
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

    /// An attempt on `key` that took `latency_ns` ended at `now_ns` with `outcome`: it ends
    /// its pick's ticket, or counts as a send ended at once when none matches.
    pub fn complete(&mut self, key: &NodeKey<'_>, latency_ns: u64, outcome: Outcome, now_ns: u64) {
        if !self.complete_matched(key, latency_ns, outcome, now_ns) {
            self.complete_untracked(key, latency_ns, outcome, now_ns);
        }
    }

    /// Ends the attempt against its pick's ticket; `false` (nothing done) when no ticket of
    /// this core matches (another shard may hold it).
    pub fn complete_matched(&mut self, key: &NodeKey<'_>, latency_ns: u64, outcome: Outcome, now_ns: u64) -> bool {
        let now = self.clock(now_ns);
        self.sweep(now);
        let Some(node) = self.nodes.lookup(key) else {
            return false;
        };
        let Some(ticket) = self.tickets.take(node, now.saturating_sub(latency_ns)) else {
            return false;
        };
        self.stats.matched += 1;
        self.end(ticket, latency_ns, outcome, now);
        true
    }

    /// Ends an attempt no pick matched (a retry, a fallback or speculative attempt, a late
    /// end) as a send ended at once, so the policy learns its latency and stays balanced.
    pub fn complete_untracked(&mut self, key: &NodeKey<'_>, latency_ns: u64, outcome: Outcome, now_ns: u64) {
        let now = self.clock(now_ns);
        // The node answered or failed: it is there (its liveness is read at the next pick).
        let Some(node) = self.nodes.get(key.host_id).or_else(|| self.map(key, true, now)) else {
            self.stats.unmapped += 1;
            return;
        };
        self.stats.untracked += 1;
        let id = self.rt.dispatch_fixed(&[node], now);
        self.rt.close(id);
        self.end(id.ticket(0), latency_ns, outcome, now);
    }

    fn end(&mut self, ticket: Ticket, latency_ns: u64, outcome: Outcome, now: u64) {
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
            // In batches: the runtime cannot be called while the tickets are borrowed.
            let mut n = 0;
            let more = self.tickets.expire(now, expired.len(), |t| {
                expired[n] = t;
                n += 1;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::DRIVER;
    use policy::{ParamTable, ParamValue, Rng, Side, POLICIES};
    use runtime::RuntimeConfig;
    use uuid::Uuid;

    const MS: u64 = 1_000_000;

    fn core(name: &str, ttl_ms: u64) -> Core {
        let mut params = ParamTable::new();
        if name == "c3" {
            params.insert("rate_control".into(), ParamValue::Bool(false));
        }
        let config = RuntimeConfig {
            local: None,
            seed: 9,
            max_waiting: 16,
        };
        let rt = Runtime::build(name, Side::Client, &params, DRIVER, config).unwrap();
        Core::new(rt, NodeTable::new(None, None), Tickets::new(ttl_ms * MS, 50 * MS, 1_000))
    }

    fn key(n: usize) -> NodeKey<'static> {
        const DCS: [&str; 2] = ["dc1", "dc2"];
        NodeKey {
            host_id: Uuid::from_u128(0xabc0 + n as u128),
            datacenter: Some(DCS[n % 2]),
            rack: Some("r1"),
            object: 0,
        }
    }

    fn replicas(first: usize, live: [bool; 3]) -> impl Iterator<Item = (NodeKey<'static>, bool)> {
        (0..3).map(move |i| (key((first + i) % 6), live[i]))
    }

    /// Every policy the driver can serve, driven through the core with replies, failures,
    /// untracked ends (retries), lost attempts and nodes going down: the counts end at zero.
    #[test]
    fn every_policy_balances_its_counts() {
        for info in POLICIES.iter().filter(|p| p.side.serves(Side::Client)) {
            if info.needs.check(DRIVER.provides, info.name, DRIVER.name).is_err() {
                continue;
            }
            let mut c = core(info.name, 1_000);
            let mut rng = Rng::seed_from_u64(4);
            let mut out: Vec<(u64, usize, u64)> = Vec::new(); // (due, node, started)
            for step in 0..20_000u64 {
                let now = step * 100_000; // 0.1 ms apart
                let first = rng.below(6);
                let down = (step / 5_000) % 3; // one replica position down for a while
                let live = [down != 0 || step < 5_000, true, true];
                if let Some(pos) = c.pick(replicas(first, live), true, now) {
                    assert!(live[pos], "{}: chose a down node", info.name);
                    let node = (first + pos) % 6;
                    match rng.below(20) {
                        0 => {} // lost: never ends
                        1 => {
                            // The first attempt fails, the retry on the same node succeeds.
                            out.push((now + MS, node, now));
                            out.push((now + 3 * MS, node, now + MS));
                        }
                        _ => out.push((now + (1 + rng.below(20) as u64) * 100_000, node, now)),
                    }
                }
                let due: Vec<_> = out.iter().filter(|o| o.0 <= now).copied().collect();
                out.retain(|o| o.0 > now);
                for (at, node, started) in due {
                    let outcome = if rng.below(10) == 0 {
                        Outcome::Failed(Failure::Error)
                    } else {
                        Outcome::Reply
                    };
                    c.complete(&key(node), at - started, outcome, at);
                }
            }
            for (at, node, started) in out.drain(..) {
                c.complete(&key(node), at - started, Outcome::Reply, at);
            }
            let s = c.stats();
            assert!(s.open > 0 && s.untracked > 0, "{}: {s:?}", info.name);
            c.settle(20_000 * 100_000 + 1_000 * MS);
            c.check_quiescent().unwrap_or_else(|e| panic!("{e}"));
            let s = c.stats();
            assert_eq!(s.runtime.sends, s.runtime.replies + s.runtime.failures, "{}: {s:?}", info.name);
            assert_eq!(s.picks, s.matched + s.expired, "{}: {s:?}", info.name);
            assert_eq!(s.overridden, 0, "{}: {s:?}", info.name);
            assert_eq!(s.runtime.violations, 0);
        }
    }

    #[test]
    fn a_lost_pick_counts_until_the_ttl_and_no_longer() {
        let mut c = core("least-outstanding", 100);
        let pos = c.pick(replicas(0, [true, false, false]), true, 0).unwrap();
        assert_eq!(pos, 0, "the only live replica");
        assert_eq!(c.in_flight(key(0).host_id), 1);
        // Before the TTL it still counts, and steers the next picks away.
        let next = c.pick(replicas(0, [true, true, true]), true, 50 * MS).unwrap();
        assert_ne!(next, 0);
        c.complete(&key(next), MS, Outcome::Reply, 51 * MS);
        c.settle(99 * MS);
        assert_eq!(c.in_flight(key(0).host_id), 1);
        c.settle(100 * MS);
        assert_eq!(c.in_flight(key(0).host_id), 0);
        assert_eq!(c.stats().expired, 1);
        c.check_quiescent().unwrap();
        // A late end of the expired pick is untracked, not a violation.
        c.complete(&key(0), 150 * MS, Outcome::Reply, 150 * MS);
        assert_eq!(c.stats().untracked, 1);
        c.check_quiescent().unwrap();
    }

    #[test]
    fn no_live_node_means_no_pick_and_down_nodes_are_reported() {
        let mut c = core("datastax-default", 100);
        assert_eq!(c.pick(replicas(0, [false; 3]), true, 0), None);
        assert_eq!(c.stats().picks, 0);
        // They come back: the policy hears it, and picks work.
        assert!(c.pick(replicas(0, [true; 3]), true, MS).is_some());
        // An end for a node never seen is mapped, counted untracked.
        c.complete(&key(5), MS, Outcome::Reply, 2 * MS);
        assert_eq!(c.stats().untracked, 1);
    }
}
