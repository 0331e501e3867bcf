//! The selection interface every policy implements and every caller (simulator, real node,
//! load generator, later a driver) uses.
//!
//! Rules, following the architecture:
//! - time (`now_ns`, virtual or monotonic) and randomness (`&mut Rng`) are arguments, so the
//!   same inputs always give the same decision;
//! - [`Policy::plan`] is the per-request path: it allocates nothing and locks nothing (a policy
//!   instance belongs to one client or one coordinator; callers that share one wrap it
//!   themselves);
//! - everything a policy learns arrives through the `on_*` callbacks: requests sent, replies
//!   (with the server's [`Feedback`]), failures, gossip, nodes going down and coming up.
//!
//! The caller's side of the contract, which the `runtime` crate implements once for every
//! caller (the simulator, the real node, the load generator, a driver adapter), so no caller
//! calls a policy directly:
//! - call [`Policy::on_send`] for every request actually sent (targets, and fallbacks used
//!   for retries), and exactly one of [`Policy::on_reply`] / [`Policy::on_failure`] for each;
//!   policies count requests in flight from these;
//! - on [`Decision::Wait`], keep the request in a FIFO per [`Request::group`] and plan the head
//!   again at `retry_at_ns` or on the next reply from the group (C3's backlog; [`crate::c3`]);
//! - after each `plan`, call [`Policy::probes`] and send the probes asynchronously, feeding the
//!   answers to [`Policy::on_probe_reply`] (Prequal; [`crate::prequal`]);
//! - call [`Policy::on_node_up`] when a node joins or restarts (DataStax and
//!   weighted-least-loaded ramp a newly-up node), and [`Policy::on_topology`] once with the zones.

use crate::params::Params;
use crate::rng::Rng;
use crate::types::{Decision, Failure, Feedback, NodeCaps, NodeId, NodeTruth, Plan, Probe, ProbeReply, Reply, Request, Side};

/// A replica-selection policy.
pub trait Policy: Send {
    /// The policy's registered name (e.g. `hwlb`).
    fn name(&self) -> &'static str;

    /// Which decisions it makes.
    fn side(&self) -> Side;

    /// The effective parameters (defaults with overrides), for reports.
    fn params(&self) -> &Params;

    /// Chooses the nodes for one request. On [`Decision::Send`], `out` holds at least
    /// `req.count` distinct targets drawn from `req.candidates`, followed by optional fallbacks.
    fn plan(&mut self, req: &Request<'_>, now_ns: u64, rng: &mut Rng, out: &mut Plan) -> Decision;

    /// A request was sent to `node` (counts requests in flight; consumes rate tokens).
    fn on_send(&mut self, _node: NodeId, _now_ns: u64) {}

    /// A reply arrived from a node this policy sent to.
    fn on_reply(&mut self, _reply: &Reply, _now_ns: u64) {}

    /// A request sent to `node` ended without a reply.
    fn on_failure(&mut self, _node: NodeId, _failure: Failure, _now_ns: u64) {}

    /// News about `node` not tied to a reply of ours: gossip, or the local node's own state.
    fn on_info(&mut self, _node: NodeId, _info: &Feedback, _now_ns: u64) {}

    /// `node` is seen up (joined, or back after a restart).
    fn on_node_up(&mut self, _node: NodeId, _caps: NodeCaps, _now_ns: u64) {}

    /// `node` is seen down (failure detector, or its connection dropped).
    fn on_node_down(&mut self, _node: NodeId, _now_ns: u64) {}

    /// Probes the policy wants sent now (Prequal); appended to `out`. Called by the caller
    /// after each `plan` and on its own timer; the answers come back via `on_probe_reply`.
    fn probes(&mut self, _req: &Request<'_>, _now_ns: u64, _rng: &mut Rng, _out: &mut Vec<Probe>) {}

    /// A probe's answer.
    fn on_probe_reply(&mut self, _reply: &ProbeReply, _now_ns: u64) {}

    /// The ground truth about a node (simulator only; used by `oracle`).
    fn on_truth(&mut self, _truth: &NodeTruth, _now_ns: u64) {}

    /// The cluster's zones (racks or availability zones): `zones` gives the zone number of
    /// each known node, `local_zone` the zone of whoever this policy decides for (`None` when
    /// unknown). Call it once at start and again whenever the topology changes (not per
    /// request). Policies that weigh remote zones (`weighted-least-loaded`) read it; a node
    /// without a zone, or an unknown local zone, counts as local. Added for issue 3; the
    /// default ignores it.
    fn on_topology(&mut self, _zones: &[(NodeId, u32)], _local_zone: Option<u32>) {}
}
