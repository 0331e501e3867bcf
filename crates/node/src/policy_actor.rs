//! The coordinator's replica-selection policy, owned by one task.
//!
//! A [`policy::Policy`] takes `&mut self` and must not sit behind a lock on the request path, so
//! each node runs its policy instance inside one actor task that owns it (and its RNG). Request
//! handlers send it messages: `plan` is a round trip (a bounded queue plus a one-shot reply);
//! everything the policy learns (requests sent, replies with their feedback, failures, gossip,
//! nodes up and down, the node's own live hit rate) is fire-and-forget and dropped, counted,
//! when the queue is full rather than slowing requests down.
//!
//! A policy that asks a request to wait (rate control, [`Decision::Wait`]) gets it back: the
//! actor keeps it in a bounded FIFO and asks again at the time given, or when a reply arrives.

use crate::metrics::{inc, Counters};
use policy::{Decision, Failure, Feedback, NodeCaps, NodeId, Plan, Policy, ReplicaSet, Reply, Request, Rng};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// Messages queued for the policy task.
const QUEUE: usize = 8192;
/// Requests a policy may hold back at once; more are refused as unavailable.
const MAX_WAITING: usize = 4096;

/// The node's monotonic clock: nanoseconds since the node started.
#[derive(Clone, Copy, Debug)]
pub struct Clock(Instant);

impl Clock {
    /// A clock starting now.
    pub fn start() -> Clock {
        Clock(Instant::now())
    }

    /// Nanoseconds since the start.
    pub fn now_ns(&self) -> u64 {
        self.0.elapsed().as_nanos() as u64
    }
}

struct PlanAsk {
    candidates: ReplicaSet,
    replicas: ReplicaSet,
    count: usize,
    group: u64,
    reply: oneshot::Sender<Option<Plan>>,
}

// Plan requests dominate the traffic and carry their replica sets inline; boxing them would
// allocate once per request to save queue slots, which are cheap.
#[allow(clippy::large_enum_variant)]
enum Msg {
    Plan(PlanAsk),
    Sent(NodeId),
    Reply(Reply),
    Failure(NodeId, Failure),
    Info(NodeId, Feedback),
    Up(NodeId),
    Down(NodeId),
}

/// A cheap, cloneable handle to the policy task.
#[derive(Clone)]
pub struct PolicyHandle {
    tx: mpsc::Sender<Msg>,
    counters: Arc<Counters>,
}

impl PolicyHandle {
    /// Starts the task owning `policy` for node `local`; `own_rate` holds the node's live hit
    /// rate (f64 bits), fed to the policy with `on_info` whenever it changes.
    pub fn spawn(
        policy: Box<dyn Policy>,
        local: NodeId,
        seed: u64,
        clock: Clock,
        own_rate: Arc<AtomicU64>,
        counters: Arc<Counters>,
    ) -> PolicyHandle {
        let (tx, rx) = mpsc::channel(QUEUE);
        let actor = Actor {
            policy,
            local,
            rng: Rng::seed_from_u64(seed),
            clock,
            own_rate,
            own_rate_seen: u64::MAX,
            waiting: VecDeque::new(),
        };
        tokio::spawn(actor.run(rx));
        PolicyHandle { tx, counters }
    }

    /// Plans one request: `count` distinct targets among `candidates` (live replicas), then
    /// fallbacks. `None` when the policy finds no way to serve it.
    pub async fn plan(&self, candidates: ReplicaSet, replicas: ReplicaSet, count: usize, group: u64) -> Option<Plan> {
        let (reply, wait) = oneshot::channel();
        let ask = PlanAsk {
            candidates,
            replicas,
            count,
            group,
            reply,
        };
        self.tx.send(Msg::Plan(ask)).await.ok()?;
        wait.await.ok().flatten()
    }

    fn tell(&self, msg: Msg) {
        if self.tx.try_send(msg).is_err() {
            inc(&self.counters.policy_drops);
        }
    }

    /// A request was sent to `node`.
    pub fn sent(&self, node: NodeId) {
        self.tell(Msg::Sent(node));
    }

    /// A reply arrived.
    pub fn reply(&self, reply: Reply) {
        self.tell(Msg::Reply(reply));
    }

    /// A request to `node` failed.
    pub fn failure(&self, node: NodeId, failure: Failure) {
        self.tell(Msg::Failure(node, failure));
    }

    /// News about `node` (gossip).
    pub fn info(&self, node: NodeId, info: Feedback) {
        self.tell(Msg::Info(node, info));
    }

    /// `node` is up.
    pub fn node_up(&self, node: NodeId) {
        self.tell(Msg::Up(node));
    }

    /// `node` is down.
    pub fn node_down(&self, node: NodeId) {
        self.tell(Msg::Down(node));
    }
}

struct Actor {
    policy: Box<dyn Policy>,
    local: NodeId,
    rng: Rng,
    clock: Clock,
    own_rate: Arc<AtomicU64>,
    own_rate_seen: u64,
    waiting: VecDeque<(PlanAsk, u64)>,
}

impl Actor {
    async fn run(mut self, mut rx: mpsc::Receiver<Msg>) {
        loop {
            let next_retry = self.waiting.iter().map(|w| w.1).min();
            let msg = match next_retry {
                None => rx.recv().await,
                Some(at_ns) => {
                    let wait = Duration::from_nanos(at_ns.saturating_sub(self.clock.now_ns()));
                    match tokio::time::timeout(wait, rx.recv()).await {
                        Ok(m) => m,
                        Err(_) => {
                            self.retry_waiting();
                            continue;
                        }
                    }
                }
            };
            let Some(msg) = msg else { return };
            let now = self.clock.now_ns();
            match msg {
                Msg::Plan(ask) => self.plan(ask),
                Msg::Sent(n) => self.policy.on_send(n, now),
                Msg::Reply(r) => {
                    self.policy.on_reply(&r, now);
                    self.retry_waiting();
                }
                Msg::Failure(n, f) => {
                    self.policy.on_failure(n, f, now);
                    self.retry_waiting();
                }
                Msg::Info(n, i) => self.policy.on_info(n, &i, now),
                Msg::Up(n) => self.policy.on_node_up(n, NodeCaps::default(), now),
                Msg::Down(n) => self.policy.on_node_down(n, now),
            }
        }
    }

    fn feed_own_rate(&mut self, now: u64) {
        let bits = self.own_rate.load(Ordering::Relaxed);
        if bits != self.own_rate_seen {
            self.own_rate_seen = bits;
            let info = Feedback {
                hit_rate: Some(f64::from_bits(bits)),
                ..Feedback::default()
            };
            self.policy.on_info(self.local, &info, now);
        }
    }

    /// Asks the policy; answers the request unless it must wait.
    fn try_plan(&mut self, ask: &PlanAsk, now: u64) -> Result<Option<Plan>, u64> {
        let req = Request {
            candidates: ask.candidates.as_slice(),
            replicas: Some(ask.replicas.as_slice()),
            count: ask.count,
            local: Some(self.local),
            group: ask.group,
        };
        let mut plan = Plan::new();
        match self.policy.plan(&req, now, &mut self.rng, &mut plan) {
            Decision::Send if plan.count() >= ask.count => Ok(Some(plan)),
            Decision::Send | Decision::Unavailable => Ok(None),
            Decision::Wait { retry_at_ns } => Err(retry_at_ns.max(now + 1)),
        }
    }

    fn plan(&mut self, ask: PlanAsk) {
        let now = self.clock.now_ns();
        self.feed_own_rate(now);
        match self.try_plan(&ask, now) {
            Ok(plan) => {
                let _ = ask.reply.send(plan);
            }
            Err(_) if self.waiting.len() >= MAX_WAITING => {
                let _ = ask.reply.send(None);
            }
            Err(at) => self.waiting.push_back((ask, at)),
        }
    }

    fn retry_waiting(&mut self) {
        let now = self.clock.now_ns();
        self.feed_own_rate(now);
        for _ in 0..self.waiting.len() {
            let Some((ask, _)) = self.waiting.pop_front() else { break };
            if ask.reply.is_closed() {
                continue; // the requester gave up (time-out)
            }
            match self.try_plan(&ask, now) {
                Ok(plan) => {
                    let _ = ask.reply.send(plan);
                }
                Err(at) => self.waiting.push_back((ask, at)),
            }
        }
    }
}
