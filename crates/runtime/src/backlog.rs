//! The waiting room for [`replica_lb_policy::Decision::Wait`]: one FIFO per replica group, bounded.
//!
//! A rate-limited policy (C3) may hold a request back. The request then waits in its group's
//! FIFO, and every later request of the same group queues behind it without being planned, so
//! a group's requests leave in arrival order. A group is retried at the time the policy named,
//! or earlier when a reply comes from one of the nodes its head could go to. The total number
//! of waiting requests is bounded ([`Backlog::new`]'s `max_waiting`): at the bound a new
//! request is refused at once rather than queued without limit.
//!
//! Only groups with someone waiting have an entry, and entries are reused, so the steady state
//! allocates nothing and a caller without waiting requests pays one branch.

use replica_lb_policy::{NodeId, ReplicaSet, Request};
use rustc_hash::FxHashMap;
use std::collections::VecDeque;

/// A request kept while it waits: what `plan` needs to be asked again.
#[derive(Clone, Copy, Debug)]
pub struct StoredRequest {
    /// The candidates when it arrived (nodes seen down since are skipped when it is planned
    /// again).
    pub candidates: ReplicaSet,
    /// The key's replicas (`None`: every candidate).
    pub replicas: Option<ReplicaSet>,
    /// How many targets.
    pub count: usize,
    /// The replica group.
    pub group: u64,
}

impl StoredRequest {
    /// Keeps a copy of `req`.
    pub fn of(req: &Request<'_>) -> Self {
        let set = |nodes: &[NodeId]| {
            let mut s = ReplicaSet::new();
            for &n in nodes.iter().take(replica_lb_policy::MAX_REPLICAS) {
                s.push(n);
            }
            s
        };
        StoredRequest {
            candidates: set(req.candidates),
            replicas: req.replicas.map(set),
            count: req.count,
            group: req.group,
        }
    }
}

/// One group's queue.
#[derive(Debug)]
struct Group<T> {
    id: u64,
    queue: VecDeque<(T, StoredRequest)>,
    /// When the policy said to try the head again (`u64::MAX`: no time set).
    retry_at_ns: u64,
    /// A reply or the timer says: try the head now.
    woken: bool,
}

/// Every group's FIFO.
#[derive(Debug)]
pub struct Backlog<T> {
    groups: Vec<Group<T>>,
    /// Group id -> index in `groups`, for groups with an entry.
    index: FxHashMap<u64, u32>,
    /// Indices of `groups` entries not in use.
    spare: Vec<u32>,
    waiting: usize,
    max_waiting: usize,
    /// Rotates which group is tried first, so no group always gets the freed capacity.
    cursor: usize,
}

impl<T> Backlog<T> {
    /// An empty backlog holding at most `max_waiting` requests (at least 1).
    pub fn new(max_waiting: usize) -> Self {
        Backlog {
            groups: Vec::new(),
            index: FxHashMap::default(),
            spare: Vec::new(),
            waiting: 0,
            max_waiting: max_waiting.max(1),
            cursor: 0,
        }
    }

    /// Requests waiting in all groups.
    pub fn len(&self) -> usize {
        self.waiting
    }

    /// Whether nobody waits.
    pub fn is_empty(&self) -> bool {
        self.waiting == 0
    }

    /// Whether requests of `group` must queue behind others.
    #[inline]
    pub fn has_group(&self, group: u64) -> bool {
        !self.index.is_empty() && self.index.contains_key(&group)
    }

    /// Appends a request to its group's FIFO; `Err` gives the token back at the bound.
    pub fn push(&mut self, token: T, req: StoredRequest, retry_at_ns: Option<u64>) -> Result<(), T> {
        if self.waiting >= self.max_waiting {
            return Err(token);
        }
        let i = match self.index.get(&req.group) {
            Some(&i) => i as usize,
            None => {
                let i = match self.spare.pop() {
                    Some(i) => i as usize,
                    None => {
                        self.groups.push(Group {
                            id: 0,
                            queue: VecDeque::new(),
                            retry_at_ns: u64::MAX,
                            woken: false,
                        });
                        self.groups.len() - 1
                    }
                };
                let g = &mut self.groups[i];
                g.id = req.group;
                g.retry_at_ns = u64::MAX;
                g.woken = false;
                self.index.insert(req.group, i as u32);
                i
            }
        };
        let g = &mut self.groups[i];
        if let Some(t) = retry_at_ns {
            g.retry_at_ns = g.retry_at_ns.min(t);
        }
        g.queue.push_back((token, req));
        self.waiting += 1;
        Ok(())
    }

    /// Wakes every group whose head could go to `node` (every group when `node` is `None`).
    pub fn wake_for(&mut self, node: Option<NodeId>) {
        if self.waiting == 0 {
            return;
        }
        for g in &mut self.groups {
            if let Some((_, head)) = g.queue.front() {
                if node.is_none_or(|n| head.candidates.contains(n)) {
                    g.woken = true;
                }
            }
        }
    }

    /// Wakes every group whose retry time has come.
    pub fn wake_due(&mut self, now_ns: u64) {
        for g in &mut self.groups {
            if !g.queue.is_empty() && g.retry_at_ns <= now_ns {
                g.retry_at_ns = u64::MAX;
                g.woken = true;
            }
        }
    }

    /// The earliest retry time of any group.
    pub fn next_retry_ns(&self) -> Option<u64> {
        if self.waiting == 0 {
            return None;
        }
        self.groups
            .iter()
            .filter(|g| !g.queue.is_empty())
            .map(|g| g.retry_at_ns)
            .filter(|&t| t != u64::MAX)
            .min()
    }

    /// The next woken group (rotating), as an index for [`Self::head`] and friends.
    pub fn next_woken(&mut self) -> Option<usize> {
        let n = self.groups.len();
        if self.waiting == 0 || n == 0 {
            return None;
        }
        for step in 0..n {
            let i = (self.cursor + step) % n;
            if self.groups[i].woken {
                if self.groups[i].queue.is_empty() {
                    self.groups[i].woken = false;
                    continue;
                }
                self.cursor = (i + 1) % n;
                return Some(i);
            }
        }
        None
    }

    /// The head of woken group `i`.
    pub fn head(&self, i: usize) -> Option<&(T, StoredRequest)> {
        self.groups[i].queue.front()
    }

    /// Removes the head of group `i` (it was sent, failed or cancelled).
    pub fn pop(&mut self, i: usize) -> Option<(T, StoredRequest)> {
        let popped = self.groups[i].queue.pop_front();
        if popped.is_some() {
            self.waiting -= 1;
        }
        if self.groups[i].queue.is_empty() {
            self.release_group(i);
        }
        popped
    }

    /// Group `i`'s head must still wait: until `retry_at_ns`, or the next wake-up by a reply.
    pub fn keep_waiting(&mut self, i: usize, retry_at_ns: u64) {
        let g = &mut self.groups[i];
        g.woken = false;
        g.retry_at_ns = g.retry_at_ns.min(retry_at_ns);
    }

    /// Removes every waiting request for which `cancel` says so, handing each to `sink`.
    pub fn remove_where(&mut self, mut cancel: impl FnMut(&T) -> bool, mut sink: impl FnMut(T)) {
        for i in 0..self.groups.len() {
            if self.groups[i].queue.is_empty() {
                continue;
            }
            let queue = std::mem::take(&mut self.groups[i].queue);
            let before = queue.len();
            let mut kept = VecDeque::with_capacity(before);
            for (t, r) in queue {
                if cancel(&t) {
                    sink(t);
                } else {
                    kept.push_back((t, r));
                }
            }
            self.waiting -= before - kept.len();
            self.groups[i].queue = kept;
            if self.groups[i].queue.is_empty() {
                self.release_group(i);
            }
        }
    }

    fn release_group(&mut self, i: usize) {
        let g = &mut self.groups[i];
        if self.index.remove(&g.id).is_some() {
            g.woken = false;
            g.retry_at_ns = u64::MAX;
            self.spare.push(i as u32);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(group: u64, nodes: &[u16]) -> StoredRequest {
        let ids: Vec<NodeId> = nodes.iter().map(|&n| NodeId(n)).collect();
        StoredRequest::of(&Request {
            candidates: &ids,
            replicas: None,
            count: 1,
            local: None,
            group,
        })
    }

    #[test]
    fn groups_are_fifo_bounded_and_woken_by_their_nodes() {
        let mut b = Backlog::new(3);
        b.push(1, req(7, &[0, 1]), Some(100)).unwrap();
        b.push(2, req(7, &[0, 1]), None).unwrap();
        b.push(3, req(9, &[2]), Some(50)).unwrap();
        assert_eq!(b.push(4, req(9, &[2]), None), Err(4), "the bound");
        assert!(b.has_group(7) && b.has_group(9) && !b.has_group(8));
        assert_eq!(b.next_retry_ns(), Some(50));
        b.wake_for(Some(NodeId(1)));
        let g = b.next_woken().unwrap();
        assert_eq!(b.head(g).unwrap().0, 1);
        assert_eq!(b.pop(g).unwrap().0, 1);
        assert_eq!(b.head(g).unwrap().0, 2, "FIFO");
        b.keep_waiting(g, 80);
        assert_eq!(b.next_woken(), None, "group 9 was not woken by node 1");
        b.wake_due(60);
        let g9 = b.next_woken().unwrap();
        assert_eq!(b.pop(g9).unwrap().0, 3);
        assert!(!b.has_group(9));
        let mut removed = Vec::new();
        b.remove_where(|&t| t == 2, |t| removed.push(t));
        assert_eq!((removed, b.len(), b.has_group(7)), (vec![2], 0, false));
        assert_eq!(b.next_retry_ns(), None);
        // Entries are reused.
        b.push(5, req(11, &[0]), None).unwrap();
        assert_eq!(b.groups.len(), 2);
    }
}
