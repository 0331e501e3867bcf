//! The selection interface every policy implements and every caller (simulator, real node,
//! load generator, later a driver) uses: plan, and observe.
//!
//! Rules, following the architecture:
//! - time (`now_ns`, virtual or monotonic) and randomness (`&mut Rng`) are arguments, so the
//!   same inputs always give the same decision;
//! - [`Policy::plan`] is the per-request path: it allocates nothing and locks nothing (a policy
//!   instance belongs to one client or one coordinator; callers that share one wrap it
//!   themselves);
//! - everything a policy learns arrives through [`Policy::observe`], one [`Event`] at a time:
//!   requests sent, replies (with the server's [`Feedback`]), failures, gossip, nodes going down
//!   and coming up, probe answers, the ground truth (simulator) and the zones;
//! - a policy's name, side and parameters live in the registry ([`crate::registry`]), which
//!   hands them out with each instance it builds ([`crate::registry::Built`]).
//!
//! The caller's side of the contract, which the `runtime` crate implements once for every
//! caller (the simulator, the real node, the load generator, a driver adapter), so no caller
//! calls a policy directly:
//! - observe [`Event::Sent`] for every request actually sent (targets, and fallbacks used
//!   for retries), and exactly one of [`Event::Reply`] / [`Event::Failure`] for each;
//!   policies count requests in flight from these;
//! - on [`Decision::Wait`], keep the request in a FIFO per [`Request::group`] and plan the head
//!   again at `retry_at_ns` or on the next reply from the group (C3's backlog; [`crate::c3`]);
//! - after each `plan`, call [`Policy::probes`] and send the probes asynchronously, feeding the
//!   answers back as [`Event::ProbeReply`] (Prequal; [`crate::prequal`]);
//! - observe [`Event::NodeUp`] when a node joins or restarts (DataStax and
//!   weighted-least-loaded ramp a newly-up node), and [`Event::Topology`] once with the zones.

use crate::rng::Rng;
use crate::types::{Decision, Failure, Feedback, NodeCaps, NodeId, NodeTruth, Plan, Probe, ProbeReply, Reply, Request};

/// Something a policy learns, handed to [`Policy::observe`] with the time it happened.
#[derive(Clone, Copy, Debug)]
pub enum Event<'a> {
    /// A request was sent to `node` (counts requests in flight; consumes rate tokens).
    Sent {
        /// The target.
        node: NodeId,
    },
    /// A reply arrived from a node this policy sent to.
    Reply(&'a Reply),
    /// A request sent to `node` ended without a reply.
    Failure {
        /// The target.
        node: NodeId,
        /// How it ended.
        failure: Failure,
    },
    /// News about `node` not tied to a reply of ours: gossip, or the local node's own state.
    Info {
        /// The node it is about.
        node: NodeId,
        /// What is known of it.
        info: &'a Feedback,
    },
    /// `node` is seen up (joined, or back after a restart).
    NodeUp {
        /// The node.
        node: NodeId,
        /// What it can report.
        caps: NodeCaps,
    },
    /// `node` is seen down (failure detector, or its connection dropped).
    NodeDown {
        /// The node.
        node: NodeId,
    },
    /// A probe's answer (see [`Policy::probes`]).
    ProbeReply(&'a ProbeReply),
    /// The ground truth about a node (simulator only; used by `oracle`).
    Truth(&'a NodeTruth),
    /// The cluster's zones (racks or availability zones): `zones` gives the zone number of
    /// each known node, `local_zone` the zone of whoever this policy decides for (`None` when
    /// unknown). Sent once at start and again whenever the topology changes (not per
    /// request). Policies that weigh remote zones (`weighted-least-loaded`) read it; a node
    /// without a zone, or an unknown local zone, counts as local.
    Topology {
        /// The zone of each known node.
        zones: &'a [(NodeId, u32)],
        /// The decider's own zone.
        local_zone: Option<u32>,
    },
}

/// A replica-selection policy: it plans requests and observes what happens.
pub trait Policy: Send {
    /// Chooses the nodes for one request. On [`Decision::Send`], `out` holds at least
    /// `req.count` distinct targets drawn from `req.candidates`, followed by optional fallbacks.
    fn plan(&mut self, req: &Request<'_>, now_ns: u64, rng: &mut Rng, out: &mut Plan) -> Decision;

    /// Learns from `event`, which happened at `now_ns` (the default ignores everything).
    fn observe(&mut self, _event: &Event<'_>, _now_ns: u64) {}

    /// Probes the policy wants sent now (Prequal); appended to `out`. Called by the caller
    /// after each `plan`; the answers come back as [`Event::ProbeReply`].
    fn probes(&mut self, _req: &Request<'_>, _now_ns: u64, _rng: &mut Rng, _out: &mut Vec<Probe>) {}
}
