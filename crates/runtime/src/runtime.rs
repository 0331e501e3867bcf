//! [`Runtime`]: one policy with everything its caller owes it.

use crate::backlog::{Backlog, StoredRequest};
use crate::ledger::{Accounting, DispatchId, Ledger, Ticket};
use replica_lb_policy::{
    Built, Decision, Event, Failure, Feedback, Need, NodeCaps, NodeId, NodeTruth, Params, Plan, Policy, Probe, ProbeReply, Reply, Request,
    Rng, Side, MAX_REPLICAS,
};

/// Requests a runtime keeps waiting at most, unless its caller says otherwise
/// ([`RuntimeConfig::max_waiting`]).
pub const DEFAULT_MAX_WAITING: usize = 4096;

/// Who runs a policy, and what it can give it.
#[derive(Clone, Copy, Debug)]
pub struct Caller {
    /// How error messages name the caller: "the simulator", "the real cluster's nodes", ...
    pub name: &'static str,
    /// What it provides beyond the plain contract.
    pub provides: replica_lb_policy::Needs,
}

/// How a runtime is set up.
#[derive(Clone, Copy, Debug)]
pub struct RuntimeConfig {
    /// The node the decisions are made on (a coordinator), `None` for a client.
    pub local: Option<NodeId>,
    /// Seed of the policy's random stream.
    pub seed: u64,
    /// Requests held back by rate control at most; further ones are refused
    /// ([`Submitted::Rejected`]).
    pub max_waiting: usize,
}

/// A planned request, ready to send: every target already counts as sent.
#[derive(Clone, Copy, Debug)]
pub struct Dispatch {
    /// Its id: tickets of the targets, extra sends, closing.
    pub id: DispatchId,
    /// The plan: targets (already sent), then fallbacks.
    pub plan: Plan,
}

impl Dispatch {
    /// The targets with their tickets.
    pub fn targets(&self) -> impl Iterator<Item = (NodeId, Ticket)> + '_ {
        self.plan.targets().iter().enumerate().map(|(i, &n)| (n, self.id.ticket(i)))
    }
}

/// What became of a request handed to [`Runtime::submit`].
#[derive(Debug)]
pub enum Submitted {
    /// Send it now to the plan's targets.
    Send(Dispatch),
    /// It waits (rate control); it comes back from [`Runtime::poll_released`].
    Queued,
    /// No candidate can take it.
    Unavailable,
    /// It had to wait but the waiting room is full ([`RuntimeConfig::max_waiting`]): fail it
    /// as overloaded.
    Rejected,
}

/// What became of a request handed to [`Runtime::submit_now`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Immediate {
    /// Send it now to `node`; the send counts, and its dispatch is closed already.
    Send {
        /// The target.
        node: NodeId,
        /// The send's ticket: end it with [`Runtime::on_reply`] or [`Runtime::on_failure`].
        ticket: Ticket,
    },
    /// No candidate can take it.
    Unavailable,
    /// The policy wanted it to wait (rate control), which this caller cannot do: refused, and
    /// counted as rejected.
    Refused,
}

/// What became of a request that waited.
#[derive(Debug)]
pub enum Released {
    /// Send it now.
    Send(Dispatch),
    /// Its candidates went down while it waited.
    Unavailable,
}

/// Counters of what went through a runtime (those every request counts first: `repr(C)`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct RuntimeStats {
    /// Requests planned (sent or not).
    pub planned: u64,
    /// Sends made (targets and extra sends).
    pub sends: u64,
    /// Sends that ended with a reply.
    pub replies: u64,
    /// Replies that carried some server feedback.
    pub feedback_replies: u64,
    /// Sends that ended with a failure.
    pub failures: u64,
    /// Requests that waited for rate control.
    pub queued: u64,
    /// Requests refused at the waiting bound.
    pub rejected: u64,
    /// Probes handed to the caller.
    pub probes_sent: u64,
    /// Probe answers fed back.
    pub probe_replies: u64,
    /// Replies or failures for a request already given up on (normal).
    pub late: u64,
    /// Replies or failures the ledger refused (a caller bug; always 0 in a correct caller).
    pub violations: u64,
}

impl std::ops::AddAssign for RuntimeStats {
    fn add_assign(&mut self, o: RuntimeStats) {
        self.planned += o.planned;
        self.sends += o.sends;
        self.replies += o.replies;
        self.feedback_replies += o.feedback_replies;
        self.failures += o.failures;
        self.queued += o.queued;
        self.rejected += o.rejected;
        self.probes_sent += o.probes_sent;
        self.probe_replies += o.probe_replies;
        self.late += o.late;
        self.violations += o.violations;
    }
}

/// The caller's side of the policy contract, without I/O: it owns a policy and its random
/// stream, keeps requests held back by rate control in a bounded FIFO per replica group, holds
/// the probes the policy wants sent, tells its caller when to wake it (a timer to arm), and
/// accounts for every send exactly once.
///
/// The caller's loop: [`submit`](Self::submit) each request and send a [`Submitted::Send`]'s
/// targets; report each send's end with [`on_reply`](Self::on_reply) or
/// [`on_failure`](Self::on_failure) (or give up on a whole dispatch with
/// [`abandon`](Self::abandon)) and [`close`](Self::close) a dispatch once no more sends will
/// follow; after each call, send what [`poll_released`](Self::poll_released) and
/// [`poll_probe`](Self::poll_probe) return and arm a timer for
/// [`poll_timeout`](Self::poll_timeout), calling [`handle_timeout`](Self::handle_timeout) when
/// it fires. `T` is whatever the caller needs to find a waiting request again.
///
/// Its fields are laid out in declaration order (`repr(C)`): what every request reads comes
/// first (the ledger's header, the policy, the random stream, the counters, the waiting room's
/// header, the plan), so that a caller with thousands of runtimes fetches one contiguous run
/// of cache lines ([`Self::prefetch_hot`]). The layout changes no result.
#[repr(C)]
pub struct Runtime<T> {
    ledger: Ledger,
    policy: Box<dyn Policy>,
    rng: Rng,
    needs: replica_lb_policy::Needs,
    /// Whether a caller bug (a send ended twice, or one never made) panics at the event that
    /// broke the contract instead of being counted: on wherever debug assertions are (every
    /// test build), so a test fails where the bug is, not at the end of a run.
    panic_on_violation: bool,
    local: Option<NodeId>,
    backlog: Backlog<T>,
    plan: Plan,
    /// Its first four counters are counted on every request (see [`Self::HOT_STATS`]).
    stats: RuntimeStats,
    probes: Vec<Probe>,
    probe_next: usize,
    /// Nodes seen down (index = node id), to skip when a waiting request is planned again.
    down: Vec<bool>,
    /// The policy's registered name, for reports and error messages.
    name: &'static str,
    /// The policy's effective parameters, for reports.
    params: Params,
}

impl<T> Runtime<T> {
    /// Wraps the policy `built` for `caller`, refusing it with a one-line error when the caller
    /// cannot provide what it needs.
    pub fn new(built: Built, caller: Caller, config: RuntimeConfig) -> Result<Self, String> {
        built.needs.check(caller.provides, built.name, caller.name)?;
        Ok(Runtime {
            policy: built.policy,
            needs: built.needs,
            name: built.name,
            params: built.params,
            rng: Rng::seed_from_u64(config.seed),
            local: config.local,
            ledger: Ledger::new(),
            backlog: Backlog::new(config.max_waiting),
            probes: Vec::new(),
            probe_next: 0,
            down: Vec::new(),
            plan: Plan::new(),
            stats: RuntimeStats::default(),
            panic_on_violation: cfg!(debug_assertions),
        })
    }

    /// Counts caller bugs in [`RuntimeStats::violations`] (and returns them as errors) instead
    /// of panicking at them, whatever the build: for a test of the counting itself.
    pub fn counting_violations(mut self) -> Self {
        self.panic_on_violation = false;
        self
    }

    /// Builds the registered policy `name` for decisions of side `side` with parameter
    /// `overrides` (see [`replica_lb_policy::registry::build_for`]) and wraps it for `caller`.
    pub fn build(
        name: &str,
        side: Side,
        overrides: &replica_lb_policy::ParamTable,
        caller: Caller,
        config: RuntimeConfig,
    ) -> Result<Self, String> {
        let built = replica_lb_policy::registry::build_for(name, side, overrides).map_err(|e| e.to_string())?;
        Runtime::new(built, caller, config)
    }

    /// A new instance of the policy `choice` names, wrapped for `caller`.
    pub fn of(choice: &replica_lb_policy::PolicyChoice, caller: Caller, config: RuntimeConfig) -> Result<Self, String> {
        let built = choice.build().map_err(|e| e.to_string())?;
        Runtime::new(built, caller, config)
    }

    /// The policy's registered name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The policy's effective parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Whether the policy reads `need` (so a caller feeds it only then: ground truth costs a
    /// simulator work per request).
    pub fn needs(&self, need: Need) -> bool {
        self.needs.has(need)
    }

    /// What went through so far.
    pub fn stats(&self) -> RuntimeStats {
        self.stats
    }

    /// Sends out to `node` now.
    pub fn in_flight(&self, node: NodeId) -> u32 {
        self.ledger.in_flight(node)
    }

    /// Hints the CPU to fetch the parts of this runtime every request touches (the ledger's
    /// header, the policy pointer, the random stream, the counters, the waiting room's header
    /// and the plan: the first lines of the struct, see its layout), rather than the whole
    /// struct: for a caller with thousands of runtimes, one of which an upcoming event will
    /// use. No effect on results.
    #[inline]
    pub fn prefetch_hot(&self) {
        use crate::ledger::prefetch_bytes;
        prefetch_bytes(self, std::mem::offset_of!(Self, stats) + Self::HOT_STATS);
    }

    /// Bytes of [`RuntimeStats`] every request writes: `planned`, `sends`, `replies`,
    /// `feedback_replies` (its first fields).
    const HOT_STATS: usize = 4 * std::mem::size_of::<u64>();

    /// Hints the CPU to fetch what the next [`Self::submit`] writes first (the ledger slot
    /// its dispatch takes): for a caller that knows a request is coming. No effect on results.
    #[inline]
    pub fn prefetch_submit(&self) {
        self.ledger.prefetch_next();
        crate::ledger::prefetch(&*self.policy);
    }

    /// Hints the CPU to fetch what ending `ticket` touches first (its ledger slot). No effect
    /// on results.
    #[inline]
    pub fn prefetch_end(&self, ticket: Ticket) {
        self.ledger.prefetch_ticket(ticket);
        crate::ledger::prefetch(&*self.policy);
    }

    /// Sends out to any node now.
    pub fn outstanding(&self) -> u64 {
        self.ledger.outstanding()
    }

    /// Requests waiting for rate control.
    pub fn waiting(&self) -> usize {
        self.backlog.len()
    }

    /// Checks that nothing is left: every send ended, every dispatch closed, nobody waiting.
    /// A caller calls it when its run is over (a test of the exactly-once contract).
    pub fn check_quiescent(&self) -> Result<(), String> {
        let (out, live, waiting, bad) = (
            self.ledger.outstanding(),
            self.ledger.live_dispatches(),
            self.backlog.len(),
            self.stats.violations,
        );
        if out != 0 || live != 0 || waiting != 0 || bad != 0 {
            return Err(format!(
                "{}: {out} sends without an end, {live} dispatches not freed, {waiting} requests waiting, {bad} accounting violations",
                self.name
            ));
        }
        Ok(())
    }

    /// Plans one request. On [`Submitted::Send`] the targets count as sent: send to each (a
    /// target that cannot be reached is reported with [`Self::on_failure`]). `token` is called
    /// only when the request has to wait, to make the handle [`Self::poll_released`] returns.
    pub fn submit(&mut self, req: &Request<'_>, now_ns: u64, token: impl FnOnce() -> T) -> Submitted {
        if self.backlog.has_group(req.group) {
            // Behind the requests of its group that wait already (first in, first out).
            return self.wait(token(), req, None);
        }
        match self.plan_now(req, now_ns) {
            Decision::Send => Submitted::Send(self.dispatch(req, now_ns)),
            Decision::Unavailable => Submitted::Unavailable,
            Decision::Wait { retry_at_ns } => self.wait(token(), req, Some(retry_at_ns.max(now_ns + 1))),
        }
    }

    /// Plans a request for one node and sends it at once, for a caller that cannot hold a
    /// request back (the driver's `pick` answers at once): the fast path of the common cycle
    /// "one request, one node, one reply". On [`Immediate::Send`] the target counts as sent in
    /// a dispatch already closed (freed when the send ends); a plan naming more targets sends
    /// only its first (one was asked for). A request the policy would hold back, or one whose
    /// group has requests waiting already (from [`Self::submit`]), is
    /// [`Immediate::Refused`]: nothing waits, nothing is sent. The accounting is the same as
    /// [`Self::submit`] then [`Self::close`]: every send ends exactly once.
    pub fn submit_now(&mut self, req: &Request<'_>, now_ns: u64) -> Immediate {
        debug_assert_eq!(req.count, 1, "submit_now plans one target");
        if self.backlog.has_group(req.group) {
            self.stats.rejected += 1;
            return Immediate::Refused;
        }
        match self.plan_now(req, now_ns) {
            Decision::Send => {
                let node = self.plan.targets()[0];
                let ticket = self.ledger.send_one(node);
                self.policy.observe(&Event::Sent { node }, now_ns);
                self.stats.sends += 1;
                if self.needs.has(Need::Probes) {
                    self.collect_probes(req, now_ns);
                }
                Immediate::Send { node, ticket }
            }
            Decision::Unavailable => Immediate::Unavailable,
            Decision::Wait { .. } => {
                self.stats.rejected += 1;
                Immediate::Refused
            }
        }
    }

    /// Puts a request in its group's FIFO, or refuses it at the bound.
    fn wait(&mut self, token: T, req: &Request<'_>, retry_at_ns: Option<u64>) -> Submitted {
        match self.backlog.push(token, StoredRequest::of(req), retry_at_ns) {
            Ok(()) => {
                self.stats.queued += 1;
                Submitted::Queued
            }
            Err(_) => {
                self.stats.rejected += 1;
                Submitted::Rejected
            }
        }
    }

    fn plan_now(&mut self, req: &Request<'_>, now_ns: u64) -> Decision {
        self.stats.planned += 1;
        self.plan.clear();
        let decision = self.policy.plan(req, now_ns, &mut self.rng, &mut self.plan);
        match decision {
            // A plan with too few targets is a policy bug; the request cannot be served.
            Decision::Send if self.plan.count() < req.count => Decision::Unavailable,
            other => other,
        }
    }

    /// Opens a dispatch for the plan just made, counts its targets as sent, and collects the
    /// probes the policy wants after it.
    fn dispatch(&mut self, req: &Request<'_>, now_ns: u64) -> Dispatch {
        let id = self.ledger.open();
        for i in 0..self.plan.count() {
            let node = self.plan.targets()[i];
            let sent = self.ledger.send(id, node);
            debug_assert!(sent.is_some(), "a plan's targets are distinct");
            self.policy.observe(&Event::Sent { node }, now_ns);
            self.stats.sends += 1;
        }
        if self.needs.has(Need::Probes) {
            self.collect_probes(req, now_ns);
        }
        Dispatch { id, plan: self.plan }
    }

    fn collect_probes(&mut self, req: &Request<'_>, now_ns: u64) {
        if self.probe_next >= self.probes.len() {
            self.probes.clear();
            self.probe_next = 0;
        }
        self.policy.probes(req, now_ns, &mut self.rng, &mut self.probes);
    }

    /// Opens a dispatch the policy did not plan (a write to every replica): each of `targets`
    /// counts as sent, so the policy's in-flight counts see it.
    pub fn dispatch_fixed(&mut self, targets: &[NodeId], now_ns: u64) -> DispatchId {
        let id = self.ledger.open();
        for &node in targets {
            if self.ledger.send(id, node).is_some() {
                self.policy.observe(&Event::Sent { node }, now_ns);
                self.stats.sends += 1;
            }
        }
        id
    }

    /// Sends dispatch `id` to one more node (a fallback after a failure, a speculative retry);
    /// `None` when the dispatch is closed or gone or already went to `node`.
    pub fn send_extra(&mut self, id: DispatchId, node: NodeId, now_ns: u64) -> Option<Ticket> {
        let ticket = self.ledger.send(id, node)?;
        self.policy.observe(&Event::Sent { node }, now_ns);
        self.stats.sends += 1;
        Some(ticket)
    }

    /// A send ended with a reply measured `latency_ns` after it left, carrying `feedback`.
    /// Wakes the waiting groups the replying node can serve.
    #[inline]
    pub fn on_reply(&mut self, ticket: Ticket, latency_ns: u64, feedback: Feedback, now_ns: u64) -> Result<(), Accounting> {
        let node = self.end(ticket)?;
        self.stats.replies += 1;
        if feedback != Feedback::default() {
            self.stats.feedback_replies += 1;
        }
        let reply = Reply {
            node,
            latency_ns,
            feedback,
        };
        self.policy.observe(&Event::Reply(&reply), now_ns);
        if !self.backlog.is_empty() {
            self.backlog.wake_for(Some(node));
        }
        Ok(())
    }

    /// A send ended without a reply.
    pub fn on_failure(&mut self, ticket: Ticket, failure: Failure, now_ns: u64) -> Result<(), Accounting> {
        let node = self.end(ticket)?;
        self.stats.failures += 1;
        self.policy.observe(&Event::Failure { node, failure }, now_ns);
        self.backlog.wake_for(Some(node));
        Ok(())
    }

    fn end(&mut self, ticket: Ticket) -> Result<NodeId, Accounting> {
        match self.ledger.end(ticket) {
            Ok(node) => Ok(node),
            Err(Accounting::Late) => {
                self.stats.late += 1;
                Err(Accounting::Late)
            }
            Err(bad) => {
                assert!(
                    !self.panic_on_violation,
                    "{}: the caller broke the runtime's contract: {bad:?} end of send {ticket:?}",
                    self.name
                );
                self.stats.violations += 1;
                Err(bad)
            }
        }
    }

    /// The caller gives up on dispatch `id` (its request timed out, or the node making the
    /// request lost it): every send still out ends with `failure`, and the dispatch is closed.
    pub fn abandon(&mut self, id: DispatchId, failure: Failure, now_ns: u64) {
        let mut open = [(DispatchId::default().ticket(0), NodeId(0)); MAX_REPLICAS];
        let mut n = 0;
        for (t, node) in self.ledger.open_sends(id) {
            open[n] = (t, node);
            n += 1;
        }
        for &(t, _) in &open[..n] {
            let _ = self.on_failure(t, failure, now_ns);
        }
        self.ledger.close(id);
    }

    /// No more sends will follow for dispatch `id`; it is freed once every send has ended.
    pub fn close(&mut self, id: DispatchId) {
        self.ledger.close(id);
    }

    /// The next waiting request that may leave now, planned again: woken by a reply or by the
    /// timer. `alive` says whether the caller still wants a waiting request (one that timed
    /// out meanwhile is dropped without being planned). Call until `None` after every call
    /// that can wake a group ([`Self::on_reply`], [`Self::on_failure`],
    /// [`Self::handle_timeout`], [`Self::on_node_down`]).
    pub fn poll_released(&mut self, now_ns: u64, mut alive: impl FnMut(&T) -> bool) -> Option<(T, Released)> {
        while let Some(g) = self.backlog.next_woken() {
            while let Some((token, stored)) = self.backlog.head(g) {
                if !alive(token) {
                    self.backlog.pop(g);
                    continue;
                }
                let stored = *stored;
                let mut live = [NodeId(0); MAX_REPLICAS];
                let mut n = 0;
                for &c in stored.candidates.as_slice() {
                    if Some(c) == self.local || !self.down.get(c.index()).copied().unwrap_or(false) {
                        live[n] = c;
                        n += 1;
                    }
                }
                let req = Request {
                    candidates: &live[..n],
                    replicas: stored.replicas.as_ref().map(|r| r.as_slice()),
                    count: stored.count,
                    local: self.local,
                    group: stored.group,
                };
                match self.plan_now(&req, now_ns) {
                    Decision::Send => {
                        let dispatch = self.dispatch(&req, now_ns);
                        let (token, _) = self.backlog.pop(g).expect("the head was just read");
                        return Some((token, Released::Send(dispatch)));
                    }
                    Decision::Unavailable => {
                        let (token, _) = self.backlog.pop(g).expect("the head was just read");
                        return Some((token, Released::Unavailable));
                    }
                    Decision::Wait { retry_at_ns } => {
                        self.backlog.keep_waiting(g, retry_at_ns.max(now_ns + 1));
                        break;
                    }
                }
            }
        }
        None
    }

    /// When the caller must call [`Self::handle_timeout`] next (`None`: no timer needed).
    pub fn poll_timeout(&self) -> Option<u64> {
        self.backlog.next_retry_ns()
    }

    /// The timer fired: wakes the groups whose time has come (then call
    /// [`Self::poll_released`]).
    pub fn handle_timeout(&mut self, now_ns: u64) {
        self.backlog.wake_due(now_ns);
    }

    /// Removes the waiting requests `cancel` picks (their requests timed out, or the caller
    /// stops), handing each token to `sink`.
    pub fn cancel_waiting(&mut self, cancel: impl FnMut(&T) -> bool, sink: impl FnMut(T)) {
        self.backlog.remove_where(cancel, sink);
    }

    /// The next probe the policy wants sent: send it off the request path and feed the answer
    /// to [`Self::on_probe_reply`].
    pub fn poll_probe(&mut self) -> Option<Probe> {
        let p = self.probes.get(self.probe_next).copied()?;
        self.probe_next += 1;
        self.stats.probes_sent += 1;
        Some(p)
    }

    /// A probe's answer.
    pub fn on_probe_reply(&mut self, reply: &ProbeReply, now_ns: u64) {
        self.stats.probe_replies += 1;
        self.policy.observe(&Event::ProbeReply(reply), now_ns);
    }

    /// News about `node` not tied to a reply: gossip, or this node's own live state.
    pub fn on_info(&mut self, node: NodeId, info: &Feedback, now_ns: u64) {
        self.policy.observe(&Event::Info { node, info }, now_ns);
    }

    /// `node` is seen up.
    pub fn on_node_up(&mut self, node: NodeId, caps: NodeCaps, now_ns: u64) {
        if let Some(d) = self.down.get_mut(node.index()) {
            *d = false;
        }
        self.policy.observe(&Event::NodeUp { node, caps }, now_ns);
        self.backlog.wake_for(Some(node));
    }

    /// `node` is seen down: waiting requests stop counting on it (a group whose head has too
    /// few candidates left comes back [`Released::Unavailable`]).
    pub fn on_node_down(&mut self, node: NodeId, now_ns: u64) {
        if self.down.len() <= node.index() {
            self.down.resize(node.index() + 1, false);
        }
        self.down[node.index()] = true;
        self.policy.observe(&Event::NodeDown { node }, now_ns);
        self.backlog.wake_for(Some(node));
    }

    /// The zones of the nodes and of this decider (see [`Event::Topology`]).
    pub fn set_topology(&mut self, zones: &[(NodeId, u32)], local_zone: Option<u32>) {
        self.policy.observe(&Event::Topology { zones, local_zone }, 0);
    }

    /// Ground truth about a node (a simulator, for policies that need [`Need::Truth`]).
    pub fn on_truth(&mut self, truth: &NodeTruth, now_ns: u64) {
        self.policy.observe(&Event::Truth(truth), now_ns);
    }
}
