//! The Java driver 4's "unhealthy node" rule, shared by `datastax-default` and
//! `weighted-least-loaded`: a node is unhealthy when this sender has at least
//! `in_flight_threshold` requests in flight to it AND it answered fewer than `min_responses`
//! times in the last `response_window` (defaults 10, 2 and 200 ms). A busy node that still
//! answers briskly is merely busy; one that stopped answering is stuck (GC pause, overload).
//!
//! As in the driver, a reply or an error counts as a response, a time-out does not; the last
//! `min_responses` response times are kept per node (a tiny ring, no allocation per reply).
//! The ring is overwritten in place, never shifted: on a large cluster each reply's entry is a
//! miss in the core's cache already, and a shift cost a `memmove` call on top.

use crate::nodes::{InFlight, NodeTable};
use crate::policy::Event;
use crate::types::{Failure, NodeId};

/// The most responses the rule can be asked to count.
pub const MAX_MIN_RESPONSES: usize = 8;

/// The last `min_responses` response times of one node, a ring: the next one overwrites the
/// oldest, at `next`.
#[derive(Clone, Copy, Debug, Default)]
struct Responses {
    times_ns: [u64; MAX_MIN_RESPONSES],
    /// Where the next response time goes: the oldest kept one once `seen >= min_responses`.
    next: u8,
    seen: u32,
}

impl Responses {
    /// Records a response at `now_ns`, keeping the last `k`.
    #[inline]
    fn push(&mut self, now_ns: u64, k: usize) {
        let at = self.next as usize;
        debug_assert!(at < k && k <= MAX_MIN_RESPONSES);
        self.times_ns[at] = now_ns;
        self.next = if at + 1 == k { 0 } else { at as u8 + 1 };
        self.seen = self.seen.saturating_add(1);
    }

    /// The oldest of the last `k` response times (valid once `seen >= k`).
    #[inline]
    fn oldest_ns(&self) -> u64 {
        self.times_ns[self.next as usize]
    }
}

/// The rule's parameters.
#[derive(Clone, Copy, Debug)]
pub struct HealthRule {
    /// Requests in flight at which a node counts as busy.
    pub in_flight_threshold: u32,
    /// Responses that must have arrived within the window for a busy node to count as healthy.
    pub min_responses: usize,
    /// The window, ns.
    pub response_window_ns: u64,
}

/// Per-node response history for the rule.
#[derive(Clone, Debug)]
pub struct Health {
    rule: HealthRule,
    responses: NodeTable<Responses>,
}

impl Health {
    /// Tracks responses for `rule`. `min_responses` must be in `1..=MAX_MIN_RESPONSES`.
    pub fn new(rule: HealthRule) -> Self {
        assert!((1..=MAX_MIN_RESPONSES).contains(&rule.min_responses), "min_responses out of range");
        Health {
            rule,
            responses: NodeTable::new(),
        }
    }

    /// A response (reply or error) from `node` arrived at `now_ns`.
    #[inline]
    pub fn responded(&mut self, node: NodeId, now_ns: u64) {
        let k = self.rule.min_responses;
        self.responses.entry(node).push(now_ns, k);
    }

    /// Forgets `node`'s responses (it went down or came up).
    #[inline]
    pub fn forget(&mut self, node: NodeId) {
        if let Some(r) = self.responses.get_mut(node) {
            *r = Responses::default();
        }
    }

    /// A request to `node` failed: errors count as responses, time-outs do not.
    #[inline]
    pub fn failed(&mut self, node: NodeId, failure: Failure, now_ns: u64) {
        if failure != Failure::Timeout {
            self.responded(node, now_ns);
        }
    }

    /// Whether fewer than `min_responses` responses came from `node` in the window ending at
    /// `now_ns`.
    #[inline]
    pub fn responding_too_slowly(&self, node: NodeId, now_ns: u64) -> bool {
        let k = self.rule.min_responses;
        match self.responses.get(node) {
            Some(r) if r.seen as usize >= k => r.oldest_ns() < now_ns.saturating_sub(self.rule.response_window_ns),
            _ => true,
        }
    }

    /// The rule: busy and not answering.
    #[inline]
    pub fn is_unhealthy(&self, node: NodeId, in_flight: u32, now_ns: u64) -> bool {
        in_flight >= self.rule.in_flight_threshold && self.responding_too_slowly(node, now_ns)
    }
}

/// What the Java-driver-style policies (`datastax-default`, `weighted-least-loaded`) learn
/// through the feedback path, kept in one place so both read it the same way: requests in
/// flight per node, recent responses for the unhealthy rule, and when each node was last seen
/// coming up (for the newly-up demotion and the start-up ramp).
#[derive(Clone, Debug)]
pub struct DriverView {
    /// Requests this sender has in flight, per node.
    pub in_flight: InFlight,
    /// Recent responses, for the unhealthy rule.
    pub health: Health,
    /// When each node was last seen coming up, ns (`None`: not since this policy started).
    pub up_since_ns: NodeTable<Option<u64>>,
}

impl DriverView {
    /// An empty view with the given unhealthy rule.
    pub fn new(rule: HealthRule) -> Self {
        DriverView {
            in_flight: InFlight::new(),
            health: Health::new(rule),
            up_since_ns: NodeTable::new(),
        }
    }

    /// Learns from a send, a reply, a failure or a node coming up (other events change
    /// nothing): the events both driver policies forward here whole.
    pub fn observe(&mut self, event: &Event<'_>, now_ns: u64) {
        self.in_flight.observe(event);
        match *event {
            Event::Reply(reply) => self.health.responded(reply.node, now_ns),
            Event::Failure { node, failure } => self.health.failed(node, failure, now_ns),
            Event::NodeUp { node, .. } => *self.up_since_ns.entry(node) = Some(now_ns),
            _ => {}
        }
    }

    /// The unhealthy rule for `node` with this sender's requests in flight.
    pub fn is_unhealthy(&self, node: NodeId, now_ns: u64) -> bool {
        self.health.is_unhealthy(node, self.in_flight.get(node), now_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::MS;

    #[test]
    fn busy_and_silent_is_unhealthy() {
        let mut h = Health::new(HealthRule {
            in_flight_threshold: 10,
            min_responses: 2,
            response_window_ns: 200 * MS,
        });
        let a = NodeId(1);
        assert!(!h.is_unhealthy(a, 9, 0), "not busy");
        assert!(h.is_unhealthy(a, 10, 0), "busy and never answered");
        h.responded(a, 100 * MS);
        assert!(h.is_unhealthy(a, 10, 150 * MS), "one response is not enough");
        h.failed(a, Failure::Timeout, 120 * MS);
        assert!(h.is_unhealthy(a, 10, 150 * MS), "time-outs do not count");
        h.failed(a, Failure::Error, 150 * MS);
        assert!(!h.is_unhealthy(a, 10, 150 * MS), "two responses in the window");
        assert!(!h.is_unhealthy(a, 10, 300 * MS));
        assert!(h.is_unhealthy(a, 10, 301 * MS), "the older response left the window");
    }

    #[test]
    fn the_ring_answers_as_the_last_k_responses_do() {
        // Every k, a stream of responses at uneven times: the rule against the last k times kept
        // in a plain list.
        for k in 1..=MAX_MIN_RESPONSES {
            let rule = HealthRule {
                in_flight_threshold: 1,
                min_responses: k,
                response_window_ns: 50 * MS,
            };
            let mut h = Health::new(rule);
            let mut last: Vec<u64> = Vec::new();
            let a = NodeId(3);
            let mut t = 0;
            for i in 0..200u64 {
                t += (i * 7919 % 40) * MS;
                h.responded(a, t);
                last.push(t);
                if last.len() > k {
                    last.remove(0);
                }
                let now = t + (i % 60) * MS;
                let expected = last.len() < k || last[0] < now.saturating_sub(rule.response_window_ns);
                assert_eq!(h.responding_too_slowly(a, now), expected, "k {k} response {i}");
            }
        }
    }
}
