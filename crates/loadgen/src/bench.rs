//! `bench` over gRPC to the project's nodes: the [`Transport`] of the open loop
//! ([`open_loop`]). The loop's thread is one OS thread that sleeps until each request's intended send time,
//! owns the client policy's runtime and the histograms, and hands each request to the tokio
//! runtime. Everything the policy must hear comes back to this thread on one channel: every
//! request's end (with the coordinator's feedback record) and every probe's answer, so its
//! ledger ends each send exactly once.
//!
//! A multi-key request ([`MultiOptions`]) is one entry of the dispatcher's table of open
//! multi-key requests and one or more sends, each planned by the policy like a single read: K
//! sends of one key (`parallel`), or one `MultiGet` of every key to the coordinator planned for
//! the first (`in`). Each send ends in the policy's ledger as a single read does; the request
//! ends when its last send has, and is counted once (a time-out of any part times it out).

use crate::client_policy::{ClientPolicy, Pending};
use crate::keys::{key_bytes, value_for};
use crate::open_loop::{self, Ctx, Ended, MultiKeys, Transport};
use crate::options::{check_bench_options, BenchHooks, BenchOptions, Completion, MultiOptions};
use crate::report::{BenchNetwork, BenchReport, SecondReport};
use replica_lb_metrics::Outcome;
use replica_lb_node::client::ClusterClient;
use replica_lb_node::replica::feedback_from_proto;
use replica_lb_policy::{Failure, Feedback, NodeCaps, NodeId, ProbeReply, Request};
use replica_lb_runtime::{Dispatch, Released, Submitted, Ticket};
use replica_lb_workload::scenario::MultiMode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a probe may take before its answer is useless.
const PROBE_TIMEOUT: Duration = Duration::from_millis(500);
/// No coordinator: the request failed before it was sent.
const NO_NODE: NodeId = NodeId(u16::MAX);
/// How long a node may take to answer Stats for the run's byte counts.
const STATS_TIMEOUT: Duration = Duration::from_secs(2);

/// What comes back to the dispatcher.
enum Msg {
    /// A request ended.
    Done(Done),
    /// A probe's answer (`None`: no answer in time).
    Probe(Option<ProbeReply>),
}

struct Done {
    intended: Instant,
    sent: Instant,
    finished: Instant,
    node: NodeId,
    ticket: Ticket,
    outcome: Outcome,
    feedback: Feedback,
    /// The multi-key request it was part of.
    multi: Option<u32>,
}

/// A multi-key request not finished yet.
struct OpenMulti {
    intended: Instant,
    /// Sends not ended yet.
    remaining: u32,
    /// How it ends so far.
    outcome: Outcome,
    /// The coordinator of its first send (or the `IN` request's).
    node: NodeId,
    /// `in`: the keys, taken by its one send.
    keys: Vec<u64>,
}

/// What one send asks of its coordinator.
enum Work {
    /// One key.
    Single,
    /// Every key of an `IN` request.
    In(Vec<u64>),
}

/// Runs the open-loop benchmark on `rt` (call from a thread outside the runtime). `on_second`
/// is called with each second's line as it ends. The report includes the bytes the nodes
/// counted during the run (`network`).
pub fn bench(
    rt: &tokio::runtime::Handle,
    client: &ClusterClient,
    policy: &mut ClientPolicy,
    opts: &BenchOptions,
    on_second: &mut dyn FnMut(&SecondReport),
) -> Result<BenchReport, String> {
    run(rt, client, policy, opts, None, true, on_second, BenchHooks::default())
}

/// [`bench`] where every request reads `multi.keys` distinct keys (`bench --multi`).
pub fn bench_multi(
    rt: &tokio::runtime::Handle,
    client: &ClusterClient,
    policy: &mut ClientPolicy,
    opts: &BenchOptions,
    multi: &MultiOptions,
    on_second: &mut dyn FnMut(&SecondReport),
) -> Result<BenchReport, String> {
    multi.check(opts)?;
    run(rt, client, policy, opts, Some(*multi), true, on_second, BenchHooks::default())
}

/// [`bench`] with an experiment's extras: a shared time origin, every request's outcome, and
/// nodes to avoid as coordinators (no byte counts: the experiment samples the nodes itself).
pub fn bench_with(
    rt: &tokio::runtime::Handle,
    client: &ClusterClient,
    policy: &mut ClientPolicy,
    opts: &BenchOptions,
    on_second: &mut dyn FnMut(&SecondReport),
    hooks: BenchHooks<'_>,
) -> Result<BenchReport, String> {
    run(rt, client, policy, opts, None, false, on_second, hooks)
}

/// Every node's byte counters now (`None`: a node did not answer).
fn traffic(rt: &tokio::runtime::Handle, client: &ClusterClient) -> Option<Vec<replica_lb_node::proto::StatsResponse>> {
    rt.block_on(async {
        let mut out = Vec::new();
        for &id in client.nodes() {
            let mut c = client.node(id)?;
            let s = tokio::time::timeout(STATS_TIMEOUT, c.stats(replica_lb_node::proto::StatsRequest {}))
                .await
                .ok()?
                .ok()?;
            out.push(s.into_inner());
        }
        Some(out)
    })
}

/// The bytes between two readings of every node (`None`: a node missing or restarted).
fn network_between(
    before: &[replica_lb_node::proto::StatsResponse],
    after: &[replica_lb_node::proto::StatsResponse],
) -> Option<BenchNetwork> {
    if before.len() != after.len() {
        return None;
    }
    let mut net = BenchNetwork::default();
    for (b, a) in before.iter().zip(after) {
        if a.node_id != b.node_id || a.uptime_ms < b.uptime_ms {
            return None;
        }
        let d = |x: u64, y: u64| x.checked_sub(y);
        net.client_bytes += d(a.client_received_bytes, b.client_received_bytes)? + d(a.client_sent_bytes, b.client_sent_bytes)?;
        net.internode_bytes += d(a.internode_sent_bytes, b.internode_sent_bytes)?;
    }
    Some(net)
}

#[allow(clippy::too_many_arguments)]
fn run(
    rt: &tokio::runtime::Handle,
    client: &ClusterClient,
    policy: &mut ClientPolicy,
    opts: &BenchOptions,
    multi: Option<MultiOptions>,
    count_bytes: bool,
    on_second: &mut dyn FnMut(&SecondReport),
    hooks: BenchHooks<'_>,
) -> Result<BenchReport, String> {
    check_bench_options(opts)?;
    let before = count_bytes.then(|| traffic(rt, client)).flatten();
    let start = hooks.start.unwrap_or_else(Instant::now);
    policy.set_topology(&client.zones(), opts.zone);
    let mut grpc = Grpc {
        rt,
        client,
        policy,
        opts,
        down_mask: hooks.down_mask,
        down_seen: 0,
        multis: Vec::new(),
        free_multis: Vec::new(),
    };
    let mut user_on_done = hooks.on_done;
    let mut on_done = |e: &Ended<NodeId>| {
        if let Some(f) = user_on_done.as_mut() {
            f(&Completion {
                intended_ns: e.intended.saturating_duration_since(start).as_nanos() as u64,
                finished_ns: e.finished.saturating_duration_since(start).as_nanos() as u64,
                outcome: e.outcome,
                node: e.coordinator.unwrap_or(NO_NODE),
            });
        }
    };
    let totals = open_loop::run(&mut grpc, opts, multi, start, on_second, Some(&mut on_done));
    let network = before.and_then(|b| network_between(&b, &traffic(rt, client)?));
    let stats = grpc.policy.stats();
    let mut report = BenchReport::new(opts, multi, totals, grpc.policy.name().to_string());
    report.probes_sent = stats.probes_sent;
    report.feedback_replies = stats.feedback_replies;
    report.network = network;
    Ok(report)
}

/// The gRPC transport's state for one run.
struct Grpc<'a> {
    rt: &'a tokio::runtime::Handle,
    client: &'a ClusterClient,
    policy: &'a mut ClientPolicy,
    opts: &'a BenchOptions,
    /// Nodes the experiment marks down ([`BenchHooks::down_mask`]).
    down_mask: Option<Arc<AtomicU64>>,
    /// The down mask last told to the policy.
    down_seen: u64,
    /// Open multi-key requests by index (`None`: a free slot).
    multis: Vec<Option<OpenMulti>>,
    free_multis: Vec<u32>,
}

type Cx<'h> = Ctx<'h, NodeId, Msg>;

impl Transport for Grpc<'_> {
    type Node = NodeId;
    type Msg = Msg;

    fn sends(&self, multi: MultiOptions) -> usize {
        match multi.mode {
            MultiMode::Parallel => multi.keys,
            MultiMode::In => 1,
        }
    }

    fn begin_round(&mut self, cx: &mut Cx<'_>) {
        self.follow_down_mask(cx);
    }

    fn issue(&mut self, p: Pending, multi: Option<MultiKeys<'_>>, now: Instant, cx: &mut Cx<'_>) {
        match multi {
            None => self.plan(p, now, cx),
            Some(m) => self.issue_multi(p, m, now, cx),
        }
    }

    fn settle(&mut self, msg: Msg, cx: &mut Cx<'_>) {
        self.settle_msg(msg, cx);
    }

    fn pump(&mut self, now: Instant, cx: &mut Cx<'_>) {
        self.pump_policy(now, cx);
    }

    fn waiting(&self) -> usize {
        self.policy.rt.waiting()
    }

    fn wake_at(&self, start: Instant) -> Option<Instant> {
        self.policy.rt.poll_timeout().map(|at_ns| start + Duration::from_nanos(at_ns))
    }
}

impl Grpc<'_> {
    /// Tells the policy about nodes the experiment marks down or up again.
    fn follow_down_mask(&mut self, cx: &Cx<'_>) {
        let Some(mask) = self.down_mask.as_ref().map(|m| m.load(Ordering::Relaxed)) else {
            return;
        };
        let changed = mask ^ self.down_seen;
        if changed == 0 {
            return;
        }
        let now = cx.ns(Instant::now());
        for bit in 0..64u16 {
            if changed & (1 << bit) != 0 {
                if mask & (1 << bit) != 0 {
                    self.policy.rt.on_node_down(NodeId(bit), now);
                } else {
                    self.policy.rt.on_node_up(NodeId(bit), NodeCaps::default(), now);
                }
            }
        }
        self.down_seen = mask;
    }

    /// Issues a multi-key request of keys `m` (the first the one `p` holds): its sends (every
    /// key's, or the one `IN` request's), each planned as a single read.
    fn issue_multi(&mut self, p: Pending, m: MultiKeys<'_>, now: Instant, cx: &mut Cx<'_>) {
        let sends = match m.mode {
            MultiMode::Parallel => m.keys.len(),
            MultiMode::In => 1,
        };
        let keys = match m.mode {
            MultiMode::Parallel => Vec::new(),
            MultiMode::In => m.keys.to_vec(),
        };
        let open = OpenMulti {
            intended: p.intended,
            remaining: sends as u32,
            outcome: Outcome::Ok,
            node: NO_NODE,
            keys,
        };
        let slot = match self.free_multis.pop() {
            Some(i) => {
                self.multis[i as usize] = Some(open);
                i
            }
            None => {
                self.multis.push(Some(open));
                (self.multis.len() - 1) as u32
            }
        };
        for i in 0..sends {
            let part = Pending {
                key: m.keys[i],
                intended: p.intended,
                read: true,
                multi: Some(slot),
            };
            self.plan(part, now, cx);
        }
    }

    /// One send of multi-key request `slot` ended: the request ends with its last.
    fn part_done(&mut self, slot: u32, finished: Instant, outcome: Outcome, cx: &mut Cx<'_>) {
        let Some(Some(m)) = self.multis.get_mut(slot as usize) else {
            debug_assert!(false, "a send of an unknown multi-key request ended");
            return;
        };
        m.remaining -= 1;
        m.outcome = m.outcome.and(outcome);
        if m.remaining > 0 {
            return;
        }
        let (intended, node, outcome) = (m.intended, m.node, m.outcome);
        self.multis[slot as usize] = None;
        self.free_multis.push(slot);
        cx.end(intended, finished, outcome, (node != NO_NODE).then_some(node));
    }

    /// Plans one request (or one send of a multi-key request) and sends it, or leaves it
    /// waiting, or fails it.
    fn plan(&mut self, p: Pending, now: Instant, cx: &mut Cx<'_>) {
        let key = key_bytes(p.key);
        let (replicas, group) = self.client.replicas(&key);
        let down = self.down_seen;
        let mut live = [NodeId(0); replica_lb_policy::MAX_REPLICAS];
        let mut n = 0;
        for &r in replicas.as_slice() {
            if r.index() >= 64 || down & (1 << r.index()) == 0 {
                live[n] = r;
                n += 1;
            }
        }
        let req = Request {
            candidates: &live[..n],
            replicas: Some(replicas.as_slice()),
            count: 1,
            local: None,
            group: group.into(),
        };
        let now_ns = cx.ns(now);
        match self.policy.rt.submit(&req, now_ns, || p) {
            Submitted::Send(d) => self.launch(p, d, cx),
            Submitted::Queued => {}
            Submitted::Unavailable | Submitted::Rejected => self.end_unsent(&p, now, Outcome::Error, cx),
        }
    }

    /// Sends a planned request to its coordinator on the tokio runtime.
    fn launch(&mut self, p: Pending, d: Dispatch, cx: &mut Cx<'_>) {
        let (via, ticket) = d.targets().next().expect("a plan of count 1 has a target");
        // One send per request: the dispatch takes no more.
        self.policy.rt.close(d.id);
        cx.in_flight += 1;
        let mut work = Work::Single;
        if let Some(Some(m)) = p.multi.and_then(|slot| self.multis.get_mut(slot as usize)) {
            if m.node == NO_NODE {
                m.node = via;
            }
            if !m.keys.is_empty() {
                work = Work::In(std::mem::take(&mut m.keys));
            }
        }
        let client = self.client.clone();
        let tx = cx.tx.clone();
        let (cl, timeout_ms, vb, verify) = (self.opts.cl, self.opts.timeout_ms, self.opts.value_bytes, self.opts.verify);
        let k = p.key;
        self.rt.spawn(async move {
            let sent = Instant::now();
            let key = key_bytes(k);
            let mut feedback = Feedback::default();
            let result = if let Work::In(keys) = work {
                let wanted: Vec<_> = keys.iter().map(|&k| key_bytes(k)).collect();
                client.multi_get(via, wanted, cl, timeout_ms).await.and_then(|r| {
                    feedback = feedback_from_proto(r.feedback.as_ref());
                    if r.results.len() != keys.len() {
                        return Err(tonic::Status::data_loss(format!(
                            "{} answers for {} keys",
                            r.results.len(),
                            keys.len()
                        )));
                    }
                    match keys
                        .iter()
                        .zip(&r.results)
                        .find(|(&k, a)| verify && a.found && a.value != value_for(k, a.value.len()))
                    {
                        Some((k, _)) => Err(tonic::Status::data_loss(format!("key {k}: wrong value"))),
                        None => Ok(()),
                    }
                })
            } else if p.read {
                client.get(via, key, cl, timeout_ms).await.and_then(|r| {
                    feedback = feedback_from_proto(r.feedback.as_ref());
                    if verify && r.found && r.value != value_for(k, r.value.len()) {
                        Err(tonic::Status::data_loss(format!("key {k}: wrong value")))
                    } else {
                        Ok(())
                    }
                })
            } else {
                client.put(via, key, value_for(k, vb), cl, timeout_ms).await.map(|_| ())
            };
            let outcome = match result {
                Ok(()) => Outcome::Ok,
                Err(s) if s.code() == tonic::Code::DeadlineExceeded => Outcome::Timeout,
                Err(_) => Outcome::Error,
            };
            let _ = tx.send(Msg::Done(Done {
                intended: p.intended,
                sent,
                finished: Instant::now(),
                node: via,
                ticket,
                outcome,
                feedback,
                multi: p.multi,
            }));
        });
    }

    /// Feeds one message back: a request's end to the policy and the tallies, or a probe's
    /// answer to the policy.
    fn settle_msg(&mut self, msg: Msg, cx: &mut Cx<'_>) {
        let d = match msg {
            Msg::Probe(Some(reply)) => {
                let now = cx.ns(Instant::now());
                self.policy.rt.on_probe_reply(&reply, now);
                return;
            }
            Msg::Probe(None) => return,
            Msg::Done(d) => d,
        };
        cx.in_flight -= 1;
        let now_ns = cx.ns(d.finished);
        let latency_ns = d.finished.saturating_duration_since(d.sent).as_nanos() as u64;
        let _ = match d.outcome {
            Outcome::Ok => self.policy.rt.on_reply(d.ticket, latency_ns, d.feedback, now_ns),
            Outcome::Timeout => self.policy.rt.on_failure(d.ticket, Failure::Timeout, now_ns),
            Outcome::Error => self.policy.rt.on_failure(d.ticket, Failure::Error, now_ns),
        };
        match d.multi {
            Some(slot) => self.part_done(slot, d.finished, d.outcome, cx),
            None => cx.end(d.intended, d.finished, d.outcome, Some(d.node)),
        }
    }

    /// Sends what the policy's runtime has for us: probes, requests it released, the timer.
    fn pump_policy(&mut self, now: Instant, cx: &mut Cx<'_>) {
        let now_ns = cx.ns(now);
        if self.policy.rt.poll_timeout().is_some_and(|t| t <= now_ns) {
            self.policy.rt.handle_timeout(now_ns);
        }
        if self.policy.rt.waiting() > 0 {
            // Requests that waited past their time-out end as time-outs, unplanned.
            let limit = Duration::from_millis(self.opts.timeout_ms as u64);
            let mut expired = Vec::new();
            self.policy.rt.cancel_waiting(|p| now >= p.intended + limit, |p| expired.push(p));
            for p in expired {
                self.end_unsent(&p, now, Outcome::Timeout, cx);
            }
        }
        while let Some((p, released)) = self.policy.rt.poll_released(now_ns, |_| true) {
            match released {
                Released::Send(d) => self.launch(p, d, cx),
                Released::Unavailable => self.end_unsent(&p, now, Outcome::Error, cx),
            }
        }
        while let Some(probe) = self.policy.rt.poll_probe() {
            let Some(mut c) = self.client.node(probe.node) else {
                continue;
            };
            let tx = cx.tx.clone();
            self.rt.spawn(async move {
                let answer = tokio::time::timeout(PROBE_TIMEOUT, c.probe(replica_lb_node::proto::ProbeRequest {})).await;
                let reply = match answer {
                    Ok(Ok(r)) => {
                        let r = r.into_inner();
                        Some(ProbeReply {
                            node: probe.node,
                            in_flight: r.in_flight,
                            latency_ns: r.latency_ns,
                        })
                    }
                    _ => None,
                };
                let _ = tx.send(Msg::Probe(reply));
            });
        }
    }

    /// A request, or a send of a multi-key request, that ended before it was sent (no
    /// coordinator, overload, waited too long).
    fn end_unsent(&mut self, p: &Pending, now: Instant, outcome: Outcome, cx: &mut Cx<'_>) {
        match p.multi {
            Some(slot) => self.part_done(slot, now, outcome, cx),
            None => cx.end(p.intended, now, outcome, None),
        }
    }
}
