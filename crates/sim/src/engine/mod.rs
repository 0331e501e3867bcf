//! The simulation loop: clients, coordinators, replicas, network and faults driven by one
//! event queue in virtual time, with the project's real policies deciding where requests go.
//!
//! Request path (coordinator routing): a client picks a coordinator with its client policy and
//! sends the request; the coordinator (after optional CPU work) picks CL replicas with its
//! coordinator policy; each replica runs the read through its CPU stage (cache lookup), and on a
//! miss through its disk stage, then replies with its feedback record; the coordinator answers
//! the client when CL replicas have. With direct routing the client picks the replicas itself.
//!
//! Requests and replica ops live in slabs indexed by `u32` (no allocation per event); events
//! carry indices and generations so a stale event (about a freed record or a crashed node) is
//! recognised and ignored.

mod faults;
mod node;
mod slab;
mod topology;

use crate::dist::Dist;
use crate::keys::KeyGen;
use crate::lru::Lru;
use crate::queue::{Event, Kind, Queue};
use crate::runs::RunSpec;
use crate::scenario::{Arrival, Routing, Scenario, Speculative};
use faults::{Action, FaultPlan};
use metrics::{CacheOutcome, LatencyHistogram, ReadKind, Recorder, RecorderConfig, RunMetrics};
use node::{Node, Stage};
use policy::hwlb::HitRateTracker;
use policy::{
    ConsistencyLevel, Decision, Failure, Feedback, Need, NodeCaps, NodeId, NodeTruth, Plan, Policy, ProbeReply, Request, Rng, MAX_REPLICAS,
};
use runtime::{Caller, Dispatch, DispatchId, Released, Runtime, RuntimeConfig, RuntimeStats, Submitted, Ticket};
use slab::{Slab, Slot};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use topology::Topology;

const SECOND_NS: u64 = 1_000_000_000;
const NO_NODE: u16 = u16::MAX;

/// What a replica op does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum OpKind {
    #[default]
    Read,
    Write,
    /// The coordinator's own CPU work for a request.
    Coordinate,
}

/// Where an op is in its life.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum OpState {
    #[default]
    Live,
    /// Lost in a crash; failed (ConnectionLost) when peers see the node down.
    Dropped,
}

#[derive(Clone, Copy, Debug, Default)]
struct Op {
    gen: u32,
    req: u32,
    req_gen: u32,
    node: u16,
    requester: u32,
    requester_gen: u32,
    node_gen: u32,
    kind: OpKind,
    state: OpState,
    local: bool,
    outcome_given: bool,
    /// The send's ticket in its requester's runtime.
    ticket: Ticket,
    key: u64,
    sent_ns: u64,
    arrived_ns: u64,
    service_ns: u64,
    /// The replica's state when it replied (hit rate, queued ops, ops in flight); the service
    /// time is `service_ns`. Kept compact: this struct is copied on the hot path.
    fb_hit_rate: f64,
    fb_queue_len: u32,
    fb_in_flight: u32,
}

impl Op {
    fn feedback(&self, piggyback_hit_rate: bool) -> Feedback {
        Feedback {
            hit_rate: (piggyback_hit_rate && self.fb_hit_rate >= 0.0).then_some(self.fb_hit_rate),
            queue_len: Some(self.fb_queue_len),
            service_time_ns: Some(self.service_ns),
            in_flight: Some(self.fb_in_flight),
        }
    }
}

impl Slot for Op {
    fn generation(&self) -> u32 {
        self.gen
    }
    fn set_generation(&mut self, g: u32) {
        self.gen = g;
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Req {
    gen: u32,
    client: u32,
    key: u64,
    group: u32,
    write: bool,
    measured: bool,
    needed: u8,
    replies: u8,
    answered: bool,
    coord: u16,
    issued_ns: u64,
    n_ops: u8,
    ops: [u32; crate::scenario::MAX_OPS_PER_REQUEST],
    fallback: u16,
    /// The replica reads or writes, in the runtime of the requester that sent them.
    dispatch: Option<DispatchId>,
    /// The generation of the requester when it made `dispatch` (a restarted coordinator has
    /// a new runtime, which must not be told about the old one's dispatches).
    dispatch_gen: u32,
    /// The client's choice of coordinator, in the client's runtime (coordinator routing).
    client_dispatch: Option<DispatchId>,
}

impl Slot for Req {
    fn generation(&self) -> u32 {
        self.gen
    }
    fn set_generation(&mut self, g: u32) {
        self.gen = g;
    }
}

/// What the simulator provides to a policy: everything, ground truth included.
const SIMULATOR: Caller = Caller {
    name: "the simulator",
    provides: policy::Needs::ALL,
};

/// A waiting request, as its runtime hands it back: (request slot, generation).
type ReqKey = (u32, u32);

/// A decider with its policy runtime: one per client, one per coordinator node.
struct Requester {
    rt: Runtime<ReqKey>,
    zone: u16,
    /// The node it runs on (coordinators).
    local: Option<NodeId>,
    /// The time of the pending runtime-timer event (`u64::MAX`: none). A timer event whose
    /// time is not this one is stale (an earlier one replaced it) and does nothing.
    timer_at: u64,
    /// Generation of the node it runs on when built (coordinators).
    gen: u32,
    /// The seed its runtime started from; a restarted coordinator's new runtime derives its
    /// seed from it, so no other random stream moves.
    seed: u64,
}

struct Client {
    zone: u16,
    keys: KeyGen,
    rng: Rng,
    gap_ns: f64,
    fixed: bool,
}

/// A policy-less stand-in used by the ideal shared queue: always the first candidate.
struct FirstCandidate(policy::Params);

impl Policy for FirstCandidate {
    fn name(&self) -> &'static str {
        "ideal"
    }
    fn side(&self) -> policy::Side {
        policy::Side::Both
    }
    fn params(&self) -> &policy::Params {
        &self.0
    }
    fn plan(&mut self, req: &Request<'_>, _now_ns: u64, _rng: &mut Rng, out: &mut Plan) -> Decision {
        if req.candidates.len() < req.count {
            return Decision::Unavailable;
        }
        out.set_order(req.candidates, req.count);
        Decision::Send
    }
}

/// One simulation of one scenario with one policy assignment.
pub struct Sim<'s> {
    sc: &'s Scenario,
    spec: RunSpec,
    q: Queue,
    now: u64,
    measure_ns: u64,
    end_ns: u64,
    rec: Recorder,
    topo: Topology,
    nodes: Vec<Node>,
    seen_up: Vec<bool>,
    clients: Vec<Client>,
    requesters: Vec<Requester>,
    reqs: Slab<Req>,
    ops: Slab<Op>,
    deadlines: VecDeque<(u64, u32, u32)>,
    net_rng: Rng,
    fault_rng: Rng,
    faults: FaultPlan,
    events: u64,
    restart: Option<(usize, f64)>,
    replica_latency: LatencyHistogram,
    speculate_after_ns: u64,
    speculate_by_percentile: bool,
}

/// The result of [`Sim::run`].
pub struct Outcome {
    /// Measurements.
    pub metrics: RunMetrics,
    /// Requests issued during measurement and warm-up.
    pub simulated_requests: u64,
    /// Every runtime's counters added up (clients and coordinators).
    pub runtime: RuntimeStats,
    /// The exactly-once audit at the end of the run: every runtime's sends without an end are
    /// exactly the simulator's requests and ops still out, and no runtime refused a reply or
    /// failure. `Err` names the first requester that disagrees.
    pub audit: Result<(), String>,
}

impl<'s> Sim<'s> {
    /// Builds the simulation (policies built from the registry; fails on a bad policy).
    pub fn new(sc: &'s Scenario, spec: &RunSpec, seed: u64) -> Result<Self, String> {
        let ideal = spec.ideal;
        let topo = Topology::new(sc, ideal);
        let n_nodes = topo.nodes;
        let mut master = Rng::seed_from_u64(seed);
        let mut clients = Vec::with_capacity(sc.clients.count);
        let mut requesters = Vec::new();
        for c in 0..sc.clients.count {
            let rng = master.fork();
            let policy_seed = master.next_u64();
            let (gap_ns, fixed) = match sc.clients.arrival {
                Arrival::Poisson { rate_per_s } => (1e9 / (rate_per_s * sc.clients.weight[c]), false),
                Arrival::Fixed { rate_per_s } => (1e9 / (rate_per_s * sc.clients.weight[c]), true),
                Arrival::Closed { .. } => (0.0, false),
            };
            clients.push(Client {
                zone: sc.clients.zone[c],
                keys: KeyGen::new(sc.clients.keys, c, sc.clients.count),
                rng,
                gap_ns,
                fixed,
            });
            let rt = if ideal {
                let first = FirstCandidate(policy::Params::resolve("ideal", &[], &Default::default()).map_err(|e| e.to_string())?);
                Runtime::new(Box::new(first), policy::Needs::NONE, SIMULATOR, runtime_config(None, policy_seed))?
            } else {
                build_runtime(sc, &spec.client, policy::Side::Client, None, policy_seed)?
            };
            requesters.push(Requester {
                rt,
                zone: sc.clients.zone[c],
                local: None,
                timer_at: u64::MAX,
                gen: 0,
                seed: policy_seed,
            });
        }
        let mut nodes = Vec::with_capacity(n_nodes);
        for n in 0..n_nodes {
            let rng = master.fork();
            let policy_seed = master.next_u64();
            let conc = if ideal {
                sc.node.cpu_concurrency * sc.cluster.nodes as u32
            } else {
                sc.node.cpu_concurrency
            };
            nodes.push(Node {
                zone: topo.node_zone(n),
                up: true,
                paused: false,
                gen: 0,
                cpu: Stage::new(conc, sc.node.cpu_service),
                disk: sc
                    .node
                    .disk
                    .map(|(c, d)| Stage::new(if ideal { c * sc.cluster.nodes as u32 } else { c }, d)),
                cache: sc.node.cache_rows.map(|rows| Lru::new(rows, sc.clients.keys.count)),
                tracker: HitRateTracker::new(sc.feedback.tick_ns, sc.feedback.window_ns, 0),
                rng,
                cpu_factor: 1.0,
                disk_factor: 1.0,
                fluct_factor: 1.0,
                added_delay_ns: 0,
                in_flight: 0,
                deferred: Vec::new(),
                gossiped: None,
                latency_ewma_ns: 0.0,
            });
            if sc.cluster.routing == Routing::Coordinator {
                let local = Some(NodeId(n as u16));
                requesters.push(Requester {
                    rt: build_runtime(sc, &spec.coordinator, policy::Side::Coordinator, local, policy_seed)?,
                    zone: topo.node_zone(n),
                    local,
                    timer_at: u64::MAX,
                    gen: 0,
                    seed: policy_seed,
                });
            }
        }
        // Every policy learns the zones once (weighted-least-loaded weighs remote zones).
        let zones: Vec<(NodeId, u32)> = (0..n_nodes).map(|n| (NodeId(n as u16), topo.node_zone(n) as u32)).collect();
        for r in &mut requesters {
            r.rt.set_topology(&zones, Some(r.zone as u32));
        }
        let net_rng = master.fork();
        let fault_rng = master.fork();
        let measure_ns = sc.run.warmup_ns;
        let end_ns = measure_ns + sc.run.duration_s as u64 * SECOND_NS;
        let faults = if ideal {
            FaultPlan::default()
        } else {
            FaultPlan::new(sc, measure_ns, end_ns)
        };
        let rec = Recorder::new(RecorderConfig {
            nodes: n_nodes,
            duration_s: sc.run.duration_s,
            phases: sc.phases.clone(),
        })?;
        Ok(Sim {
            sc,
            spec: spec.clone(),
            q: Queue::new(),
            now: 0,
            measure_ns,
            end_ns,
            rec,
            topo,
            seen_up: vec![true; n_nodes],
            nodes,
            clients,
            requesters,
            reqs: Slab::new(),
            ops: Slab::new(),
            deadlines: VecDeque::new(),
            net_rng,
            fault_rng,
            faults,
            events: 0,
            restart: None,
            replica_latency: LatencyHistogram::new(),
            speculate_after_ns: u64::MAX,
            speculate_by_percentile: matches!(sc.requests.speculative, Speculative::Percentile { .. }),
        })
    }

    /// Runs to the end. `progress`, when given, is updated with the simulated milliseconds done.
    pub fn run(mut self, progress: Option<&AtomicU64>) -> Outcome {
        let wall = std::time::Instant::now();
        self.start();
        let mut issued = 0u64;
        while let Some(ev) = self.q.pop() {
            if ev.t >= self.end_ns {
                break;
            }
            self.expire_deadlines(ev.t);
            self.now = ev.t;
            self.events += 1;
            if ev.kind == Kind::Arrival {
                issued += 1;
            }
            if ev.kind == Kind::Tick {
                if let Some(p) = progress {
                    p.store(self.now / 1_000_000, Ordering::Relaxed);
                }
            }
            self.handle(ev);
        }
        if let Some(p) = progress {
            p.store(self.end_ns / 1_000_000, Ordering::Relaxed);
        }
        let wall_s = wall.elapsed().as_secs_f64();
        let label = self.spec.label.clone();
        let audit = self.audit();
        let mut total = RuntimeStats::default();
        for r in &self.requesters {
            total += r.rt.stats();
        }
        let metrics = self.rec.finish(label, self.restart, self.events, wall_s);
        Outcome {
            metrics,
            simulated_requests: issued,
            runtime: total,
            audit,
        }
    }

    /// Checks every runtime's ledger against the simulator's own records (see
    /// [`Outcome::audit`]).
    fn audit(&self) -> Result<(), String> {
        let mut expected = vec![0u64; self.requesters.len()];
        for i in self.ops.live_indices() {
            let op = self.ops.at(i);
            let r = op.requester as usize;
            if op.kind != OpKind::Coordinate && !op.outcome_given && self.requesters[r].gen == op.requester_gen {
                expected[r] += 1;
            }
        }
        for i in self.reqs.live_indices() {
            let req = self.reqs.at(i);
            if req.client_dispatch.is_some() {
                expected[req.client as usize] += 1;
            }
        }
        for (r, rq) in self.requesters.iter().enumerate() {
            let stats = rq.rt.stats();
            let out = rq.rt.outstanding();
            if stats.violations > 0 || out != expected[r] || stats.sends != stats.replies + stats.failures + out {
                return Err(format!(
                    "requester {r} ({}): {out} sends out, {} expected; {} sends, {} replies, {} failures, {} violations",
                    rq.rt.name(),
                    expected[r],
                    stats.sends,
                    stats.replies,
                    stats.failures,
                    stats.violations
                ));
            }
        }
        Ok(())
    }

    fn start(&mut self) {
        for c in 0..self.clients.len() {
            match self.sc.clients.arrival {
                Arrival::Closed { outstanding, .. } => {
                    for _ in 0..outstanding {
                        self.q.push(0, Kind::Arrival, c as u32, 0, 0);
                    }
                }
                _ => {
                    let first = if self.clients[c].fixed {
                        self.clients[c].gap_ns * (c as f64 + 0.5) / self.clients.len() as f64
                    } else {
                        let g = self.clients[c].gap_ns;
                        self.clients[c].rng.exponential(g)
                    };
                    self.q.push(first as u64, Kind::Arrival, c as u32, 0, 0);
                }
            }
        }
        // Ticks on whole seconds of measured time (and every second of warm-up before it).
        self.q.push(self.measure_ns % SECOND_NS, Kind::Tick, 0, 0, 0);
        for (i, a) in self.faults.actions.iter().enumerate() {
            self.q.push(a.t_ns, Kind::Fault, i as u32, 0, 0);
        }
        for (i, f) in self.faults.fluctuations.iter().enumerate() {
            self.q.push(f.start_ns, Kind::Fluctuate, i as u32, 0, 0);
        }
        if self.sc.cluster.routing == Routing::Coordinator {
            for n in 0..self.nodes.len() {
                self.publish_own_rate(n);
            }
        }
    }

    fn handle(&mut self, ev: Event) {
        match ev.kind {
            Kind::Arrival => self.on_arrival(ev.a),
            Kind::AtCoordinator => self.on_at_coordinator(ev),
            Kind::AtReplica => self.on_at_replica(ev),
            Kind::StageDone => self.on_stage_done(ev),
            Kind::ReplyArrives => self.on_reply_arrives(ev),
            Kind::AtClient => self.on_at_client(ev.a, ev.b),
            Kind::Speculate => self.on_speculate(ev.a, ev.b),
            Kind::RetryBacklog => {
                let r = &mut self.requesters[ev.a as usize];
                if r.timer_at == ev.t {
                    r.timer_at = u64::MAX;
                    r.rt.handle_timeout(ev.t);
                    self.pump(ev.a);
                }
            }
            Kind::ProbeAtNode => self.on_probe_at_node(ev),
            Kind::ProbeReply => {
                let r = &mut self.requesters[ev.a as usize];
                let reply = ProbeReply {
                    node: NodeId(ev.b as u16),
                    in_flight: (ev.c >> 32) as u32,
                    latency_ns: (ev.c & 0xffff_ffff) * 1000,
                };
                r.rt.on_probe_reply(&reply, self.now);
            }
            Kind::Gossip => self.on_gossip(ev.a as usize, ev.b, f64::from_bits(ev.c)),
            Kind::Fault => self.on_fault(ev.a as usize),
            Kind::SeenDown => self.on_seen_down(ev.a as usize, ev.b),
            Kind::SeenUp => self.on_seen_up(ev.a as usize, ev.b),
            Kind::Fluctuate => self.on_fluctuate(ev.a as usize),
            Kind::Tick => self.on_tick(),
        }
    }

    // ----- helpers -------------------------------------------------------------------------

    #[inline]
    fn measured_t(&self) -> Option<u64> {
        self.now.checked_sub(self.measure_ns)
    }

    #[inline]
    fn is_client(&self, r: u32) -> bool {
        (r as usize) < self.clients.len()
    }

    #[inline]
    fn coordinator_requester(&self, node: u16) -> u32 {
        (self.clients.len() + node as usize) as u32
    }

    /// One-way delay of a message from zone `from` to zone `to`, sent by `sender` (a node, for
    /// its added delay) — with jitter.
    #[inline]
    fn delay(&mut self, from: u16, to: u16, sender: u16) -> u64 {
        let mut d = self.topo.one_way_ns(from, to);
        if sender != NO_NODE {
            d += self.nodes[sender as usize].added_delay_ns;
        }
        let j = self.sc.network.jitter_mean_ns;
        if j > 0.0 {
            d += self.net_rng.exponential(j) as u64;
        }
        d
    }

    /// The live candidates of `group` as seen by `local` (which always sees itself).
    #[inline]
    fn live_replicas(&self, group: u32, local: Option<u16>, out: &mut [NodeId; MAX_REPLICAS]) -> usize {
        let mut n = 0;
        for &id in self.topo.replicas(group) {
            if self.seen_up[id.index()] || Some(id.0) == local {
                out[n] = id;
                n += 1;
            }
        }
        n
    }

    fn live_nodes(&self, out: &mut [NodeId; MAX_REPLICAS]) -> usize {
        let mut n = 0;
        for i in 0..self.nodes.len().min(MAX_REPLICAS) {
            if self.seen_up[i] {
                out[n] = NodeId(i as u16);
                n += 1;
            }
        }
        n
    }

    fn feed_truth(&mut self, r: u32, candidates: &[NodeId]) {
        for &c in candidates {
            let n = &self.nodes[c.index()];
            let factor = n.fluct_factor;
            let mut mean = n.cpu.service.mean_ns() * n.cpu_factor * factor;
            let mut conc = n.cpu.concurrency;
            if let Some(d) = &n.disk {
                let miss = if n.cache.is_some() { 1.0 - n.tracker.hit_rate() } else { 1.0 };
                mean += miss * d.service.mean_ns() * n.disk_factor * factor;
                conc = d.concurrency;
            }
            let truth = NodeTruth {
                node: c,
                queue_len: n.in_flight,
                service_time_mean_ns: mean,
                concurrency: conc,
            };
            self.requesters[r as usize].rt.on_truth(&truth, self.now);
        }
    }

    // ----- clients -------------------------------------------------------------------------

    fn on_arrival(&mut self, c: u32) {
        let now = self.now;
        let cl = &mut self.clients[c as usize];
        let key = cl.keys.next(&mut cl.rng);
        let write = self.sc.clients.write_fraction > 0.0 && cl.rng.chance(self.sc.clients.write_fraction);
        if let Arrival::Poisson { .. } | Arrival::Fixed { .. } = self.sc.clients.arrival {
            let gap = if cl.fixed { cl.gap_ns } else { cl.rng.exponential(cl.gap_ns) };
            self.q.push(now + gap.max(1.0) as u64, Kind::Arrival, c, 0, 0);
        }
        let measured = now >= self.measure_ns;
        if measured {
            self.rec.issued();
        }
        let cl_level = if measured {
            self.sc.requests.consistency
        } else {
            self.sc.requests.warmup_consistency
        };
        let rf = self.topo.replicas(0).len();
        let group = self.topo.group_of(key);
        let req = Req {
            client: c,
            key,
            group,
            write,
            measured,
            needed: required(cl_level, rf) as u8,
            coord: NO_NODE,
            issued_ns: now,
            fallback: NO_NODE,
            ..Req::default()
        };
        let (id, gen) = self.reqs.insert(req);
        self.deadlines.push_back((now + self.sc.requests.read_timeout_ns, id, gen));
        self.submit_to_requester(c, id, gen);
    }

    /// Asks requester `r`'s runtime where request `id` goes and sends it; a request held back
    /// by rate control comes back later through [`Self::pump`].
    fn submit_to_requester(&mut self, r: u32, id: u32, gen: u32) {
        let req = *self.reqs.at(id);
        let choose_coordinator = self.is_client(r) && self.sc.cluster.routing == Routing::Coordinator;
        let local = self.requesters[r as usize].local.map(|n| n.0);
        let mut cand = [NodeId(0); MAX_REPLICAS];
        let n = if choose_coordinator && !self.sc.clients.token_aware {
            self.live_nodes(&mut cand)
        } else {
            self.live_replicas(req.group, local, &mut cand)
        };
        let count = if choose_coordinator {
            1
        } else if req.write {
            n.max(1)
        } else {
            req.needed as usize
        };
        if n < count.max(req.needed as usize * (!choose_coordinator) as usize) || n == 0 {
            self.fail_request(id, gen);
            return;
        }
        let now = self.now;
        if req.write && !choose_coordinator {
            // Writes go to every live replica; the runtime still counts them as sent.
            let d = self.requesters[r as usize].rt.dispatch_fixed(&cand[..n], now);
            let rq = self.reqs.at_mut(id);
            rq.dispatch = Some(d);
            rq.dispatch_gen = self.requesters[r as usize].gen;
            for (i, &t) in cand[..n].iter().enumerate() {
                self.send_op(r, id, t.0, d.ticket(i));
            }
            return;
        }
        if self.requesters[r as usize].rt.needs(Need::Truth) {
            self.feed_truth(r, &cand[..n]);
        }
        let request = Request {
            candidates: &cand[..n],
            replicas: Some(self.topo.replicas(req.group)),
            count,
            local: local.map(NodeId),
            group: req.group as u64,
        };
        match self.requesters[r as usize].rt.submit(&request, now, || (id, gen)) {
            Submitted::Send(d) => self.send_dispatch(r, id, d),
            Submitted::Queued => {}
            Submitted::Unavailable | Submitted::Rejected => self.fail_request(id, gen),
        }
        self.pump(r);
    }

    /// Moves requester `r`'s runtime outputs onto the event queue: probes to send, waiting
    /// requests it released, and the timer it wants armed.
    fn pump(&mut self, r: u32) {
        loop {
            self.send_probes(r);
            let reqs = &self.reqs;
            let rq = &mut self.requesters[r as usize];
            let Some(((id, gen), released)) = rq.rt.poll_released(self.now, |&(id, gen)| reqs.get(id, gen).is_some()) else {
                break;
            };
            match released {
                Released::Send(d) => self.send_dispatch(r, id, d),
                Released::Unavailable => self.fail_request(id, gen),
            }
        }
        let now = self.now;
        let rq = &mut self.requesters[r as usize];
        if let Some(t) = rq.rt.poll_timeout() {
            let t = t.max(now + 1);
            if t < rq.timer_at {
                rq.timer_at = t;
                self.q.push(t, Kind::RetryBacklog, r, 0, 0);
            }
        }
    }

    fn send_probes(&mut self, r: u32) {
        while let Some(probe) = self.requesters[r as usize].rt.poll_probe() {
            let from = self.requesters[r as usize].zone;
            let local = self.requesters[r as usize].local;
            let d = self.delay(from, self.nodes[probe.node.index()].zone, local.map_or(NO_NODE, |l| l.0));
            self.q.push(self.now + d, Kind::ProbeAtNode, r, probe.node.0 as u32, 0);
        }
    }

    /// Sends a planned request: to its coordinator (a client choosing one) or as replica ops.
    fn send_dispatch(&mut self, r: u32, id: u32, d: Dispatch) {
        let now = self.now;
        let req = *self.reqs.at(id);
        if self.is_client(r) && self.sc.cluster.routing == Routing::Coordinator {
            let coord = d.plan.targets()[0];
            let delay = self.delay(self.clients[r as usize].zone, self.nodes[coord.index()].zone, NO_NODE);
            let rq = self.reqs.at_mut(id);
            rq.coord = coord.0;
            rq.client_dispatch = Some(d.id);
            self.q.push(now + delay, Kind::AtCoordinator, id, req.gen, 0);
            return;
        }
        let rq = self.reqs.at_mut(id);
        rq.dispatch = Some(d.id);
        rq.dispatch_gen = self.requesters[r as usize].gen;
        for (node, ticket) in d.targets() {
            self.send_op(r, id, node.0, ticket);
        }
        if let Some(&fb) = d.plan.fallbacks().first() {
            let delay = match self.sc.requests.speculative {
                Speculative::None => u64::MAX,
                Speculative::After { delay_ns } => delay_ns,
                Speculative::Percentile { .. } => self.speculate_after_ns,
            };
            if delay != u64::MAX {
                self.reqs.at_mut(id).fallback = fb.0;
                self.q.push(now + delay, Kind::Speculate, id, req.gen, 0);
            }
        }
    }

    /// Sends one replica op of request `id` from requester `r` to `node` (already counted as
    /// sent in the requester's runtime under `ticket`).
    fn send_op(&mut self, r: u32, id: u32, node: u16, ticket: Ticket) {
        let now = self.now;
        let req = *self.reqs.at(id);
        let local = self.requesters[r as usize].local;
        if req.n_ops as usize >= req.ops.len() {
            // No room to track it: it ends at once, so the runtime's accounting stays whole.
            let _ = self.requesters[r as usize].rt.on_failure(ticket, Failure::Error, now);
            return;
        }
        let is_local = local == Some(NodeId(node));
        let op = Op {
            req: id,
            req_gen: req.gen,
            node,
            requester: r,
            requester_gen: self.requesters[r as usize].gen,
            kind: if req.write { OpKind::Write } else { OpKind::Read },
            local: is_local,
            ticket,
            key: req.key,
            sent_ns: now,
            ..Op::default()
        };
        let (op_id, op_gen) = self.ops.insert(op);
        {
            let rq = self.reqs.at_mut(id);
            rq.ops[rq.n_ops as usize] = op_id;
            rq.n_ops += 1;
        }
        if is_local {
            self.arrive_at_replica(op_id);
        } else {
            if let (Some(l), Some(t)) = (local, self.measured_t()) {
                if !req.write {
                    self.rec.remote_read(t, l.index());
                }
            }
            let from = self.requesters[r as usize].zone;
            let d = self.delay(from, self.nodes[node as usize].zone, local.map_or(NO_NODE, |l| l.0));
            self.q.push(now + d, Kind::AtReplica, op_id, op_gen, 0);
        }
    }

    fn fail_request(&mut self, id: u32, gen: u32) {
        let Some(req) = self.reqs.get(id, gen).copied() else {
            return;
        };
        if req.measured {
            self.rec.error();
        }
        self.finish_request(id, req);
    }

    /// Frees a request and, in closed loop, lets its client issue the next one. Its dispatches
    /// are closed: no more sends will follow (sends still out end when they end).
    fn finish_request(&mut self, id: u32, req: Req) {
        if let Some(d) = req.dispatch {
            let r = if self.sc.cluster.routing == Routing::Coordinator {
                self.coordinator_requester(req.coord)
            } else {
                req.client
            };
            if self.requesters[r as usize].gen == req.dispatch_gen {
                self.requesters[r as usize].rt.close(d);
            }
        }
        if let Some(d) = req.client_dispatch {
            self.requesters[req.client as usize].rt.close(d);
        }
        self.reqs.remove(id);
        if let Arrival::Closed { think_time_ns, .. } = self.sc.clients.arrival {
            self.q.push(self.now + think_time_ns, Kind::Arrival, req.client, 0, 0);
        }
    }

    fn expire_deadlines(&mut self, until: u64) {
        while let Some(&(deadline, id, gen)) = self.deadlines.front() {
            if deadline > until {
                return;
            }
            self.deadlines.pop_front();
            let Some(req) = self.reqs.get(id, gen).copied() else {
                continue;
            };
            self.now = deadline;
            if req.measured {
                self.rec.timeout();
            }
            for &op_id in &req.ops[..req.n_ops as usize] {
                self.give_outcome(op_id, Err(Failure::Timeout));
            }
            if let Some(d) = req.client_dispatch {
                self.requesters[req.client as usize].rt.abandon(d, Failure::Timeout, deadline);
                self.pump(req.client);
            }
            self.finish_request(id, req);
        }
    }

    /// Tells an op's requester how it ended (once).
    fn give_outcome(&mut self, op_id: u32, outcome: Result<(), Failure>) {
        if !self.ops.is_live(op_id) {
            return;
        }
        let op = *self.ops.at(op_id);
        if op.outcome_given || op.kind == OpKind::Coordinate {
            return;
        }
        self.ops.at_mut(op_id).outcome_given = true;
        let r = op.requester as usize;
        if !self.is_client(op.requester) {
            let n = &self.nodes[op.node_of_requester(self.clients.len())];
            if !n.up || self.requesters[r].gen != op.requester_gen {
                return;
            }
        }
        let now = self.now;
        let rt = &mut self.requesters[r].rt;
        let counted = match outcome {
            Ok(()) => rt.on_reply(op.ticket, now - op.sent_ns, op.feedback(self.sc.feedback.piggyback), now),
            Err(f) => rt.on_failure(op.ticket, f, now),
        };
        debug_assert!(counted.is_ok(), "op {op_id}: {counted:?}");
        self.pump(op.requester);
    }

    // ----- coordinators --------------------------------------------------------------------

    fn on_at_coordinator(&mut self, ev: Event) {
        let Some(req) = self.reqs.get(ev.a, ev.b).copied() else {
            return;
        };
        let n = req.coord as usize;
        if !self.nodes[n].up {
            return; // lost; the client times out
        }
        if self.nodes[n].paused {
            self.nodes[n].deferred.push(ev);
            return;
        }
        if let Some(_svc) = self.sc.node.coordinator_service {
            let op = Op {
                req: ev.a,
                req_gen: ev.b,
                node: req.coord,
                requester: self.coordinator_requester(req.coord),
                requester_gen: self.nodes[n].gen,
                node_gen: self.nodes[n].gen,
                kind: OpKind::Coordinate,
                local: true,
                sent_ns: self.now,
                arrived_ns: self.now,
                ..Op::default()
            };
            let (op_id, _) = self.ops.insert(op);
            self.submit_cpu(n, op_id);
        } else {
            let r = self.coordinator_requester(req.coord);
            self.submit_to_requester(r, ev.a, ev.b);
        }
    }

    fn on_at_client(&mut self, id: u32, gen: u32) {
        let Some(req) = self.reqs.get(id, gen).copied() else {
            return;
        };
        let now = self.now;
        if self.sc.cluster.routing == Routing::Coordinator && req.coord != NO_NODE {
            let n = &self.nodes[req.coord as usize];
            let feedback = Feedback {
                hit_rate: n.cache.as_ref().map(|_| n.tracker.hit_rate()),
                queue_len: Some(n.queued()),
                service_time_ns: None,
                in_flight: Some(n.in_flight),
            };
            if let Some(d) = req.client_dispatch {
                let counted = self.requesters[req.client as usize]
                    .rt
                    .on_reply(d.ticket(0), now - req.issued_ns, feedback, now);
                debug_assert!(counted.is_ok(), "request {id}: {counted:?}");
            }
            self.complete(id, req);
            // The client's backlog (a rate-limited client policy choosing coordinators) waits
            // for replies from coordinators, which arrive here rather than in at_requester.
            self.pump(req.client);
            return;
        }
        self.complete(id, req);
    }

    fn complete(&mut self, id: u32, req: Req) {
        if req.measured {
            if let Some(t) = self.measured_t() {
                self.rec.completed(t, self.now - req.issued_ns);
            }
        }
        self.finish_request(id, req);
    }

    fn on_speculate(&mut self, id: u32, gen: u32) {
        let Some(req) = self.reqs.get(id, gen).copied() else {
            return;
        };
        if req.answered || req.replies >= req.needed || req.fallback == NO_NODE {
            return;
        }
        let r = self.ops.at(req.ops[0]).requester;
        if !self.seen_up[req.fallback as usize] {
            return;
        }
        let (Some(d), true) = (req.dispatch, self.requesters[r as usize].gen == req.dispatch_gen) else {
            return;
        };
        if let Some(ticket) = self.requesters[r as usize].rt.send_extra(d, NodeId(req.fallback), self.now) {
            self.send_op(r, id, req.fallback, ticket);
        }
    }

    // ----- replicas ------------------------------------------------------------------------

    fn on_at_replica(&mut self, ev: Event) {
        if self.ops.get(ev.a, ev.b).is_none() {
            return;
        }
        let n = self.ops.at(ev.a).node as usize;
        if self.nodes[n].paused && self.nodes[n].up {
            self.nodes[n].deferred.push(ev);
            return;
        }
        self.arrive_at_replica(ev.a);
    }

    fn arrive_at_replica(&mut self, op_id: u32) {
        let n = self.ops.at(op_id).node as usize;
        if !self.nodes[n].up {
            self.drop_op(op_id);
            return;
        }
        let gen = self.nodes[n].gen;
        let op = self.ops.at_mut(op_id);
        if let Some(c) = &self.nodes[n].cache {
            c.prefetch(op.key);
        }
        op.node_gen = gen;
        op.arrived_ns = self.now;
        self.nodes[n].in_flight += 1;
        self.submit_cpu(n, op_id);
    }

    /// An op lost in a crash: failed at once if peers already see the node down, else when
    /// they do.
    fn drop_op(&mut self, op_id: u32) {
        let op = *self.ops.at(op_id);
        if op.kind == OpKind::Coordinate {
            self.ops.remove(op_id);
            return;
        }
        if !self.seen_up[op.node as usize] {
            self.give_outcome(op_id, Err(Failure::ConnectionLost));
            self.ops.remove(op_id);
        } else {
            self.ops.at_mut(op_id).state = OpState::Dropped;
        }
    }

    fn service_ns(&mut self, n: usize, disk: bool, read: bool) -> u64 {
        let node = &mut self.nodes[n];
        let (dist, factor): (Dist, f64) = if disk {
            let d = node.disk.as_ref().map(|d| d.service).unwrap_or(node.cpu.service);
            (d, node.disk_factor * node.fluct_factor)
        } else {
            (node.cpu.service, node.cpu_factor * node.fluct_factor)
        };
        let mut v = dist.sample_ns(&mut node.rng);
        if !disk && read {
            if let Some((p, extra)) = self.sc.node.extra_delay {
                if node.rng.unit_f64() < p {
                    v += extra.sample_ns(&mut node.rng);
                }
            }
        }
        (v * factor).max(1.0) as u64
    }

    fn submit_cpu(&mut self, n: usize, op_id: u32) {
        let node = &mut self.nodes[n];
        if node.cpu.busy < node.cpu.concurrency {
            node.cpu.busy += 1;
            self.start_service(n, op_id, 0);
        } else {
            node.cpu.queue.push_back(op_id);
        }
    }

    fn submit_disk(&mut self, n: usize, op_id: u32) {
        let Some(disk) = self.nodes[n].disk.as_mut() else {
            return;
        };
        if disk.busy < disk.concurrency {
            disk.busy += 1;
            self.start_service(n, op_id, 1);
        } else {
            disk.queue.push_back(op_id);
        }
    }

    /// Starts serving `op_id` on stage `stage` (0 cpu, 1 disk); the slot is already taken.
    fn start_service(&mut self, n: usize, op_id: u32, stage: u32) {
        let op = *self.ops.at(op_id);
        let dur = if op.kind == OpKind::Coordinate {
            let svc = self.sc.node.coordinator_service.unwrap_or(self.sc.node.cpu_service);
            let node = &mut self.nodes[n];
            (svc.sample_ns(&mut node.rng) * node.cpu_factor * node.fluct_factor).max(1.0) as u64
        } else {
            self.service_ns(n, stage == 1, op.kind == OpKind::Read)
        };
        self.ops.at_mut(op_id).service_ns += dur;
        let gen = self.ops.at(op_id).gen;
        self.q
            .push(self.now + dur, Kind::StageDone, op_id, stage | (gen << 1), self.nodes[n].gen as u64);
    }

    fn on_stage_done(&mut self, ev: Event) {
        let op_id = ev.a;
        let stage = ev.b & 1;
        let op_gen = ev.b >> 1;
        if self.ops.get(op_id, op_gen).is_none() {
            return;
        }
        let op = *self.ops.at(op_id);
        let n = op.node as usize;
        if self.nodes[n].gen as u64 != ev.c {
            self.drop_op(op_id);
            return;
        }
        if self.nodes[n].paused {
            self.nodes[n].deferred.push(ev);
            return;
        }
        // Free the slot and start the next op waiting for this stage.
        let next = {
            let node = &mut self.nodes[n];
            let st = if stage == 0 {
                &mut node.cpu
            } else {
                node.disk.as_mut().expect("disk op on a node without disk")
            };
            match st.queue.pop_front() {
                Some(next) => Some(next),
                None => {
                    st.busy -= 1;
                    None
                }
            }
        };
        if let Some(next) = next {
            self.start_service(n, next, stage);
        }
        match (op.kind, stage) {
            (OpKind::Coordinate, _) => {
                self.ops.remove(op_id);
                if self.reqs.get(op.req, op.req_gen).is_some() {
                    self.submit_to_requester(op.requester, op.req, op.req_gen);
                }
            }
            (OpKind::Write, _) => {
                if let Some(c) = self.nodes[n].cache.as_mut() {
                    if c.contains(op.key) {
                        c.insert(op.key);
                    }
                }
                self.reply(op_id);
            }
            (OpKind::Read, 0) => {
                let kind = if op.local { ReadKind::Local } else { ReadKind::Replica };
                let node = &mut self.nodes[n];
                let outcome = match node.cache.as_mut() {
                    Some(c) => {
                        if c.get(op.key) {
                            node.tracker.record_hit();
                            CacheOutcome::Hit
                        } else {
                            node.tracker.record_miss();
                            CacheOutcome::Miss
                        }
                    }
                    None => CacheOutcome::NoCache,
                };
                let to_disk = outcome != CacheOutcome::Hit && node.disk.is_some();
                if let Some(t) = self.now.checked_sub(self.measure_ns) {
                    self.rec.read(t, n, kind, outcome);
                }
                if to_disk {
                    self.submit_disk(n, op_id);
                } else {
                    self.reply(op_id);
                }
            }
            (OpKind::Read, _) => {
                if let Some(c) = self.nodes[n].cache.as_mut() {
                    c.insert(op.key);
                }
                self.reply(op_id);
            }
        }
    }

    /// The replica answers op `op_id` with its feedback record.
    fn reply(&mut self, op_id: u32) {
        let now = self.now;
        let op = *self.ops.at(op_id);
        let n = op.node as usize;
        let piggyback = self.sc.feedback.piggyback;
        let node = &mut self.nodes[n];
        node.in_flight -= 1;
        let residence = (now - op.arrived_ns) as f64;
        node.latency_ewma_ns = if node.latency_ewma_ns == 0.0 {
            residence
        } else {
            0.9 * node.latency_ewma_ns + 0.1 * residence
        };
        let hit_rate = if piggyback && node.cache.is_some() {
            node.tracker.hit_rate()
        } else {
            -1.0
        };
        let (queue_len, in_flight) = (node.queued(), node.in_flight);
        let zone = node.zone;
        let o = self.ops.at_mut(op_id);
        o.fb_hit_rate = hit_rate;
        o.fb_queue_len = queue_len;
        o.fb_in_flight = in_flight;
        if op.local {
            self.at_requester(op_id);
        } else {
            let to = self.requesters[op.requester as usize].zone;
            let d = self.delay(zone, to, op.node);
            self.q.push(now + d, Kind::ReplyArrives, op_id, op.gen, 0);
        }
    }

    fn on_reply_arrives(&mut self, ev: Event) {
        if self.ops.get(ev.a, ev.b).is_none() {
            return;
        }
        let op = *self.ops.at(ev.a);
        if !self.is_client(op.requester) {
            let c = op.node_of_requester(self.clients.len());
            let node = &mut self.nodes[c];
            if !node.up || self.requesters[op.requester as usize].gen != op.requester_gen {
                self.ops.remove(ev.a);
                return;
            }
            if node.paused {
                node.deferred.push(ev);
                return;
            }
        }
        self.at_requester(ev.a);
    }

    /// A replica's reply reached its requester.
    fn at_requester(&mut self, op_id: u32) {
        let op = *self.ops.at(op_id);
        self.give_outcome(op_id, Ok(()));
        if op.kind == OpKind::Read && self.speculate_by_percentile {
            self.replica_latency.record_ns(self.now - op.sent_ns);
        }
        self.ops.remove(op_id);
        if let Some(req) = self.reqs.get_mut(op.req, op.req_gen) {
            req.replies += 1;
            if req.replies == req.needed && !req.answered {
                req.answered = true;
                let req = *req;
                if self.is_client(op.requester) {
                    self.complete(op.req, req);
                } else {
                    let coord = req.coord;
                    let d = self.delay(self.nodes[coord as usize].zone, self.clients[req.client as usize].zone, coord);
                    self.q.push(self.now + d, Kind::AtClient, op.req, op.req_gen, 0);
                }
            }
        }
    }

    fn on_probe_at_node(&mut self, ev: Event) {
        let n = ev.b as usize;
        if !self.nodes[n].up {
            return;
        }
        if self.nodes[n].paused {
            self.nodes[n].deferred.push(ev);
            return;
        }
        let node = &self.nodes[n];
        let payload = ((node.in_flight as u64) << 32) | ((node.latency_ewma_ns / 1000.0) as u64).min(0xffff_ffff);
        let to = self.requesters[ev.a as usize].zone;
        let d = self.delay(node.zone, to, n as u16);
        self.q.push(self.now + d, Kind::ProbeReply, ev.a, ev.b, payload);
    }

    // ----- hit rates, gossip, ticks --------------------------------------------------------

    /// The coordinator's own rate, read live by its policy.
    fn publish_own_rate(&mut self, n: usize) {
        let node = &self.nodes[n];
        if node.cache.is_none() || self.sc.cluster.routing != Routing::Coordinator {
            return;
        }
        let info = Feedback {
            hit_rate: Some(node.tracker.hit_rate()),
            ..Feedback::default()
        };
        let r = self.coordinator_requester(n as u16) as usize;
        self.requesters[r].rt.on_info(NodeId(n as u16), &info, self.now);
    }

    fn on_tick(&mut self) {
        let now = self.now;
        // Disk queues are sampled for the second that just ended.
        if let Some(t) = now.checked_sub(self.measure_ns) {
            if t >= SECOND_NS {
                for n in 0..self.nodes.len() {
                    let q = self.nodes[n].disk.as_ref().map_or(0, |d| d.queue.len() as u32);
                    self.rec.disk_queue(t - 1, n, q);
                }
            }
        }
        for n in 0..self.nodes.len() {
            if !self.nodes[n].up || self.nodes[n].cache.is_none() {
                continue;
            }
            if self.nodes[n].tracker.advance(now) {
                self.publish_own_rate(n);
                if self.sc.feedback.gossip {
                    let rate = self.nodes[n].tracker.hit_rate();
                    let publish = match self.nodes[n].gossiped {
                        None => true,
                        Some((last, at)) => (rate - last).abs() > 0.1 || ((rate - last).abs() > 0.01 && now - at >= 5 * SECOND_NS),
                    };
                    if publish {
                        self.nodes[n].gossiped = Some((rate, now));
                        self.q
                            .push(now + self.sc.feedback.gossip_delay_ns, Kind::Gossip, n as u32, 0, rate.to_bits());
                    }
                }
            }
        }
        if let Speculative::Percentile { quantile } = self.sc.requests.speculative {
            if self.replica_latency.count() > 0 {
                self.speculate_after_ns = (self.replica_latency.quantile_ms(quantile) * 1e6) as u64;
            }
            self.replica_latency.reset();
        }
        self.q.push(now + SECOND_NS, Kind::Tick, 0, 0, 0);
    }

    /// Node `n`'s gossiped rate reaches every other requester (`target` = 0), or only
    /// requester `target - 1` (a restarted node catching up with the gossip state).
    fn on_gossip(&mut self, n: usize, target: u32, rate: f64) {
        let info = Feedback {
            hit_rate: Some(rate),
            ..Feedback::default()
        };
        let (from, to) = if target == 0 {
            (0, self.requesters.len())
        } else {
            (target as usize - 1, target as usize)
        };
        for r in from..to {
            if self.requesters[r].local == Some(NodeId(n as u16)) {
                continue;
            }
            self.requesters[r].rt.on_info(NodeId(n as u16), &info, self.now);
        }
    }

    // ----- faults --------------------------------------------------------------------------

    fn marker(&mut self, label: String) {
        if let Some(t) = self.measured_t() {
            self.rec.marker(t as f64 / 1e9, label);
        }
    }

    fn on_fault(&mut self, i: usize) {
        let a = self.faults.actions[i];
        let n = a.node as usize;
        match a.action {
            Action::Down => self.crash(n),
            Action::Up => self.restart_node(n),
            Action::Pause => {
                if self.nodes[n].up {
                    self.nodes[n].paused = true;
                    self.marker(format!("node {n} paused"));
                }
            }
            Action::Resume => {
                if self.nodes[n].paused {
                    self.nodes[n].paused = false;
                    self.marker(format!("node {n} resumed"));
                    let deferred = std::mem::take(&mut self.nodes[n].deferred);
                    for e in deferred {
                        self.q.repush(self.now, e);
                    }
                }
            }
            Action::SetDelay(ns) => self.nodes[n].added_delay_ns = ns,
            Action::SetSlow { cpu, disk } => {
                self.nodes[n].cpu_factor = cpu;
                self.nodes[n].disk_factor = disk;
            }
        }
    }

    fn crash(&mut self, n: usize) {
        if !self.nodes[n].up {
            return;
        }
        self.marker(format!("node {n} down"));
        let node = &mut self.nodes[n];
        node.up = false;
        node.paused = false;
        node.gen += 1;
        node.in_flight = 0;
        let mut lost: Vec<u32> = node.cpu.queue.drain(..).collect();
        node.cpu.busy = 0;
        if let Some(d) = node.disk.as_mut() {
            lost.extend(d.queue.drain(..));
            d.busy = 0;
        }
        if let Some(c) = node.cache.as_mut() {
            c.clear();
        }
        let deferred = std::mem::take(&mut node.deferred);
        let gen = node.gen;
        for op in lost {
            self.drop_op(op);
        }
        for e in deferred {
            self.q.repush(self.now, e);
        }
        if self.sc.cluster.routing == Routing::Coordinator {
            // The crashed process loses the requests it held back; their clients time out.
            let r = self.coordinator_requester(n as u16) as usize;
            self.requesters[r].rt.cancel_waiting(|_| true, |_| {});
        }
        self.q
            .push(self.now + self.sc.run.failure_detection_ns, Kind::SeenDown, n as u32, gen, 0);
    }

    fn restart_node(&mut self, n: usize) {
        if self.nodes[n].up {
            return;
        }
        self.marker(format!("node {n} up"));
        if self.restart.is_none() {
            if let Some(t) = self.measured_t() {
                self.restart = Some((n, t as f64 / 1e9));
            }
        }
        let now = self.now;
        let node = &mut self.nodes[n];
        node.up = true;
        node.tracker = HitRateTracker::new(self.sc.feedback.tick_ns, self.sc.feedback.window_ns, now);
        node.gossiped = None;
        node.latency_ewma_ns = 0.0;
        let gen = node.gen;
        if self.sc.cluster.routing == Routing::Coordinator {
            // A restarted process: a fresh policy that knows nothing yet.
            let r = self.coordinator_requester(n as u16) as usize;
            let seed = Rng::seed_from_u64(self.requesters[r].seed ^ u64::from(gen)).next_u64();
            let local = Some(NodeId(n as u16));
            match build_runtime(self.sc, &self.spec.coordinator, policy::Side::Coordinator, local, seed) {
                Ok(mut rt) => {
                    let zones: Vec<(NodeId, u32)> = (0..self.nodes.len())
                        .map(|i| (NodeId(i as u16), self.topo.node_zone(i) as u32))
                        .collect();
                    rt.set_topology(&zones, Some(self.requesters[r].zone as u32));
                    self.requesters[r].rt = rt;
                    self.requesters[r].gen = gen;
                    self.requesters[r].timer_at = u64::MAX;
                }
                Err(e) => unreachable!("policy {} built at start but not at restart: {e}", self.spec.coordinator),
            }
            self.publish_own_rate(n);
            if self.sc.feedback.gossip {
                // Joining the gossip ring hands the node every peer's published state.
                for peer in 0..self.nodes.len() {
                    if let (true, Some((rate, _))) = (peer != n && self.nodes[peer].up, self.nodes[peer].gossiped) {
                        self.q.push(
                            now + self.sc.feedback.gossip_delay_ns,
                            Kind::Gossip,
                            peer as u32,
                            r as u32 + 1,
                            rate.to_bits(),
                        );
                    }
                }
            }
        }
        self.q.push(now + self.sc.run.up_detection_ns, Kind::SeenUp, n as u32, gen, 0);
    }

    fn on_seen_down(&mut self, n: usize, gen: u32) {
        debug_assert!(self.nodes[n].gen >= gen);
        self.seen_up[n] = false;
        for r in 0..self.requesters.len() {
            if self.requesters[r].local != Some(NodeId(n as u16)) {
                self.requesters[r].rt.on_node_down(NodeId(n as u16), self.now);
                self.pump(r as u32);
            }
        }
        let dropped: Vec<u32> = self
            .ops
            .live_indices()
            .filter(|&i| {
                let o = self.ops.at(i);
                o.node as usize == n && o.state == OpState::Dropped
            })
            .collect();
        for op in dropped {
            self.give_outcome(op, Err(Failure::ConnectionLost));
            self.ops.remove(op);
        }
        if self.nodes[n].up {
            let g = self.nodes[n].gen;
            self.q.push(self.now + self.sc.run.up_detection_ns, Kind::SeenUp, n as u32, g, 0);
        }
    }

    fn on_seen_up(&mut self, n: usize, gen: u32) {
        if self.nodes[n].gen != gen || !self.nodes[n].up || self.seen_up[n] {
            return;
        }
        self.seen_up[n] = true;
        for r in 0..self.requesters.len() {
            if self.requesters[r].local != Some(NodeId(n as u16)) {
                self.requesters[r].rt.on_node_up(NodeId(n as u16), NodeCaps::default(), self.now);
                self.pump(r as u32);
            }
        }
    }

    fn on_fluctuate(&mut self, i: usize) {
        let f = self.faults.fluctuations[i].clone();
        for &n in &f.nodes {
            if self.fault_rng.unit_f64() < f.probability {
                let node = &mut self.nodes[n as usize];
                node.fluct_factor = if node.fluct_factor == 1.0 { f.factor } else { 1.0 };
            }
        }
        let next = self.now + f.interval_ns;
        if next < f.end_ns {
            self.q.push(next, Kind::Fluctuate, i as u32, 0, 0);
        }
    }
}

impl Op {
    /// The node index of a coordinator requester.
    fn node_of_requester(&self, clients: usize) -> usize {
        self.requester as usize - clients
    }
}

fn required(cl: ConsistencyLevel, rf: usize) -> usize {
    cl.required(rf).clamp(1, rf)
}

fn runtime_config(local: Option<NodeId>, seed: u64) -> RuntimeConfig {
    RuntimeConfig {
        local,
        seed,
        max_waiting: runtime::DEFAULT_MAX_WAITING,
    }
}

/// The runtime of policy `name` deciding for side `side` (any side with direct routing,
/// where clients choose the replicas themselves).
fn build_runtime(sc: &Scenario, name: &str, side: policy::Side, local: Option<NodeId>, seed: u64) -> Result<Runtime<ReqKey>, String> {
    let table = sc.policy.params.get(name).cloned().unwrap_or_default();
    let info = policy::registry::find(name).map_err(|e| e.to_string())?;
    let built = if sc.cluster.routing == Routing::Direct {
        policy::build(name, &table)
    } else {
        policy::build_for(name, side, &table)
    };
    Runtime::new(
        built.map_err(|e| e.to_string())?,
        info.needs,
        SIMULATOR,
        runtime_config(local, seed),
    )
}
