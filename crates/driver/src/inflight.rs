//! Open sends without a "request started" hook: tickets matched by start time, and expiry.
//!
//! The driver calls `pick` for a request's first target, sends, and later reports the attempt's
//! end with `on_request_success` / `on_request_failure` (node and measured latency, no request
//! identity). It reports nothing when the send never happens or its end is never observed: no
//! connection could be had for the picked node, a speculative attempt lost and was dropped, or
//! the request timed out on the client. A count of requests in flight taken in `pick` and
//! given back in the callbacks would leak in those cases and drift up for ever; and retries
//! (to the same node or the plan's next ones) end attempts that `pick` never counted.
//!
//! The rule here: every pick opens a ticket (a runtime send) stamped with the pick time and the
//! async task it ran in ([`Owner`]). The driver runs a request's plan and reports its attempts'
//! ends inside the request's own task, so an end made in a task that holds an open ticket of
//! the node ends that ticket: an exact pairing, whatever the clocks say. Matching by time alone
//! let an end take another request's ticket of the node (with several shards, the ending
//! thread's own shard is searched first and may hold only another request's older ticket);
//! the robbed request's end then found no ticket picked before it started within the window,
//! and the robber's own ticket stayed open: a request stuck at the node, to the ranking's wait
//! bound, until the TTL, which keeps the node out of that shard's choices for seconds. By time, for ends and tickets
//! without a task (or an end whose task holds none): an
//! attempt's end is matched to the node's latest open ticket picked no later than the attempt
//! started (`now - latency`) and no earlier than [`Tickets::match_window_ns`] before it (else
//! the first one picked up to 1 ms after it, for clock readings a little apart): the
//! first attempt starts right after its pick, so it finds its own ticket (or an equivalent
//! one of the same node picked at the same moment). An end that matches no ticket (a retry, a
//! fallback or speculative attempt) is an *untracked* attempt: the caller counts it as a send
//! ended at once, so the policy still learns its latency and its counts stay balanced. A
//! ticket nobody ends expires [`Tickets::ttl_ns`] after its pick and ends as a time-out. So an
//! in-flight count can be wrong only for tickets younger than the TTL, never for longer, and
//! at quiescence (no request out, TTL passed) every count is zero. A node keeps at most
//! [`Tickets::max_per_node`] open tickets; beyond that the oldest ends as a time-out at once.

use replica_lb_policy::NodeId;
use replica_lb_runtime::Ticket;
use rustc_hash::FxHasher;
use std::collections::VecDeque;
use std::hash::{Hash, Hasher};

/// How far back from an attempt's start a ticket is searched (entries skipped), at most.
const MAX_SCAN: usize = 64;
/// A ticket picked at most this long after an attempt's computed start still matches it.
const SKEW_NS: u64 = 1_000_000;

/// The async task a pick or an end ran in: a hash of its tokio task id (FxHash of one `u64`
/// is a bijection, so two live tasks never share an owner).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Owner(pub u64);

impl Owner {
    /// The running tokio task's owner, `None` outside a task.
    #[inline]
    pub fn current() -> Option<Owner> {
        tokio::task::try_id().map(|id| {
            let mut h = FxHasher::default();
            id.hash(&mut h);
            Owner(h.finish())
        })
    }
}

#[derive(Clone, Copy, Debug)]
struct Open {
    picked_ns: u64,
    ticket: Ticket,
    ended: bool,
    owner: Option<Owner>,
}

/// The open tickets of every node, in pick order.
#[derive(Debug)]
pub struct Tickets {
    per_node: Vec<VecDeque<Open>>,
    /// Entries not ended yet, over all nodes.
    open: usize,
    /// A ticket older than this ends as a time-out.
    pub ttl_ns: u64,
    /// An attempt matches only tickets picked at most this long before it started.
    pub match_window_ns: u64,
    /// Open tickets per node at most.
    pub max_per_node: usize,
}

impl Tickets {
    /// No open tickets; see the fields for the three bounds.
    pub fn new(ttl_ns: u64, match_window_ns: u64, max_per_node: usize) -> Self {
        Tickets {
            per_node: Vec::new(),
            open: 0,
            ttl_ns,
            match_window_ns,
            max_per_node: max_per_node.max(1),
        }
    }

    /// Tickets not ended yet.
    pub fn open(&self) -> usize {
        self.open
    }

    /// Tickets of `node` not ended yet.
    pub fn open_for(&self, node: NodeId) -> usize {
        self.per_node.get(node.index()).map_or(0, |q| q.iter().filter(|o| !o.ended).count())
    }

    /// Records a pick of `node` at `now_ns` (never earlier than the previous record: the
    /// caller keeps its clock monotonic) made in the task `owner`. Returns a ticket pushed out
    /// by the per-node bound, which the caller ends as a time-out.
    #[inline]
    pub fn opened(&mut self, node: NodeId, ticket: Ticket, now_ns: u64, owner: Option<Owner>) -> Option<Ticket> {
        if self.per_node.len() <= node.index() {
            self.per_node.resize_with(node.index() + 1, VecDeque::new);
        }
        let q = &mut self.per_node[node.index()];
        let mut evicted = None;
        if q.len() >= self.max_per_node {
            while let Some(o) = q.pop_front() {
                if !o.ended {
                    self.open -= 1;
                    evicted = Some(o.ticket);
                    break;
                }
            }
        }
        q.push_back(Open {
            picked_ns: now_ns,
            ticket,
            ended: false,
            owner,
        });
        self.open += 1;
        evicted
    }

    /// The ticket an attempt on `node` that started at `started_ns` and ended in the task
    /// `owner` ends, if any (see the module docs); `None` means an untracked attempt.
    #[inline]
    pub fn take(&mut self, node: NodeId, started_ns: u64, owner: Option<Owner>) -> Option<Ticket> {
        let q = self.per_node.get_mut(node.index())?;
        // The common case: the node's latest pick is this attempt's (the same task; or, without
        // one, open and picked before it started, within the window): no search.
        if let Some(last) = q.back() {
            let own = match owner {
                Some(_) => last.owner == owner,
                None => last.picked_ns <= started_ns && last.picked_ns >= started_ns.saturating_sub(self.match_window_ns),
            };
            if !last.ended && own {
                let ticket = last.ticket;
                q.pop_back();
                while q.back().is_some_and(|o| o.ended) {
                    q.pop_back();
                }
                self.open -= 1;
                return Some(ticket);
            }
        }
        self.take_slow(node, started_ns, owner)
    }

    fn take_slow(&mut self, node: NodeId, started_ns: u64, owner: Option<Owner>) -> Option<Ticket> {
        let q = self.per_node.get_mut(node.index())?;
        // This task's latest open ticket of the node, however many picks came since.
        let mut found = owner.and_then(|o| q.iter().rposition(|x| !x.ended && x.owner == Some(o)));
        if found.is_none() {
            // By time, among the tickets an end of this task may take: any (an end outside a
            // task) or those picked outside a task (an end whose task holds none, such as a
            // retry after its first attempt ended the pick's ticket).
            let takes = |x: &Open| !x.ended && (owner.is_none() || x.owner.is_none());
            let end = q.partition_point(|o| o.picked_ns <= started_ns);
            let oldest = started_ns.saturating_sub(self.match_window_ns);
            // The latest open ticket picked before the attempt started, within the window...
            found = (0..end)
                .rev()
                .take(MAX_SCAN)
                .take_while(|&i| q[i].picked_ns >= oldest)
                .find(|&i| takes(&q[i]));
            if found.is_none() {
                // ...else the first picked just after it (the caller's clock and the driver's
                // differ by the few microseconds between a pick and its callback's reading).
                let latest = started_ns.saturating_add(SKEW_NS);
                found = (end..q.len())
                    .take(MAX_SCAN)
                    .take_while(|&i| q[i].picked_ns <= latest)
                    .find(|&i| takes(&q[i]));
            }
        }
        let i = found?;
        q[i].ended = true;
        self.open -= 1;
        let ticket = q[i].ticket;
        while q.front().is_some_and(|o| o.ended) {
            q.pop_front();
        }
        while q.back().is_some_and(|o| o.ended) {
            q.pop_back();
        }
        Some(ticket)
    }

    /// Ends the tickets picked at or before `now_ns - ttl_ns`, handing each to `expired`, at
    /// most `max` of them; returns whether more are due.
    pub fn expire(&mut self, now_ns: u64, max: usize, mut expired: impl FnMut(Ticket)) -> bool {
        let Some(limit) = now_ns.checked_sub(self.ttl_ns) else {
            return false;
        };
        let mut handed = 0;
        for q in &mut self.per_node {
            while let Some(o) = q.front() {
                if !o.ended && o.picked_ns > limit {
                    break;
                }
                if !o.ended && handed == max {
                    return true;
                }
                let o = q.pop_front().expect("front exists");
                if !o.ended {
                    self.open -= 1;
                    handed += 1;
                    expired(o.ticket);
                }
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use replica_lb_runtime::ledger::Ledger;

    const MS: u64 = 1_000_000;

    fn setup() -> (Ledger, Tickets) {
        (Ledger::new(), Tickets::new(1_000 * MS, 50 * MS, 1_000))
    }

    fn pick(l: &mut Ledger, t: &mut Tickets, node: u16, now: u64) -> Ticket {
        let id = l.open();
        let ticket = l.send(id, NodeId(node)).unwrap();
        l.close(id);
        assert!(t.opened(NodeId(node), ticket, now, None).is_none());
        ticket
    }

    #[test]
    fn an_attempt_ends_its_own_pick_and_a_lost_one_expires() {
        let (mut l, mut t) = setup();
        let leaked = pick(&mut l, &mut t, 0, 10 * MS); // no connection: never ends
        let a = pick(&mut l, &mut t, 0, 20 * MS);
        let b = pick(&mut l, &mut t, 0, 21 * MS);
        // b's attempt started at 21 ms and ended at 30: it ends b, not the leaked one.
        assert_eq!(t.take(NodeId(0), 21 * MS, None), Some(b));
        assert_eq!(t.take(NodeId(0), 20 * MS, None), Some(a));
        assert_eq!(t.open(), 1);
        // A retry started at 500 ms has no ticket in its window: untracked.
        assert_eq!(t.take(NodeId(0), 500 * MS, None), None);
        // The leaked ticket expires after the TTL, exactly once.
        let mut gone = Vec::new();
        assert!(!t.expire(1_009 * MS, 8, |x| gone.push(x)));
        assert!(gone.is_empty(), "not yet");
        assert!(!t.expire(1_010 * MS, 8, |x| gone.push(x)));
        assert_eq!(gone, [leaked]);
        t.expire(5_000 * MS, 8, |x| gone.push(x));
        assert_eq!((gone.len(), t.open()), (1, 0));
    }

    #[test]
    fn an_end_in_the_picking_task_ends_that_tasks_ticket_whatever_the_clocks_say() {
        let (mut l, mut t) = setup();
        let (task_a, task_b) = (Some(Owner(1)), Some(Owner(2)));
        let open = |l: &mut Ledger, t: &mut Tickets, at: u64, owner| {
            let id = l.open();
            let x = l.send(id, NodeId(0)).unwrap();
            l.close(id);
            assert!(t.opened(NodeId(0), x, at, owner).is_none());
            x
        };
        let a = open(&mut l, &mut t, 0, task_a);
        let b = open(&mut l, &mut t, 10 * MS, task_b);
        // a's end, by time, seems to have started at 12 ms (its callback ran late), after b's
        // pick, and would take b, leaving a open until the TTL. Its task says it is a's.
        assert_eq!(t.take(NodeId(0), 12 * MS, task_a), Some(a));
        assert_eq!(t.take(NodeId(0), 11 * MS, task_b), Some(b));
        // A retry in a's task after its ticket ended is untracked, not another task's ticket.
        let c = open(&mut l, &mut t, 20 * MS, task_b);
        assert_eq!(t.take(NodeId(0), 21 * MS, task_a), None);
        // A ticket picked outside a task is matched by time, also by an end inside one.
        let d = open(&mut l, &mut t, 30 * MS, None);
        assert_eq!(t.take(NodeId(0), 31 * MS, task_a), Some(d));
        // And an end outside a task is matched by time among them all.
        assert_eq!(t.take(NodeId(0), 20 * MS, None), Some(c));
        assert_eq!(t.open(), 0);
    }

    #[test]
    fn a_task_finds_its_ticket_behind_many_newer_picks() {
        let (mut l, mut t) = setup();
        let mut opened = Vec::new();
        for i in 0..(MAX_SCAN as u64 * 2) {
            let id = l.open();
            let x = l.send(id, NodeId(3)).unwrap();
            l.close(id);
            assert!(t.opened(NodeId(3), x, i * 1_000, Some(Owner(i))).is_none());
            opened.push(x);
        }
        // The first pick's end, long after: more than MAX_SCAN newer picks, out of the window.
        assert_eq!(t.take(NodeId(3), 900 * MS, Some(Owner(0))), Some(opened[0]));
        assert_eq!(t.open_for(NodeId(3)), MAX_SCAN * 2 - 1);
    }

    #[test]
    fn the_running_tasks_owner_is_its_own_and_none_outside_a_task() {
        assert_eq!(Owner::current(), None);
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let (a, b) = rt.block_on(async {
            let a = tokio::spawn(async { Owner::current() }).await.unwrap();
            let b = tokio::spawn(async { Owner::current() }).await.unwrap();
            (a, b)
        });
        assert!(a.is_some() && b.is_some() && a != b, "{a:?} {b:?}");
    }

    #[test]
    fn the_per_node_bound_pushes_out_the_oldest_open_ticket() {
        let mut l = Ledger::new();
        let mut t = Tickets::new(1_000 * MS, 50 * MS, 2);
        let first = {
            let id = l.open();
            let x = l.send(id, NodeId(1)).unwrap();
            assert!(t.opened(NodeId(1), x, 0, None).is_none());
            x
        };
        let id = l.open();
        let second = l.send(id, NodeId(1)).unwrap();
        assert!(t.opened(NodeId(1), second, 1, None).is_none());
        let id = l.open();
        let third = l.send(id, NodeId(1)).unwrap();
        assert_eq!(t.opened(NodeId(1), third, 2, None), Some(first));
        assert_eq!(t.open_for(NodeId(1)), 2);
        assert_eq!(t.take(NodeId(7), 2, None), None, "an unknown node has no tickets");
    }
}
