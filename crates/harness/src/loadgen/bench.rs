//! `bench`'s dispatcher: one OS thread that sleeps until each request's intended send time,
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

use super::client_policy::{ClientPolicy, Pending};
use super::keys::{key_bytes, value_for};
use super::report::{BenchNetwork, BenchReport, LatencySummary, Second, SecondReport};
use super::{check_bench_options, BenchHooks, BenchOptions, Completion, MultiMode, MultiOptions, Outcome, Schedule};
use metrics::{LatencyHistogram, MultiSummary};
use node::client::ClusterClient;
use node::replica::feedback_from_proto;
use policy::{Failure, Feedback, NodeCaps, NodeId, ProbeReply, Request};
use runtime::{Dispatch, Released, Submitted, Ticket};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
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
fn traffic(rt: &tokio::runtime::Handle, client: &ClusterClient) -> Option<Vec<node::proto::StatsResponse>> {
    rt.block_on(async {
        let mut out = Vec::new();
        for &id in client.nodes() {
            let mut c = client.node(id)?;
            let s = tokio::time::timeout(STATS_TIMEOUT, c.stats(node::proto::StatsRequest {}))
                .await
                .ok()?
                .ok()?;
            out.push(s.into_inner());
        }
        Some(out)
    })
}

/// The bytes between two readings of every node (`None`: a node missing or restarted).
fn network_between(before: &[node::proto::StatsResponse], after: &[node::proto::StatsResponse]) -> Option<BenchNetwork> {
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
    let (tx, rx) = mpsc::channel::<Msg>();
    policy.set_topology(&client.zones(), opts.zone);
    let mut d = Dispatcher {
        rt,
        client,
        policy,
        opts,
        hooks,
        start,
        tx,
        in_flight: 0,
        down_seen: 0,
        seconds: Vec::new(),
        total: LatencyHistogram::new(),
        completed: 0,
        errors: 0,
        timeouts: 0,
        multi,
        multis: Vec::new(),
        free_multis: Vec::new(),
        keys: Vec::new(),
    };
    let mut schedule = Schedule::new(opts, start);
    let hard_end = schedule.send_end() + Duration::from_millis(opts.timeout_ms as u64 + 2000);
    let mut requests = 0u64;
    let mut reported = 0usize;
    loop {
        let now = Instant::now();
        d.follow_down_mask();
        // Issue every request whose intended time has come.
        while let Some(pending) = schedule.due(now) {
            requests += 1;
            match d.multi {
                None => d.issue(pending, now),
                Some(m) => d.issue_multi(pending, m, &mut schedule, now),
            }
        }
        // Settle whatever came back, then what the policy released or wants probed.
        while let Ok(msg) = rx.try_recv() {
            d.settle(msg);
        }
        d.pump(Instant::now());
        // Report every second that has ended.
        let now = Instant::now();
        while start + Duration::from_secs(reported as u64 + 1) <= now && (reported as f64) < opts.duration_s.ceil() {
            d.second(start + Duration::from_secs(reported as u64));
            on_second(&d.seconds[reported].line(reported));
            reported += 1;
        }
        if schedule.done() && d.in_flight == 0 && d.policy.rt.waiting() == 0 {
            break;
        }
        if now >= hard_end {
            // Requests still out after their time-out (a hung client call): count as time-outs.
            d.timeouts += requests - (d.completed + d.errors + d.timeouts);
            break;
        }
        // Sleep until the next send, the policy's timer, or briefly while draining.
        let mut wake = schedule.next_at().unwrap_or(now + Duration::from_millis(1));
        if let Some(at_ns) = d.policy.rt.poll_timeout() {
            wake = wake.min(start + Duration::from_nanos(at_ns));
        }
        let gap = wake.saturating_duration_since(Instant::now());
        if !gap.is_zero() {
            if let Ok(msg) = rx.recv_timeout(gap) {
                d.settle(msg);
            }
        }
    }
    let network = before.and_then(|b| network_between(&b, &traffic(rt, client)?));
    let per_second = d.seconds.iter().enumerate().map(|(t, x)| x.line(t)).collect();
    let stats = d.policy.stats();
    Ok(BenchReport {
        requests,
        completed: d.completed,
        errors: d.errors,
        timeouts: d.timeouts,
        latency_ms: LatencySummary::of(&d.total),
        per_second,
        target_rate: opts.rate,
        achieved_rate: d.completed as f64 / opts.duration_s,
        duration_s: opts.duration_s,
        cl: opts.cl.as_str().to_string(),
        read_fraction: opts.read_fraction,
        client_policy: d.policy.name().to_string(),
        probes_sent: stats.probes_sent,
        feedback_replies: stats.feedback_replies,
        multi: multi.map(|_| MultiSummary {
            requests,
            completed: d.completed,
            latency_ms: d.total.stats(),
        }),
        multi_mode: multi.map(|m| m.mode_name()),
        multi_keys: multi.map(|m| m.keys),
        network,
    })
}

/// The dispatcher's state for one run.
struct Dispatcher<'a, 'h> {
    rt: &'a tokio::runtime::Handle,
    client: &'a ClusterClient,
    policy: &'a mut ClientPolicy,
    opts: &'a BenchOptions,
    hooks: BenchHooks<'h>,
    start: Instant,
    tx: mpsc::Sender<Msg>,
    in_flight: usize,
    /// The down mask last told to the policy.
    down_seen: u64,
    seconds: Vec<Second>,
    total: LatencyHistogram,
    completed: u64,
    errors: u64,
    timeouts: u64,
    /// Multi-key requests (`None`: every request reads one key).
    multi: Option<MultiOptions>,
    /// Open multi-key requests by index (`None`: a free slot).
    multis: Vec<Option<OpenMulti>>,
    free_multis: Vec<u32>,
    /// The keys of the multi-key request being issued (reused).
    keys: Vec<u64>,
}

impl Dispatcher<'_, '_> {
    fn ns(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.start).as_nanos() as u64
    }

    /// The per-second bucket of `at`.
    fn second(&mut self, at: Instant) -> usize {
        let s = at.saturating_duration_since(self.start).as_secs() as usize;
        while self.seconds.len() <= s {
            self.seconds.push(Second::default());
        }
        s
    }

    /// Tells the policy about nodes the experiment marks down or up again.
    fn follow_down_mask(&mut self) {
        let Some(mask) = self.hooks.down_mask.as_ref().map(|m| m.load(Ordering::Relaxed)) else {
            return;
        };
        let changed = mask ^ self.down_seen;
        if changed == 0 {
            return;
        }
        let now = self.ns(Instant::now());
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

    /// Issues a multi-key request whose first key `p` holds: its other keys from `schedule`,
    /// then its sends (every key's, or the one `IN` request's), each planned as a single read.
    /// It fails at once, whole, when its sends would pass `max_in_flight`.
    fn issue_multi(&mut self, p: Pending, m: MultiOptions, schedule: &mut Schedule, now: Instant) {
        let sends = match m.mode {
            MultiMode::Parallel => m.keys,
            MultiMode::In => 1,
        };
        if self.in_flight + sends > self.opts.max_in_flight {
            return self.tally(p.intended, now, NO_NODE, Outcome::Error);
        }
        schedule.multi_keys(p.key, m.keys, &mut self.keys);
        let keys = match m.mode {
            MultiMode::Parallel => Vec::new(),
            MultiMode::In => self.keys.clone(),
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
                key: self.keys[i],
                intended: p.intended,
                read: true,
                multi: Some(slot),
            };
            self.issue(part, now);
        }
    }

    /// One send of multi-key request `slot` ended: the request ends with its last.
    fn part_done(&mut self, slot: u32, finished: Instant, outcome: Outcome) {
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
        self.tally(intended, finished, node, outcome);
    }

    /// Plans one request and sends it, or leaves it waiting, or fails it.
    fn issue(&mut self, p: Pending, now: Instant) {
        if self.in_flight >= self.opts.max_in_flight {
            return self.end_unsent(&p, now, Outcome::Error);
        }
        let key = key_bytes(p.key);
        let (replicas, group) = self.client.replicas(&key);
        let down = self.down_seen;
        let mut live = [NodeId(0); policy::MAX_REPLICAS];
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
        let now_ns = self.ns(now);
        match self.policy.rt.submit(&req, now_ns, || p) {
            Submitted::Send(d) => self.launch(p, d),
            Submitted::Queued => {}
            Submitted::Unavailable | Submitted::Rejected => self.end_unsent(&p, now, Outcome::Error),
        }
    }

    /// Sends a planned request to its coordinator on the tokio runtime.
    fn launch(&mut self, p: Pending, d: Dispatch) {
        let (via, ticket) = d.targets().next().expect("a plan of count 1 has a target");
        // One send per request: the dispatch takes no more.
        self.policy.rt.close(d.id);
        self.in_flight += 1;
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
        let tx = self.tx.clone();
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
    fn settle(&mut self, msg: Msg) {
        let d = match msg {
            Msg::Probe(Some(reply)) => {
                let now = self.ns(Instant::now());
                self.policy.rt.on_probe_reply(&reply, now);
                return;
            }
            Msg::Probe(None) => return,
            Msg::Done(d) => d,
        };
        self.in_flight -= 1;
        let now_ns = self.ns(d.finished);
        let latency_ns = d.finished.saturating_duration_since(d.sent).as_nanos() as u64;
        let _ = match d.outcome {
            Outcome::Ok => self.policy.rt.on_reply(d.ticket, latency_ns, d.feedback, now_ns),
            Outcome::Timeout => self.policy.rt.on_failure(d.ticket, Failure::Timeout, now_ns),
            Outcome::Error => self.policy.rt.on_failure(d.ticket, Failure::Error, now_ns),
        };
        match d.multi {
            Some(slot) => self.part_done(slot, d.finished, d.outcome),
            None => self.tally(d.intended, d.finished, d.node, d.outcome),
        }
    }

    /// Sends what the policy's runtime has for us: probes, requests it released, the timer.
    fn pump(&mut self, now: Instant) {
        let now_ns = self.ns(now);
        if self.policy.rt.poll_timeout().is_some_and(|t| t <= now_ns) {
            self.policy.rt.handle_timeout(now_ns);
        }
        if self.policy.rt.waiting() > 0 {
            // Requests that waited past their time-out end as time-outs, unplanned.
            let limit = Duration::from_millis(self.opts.timeout_ms as u64);
            let mut expired = Vec::new();
            self.policy.rt.cancel_waiting(|p| now >= p.intended + limit, |p| expired.push(p));
            for p in expired {
                self.end_unsent(&p, now, Outcome::Timeout);
            }
        }
        while let Some((p, released)) = self.policy.rt.poll_released(now_ns, |_| true) {
            match released {
                Released::Send(d) => self.launch(p, d),
                Released::Unavailable => self.end_unsent(&p, now, Outcome::Error),
            }
        }
        while let Some(probe) = self.policy.rt.poll_probe() {
            let Some(mut c) = self.client.node(probe.node) else {
                continue;
            };
            let tx = self.tx.clone();
            self.rt.spawn(async move {
                let answer = tokio::time::timeout(PROBE_TIMEOUT, c.probe(node::proto::ProbeRequest {})).await;
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
    fn end_unsent(&mut self, p: &Pending, now: Instant, outcome: Outcome) {
        match p.multi {
            Some(slot) => self.part_done(slot, now, outcome),
            None => self.tally(p.intended, now, NO_NODE, outcome),
        }
    }

    fn tally(&mut self, intended: Instant, finished: Instant, node: NodeId, outcome: Outcome) {
        let s = self.second(finished);
        if let Some(f) = self.hooks.on_done.as_mut() {
            f(&Completion {
                intended_ns: intended.saturating_duration_since(self.start).as_nanos() as u64,
                finished_ns: finished.saturating_duration_since(self.start).as_nanos() as u64,
                outcome,
                node,
            });
        }
        let latency_ns = finished.saturating_duration_since(intended).as_nanos() as u64;
        self.seconds[s].record(outcome, latency_ns);
        match outcome {
            Outcome::Ok => {
                self.completed += 1;
                self.total.record_ns(latency_ns);
            }
            Outcome::Timeout => self.timeouts += 1,
            Outcome::Error => self.errors += 1,
        }
    }
}
