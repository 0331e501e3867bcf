//! The adapter's state without the driver's types: one policy in its runtime, the node table
//! and the open tickets, driven by host ids, times and outcomes.
//!
//! [`crate::ReplicaLbPolicy`] keeps one `Core` behind a mutex and holds it only for the few
//! tens of nanoseconds a decision or a callback takes (no I/O, no allocation once every node
//! is known, no await). Everything here is deterministic given its inputs, which is what the
//! unit and concurrency tests drive.

use crate::inflight::{Owner, Tickets};
use crate::nodes::{Liveness, NodeKey, NodeTable};
use replica_lb_policy::{Failure, Feedback, NodeCaps, NodeId, Request, MAX_REPLICAS};
use replica_lb_runtime::{Immediate, Runtime, RuntimeStats, Ticket};
use scylla::routing::Sharder;

/// Request group of requests without a token (no replica set to name).
const TOKENLESS_GROUP: u64 = u64::MAX - 1;

/// How long a node's liveness, read from the driver, is taken as current for the candidates a
/// pick offers the policy (the chosen node's is always read again).
pub const LIVENESS_TTL_NS: u64 = 1_000_000;

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
    /// Chosen nodes found without a connection (their liveness was read earlier): the send
    /// ended at once as a lost connection, and the choice was made again.
    pub not_connected: u64,
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
        self.not_connected += o.not_connected;
    }
}

/// One policy, its runtime, its nodes and its open tickets.
pub struct Core {
    rt: Runtime<()>,
    nodes: NodeTable,
    tickets: Tickets,
    last_now: u64,
    next_sweep_ns: u64,
    /// The node the last pick chose.
    chosen: NodeId,
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
            chosen: NodeId(0),
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

    #[cold]
    fn topology_changed(&mut self) {
        let zones = self.nodes.zones();
        self.rt.set_topology(&zones, self.nodes.local_zone());
    }

    #[inline]
    fn tell_liveness(&mut self, id: NodeId, change: Option<Liveness>, now: u64) {
        match change {
            Some(Liveness::WentDown) => self.rt.on_node_down(id, now),
            Some(Liveness::CameUp) => self.rt.on_node_up(id, NodeCaps::default(), now),
            None => {}
        }
    }

    /// Reads whether candidate `i` (node `id`) is live, records it and tells the policy of a
    /// change.
    #[inline]
    fn read_live(&mut self, id: NodeId, live: &mut impl FnMut(usize) -> bool, i: usize, now: u64) -> bool {
        let is_live = live(i);
        let change = self.nodes.set_live(id, is_live, now);
        self.tell_liveness(id, change, now);
        is_live
    }

    /// Chooses one of `n` candidate nodes (`key(i)` names the `i`-th; at most
    /// [`MAX_REPLICAS`] are read) for a request: token-aware when they are the key's replicas.
    /// `live(i)` says whether the `i`-th is live now (connected); it is asked only when the
    /// node's last reading is older than [`LIVENESS_TTL_NS`], and always for the chosen node
    /// (so a pick never lands on a node known to be down): a chosen node found down ends its
    /// send at once as a lost connection ([`AdapterStats::not_connected`]) and the choice is
    /// made again without it. Returns the position of the chosen node, which counts as sent
    /// (its ticket held for the task `owner`, [`Owner`]), or `None` when no node is live.
    pub fn pick<'k>(
        &mut self,
        n: usize,
        key: impl Fn(usize) -> NodeKey<'k>,
        mut live: impl FnMut(usize) -> bool,
        token_aware: bool,
        now_ns: u64,
        owner: Option<Owner>,
    ) -> Option<usize> {
        let now = self.clock(now_ns);
        self.sweep(now);
        let n = n.min(MAX_REPLICAS);
        // Every candidate's id (a node beyond the table's bound is left out), in order, and
        // the live ones among them.
        let mut ids = [NodeId(0); MAX_REPLICAS];
        let mut at = [0u8; MAX_REPLICAS];
        let mut m = 0;
        let mut cands = [NodeId(0); MAX_REPLICAS];
        let mut of = [0u8; MAX_REPLICAS];
        let mut c = 0;
        let mut group: u64 = 0xcbf2_9ce4_8422_2325;
        // Bit j: the liveness of ids[j] was read in this call.
        let mut fresh: u64 = 0;
        for i in 0..n {
            let Some(r) = self.nodes.resolve(&key(i)) else {
                continue;
            };
            if r.new_zone_info {
                self.topology_changed();
            }
            group = (group ^ r.id.0 as u64).wrapping_mul(0x0100_0000_01b3);
            let is_live = if r.new {
                // First sighting: read it now (a node first seen down is news to the policy).
                let is_live = live(i);
                self.nodes.set_live(r.id, is_live, now);
                if !is_live {
                    self.rt.on_node_down(r.id, now);
                }
                fresh |= 1 << m;
                is_live
            } else {
                match self.nodes.liveness(r.id) {
                    (cached, Some(t)) if now.saturating_sub(t) < LIVENESS_TTL_NS => cached,
                    _ => {
                        fresh |= 1 << m;
                        self.read_live(r.id, &mut live, i, now)
                    }
                }
            };
            ids[m] = r.id;
            at[m] = i as u8;
            if is_live {
                cands[c] = r.id;
                of[c] = m as u8;
                c += 1;
            }
            m += 1;
        }
        loop {
            if c == 0 {
                return None;
            }
            let req = Request {
                candidates: &cands[..c],
                replicas: None,
                count: 1,
                local: None,
                group: if token_aware { group } else { TOKENLESS_GROUP },
            };
            let (node, ticket) = match self.rt.submit_now(&req, now) {
                Immediate::Send { node, ticket } => (node, ticket),
                // The driver cannot hold a request back (pick answers at once) and the builder
                // refuses rate control, so a refusal is a policy bug; serve the request anyway
                // and count the send so every end balances.
                Immediate::Refused | Immediate::Unavailable => self.overridden(cands[0], now),
            };
            let k = cands[..c].iter().position(|&x| x == node).unwrap_or(0);
            let j = of[k] as usize;
            if fresh & (1 << j) == 0 {
                fresh |= 1 << j;
                if !self.read_live(node, &mut live, at[j] as usize, now) {
                    // Its connection went since it was last read: the send cannot happen. The
                    // choice is made again among the others, each read now.
                    self.stats.not_connected += 1;
                    let _ = self.rt.on_failure(ticket, Failure::ConnectionLost, now);
                    c = 0;
                    for j in 0..m {
                        let id = ids[j];
                        let is_live = if fresh & (1 << j) != 0 {
                            self.nodes.liveness(id).0
                        } else {
                            fresh |= 1 << j;
                            self.read_live(id, &mut live, at[j] as usize, now)
                        };
                        if is_live {
                            cands[c] = id;
                            of[c] = j as u8;
                            c += 1;
                        }
                    }
                    continue;
                }
            }
            self.stats.picks += 1;
            self.chosen = node;
            if let Some(evicted) = self.tickets.opened(node, ticket, now, owner) {
                self.expire_ticket(evicted, now);
            }
            return Some(at[j] as usize);
        }
    }

    /// The sharder of the node the last [`Self::pick`] chose, read through `read` at most once
    /// per [`crate::nodes::SHARDER_TTL_NS`] ([`NodeTable::sharder`]).
    #[inline]
    pub fn chosen_sharder(&mut self, now_ns: u64, read: impl FnOnce() -> Option<Sharder>) -> Option<&Sharder> {
        let now = self.clock(now_ns);
        self.nodes.sharder(self.chosen, now, read)
    }

    #[cold]
    fn overridden(&mut self, node: NodeId, now: u64) -> (NodeId, Ticket) {
        self.stats.overridden += 1;
        let id = self.rt.dispatch_fixed(&[node], now);
        self.rt.close(id);
        (node, id.ticket(0))
    }

    /// An attempt on `key` that took `latency_ns` ended at `now_ns` with `outcome`, in the task
    /// `owner`: it ends its pick's ticket, or counts as a send ended at once when none matches.
    pub fn complete(&mut self, key: &NodeKey<'_>, latency_ns: u64, outcome: Outcome, now_ns: u64, owner: Option<Owner>) {
        if !self.complete_matched(key, latency_ns, outcome, now_ns, owner) {
            self.complete_untracked(key, latency_ns, outcome, now_ns);
        }
    }

    /// Ends the attempt against its pick's ticket; `false` (nothing done) when no ticket of
    /// this core matches (another shard may hold it).
    pub fn complete_matched(&mut self, key: &NodeKey<'_>, latency_ns: u64, outcome: Outcome, now_ns: u64, owner: Option<Owner>) -> bool {
        let now = self.clock(now_ns);
        self.sweep(now);
        let Some(node) = self.nodes.lookup(key) else {
            return false;
        };
        let Some(ticket) = self.tickets.take(node, now.saturating_sub(latency_ns), owner) else {
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
        let node = match self.nodes.get(key.host_id) {
            Some(id) => id,
            None => match self.nodes.resolve(key) {
                Some(r) => {
                    if r.new_zone_info {
                        self.topology_changed();
                    }
                    r.id
                }
                None => {
                    self.stats.unmapped += 1;
                    return;
                }
            },
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
    #[inline]
    fn sweep(&mut self, now: u64) {
        if now >= self.next_sweep_ns {
            self.sweep_now(now);
        }
    }

    #[cold]
    fn sweep_now(&mut self, now: u64) {
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
    use replica_lb_policy::{ParamTable, ParamValue, Rng, Side, POLICIES};
    use replica_lb_runtime::RuntimeConfig;
    use uuid::Uuid;

    const MS: u64 = 1_000_000;

    fn core(name: &str, ttl_ms: u64) -> Core {
        let mut params = ParamTable::new();
        // A policy with rate control runs without it in the driver (as the builder sets it).
        if replica_lb_policy::registry::find(name)
            .unwrap()
            .params
            .iter()
            .any(|p| p.name == crate::builder::RATE_CONTROL)
        {
            params.insert(crate::builder::RATE_CONTROL.into(), ParamValue::Bool(false));
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

    /// A pick among the three replicas from `first` on, with their liveness now.
    fn pick(c: &mut Core, first: usize, live: [bool; 3], now: u64) -> Option<usize> {
        c.pick(3, |i| key((first + i) % 6), |i| live[i], true, now, None)
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
                if let Some(pos) = pick(&mut c, first, live, now) {
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
                    c.complete(&key(node), at - started, outcome, at, None);
                }
            }
            for (at, node, started) in out.drain(..) {
                c.complete(&key(node), at - started, Outcome::Reply, at, None);
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
        let pos = pick(&mut c, 0, [true, false, false], 0).unwrap();
        assert_eq!(pos, 0, "the only live replica");
        assert_eq!(c.in_flight(key(0).host_id), 1);
        // Before the TTL it still counts, and steers the next picks away.
        let next = pick(&mut c, 0, [true, true, true], 50 * MS).unwrap();
        assert_ne!(next, 0);
        c.complete(&key(next), MS, Outcome::Reply, 51 * MS, None);
        c.settle(99 * MS);
        assert_eq!(c.in_flight(key(0).host_id), 1);
        c.settle(100 * MS);
        assert_eq!(c.in_flight(key(0).host_id), 0);
        assert_eq!(c.stats().expired, 1);
        c.check_quiescent().unwrap();
        // A late end of the expired pick is untracked, not a violation.
        c.complete(&key(0), 150 * MS, Outcome::Reply, 150 * MS, None);
        assert_eq!(c.stats().untracked, 1);
        c.check_quiescent().unwrap();
    }

    /// Liveness is read once per [`LIVENESS_TTL_NS`] for the candidates, and again for the
    /// chosen node: one that lost its connection meanwhile is not picked, its send ends at once.
    #[test]
    fn a_chosen_node_found_down_is_not_picked() {
        let mut c = core("round-robin", 100);
        let mut reads = [0u32; 3];
        for step in 0..3 {
            let pos = c
                .pick(
                    3,
                    key,
                    |i| {
                        reads[i] += 1;
                        true
                    },
                    true,
                    step,
                    None,
                )
                .unwrap();
            c.complete(&key(pos), 0, Outcome::Reply, step, None);
        }
        // Read when first seen, then only when chosen (node 0, chosen first, was just read).
        assert_eq!(reads, [1, 2, 2]);
        // Node 0 loses its connection within the TTL: offered from the cache, read when chosen.
        let mut reads = [0u32; 3];
        for step in 10..16 {
            let pos = c
                .pick(
                    3,
                    key,
                    |i| {
                        reads[i] += 1;
                        i != 0
                    },
                    true,
                    step,
                    None,
                )
                .unwrap();
            assert_ne!(pos, 0);
            c.complete(&key(pos), 0, Outcome::Reply, step, None);
        }
        assert_eq!(reads[0], 1, "read once, when chosen; then known down");
        let s = c.stats();
        assert_eq!((s.not_connected, s.picks, s.matched), (1, 9, 9), "{s:?}");
        assert_eq!(s.runtime.failures, 1);
        assert_eq!(c.in_flight(key(0).host_id), 0);
        c.check_quiescent().unwrap();
        // After the TTL it is read again, and picked once it is back.
        let back = (0..3)
            .map(|k| {
                let now = 2 * LIVENESS_TTL_NS + k;
                let pos = c.pick(3, key, |_| true, true, now, None).unwrap();
                c.complete(&key(pos), 0, Outcome::Reply, now, None);
                pos
            })
            .collect::<Vec<_>>();
        assert!(back.contains(&0), "{back:?}");
        c.check_quiescent().unwrap();
    }

    #[test]
    fn no_live_node_means_no_pick_and_down_nodes_are_reported() {
        let mut c = core("datastax-default", 100);
        assert_eq!(pick(&mut c, 0, [false; 3], 0), None);
        assert_eq!(c.stats().picks, 0);
        // They come back: the policy hears it, and picks work.
        assert!(pick(&mut c, 0, [true; 3], MS).is_some());
        // An end for a node never seen is mapped, counted untracked.
        c.complete(&key(5), MS, Outcome::Reply, 2 * MS, None);
        assert_eq!(c.stats().untracked, 1);
    }
}
