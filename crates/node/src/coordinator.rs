//! The coordinator: serves a client's Get or Put at a consistency level by contacting the key's
//! replicas.
//!
//! Reads: the live replicas are the candidates; the policy picks CL of them (and fallbacks);
//! the coordinator reads from the targets at once (locally when it is one of them), moves on to
//! the next fallback when a target fails, and answers with the newest row once CL replicas
//! answered. Every internode reply's feedback record goes to the policy's `on_reply`.
//! Writes: every live replica is written; the client is answered once CL of them have the row
//! on disk (the others finish in the background). Multi-key reads (an `IN` query): every key
//! read as a single read, all at once, answered when the last is done. All end at the deadline
//! with a clear error, never a hang: nothing here waits without a time limit.
//!
//! Every call to a replica counts its bytes here, the one place that sends it and decodes its
//! reply ([`crate::traffic`]).

use crate::metrics::{inc, GaugeGuard};
use crate::policy_runtime::NoPlan;
use crate::proto;
use crate::replica;
use crate::state::{NodeState, View};
use crate::storage::Row;
use crate::traffic::{wire_bytes, Link};
use bytes::Bytes;
use replica_lb_policy::{ConsistencyLevel, Failure, NodeId, ReplicaSet};
use replica_lb_runtime::Ticket;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc;
use tokio::time::timeout_at;

/// Why a coordinated request failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoordError {
    /// Fewer live replicas than the consistency level needs, or none could answer.
    Unavailable(String),
    /// The deadline passed before CL replicas answered.
    Timeout(String),
}

impl std::fmt::Display for CoordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CoordError::Unavailable(m) | CoordError::Timeout(m) => f.write_str(m),
        }
    }
}

/// A read's answer.
#[derive(Debug, Clone)]
pub struct ReadOutcome {
    /// The newest row among the replicas that answered (None: the key is absent).
    pub row: Option<Row>,
    /// How many replicas answered.
    pub answered: usize,
}

/// A write's answer.
#[derive(Debug, Clone, Copy)]
pub struct WriteOutcome {
    /// The timestamp the row was written with.
    pub timestamp_us: u64,
    /// How many replicas acknowledged before the answer.
    pub acked: usize,
}

/// The key's replicas `view` sees live, or `Unavailable` when fewer than `k` (what `cl` needs
/// of the replication factor `rf`) are: reads and writes refuse before sending anything.
fn live_replicas(view: &View, replicas: &ReplicaSet, cl: ConsistencyLevel, k: usize, rf: u32) -> Result<ReplicaSet, CoordError> {
    assert!(k >= 1 && k <= rf as usize, "CL {} asks {k} of {rf} replicas", cl.as_str());
    assert!(
        replicas.len() <= rf as usize,
        "{} replicas for a replication factor of {rf}",
        replicas.len()
    );
    let mut live = ReplicaSet::new();
    for &r in replicas.as_slice() {
        if view.is_live(r) {
            live.push(r);
        }
    }
    if live.len() < k {
        return Err(CoordError::Unavailable(format!(
            "only {} of the key's {rf} replicas are live; CL {} needs {k}",
            live.len(),
            cl.as_str()
        )));
    }
    Ok(live)
}

fn classify(status: &tonic::Status) -> Failure {
    match status.code() {
        tonic::Code::Unavailable => Failure::ConnectionLost,
        tonic::Code::DeadlineExceeded | tonic::Code::Cancelled => Failure::Timeout,
        _ => Failure::Error,
    }
}

/// How an internode call ended.
enum CallEnd<A> {
    /// The replica answered.
    Reply(A),
    /// It answered with an error status, or the call failed.
    Failed(tonic::Status),
    /// No answer by the deadline.
    TimedOut,
}

/// Makes one internode call after the node's injected delay (`cluster delay`), ending at
/// `deadline`, and counts its bytes: the request once handed to gRPC, unless the call failed
/// for want of a connection (`UNAVAILABLE`: nothing left the node); the reply when it arrives.
async fn internode_call<Q, A, F, Fut>(state: &NodeState, deadline: tokio::time::Instant, request: Q, call: F) -> CallEnd<A>
where
    Q: prost::Message,
    A: prost::Message,
    F: FnOnce(Q) -> Fut,
    Fut: Future<Output = Result<tonic::Response<A>, tonic::Status>>,
{
    let traffic = &state.counters.traffic;
    let request_bytes = wire_bytes(&request);
    let mut handed = false;
    let result = timeout_at(deadline, async {
        state.hold_outgoing().await;
        handed = true;
        call(request).await
    })
    .await;
    match result {
        Err(_) => {
            if handed {
                traffic.sent_bytes(Link::Internode, request_bytes);
            }
            CallEnd::TimedOut
        }
        Ok(Err(status)) => {
            if status.code() != tonic::Code::Unavailable {
                traffic.sent_bytes(Link::Internode, request_bytes);
            }
            CallEnd::Failed(status)
        }
        Ok(Ok(reply)) => {
            let reply = reply.into_inner();
            traffic.sent_bytes(Link::Internode, request_bytes);
            traffic.received(Link::Internode, &reply);
            CallEnd::Reply(reply)
        }
    }
}

type ReadResult = (NodeId, Result<Option<Row>, String>);

/// Starts one replica read, sent under `ticket` (already counted as sent by the policy
/// runtime); its result arrives on `tx`. Every path ends the ticket exactly once.
/// Sends the plan's background read, if any (a warm-up read of a cold replica): counted in the
/// policy runtime like any read, its reply feeds the policy, and nobody waits for it.
fn launch_background_read(
    state: &Arc<NodeState>,
    view: &View,
    live: &ReplicaSet,
    dispatch: &replica_lb_runtime::Dispatch,
    key: &Bytes,
    deadline: tokio::time::Instant,
) {
    let Some(node) = dispatch.plan.background() else {
        return;
    };
    if !live.contains(node) || dispatch.plan.targets().contains(&node) {
        return;
    }
    if let Some(ticket) = state.policy.send_extra(dispatch.id, node) {
        // Nobody reads the answer: the receiver is dropped at once, and the send is ignored.
        let (tx, _) = mpsc::channel(1);
        launch_read(state, view, (node, ticket), key, deadline, &tx);
    }
}

fn launch_read(
    state: &Arc<NodeState>,
    view: &View,
    (node, ticket): (NodeId, Ticket),
    key: &Bytes,
    deadline: tokio::time::Instant,
    tx: &mpsc::Sender<ReadResult>,
) {
    let state = state.clone();
    let key = key.clone();
    let tx = tx.clone();
    if node == state.id {
        inc(&state.counters.local_reads);
        tokio::spawn(async move {
            let start = Instant::now();
            let result = match timeout_at(deadline, replica::read(&state, &key)).await {
                Ok(r) => r,
                Err(_) => Err("the local read did not finish in time".to_string()),
            };
            match &result {
                Ok(r) => state.policy.reply(ticket, start.elapsed().as_nanos() as u64, r.feedback),
                Err(_) => state.policy.failure(ticket, Failure::Error),
            }
            let _ = tx.send((node, result.map(|r| r.row))).await;
        });
        return;
    }
    inc(&state.counters.remote_reads);
    let Some(peer) = view.peer(node) else {
        state.policy.failure(ticket, Failure::ConnectionLost);
        let _ = tx.try_send((node, Err(format!("node {node} is not known"))));
        return;
    };
    let mut client = peer.client.clone();
    tokio::spawn(async move {
        let start = Instant::now();
        let request = proto::ReplicaReadRequest {
            key,
            coordinator: state.id.0 as u32,
        };
        let result = match internode_call(&state, deadline, request, |r| client.replica_read(r)).await {
            CallEnd::TimedOut => {
                state.policy.failure(ticket, Failure::Timeout);
                Err(format!("node {node} did not answer in time"))
            }
            CallEnd::Failed(status) => {
                state.policy.failure(ticket, classify(&status));
                Err(format!("node {node}: {}", status.message()))
            }
            CallEnd::Reply(reply) => {
                let feedback = replica::feedback_from_proto(reply.feedback.as_ref());
                if let Some(rate) = feedback.hit_rate {
                    state.note_peer_rate(node, rate);
                }
                state.policy.reply(ticket, start.elapsed().as_nanos() as u64, feedback);
                Ok(reply.found.then_some(Row {
                    timestamp_us: reply.timestamp_us,
                    value: reply.value,
                }))
            }
        };
        let _ = tx.send((node, result)).await;
    });
}

/// Reads `key` at `cl`, giving up at `deadline`.
pub async fn get(
    state: &Arc<NodeState>,
    key: Bytes,
    cl: ConsistencyLevel,
    deadline: tokio::time::Instant,
    timeout_ms: u32,
) -> Result<ReadOutcome, CoordError> {
    let c = &state.counters;
    inc(&c.coordinator_reads);
    let _busy = GaugeGuard::new(&c.in_flight);
    let view = state.view();
    let (replicas, group) = view.ring.replicas_of_key(&key);
    let replicas = *replicas;
    let k = cl.required(state.config.replication_factor as usize);
    let live = live_replicas(&view, &replicas, cl, k, state.config.replication_factor)?;
    let dispatch = match timeout_at(deadline, state.policy.plan(&live, &replicas, k, u64::from(group))).await {
        Err(_) => {
            return Err(CoordError::Timeout(format!(
                "read timed out after {timeout_ms} ms waiting for the policy"
            )))
        }
        Ok(Err(NoPlan::Unavailable)) => {
            return Err(CoordError::Unavailable(format!(
                "policy '{}' found no replicas to read from",
                state.config.policy.name
            )))
        }
        Ok(Err(NoPlan::Overloaded)) => {
            return Err(CoordError::Unavailable(format!(
                "policy '{}' holds back {} requests already (rate control); try again later",
                state.config.policy.name,
                replica_lb_runtime::DEFAULT_MAX_WAITING
            )))
        }
        Ok(Ok(d)) => d,
    };
    let outcome = read_plan(state, &view, &live, &dispatch, &key, k, cl, deadline, timeout_ms).await;
    state.policy.close(dispatch.id);
    outcome
}

/// Most keys in one multi-key read.
pub const MAX_MULTI_KEYS: usize = 1000;

/// Reads every key of `keys` at `cl`, all at once, giving up at `deadline`: an `IN` query's
/// coordinator. Each key is read exactly as [`get`] reads one (the same policy runtime, the
/// same fallbacks); the answers come in the order of `keys`. It answers when every key's read
/// has ended (each by the deadline at the latest, none cancelled halfway, so every send the
/// policy counted ends); one key that failed fails the whole request, a time-out first.
pub async fn multi_get(
    state: &Arc<NodeState>,
    keys: Vec<Bytes>,
    cl: ConsistencyLevel,
    deadline: tokio::time::Instant,
    timeout_ms: u32,
) -> Result<Vec<ReadOutcome>, CoordError> {
    inc(&state.counters.coordinator_multi_gets);
    let n = keys.len();
    let mut reads = tokio::task::JoinSet::new();
    for (i, key) in keys.into_iter().enumerate() {
        let state = state.clone();
        reads.spawn(async move { (i, get(&state, key, cl, deadline, timeout_ms).await) });
    }
    let mut answers: Vec<Option<ReadOutcome>> = vec![None; n];
    let mut answered = 0;
    let (mut timed_out, mut failed): (bool, Option<(usize, CoordError)>) = (false, None);
    while let Some(joined) = reads.join_next().await {
        match joined {
            Ok((i, Ok(read))) => {
                answers[i] = Some(read);
                answered += 1;
            }
            Ok((i, Err(e))) => {
                timed_out |= matches!(e, CoordError::Timeout(_));
                if failed.as_ref().is_none_or(|(j, _)| i < *j) {
                    failed = Some((i, e));
                }
            }
            Err(e) => {
                failed.get_or_insert((n, CoordError::Unavailable(format!("a key's read failed: {e}"))));
            }
        }
    }
    match failed {
        None => Ok(answers.into_iter().flatten().collect()),
        Some(_) if timed_out => Err(CoordError::Timeout(format!(
            "multi-key read timed out after {timeout_ms} ms: {answered} of {n} keys answered (CL {})",
            cl.as_str()
        ))),
        Some((i, e)) => Err(CoordError::Unavailable(format!(
            "multi-key read failed: {answered} of {n} keys answered; key #{i}: {e}"
        ))),
    }
}

/// Reads from a dispatch's targets, then its fallbacks, then any other live replica, until
/// `k` answered or the deadline.
#[allow(clippy::too_many_arguments)]
async fn read_plan(
    state: &Arc<NodeState>,
    view: &View,
    live: &ReplicaSet,
    dispatch: &replica_lb_runtime::Dispatch,
    key: &Bytes,
    k: usize,
    cl: ConsistencyLevel,
    deadline: tokio::time::Instant,
    timeout_ms: u32,
) -> Result<ReadOutcome, CoordError> {
    let c = &state.counters;
    let plan = &dispatch.plan;
    // Fast path: one replica to read and it is this node (CL ONE, token-aware client).
    let mut targets = dispatch.targets();
    if k == 1 && plan.targets().first() == Some(&state.id) {
        let (_, ticket) = targets.next().expect("a plan of count 1 has a target");
        launch_background_read(state, view, live, dispatch, key, deadline);
        inc(&c.local_reads);
        let start = Instant::now();
        match timeout_at(deadline, replica::read(state, key)).await {
            Ok(Ok(read)) => {
                state.policy.reply(ticket, start.elapsed().as_nanos() as u64, read.feedback);
                return Ok(ReadOutcome {
                    row: read.row,
                    answered: 1,
                });
            }
            Ok(Err(_)) => state.policy.failure(ticket, Failure::Error),
            Err(_) => state.policy.failure(ticket, Failure::Timeout),
        }
        // A local failure: go on with the fallbacks and the other live replicas.
    }
    // Order of further attempts: the plan's fallbacks, then any other live replica.
    let mut more = ReplicaSet::new();
    for &n in plan.fallbacks().iter().chain(live.as_slice()) {
        if !more.contains(n) && !plan.targets().contains(&n) && live.contains(n) {
            more.push(n);
        }
    }
    let (tx, mut rx) = mpsc::channel((plan.count() + more.len()).max(1));
    let mut next = 0;
    let mut outstanding = 0;
    for target in targets {
        launch_read(state, view, target, key, deadline, &tx);
        outstanding += 1;
    }
    if !(k == 1 && plan.targets().first() == Some(&state.id)) {
        // (The fast path above sent it already.)
        launch_background_read(state, view, live, dispatch, key, deadline);
    }
    let mut launch_next = |outstanding: &mut usize| {
        while next < more.len() {
            let node = more.as_slice()[next];
            next += 1;
            if let Some(ticket) = state.policy.send_extra(dispatch.id, node) {
                launch_read(state, view, (node, ticket), key, deadline, &tx);
                *outstanding += 1;
                return;
            }
        }
    };
    if outstanding == 0 {
        // The fast path's local read failed.
        launch_next(&mut outstanding);
    }
    let mut answered = 0;
    let mut best: Option<Row> = None;
    loop {
        match timeout_at(deadline, rx.recv()).await {
            Err(_) | Ok(None) => {
                return Err(CoordError::Timeout(format!(
                    "read timed out after {timeout_ms} ms: {answered} of {k} replicas answered (CL {})",
                    cl.as_str()
                )))
            }
            Ok(Some((_, Ok(row)))) => {
                outstanding -= 1;
                answered += 1;
                if let Some(row) = row {
                    if best.as_ref().is_none_or(|b| row.newer_than(b)) {
                        best = Some(row);
                    }
                }
                if answered >= k {
                    return Ok(ReadOutcome { row: best, answered });
                }
            }
            Ok(Some((_, Err(e)))) => {
                outstanding -= 1;
                launch_next(&mut outstanding);
                if outstanding == 0 {
                    return Err(CoordError::Unavailable(format!(
                        "{answered} of {k} replicas answered (CL {}); last error: {e}",
                        cl.as_str()
                    )));
                }
            }
        }
    }
}

/// Writes `value` under `key` at `cl`, giving up at `deadline`.
pub async fn put(
    state: &Arc<NodeState>,
    key: Bytes,
    value: Bytes,
    cl: ConsistencyLevel,
    deadline: tokio::time::Instant,
    timeout_ms: u32,
) -> Result<WriteOutcome, CoordError> {
    let c = &state.counters;
    inc(&c.coordinator_writes);
    let _busy = GaugeGuard::new(&c.in_flight);
    let view = state.view();
    let (replicas, _) = view.ring.replicas_of_key(&key);
    let k = cl.required(state.config.replication_factor as usize);
    let live = live_replicas(&view, replicas, cl, k, state.config.replication_factor)?;
    let timestamp_us = state.next_timestamp_us();
    let row = Row { timestamp_us, value };
    let (tx, mut rx) = mpsc::channel::<Result<(), String>>(live.len());
    // Every live replica is written; the policy counts the writes in flight like reads.
    let dispatch = state.policy.dispatch_all(live.as_slice());
    for (i, &node) in live.as_slice().iter().enumerate() {
        let ticket = dispatch.ticket(i);
        let tx = tx.clone();
        let state = state.clone();
        let key = key.clone();
        let row = row.clone();
        if node == state.id {
            tokio::spawn(async move {
                let start = Instant::now();
                let r = timeout_at(deadline, replica::write(&state, key, row))
                    .await
                    .unwrap_or_else(|_| Err("local write did not finish in time".into()));
                end_write(&state, ticket, start, &r);
                let _ = tx.send(r).await;
            });
            continue;
        }
        let Some(peer) = view.peer(node) else {
            state.policy.failure(ticket, Failure::ConnectionLost);
            continue;
        };
        let mut client = peer.client.clone();
        tokio::spawn(async move {
            let start = Instant::now();
            let request = proto::ReplicaWriteRequest {
                key,
                value: row.value,
                timestamp_us: row.timestamp_us,
                coordinator: state.id.0 as u32,
            };
            let r = match internode_call(&state, deadline, request, |r| client.replica_write(r)).await {
                CallEnd::TimedOut => Err(format!("node {node} did not acknowledge in time")),
                CallEnd::Failed(status) => Err(format!("node {node}: {}", status.message())),
                CallEnd::Reply(_) => Ok(()),
            };
            end_write(&state, ticket, start, &r);
            let _ = tx.send(r).await;
        });
    }
    state.policy.close(dispatch);
    drop(tx);
    let mut acked = 0;
    let mut failed = 0;
    loop {
        match timeout_at(deadline, rx.recv()).await {
            Err(_) => {
                return Err(CoordError::Timeout(format!(
                    "write timed out after {timeout_ms} ms: {acked} of {k} replicas acknowledged (CL {})",
                    cl.as_str()
                )))
            }
            Ok(None) => {
                return Err(CoordError::Unavailable(format!(
                    "write failed: {acked} of {k} replicas acknowledged, {failed} failed (CL {})",
                    cl.as_str()
                )))
            }
            Ok(Some(Ok(()))) => {
                acked += 1;
                if acked >= k {
                    return Ok(WriteOutcome { timestamp_us, acked });
                }
            }
            Ok(Some(Err(_))) => failed += 1,
        }
    }
}

/// Ends a write's ticket: a reply (no feedback record on writes) or a failure.
fn end_write(state: &NodeState, ticket: Ticket, start: Instant, result: &Result<(), String>) {
    match result {
        Ok(()) => state
            .policy
            .reply(ticket, start.elapsed().as_nanos() as u64, replica_lb_policy::Feedback::default()),
        Err(_) => state.policy.failure(ticket, Failure::Error),
    }
}
