//! The coordinator's policy: the shared [`replica_lb_runtime::Runtime`] behind a short lock, plus the one
//! task that wakes it at the times it asks for.
//!
//! Request handlers lock the runtime for a plan, a reply or a failure (a few hundred
//! nanoseconds; never across an `.await`), so nothing a policy must learn is ever dropped: every
//! send ends exactly once in its ledger, and its counts are in Stats (`policy_sends`,
//! `policy_ended`, `policy_violations`). A request that rate control holds back waits on a
//! one-shot channel; the runtime releases it when a reply from its group arrives or when the
//! timer task fires, and a request whose handler gave up (time-out) is dropped unplanned.

use replica_lb_policy::{Failure, Feedback, NodeCaps, NodeId, ReplicaSet, Request};
use replica_lb_runtime::{Caller, Dispatch, DispatchId, Released, Runtime, RuntimeConfig, RuntimeStats, Submitted, Ticket};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::{oneshot, Notify};

/// What the real cluster's nodes provide to a coordinator policy: the feedback record on
/// replies and by gossip, and the zones. No probes (no coordinator-side policy sends any) and
/// no ground truth.
pub const NODES: Caller = Caller {
    name: "the real cluster's nodes",
    provides: replica_lb_policy::Needs::of(&[replica_lb_policy::Need::Feedback, replica_lb_policy::Need::Topology]),
};

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

/// A request held back by rate control: where its plan goes once released.
pub struct Waiter(oneshot::Sender<Released>);

/// Why a request got no plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoPlan {
    /// The policy found no replicas to read from.
    Unavailable,
    /// Too many requests were waiting for rate control.
    Overloaded,
}

struct Shared {
    runtime: Mutex<Runtime<Waiter>>,
    /// Woken when a request starts to wait (the timer may need to fire sooner).
    timer: Notify,
    clock: Clock,
    local: NodeId,
    own_rate: Arc<AtomicU64>,
    own_rate_seen: AtomicU64,
}

/// A cheap, cloneable handle to the node's policy runtime.
#[derive(Clone)]
pub struct PolicyHandle(Arc<Shared>);

impl PolicyHandle {
    /// Wraps `runtime` (built for this node, [`NODES`]) and starts its timer task; `own_rate`
    /// holds the node's live hit rate (f64 bits), fed to the policy whenever it changed.
    pub fn spawn(runtime: Runtime<Waiter>, local: NodeId, clock: Clock, own_rate: Arc<AtomicU64>) -> PolicyHandle {
        let shared = Arc::new(Shared {
            runtime: Mutex::new(runtime),
            timer: Notify::new(),
            clock,
            local,
            own_rate,
            own_rate_seen: AtomicU64::new(u64::MAX),
        });
        tokio::spawn(timer_task(Arc::downgrade(&shared)));
        PolicyHandle(shared)
    }

    /// Builds the registered coordinator policy `name` for node `local`.
    pub fn build(name: &str, params: &replica_lb_policy::ParamTable, local: NodeId, seed: u64) -> Result<Runtime<Waiter>, String> {
        let config = RuntimeConfig {
            local: Some(local),
            seed,
            max_waiting: replica_lb_runtime::DEFAULT_MAX_WAITING,
        };
        Runtime::build(name, replica_lb_policy::Side::Coordinator, params, NODES, config)
    }

    fn lock(&self) -> MutexGuard<'_, Runtime<Waiter>> {
        self.0.runtime.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn now(&self) -> u64 {
        self.0.clock.now_ns()
    }

    /// Plans one read: `count` distinct targets among `candidates` (the live replicas), then
    /// fallbacks. The targets count as sent: report each one's end. Waits while rate control
    /// holds the request back (the caller bounds the wait with its deadline).
    pub async fn plan(&self, candidates: &ReplicaSet, replicas: &ReplicaSet, count: usize, group: u64) -> Result<Dispatch, NoPlan> {
        assert!(count >= 1, "a read asks at least one replica");
        assert!(
            candidates.as_slice().iter().all(|c| replicas.as_slice().contains(c)),
            "the candidates are live replicas of the key: {candidates:?} not within {replicas:?}"
        );
        let req = Request {
            candidates: candidates.as_slice(),
            replicas: Some(replicas.as_slice()),
            count,
            local: Some(self.0.local),
            group,
        };
        let mut wait = None;
        let submitted = {
            let mut rt = self.lock();
            let now = self.now();
            self.feed_own_rate(&mut rt, now);
            rt.submit(&req, now, || {
                let (tx, rx) = oneshot::channel();
                wait = Some(rx);
                Waiter(tx)
            })
        };
        match submitted {
            Submitted::Send(d) => Ok(d),
            Submitted::Unavailable => Err(NoPlan::Unavailable),
            Submitted::Rejected => Err(NoPlan::Overloaded),
            Submitted::Queued => {
                self.0.timer.notify_one();
                let rx = wait.expect("a queued request has a waiter");
                match rx.await {
                    Ok(Released::Send(d)) => Ok(d),
                    Ok(Released::Unavailable) | Err(_) => Err(NoPlan::Unavailable),
                }
            }
        }
    }

    /// Sends to every one of `targets` (a write), counted in the policy's in-flight numbers.
    pub fn dispatch_all(&self, targets: &[NodeId]) -> DispatchId {
        assert!(!targets.is_empty(), "a write goes to at least one replica");
        let now = self.now();
        self.lock().dispatch_fixed(targets, now)
    }

    /// One more send of dispatch `id` (a fallback after a failure).
    pub fn send_extra(&self, id: DispatchId, node: NodeId) -> Option<Ticket> {
        let now = self.now();
        self.lock().send_extra(id, node, now)
    }

    /// A send ended with a reply.
    pub fn reply(&self, ticket: Ticket, latency_ns: u64, feedback: Feedback) {
        let mut rt = self.lock();
        let now = self.now();
        let _ = rt.on_reply(ticket, latency_ns, feedback, now);
        release(&mut rt, now);
    }

    /// A send ended without a reply.
    pub fn failure(&self, ticket: Ticket, failure: Failure) {
        let mut rt = self.lock();
        let now = self.now();
        let _ = rt.on_failure(ticket, failure, now);
        release(&mut rt, now);
    }

    /// No more sends for dispatch `id`.
    pub fn close(&self, id: DispatchId) {
        self.lock().close(id);
    }

    /// News about `node` (gossip).
    pub fn info(&self, node: NodeId, info: Feedback) {
        let now = self.now();
        self.lock().on_info(node, &info, now);
    }

    /// `node` is up.
    pub fn node_up(&self, node: NodeId) {
        let mut rt = self.lock();
        let now = self.now();
        rt.on_node_up(node, NodeCaps::default(), now);
        release(&mut rt, now);
    }

    /// `node` is down.
    pub fn node_down(&self, node: NodeId) {
        let mut rt = self.lock();
        let now = self.now();
        rt.on_node_down(node, now);
        release(&mut rt, now);
    }

    /// The zones of the known nodes and of this one.
    pub fn topology(&self, zones: &[(NodeId, u32)], local_zone: u32) {
        self.lock().set_topology(zones, Some(local_zone));
    }

    /// What went through the runtime so far.
    pub fn stats(&self) -> RuntimeStats {
        self.lock().stats()
    }

    fn feed_own_rate(&self, rt: &mut Runtime<Waiter>, now: u64) {
        let bits = self.0.own_rate.load(Ordering::Relaxed);
        if self.0.own_rate_seen.swap(bits, Ordering::Relaxed) != bits {
            let info = Feedback {
                hit_rate: Some(f64::from_bits(bits)),
                ..Feedback::default()
            };
            rt.on_info(self.0.local, &info, now);
        }
    }
}

/// Hands every request the runtime releases to its waiting handler. A handler that gave up
/// meanwhile gets nothing; a plan it can no longer take is abandoned, so its sends still end.
fn release(rt: &mut Runtime<Waiter>, now: u64) {
    while let Some((Waiter(tx), released)) = rt.poll_released(now, |w| !w.0.is_closed()) {
        if let Err(Released::Send(d)) = tx.send(released) {
            rt.abandon(d.id, Failure::Error, now);
        }
    }
}

/// Wakes the runtime at the times it asks for, until the node's policy handle is gone.
async fn timer_task(shared: std::sync::Weak<Shared>) {
    /// How long to sleep when nothing waits (a new waiter notifies sooner).
    const IDLE: Duration = Duration::from_secs(1);
    loop {
        // Holding the state for one round at most: the task ends once the node drops its
        // handles.
        let Some(s) = shared.upgrade() else { return };
        let next = s.runtime.lock().unwrap_or_else(|p| p.into_inner()).poll_timeout();
        let sleep = match next {
            Some(at_ns) => Duration::from_nanos(at_ns.saturating_sub(s.clock.now_ns())),
            None => IDLE,
        };
        tokio::select! {
            _ = tokio::time::sleep(sleep) => {}
            _ = s.timer.notified() => {}
        }
        let mut rt = s.runtime.lock().unwrap_or_else(|p| p.into_inner());
        let now = s.clock.now_ns();
        rt.handle_timeout(now);
        release(&mut rt, now);
    }
}
