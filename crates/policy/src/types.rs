//! The shared vocabulary: node ids, replica sets, consistency levels, feedback and plans.
//!
//! Everything here is `Copy` or fixed-capacity so that the per-request path never allocates.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The most replicas (or candidate nodes) one request can be planned over.
pub const MAX_REPLICAS: usize = 64;

/// A node of the cluster, numbered densely from 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct NodeId(pub u16);

impl NodeId {
    /// The id as an index into per-node arrays.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Which decision a policy makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// Picks the node a client sends a request to (the coordinator, or the replica itself when
    /// clients talk to replicas directly).
    Client,
    /// Picks the CL replicas a coordinator reads from.
    Coordinator,
    /// Can do either.
    Both,
}

impl Side {
    /// The name used in listings and scenario files.
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Client => "client",
            Side::Coordinator => "coordinator",
            Side::Both => "both",
        }
    }

    /// Whether a policy of this side can make a decision of side `wanted`.
    pub fn serves(self, wanted: Side) -> bool {
        self == Side::Both || self == wanted
    }
}

/// How many replicas must answer a read (Cassandra's consistency levels).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConsistencyLevel {
    /// One replica.
    One,
    /// Two replicas.
    Two,
    /// A majority: `rf / 2 + 1`.
    Quorum,
    /// Every replica.
    All,
}

impl ConsistencyLevel {
    /// The number of replicas that must answer, out of `replication_factor`.
    pub fn required(self, replication_factor: usize) -> usize {
        match self {
            ConsistencyLevel::One => 1,
            ConsistencyLevel::Two => 2.min(replication_factor),
            ConsistencyLevel::Quorum => replication_factor / 2 + 1,
            ConsistencyLevel::All => replication_factor,
        }
    }

    /// Parses `one`, `two`, `quorum` or `all` (any case).
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.to_ascii_lowercase().as_str() {
            "one" => Ok(ConsistencyLevel::One),
            "two" => Ok(ConsistencyLevel::Two),
            "quorum" => Ok(ConsistencyLevel::Quorum),
            "all" => Ok(ConsistencyLevel::All),
            _ => Err(format!("consistency level '{text}' is not one of: one, two, quorum, all")),
        }
    }

    /// The lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            ConsistencyLevel::One => "one",
            ConsistencyLevel::Two => "two",
            ConsistencyLevel::Quorum => "quorum",
            ConsistencyLevel::All => "all",
        }
    }
}

/// An ordered, fixed-capacity list of distinct nodes (a key's replicas, or candidates).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReplicaSet {
    len: u8,
    ids: [NodeId; MAX_REPLICAS],
}

impl ReplicaSet {
    /// An empty set.
    pub const fn new() -> Self {
        ReplicaSet {
            len: 0,
            ids: [NodeId(0); MAX_REPLICAS],
        }
    }

    /// The set of the given nodes, in order. Fails on duplicates or more than `MAX_REPLICAS`.
    pub fn from_slice(ids: &[NodeId]) -> Result<Self, String> {
        if ids.len() > MAX_REPLICAS {
            return Err(format!("{} replicas given, at most {MAX_REPLICAS} are allowed", ids.len()));
        }
        let mut set = ReplicaSet::new();
        for &id in ids {
            if set.contains(id) {
                return Err(format!("node {id} appears twice in a replica set"));
            }
            set.push(id);
        }
        Ok(set)
    }

    /// Appends a node. Panics when full or when the node is already present (a caller bug).
    #[inline]
    pub fn push(&mut self, id: NodeId) {
        assert!((self.len as usize) < MAX_REPLICAS, "replica set is full");
        debug_assert!(!self.contains(id), "node {id} pushed twice");
        self.ids[self.len as usize] = id;
        self.len += 1;
    }

    /// The nodes, in order.
    #[inline]
    pub fn as_slice(&self) -> &[NodeId] {
        &self.ids[..self.len as usize]
    }

    /// How many nodes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether there are none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `id` is in the set.
    #[inline]
    pub fn contains(&self, id: NodeId) -> bool {
        self.as_slice().contains(&id)
    }

    /// The position of `id`, if present.
    #[inline]
    pub fn position(&self, id: NodeId) -> Option<usize> {
        self.as_slice().iter().position(|&x| x == id)
    }
}

impl Default for ReplicaSet {
    fn default() -> Self {
        ReplicaSet::new()
    }
}

impl fmt::Debug for ReplicaSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

/// What a server says about itself on a reply (piggy-backed) or by gossip.
/// Every field is optional: a policy reads what it needs and ignores the rest.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Feedback {
    /// The node's cache hit rate for the table, in [0, 1] (HWLB).
    pub hit_rate: Option<f64>,
    /// Requests waiting in the node's queue when it replied (C3's q_s).
    pub queue_len: Option<u32>,
    /// How long the node spent serving this request, queueing excluded (C3's 1/mu), ns.
    pub service_time_ns: Option<u64>,
    /// Requests the node had in flight when it replied (Prequal's RIF).
    pub in_flight: Option<u32>,
}

/// A reply to a request this policy routed: the node, the response time measured by the
/// sender, and the server's feedback record.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reply {
    /// Who answered.
    pub node: NodeId,
    /// Response time measured by the sender, from send to reply, ns.
    pub latency_ns: u64,
    /// What the server reported.
    pub feedback: Feedback,
}

/// Why a request to a node produced no reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The node answered with an error.
    Error,
    /// No answer within the time-out.
    Timeout,
    /// The connection to the node dropped.
    ConnectionLost,
}

/// What a node says about its capabilities when it comes up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeCaps {
    /// False for a node running an older protocol that never reports a hit rate (HWLB then
    /// steps aside for the replica sets that contain it).
    pub reports_hit_rate: bool,
}

impl Default for NodeCaps {
    fn default() -> Self {
        NodeCaps { reports_hit_rate: true }
    }
}

/// The question a policy answers for one request.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// The live candidates in topology order: the key's replicas (token-aware), or every node
    /// (a client that is not token-aware, or stateless servers).
    pub candidates: &'a [NodeId],
    /// Which of the candidates hold the key. `None` means all of them.
    pub replicas: Option<&'a [NodeId]>,
    /// How many distinct nodes to contact (1 for a client choosing its coordinator; CL for a
    /// coordinator, or for a client that reads from replicas directly).
    pub count: usize,
    /// The node making the decision when it is itself a cluster node (a coordinator), so a
    /// policy can prefer local work. `None` for clients.
    pub local: Option<NodeId>,
    /// A stable id of the replica group (for example the first token of the range), used by
    /// policies that keep per-group state (C3's backlog, HWLB's plan cache).
    pub group: u64,
}

impl<'a> Request<'a> {
    /// Whether `count` distinct targets can be chosen at all (at least one is asked for and
    /// there are that many candidates). Every policy answers [`Decision::Unavailable`] otherwise.
    #[inline]
    pub fn plannable(&self) -> bool {
        self.count > 0 && self.candidates.len() >= self.count
    }

    /// Whether `node` holds the key.
    #[inline]
    pub fn is_replica(&self, node: NodeId) -> bool {
        match self.replicas {
            None => self.candidates.contains(&node),
            Some(r) => r.contains(&node),
        }
    }
}

/// A policy's answer for one request: an ordered list of distinct nodes. The first
/// [`Plan::count`] are contacted now; any further entries are fallbacks in order of preference
/// (the first of them is the speculative-retry target). Optionally one more node to read from in
/// the background ([`Plan::background`]).
#[derive(Clone, Copy)]
pub struct Plan {
    count: u8,
    len: u8,
    nodes: [NodeId; MAX_REPLICAS],
    background: Option<NodeId>,
}

impl Plan {
    /// An empty plan.
    pub const fn new() -> Self {
        Plan {
            count: 0,
            len: 0,
            nodes: [NodeId(0); MAX_REPLICAS],
            background: None,
        }
    }

    /// Empties the plan for reuse.
    #[inline]
    pub fn clear(&mut self) {
        self.count = 0;
        self.len = 0;
        self.background = None;
    }

    /// Asks for one more read of the key, from `id`, in the background: sent with the targets,
    /// never waited for, its reply feeding the policy like any other (a warm-up read that fills
    /// a cold replica's cache off the request path). `id` must not be a target. A hint: a caller
    /// that cannot send it (a write, a replica it knows is down) leaves it out.
    #[inline]
    pub fn set_background(&mut self, id: NodeId) {
        debug_assert!(!self.targets().contains(&id), "node {id} is a target already");
        self.background = Some(id);
    }

    /// Drops the background read asked for, if any.
    #[inline]
    pub fn clear_background(&mut self) {
        self.background = None;
    }

    /// The background read asked for, if any.
    #[inline]
    pub fn background(&self) -> Option<NodeId> {
        self.background
    }

    /// Appends a node to contact now. All targets must come before any fallback.
    #[inline]
    pub fn push_target(&mut self, id: NodeId) {
        assert_eq!(self.count, self.len, "targets must precede fallbacks");
        self.push(id);
        self.count += 1;
    }

    /// Appends a fallback node.
    #[inline]
    pub fn push_fallback(&mut self, id: NodeId) {
        self.push(id);
    }

    #[inline]
    fn push(&mut self, id: NodeId) {
        assert!((self.len as usize) < MAX_REPLICAS, "plan is full");
        debug_assert!(!self.all().contains(&id), "node {id} planned twice");
        self.nodes[self.len as usize] = id;
        self.len += 1;
    }

    /// Marks the first `count` entries as targets (for policies that build a full order).
    #[inline]
    pub fn set_target_count(&mut self, count: usize) {
        assert!(count <= self.len as usize, "more targets than planned nodes");
        self.count = count as u8;
    }

    /// Replaces the plan with `order`, the first `count` being targets.
    #[inline]
    pub fn set_order(&mut self, order: &[NodeId], count: usize) {
        assert!(order.len() <= MAX_REPLICAS && count <= order.len());
        self.nodes[..order.len()].copy_from_slice(order);
        self.len = order.len() as u8;
        self.count = count as u8;
    }

    /// The nodes to contact now.
    #[inline]
    pub fn targets(&self) -> &[NodeId] {
        &self.nodes[..self.count as usize]
    }

    /// The fallbacks, best first.
    #[inline]
    pub fn fallbacks(&self) -> &[NodeId] {
        &self.nodes[self.count as usize..self.len as usize]
    }

    /// Targets then fallbacks.
    #[inline]
    pub fn all(&self) -> &[NodeId] {
        &self.nodes[..self.len as usize]
    }

    /// Mutable access to every planned node (for in-place shuffles and sorts).
    #[inline]
    pub fn all_mut(&mut self) -> &mut [NodeId] {
        &mut self.nodes[..self.len as usize]
    }

    /// How many targets.
    #[inline]
    pub fn count(&self) -> usize {
        self.count as usize
    }
}

impl Default for Plan {
    fn default() -> Self {
        Plan::new()
    }
}

impl fmt::Debug for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Plan")
            .field("targets", &self.targets())
            .field("fallbacks", &self.fallbacks())
            .field("background", &self.background)
            .finish()
    }
}

/// Whether a request can be sent now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The plan is filled in: send now.
    Send,
    /// Rate control holds the request back (C3's backlog): keep it in the FIFO of its replica
    /// group ([`Request::group`]), queue later requests of that group behind it, and plan the
    /// head again at `retry_at_ns` or earlier, when a reply from the group arrives. See
    /// [`crate::c3`] for the full contract.
    Wait {
        /// When a token is next expected, ns.
        retry_at_ns: u64,
    },
    /// No candidate can take the request (for example none is live).
    Unavailable,
}

/// A probe a policy asks its caller to send (Prequal): "ask `node` for its load".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Probe {
    /// The node to probe.
    pub node: NodeId,
}

/// A probe's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeReply {
    /// Who answered.
    pub node: NodeId,
    /// Requests in flight on that node.
    pub in_flight: u32,
    /// The node's latency estimate at that load, ns.
    pub latency_ns: u64,
}

/// The ground truth about a node, given only to the simulator's `oracle` policy.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NodeTruth {
    /// The node.
    pub node: NodeId,
    /// Requests queued or in service right now.
    pub queue_len: u32,
    /// The node's current mean service time, ns.
    pub service_time_mean_ns: f64,
    /// How many requests it serves at once.
    pub concurrency: u32,
}
