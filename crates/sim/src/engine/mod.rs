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

mod clients;
mod control;

mod multi;
mod network;
mod node;
mod records;
pub(crate) use records::{OP_BYTES, REQUEST_BYTES};
mod replicas;
mod requesters;
mod roll;
mod slab;
mod topology;

use crate::dist::Dist;
use crate::keys::KeyGen;
use crate::lru::Lru;
use crate::queue::{Audience, Event, Queue, Ref, StageKind};
use crate::runs::RunSpec;
use crate::scenario::{Arrival, RestartCache, Routing, Scenario, Speculative};
use multi::{Multi, NO_PARENT};
use network::{End, Nics};
use node::{Node, Stage, Throttle};
use records::{Op, OpKind, OpState, Req, ReqKey};
use replica_lb_metrics::{CacheOutcome, ReadKind, Recorder, RecorderConfig, RunMetrics};
use replica_lb_policy::hwlb::{HitRateTracker, RatePublisher};
use replica_lb_policy::{
    ConsistencyLevel, Decision, Failure, Feedback, Need, NodeCaps, NodeId, NodeTruth, Plan, Policy, ProbeReply, Request, Rng, MAX_REPLICAS,
};
use replica_lb_runtime::{Caller, Dispatch, Released, Runtime, RuntimeConfig, RuntimeStats, Submitted, Ticket};
use replica_lb_workload::faults::{Action, FaultPlan};
use requesters::{build_runtime, runtime_config, SIMULATOR};
use slab::{Slab, Slot};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use topology::Topology;

const SECOND_NS: u64 = 1_000_000_000;
const NO_NODE: u16 = u16::MAX;

/// A decider with its policy runtime: one per client, one per coordinator node. Laid out in
/// declaration order (`repr(C)`): the fields a request reads, then the runtime, whose hot
/// lines come first, so an upcoming request's requester is one run of cache lines (aligned to
/// a line, so that run starts at a line).
#[repr(C, align(64))]
struct Requester {
    /// The time of the pending runtime-timer event (`u64::MAX`: none). A timer event whose
    /// time is not this one is stale (an earlier one replaced it) and does nothing.
    timer_at: u64,
    /// Generation of the node it runs on when built (coordinators).
    gen: u32,
    zone: u16,
    /// A client whose candidates go beyond the key's replicas (`clients.candidates` and a
    /// policy that ranks the whole plan).
    beyond_replicas: bool,
    /// The node it runs on (coordinators).
    local: Option<NodeId>,
    /// The seed its runtime started from; a restarted coordinator's new runtime derives its
    /// seed from it, so no other random stream moves.
    seed: u64,
    rt: Runtime<ReqKey>,
}

/// A client's arrival process. Aligned to a cache line: every arrival reads it whole (its
/// lines are prefetched together).
#[repr(align(64))]
struct Client {
    zone: u16,
    keys: KeyGen,
    rng: Rng,
    gap_ns: f64,
    fixed: bool,
}

/// A policy-less stand-in used by the ideal shared queue: always the first candidate.
struct FirstCandidate;

impl FirstCandidate {
    /// It wrapped as the registry wraps a policy, under the name `ideal`, with no parameters.
    fn built() -> Result<replica_lb_policy::Built, String> {
        Ok(replica_lb_policy::Built {
            name: "ideal",
            side: replica_lb_policy::Side::Both,
            params: replica_lb_policy::Params::resolve("ideal", &[], &Default::default()).map_err(|e| e.to_string())?,
            needs: replica_lb_policy::Needs::NONE,
            policy: Box::new(FirstCandidate),
        })
    }
}

impl Policy for FirstCandidate {
    fn plan(&mut self, req: &Request<'_>, _now_ns: u64, _rng: &mut Rng, out: &mut Plan) -> Decision {
        if req.candidates.len() < req.count {
            return Decision::Unavailable;
        }
        out.set_order(req.candidates, req.count);
        Decision::Send
    }
}

impl Client {
    /// Client `c` of the scenario, drawing from `rng`.
    fn new(sc: &Scenario, c: usize, rng: Rng) -> Client {
        let (gap_ns, fixed) = match sc.clients.arrival {
            Arrival::Poisson { rate_per_s } => (1e9 / (rate_per_s * sc.clients.weight[c]), false),
            Arrival::Fixed { rate_per_s } => (1e9 / (rate_per_s * sc.clients.weight[c]), true),
            Arrival::Closed { .. } => (0.0, false),
        };
        Client {
            zone: sc.clients.zone[c],
            keys: KeyGen::new(sc.clients.keys, c, sc.clients.count),
            rng,
            gap_ns,
            fixed,
        }
    }
}

impl Requester {
    /// The requester of client `c`: the run's client policy (the first candidate in the ideal
    /// shared queue), seeded with `seed`.
    fn client(sc: &Scenario, spec: &RunSpec, c: usize, seed: u64) -> Result<Requester, String> {
        let ideal = spec.ideal;
        let rt = if ideal {
            Runtime::new(FirstCandidate::built()?, SIMULATOR, runtime_config(None, seed))?
        } else {
            build_runtime(&spec.client, None, seed)?
        };
        Ok(Requester {
            rt,
            zone: sc.clients.zone[c],
            local: None,
            timer_at: u64::MAX,
            gen: 0,
            seed,
            beyond_replicas: sc.clients.beyond_replicas && !ideal && spec.client.info().plans_beyond_replicas,
        })
    }

    /// The requester of node `n` as a coordinator: the run's coordinator policy, seeded with
    /// `seed`.
    fn coordinator(spec: &RunSpec, topo: &Topology, n: usize, seed: u64) -> Result<Requester, String> {
        let local = Some(NodeId(n as u16));
        Ok(Requester {
            rt: build_runtime(&spec.coordinator, local, seed)?,
            zone: topo.node_zone(n),
            local,
            timer_at: u64::MAX,
            gen: 0,
            seed,
            beyond_replicas: false,
        })
    }
}

/// The recorder of a run of `sc` over `n_nodes` nodes (zones not told in the ideal shared
/// queue).
fn recorder(sc: &Scenario, n_nodes: usize, ideal: bool) -> Result<Recorder, String> {
    let mut rec = Recorder::new(RecorderConfig {
        nodes: n_nodes,
        duration_s: sc.run.duration_s,
        phases: sc.phases.clone(),
        timeout_ns: sc.requests.read_timeout_ns,
    })?;
    rec.track_network(sc.network.nic_bits_per_s);
    if !ideal {
        rec.set_zones(sc.cluster.node_zone.clone(), sc.cluster.zone_names.clone());
    }
    if sc.requests.multi.is_some() {
        rec.track_multi();
    }
    Ok(rec)
}

/// Node `n` as it starts: up, its stages sized by the scenario (the whole
/// cluster's in one node for the ideal shared queue), drawing from `rng`.
fn new_node(sc: &Scenario, topo: &Topology, ideal: bool, n: usize, rng: Rng) -> Node {
    let conc = if ideal {
        sc.node.cpu_concurrency * sc.cluster.nodes as u32
    } else {
        sc.node.cpu_concurrency
    };
    Node {
        zone: topo.node_zone(n),
        up: true,
        paused: false,
        pauses: 0,
        gen: 0,
        cpu: Stage::new(conc, sc.node.cpu_service),
        disk: sc
            .node
            .disk
            .map(|(c, d)| Box::new(Stage::new(if ideal { c * sc.cluster.nodes as u32 } else { c }, d))),
        cache: sc.node.cache_rows.map(|rows| Box::new(Lru::new(rows, sc.clients.keys.count))),
        read_busy: 0,
        read_waiting: VecDeque::new(),
        throttle: sc.node.disk_throttle.map(|t| Box::new(Throttle::new(t.reads_per_s, t.burst_ns))),
        index_pages: sc.node.index_pages.unwrap_or(0),
        index_cached: sc.node.index_pages.map(|p| vec![0u64; p.div_ceil(64) as usize].into_boxed_slice()),
        tracker: HitRateTracker::new(sc.feedback.tick_ns, sc.feedback.window_ns, 0),
        rng,
        cpu_factor: 1.0,
        disk_factor: 1.0,
        fluct_factor: 1.0,
        added_delay_ns: 0,
        in_flight: 0,
        deferred: Vec::new(),
        gossiped: RatePublisher::new(),
        latency_ewma_ns: 0.0,
    }
}

/// A restarted process serves `start_ns` after it is started (`run.restart_start_ms`): every
/// restart's return, planned or gated, comes that much later. The real experiments start the
/// process at the fault's end; the simulator's node answers when the real one would.
fn start_restarts_later(plan: &mut FaultPlan, start_ns: u64) {
    if start_ns == 0 {
        return;
    }
    for a in plan.actions.iter_mut().filter(|a| a.action == Action::Up) {
        a.t_ns += start_ns;
    }
    // Stable: simultaneous actions keep their order.
    plan.actions.sort_by_key(|a| a.t_ns);
    for roll in &mut plan.rolls {
        roll.down_ns += start_ns;
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
    /// The clients' view of which nodes are up (they can see a crash before the nodes do).
    client_seen_up: Vec<bool>,
    clients: Vec<Client>,
    requesters: Vec<Requester>,
    reqs: Slab<Req>,
    ops: Slab<Op>,
    multis: Slab<Multi>,
    deadlines: VecDeque<(u64, u32, u32)>,
    net_rng: Rng,
    nics: Nics,
    fault_rng: Rng,
    /// Draws which reads send shadow reads (its own stream: without shadow reads the other
    /// streams, and so every result, stay as they were).
    shadow_rng: Rng,
    /// Draws which requests are multi-key and an IN query's coordinator (its own stream, as
    /// `shadow_rng`).
    multi_rng: Rng,
    faults: FaultPlan,
    /// The gated rolling restarts, as they go ([`roll`]).
    rolls: Vec<roll::RollState>,
    events: u64,
    restart: Option<(usize, f64)>,
    /// Reads' latencies at their coordinators, for a percentile speculative retry.
    read_latency: crate::speculation::DecayingHistogram,
    speculate_after_ns: u64,
    speculate_by_percentile: bool,
    /// Whether the next events' records are prefetched: only with more requesters and nodes
    /// than [`PREFETCH_FROM`].
    prefetch: bool,
    /// The requesters whose policy reads the feedback record, in order: the ones gossip
    /// reaches (a policy without the `feedback` need decides the same without it, as the
    /// policy crate's registry tests check). A large cluster's clients choosing a coordinator
    /// at random are most requesters and hear none of it.
    gossip_listeners: Vec<u32>,
}

/// Requesters plus nodes from which [`Sim::run`] prefetches the next events' records. Below,
/// the records mostly stay in cache and peeking at the next events costs more than it saves:
/// measured side by side, prefetching made a 300-node cluster's run (900 requesters and
/// nodes) 25% slower, 700 nodes and 2,100 clients 13% slower, and 2,000 nodes and 6,000
/// clients 10% faster.
const PREFETCH_FROM: usize = 4_096;

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
        // Sized once: a growing vector of over-aligned records is copied (not remapped) at each
        // doubling, and freeing the large old copies raises the allocator's threshold for
        // mapping blocks, so that the nodes' row-cache indexes would be zeroed in the heap
        // (resident) instead of mapped lazily: hundreds of MB at 2,000 nodes.
        let coordinators = if sc.cluster.routing == Routing::Coordinator {
            topo.nodes
        } else {
            0
        };
        let mut requesters = Vec::with_capacity(sc.clients.count + coordinators);
        for c in 0..sc.clients.count {
            let rng = master.fork();
            let policy_seed = master.next_u64();
            clients.push(Client::new(sc, c, rng));
            requesters.push(Requester::client(sc, spec, c, policy_seed)?);
        }
        let mut nodes = Vec::with_capacity(n_nodes);
        for n in 0..n_nodes {
            let rng = master.fork();
            let policy_seed = master.next_u64();
            nodes.push(new_node(sc, &topo, ideal, n, rng));
            if sc.cluster.routing == Routing::Coordinator {
                requesters.push(Requester::coordinator(spec, &topo, n, policy_seed)?);
            }
        }
        // Every policy learns the zones once (weighted-least-loaded weighs remote zones).
        let zones: Vec<(NodeId, u32)> = (0..n_nodes).map(|n| (NodeId(n as u16), topo.node_zone(n) as u32)).collect();
        for r in &mut requesters {
            r.rt.set_topology(&zones, Some(r.zone as u32));
        }
        let net_rng = master.fork();
        let fault_rng = master.fork();
        let shadow_rng = master.fork();
        let multi_rng = master.fork();
        let measure_ns = sc.run.warmup_ns;
        let end_ns = measure_ns + sc.run.duration_s as u64 * SECOND_NS;
        let faults = if ideal {
            FaultPlan::default()
        } else {
            let mut plan = FaultPlan::new(sc, measure_ns, end_ns);
            start_restarts_later(&mut plan, sc.run.restart_start_ns);
            plan
        };
        let rolls = faults.rolls.iter().cloned().map(roll::RollState::new).collect();
        let rec = recorder(sc, n_nodes, ideal)?;
        let prefetch = requesters.len() + n_nodes > PREFETCH_FROM;
        let gossip_listeners = (0..requesters.len() as u32)
            .filter(|&r| requesters[r as usize].rt.needs(Need::Feedback))
            .collect();
        Ok(Sim {
            sc,
            spec: spec.clone(),
            q: Queue::for_rate(expected_events_per_s(sc)),
            now: 0,
            measure_ns,
            end_ns,
            rec,
            topo,
            seen_up: vec![true; n_nodes],
            client_seen_up: vec![true; n_nodes],
            nodes,
            clients,
            requesters,
            reqs: Slab::new(),
            ops: Slab::new(),
            multis: Slab::new(),
            deadlines: VecDeque::new(),
            net_rng,
            nics: Nics::new(n_nodes, sc.network.nic_bits_per_s),
            fault_rng,
            shadow_rng,
            multi_rng,
            faults,
            rolls,
            events: 0,
            restart: None,
            read_latency: Default::default(),
            speculate_after_ns: u64::MAX,
            speculate_by_percentile: matches!(sc.requests.speculative, Speculative::Percentile { .. }),
            prefetch,
            gossip_listeners,
        })
    }

    /// Runs to the end. `progress`, when given, is updated with the simulated milliseconds done.
    pub fn run(mut self, progress: Option<&AtomicU64>) -> Outcome {
        let wall = std::time::Instant::now();
        self.start();
        let mut issued = 0u64;
        while let Some((t, ev)) = self.q.pop() {
            if t >= self.end_ns {
                break;
            }
            self.expire_deadlines(t);
            self.now = t;
            self.events += 1;
            if self.prefetch {
                let (next, after) = self.q.peek_two();
                if let Some(e) = after {
                    self.prefetch_records(e);
                }
                if let Some(e) = next {
                    self.prefetch_records(e);
                    self.prefetch_named(e);
                }
            }
            match ev {
                Event::Arrival { .. } => issued += 1,
                Event::Tick => {
                    if let Some(p) = progress {
                        p.store(self.now / 1_000_000, Ordering::Relaxed);
                    }
                }
                _ => {}
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
        let rolling_restarts = self.roll_report();
        let mut metrics = self.rec.finish(label, self.restart, self.events, wall_s);
        metrics.summary.rolling_restarts = rolling_restarts;
        Outcome {
            metrics,
            simulated_requests: issued,
            runtime: total,
            audit,
        }
    }

    /// Hints the CPU to fetch the records event `ev` names (its client, op, node, request or
    /// requester), two events ahead: with thousands of clients and nodes they are rarely in
    /// cache. A hint never changes a result.
    #[inline(always)]
    fn prefetch_records(&self, ev: Event) {
        match ev {
            Event::Arrival { client } => {
                if let (Some(c), Some(r)) = (self.clients.get(client as usize), self.requesters.get(client as usize)) {
                    crate::prefetch::lines(c);
                    crate::prefetch::lines(&r.timer_at);
                    r.rt.prefetch_hot();
                }
            }
            Event::AtReplica { op, node } | Event::StageDone { op, node, .. } => {
                self.ops.prefetch(op.index);
                if let Some(n) = self.nodes.get(node as usize) {
                    n.prefetch_hot();
                }
            }
            Event::ReplyArrives { op, requester } => {
                self.ops.prefetch(op.index);
                if let Some(r) = self.requesters.get(requester as usize) {
                    crate::prefetch::lines(&r.timer_at);
                    r.rt.prefetch_hot();
                }
            }
            Event::AtCoordinator { req } | Event::AtClient { req } => self.reqs.prefetch(req.index),
            _ => {}
        }
    }

    /// Hints the CPU to fetch what the records of the next event `ev` name in turn (fetched
    /// by [`Self::prefetch_records`] an event earlier, so reading them here rarely waits): the
    /// ledger slot a client's dispatch will take, the request and ledger slot a reply ends, the
    /// op a finishing stage starts next. A hint never changes a result.
    #[inline(always)]
    fn prefetch_named(&self, ev: Event) {
        match ev {
            Event::Arrival { client } => {
                if let Some(r) = self.requesters.get(client as usize) {
                    r.rt.prefetch_submit();
                }
                self.reqs.prefetch_free();
                self.ops.prefetch_free();
            }
            Event::ReplyArrives { op, .. } => {
                if let Some(o) = self.ops.get(op.index, op.gen) {
                    if let Some(r) = self.requesters.get(o.requester as usize) {
                        r.rt.prefetch_end(o.ticket);
                    }
                    self.reqs.prefetch(o.req);
                }
            }
            Event::StageDone { node, stage, .. } => {
                if let Some(n) = self.nodes.get(node as usize) {
                    let queue = match stage {
                        StageKind::Cpu => Some(&n.cpu.queue),
                        StageKind::Disk => n.disk.as_deref().map(|d| &d.queue),
                    };
                    if let Some(&next) = queue.and_then(|q| q.front()) {
                        self.ops.prefetch(next);
                    }
                }
            }
            _ => {}
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
            // A crashed coordinator's runtime died with its process: the replies to its sends
            // reach no one (`give_outcome`), and a restart builds a new runtime.
            if !self.is_client(r as u32) && !self.nodes[r - self.clients.len()].up {
                continue;
            }
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
                        self.q.push(0, Event::Arrival { client: c as u32 });
                    }
                }
                _ => {
                    let first = if self.clients[c].fixed {
                        self.clients[c].gap_ns * (c as f64 + 0.5) / self.clients.len() as f64
                    } else {
                        let g = self.clients[c].gap_ns;
                        self.clients[c].rng.exponential(g)
                    };
                    self.q.push(first as u64, Event::Arrival { client: c as u32 });
                }
            }
        }
        // Ticks on whole seconds of measured time (and every second of warm-up before it).
        self.q.push(self.measure_ns % SECOND_NS, Event::Tick);
        for (i, a) in self.faults.actions.iter().enumerate() {
            self.q.push(a.t_ns, Event::Fault { action: i as u32 });
        }
        for (i, f) in self.faults.fluctuations.iter().enumerate() {
            self.q.push(f.start_ns, Event::Fluctuate { fault: i as u32 });
        }
        if self.sc.cluster.routing == Routing::Coordinator {
            for n in 0..self.nodes.len() {
                self.publish_own_rate(n);
            }
        }
    }

    /// Hands an event to the part of the engine whose role it concerns.
    #[inline(always)]
    fn handle(&mut self, ev: Event) {
        match ev {
            Event::Arrival { client } => self.on_arrival(client),
            Event::AtCoordinator { req } => self.on_at_coordinator(req),
            Event::AtReplica { op, node } => self.on_at_replica(op, node),
            Event::StageDone { op, stage, node_gen, node } => self.on_stage_done(op, stage, node_gen, node),
            Event::ReplyArrives { op, requester } => self.on_reply_arrives(op, requester),
            Event::AtClient { req } => self.on_at_client(req.index, req.gen),
            Event::Speculate { req } => self.on_speculate(req.index, req.gen),
            Event::RuntimeTimer { requester } => {
                let r = &mut self.requesters[requester as usize];
                if r.timer_at == self.now {
                    r.timer_at = u64::MAX;
                    r.rt.handle_timeout(self.now);
                    self.pump(requester);
                }
            }
            Event::ProbeAtNode { requester, node } => self.on_probe_at_node(requester, node),
            Event::ProbeReply {
                requester,
                node,
                in_flight,
                latency_us,
            } => {
                let reply = ProbeReply {
                    node: NodeId(node),
                    in_flight,
                    latency_ns: latency_us as u64 * 1000,
                };
                self.requesters[requester as usize].rt.on_probe_reply(&reply, self.now);
            }
            Event::Gossip { node, only, rate } => self.on_gossip(node as usize, only, rate),
            Event::Fault { action } => self.on_fault(action as usize),
            Event::SeenDown { node, gen, audience } => self.on_seen_down(node as usize, gen, audience),
            Event::PauseConvicted { node, pause } => self.on_pause_convicted(node as usize, pause),
            Event::SeenUp { node, gen } => self.on_seen_up(node as usize, gen),
            Event::Fluctuate { fault } => self.on_fluctuate(fault as usize),
            Event::Tick => self.on_tick(),
        }
    }

    #[inline]
    pub(super) fn measured_t(&self) -> Option<u64> {
        self.now.checked_sub(self.measure_ns)
    }

    #[inline]
    pub(super) fn is_client(&self, r: u32) -> bool {
        (r as usize) < self.clients.len()
    }

    #[inline]
    pub(super) fn coordinator_requester(&self, node: u16) -> u32 {
        (self.clients.len() + node as usize) as u32
    }

    /// One-way delay of a message from zone `from` to zone `to`, sent by `sender` (a node, for
    /// its added delay) — with jitter.
    #[inline]
    pub(super) fn delay(&mut self, from: u16, to: u16, sender: u16) -> u64 {
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

    /// Which nodes the clients (`client`) or the nodes see up.
    #[inline]
    pub(super) fn seen_by(&self, client: bool) -> &[bool] {
        if client {
            &self.client_seen_up
        } else {
            &self.seen_up
        }
    }

    /// The live candidates of `group` as seen by `local` (which always sees itself), or by the
    /// clients when `local` is `None`.
    #[inline]
    pub(super) fn live_replicas(&self, group: u32, local: Option<u16>, out: &mut [NodeId; MAX_REPLICAS]) -> usize {
        let seen = self.seen_by(local.is_none());
        let mut n = 0;
        for &id in self.topo.replicas(group) {
            if seen[id.index()] || Some(id.0) == local {
                out[n] = id;
                n += 1;
            }
        }
        n
    }

    /// A driver's token-aware query plan: the live replicas of `group`, then other live nodes
    /// (up to [`MAX_REPLICAS`] in all), walked from [`Self::plan_start`].
    pub(super) fn replicas_then_others(&self, group: u32, key: u64, out: &mut [NodeId; MAX_REPLICAS]) -> usize {
        let mut n = self.live_replicas(group, None, out);
        let replicas = self.topo.replicas(group);
        let nodes = self.nodes.len();
        let start = self.plan_start(key);
        for step in 0..nodes {
            if n == MAX_REPLICAS {
                break;
            }
            let i = (start + step) % nodes;
            let id = NodeId(i as u16);
            if self.client_seen_up[i] && !replicas.contains(&id) {
                out[n] = id;
                n += 1;
            }
        }
        n
    }

    /// A plan of live nodes for a client that is not token-aware: up to [`MAX_REPLICAS`] of
    /// them, walked from [`Self::plan_start`].
    pub(super) fn live_nodes(&self, key: u64, out: &mut [NodeId; MAX_REPLICAS]) -> usize {
        let nodes = self.nodes.len();
        let start = self.plan_start(key);
        let mut n = 0;
        for step in 0..nodes {
            if n == MAX_REPLICAS {
                break;
            }
            let i = (start + step) % nodes;
            if self.client_seen_up[i] {
                out[n] = NodeId(i as u16);
                n += 1;
            }
        }
        n
    }

    /// Where a plan's walk over the cluster starts: node 0 while the whole cluster fits in one
    /// plan of [`MAX_REPLICAS`] candidates, else a node drawn from the key's hash, so that plans
    /// of a large cluster spread over all of it while a plan stays at most `MAX_REPLICAS` long
    /// (the walk stops there: its cost does not grow with the cluster).
    #[inline]
    fn plan_start(&self, key: u64) -> usize {
        let nodes = self.nodes.len();
        if nodes <= MAX_REPLICAS {
            0
        } else {
            (replica_lb_workload::placement::mix64(key ^ 0x706c_616e_5f73_7461) % nodes as u64) as usize
        }
    }
}

/// About how many events a second the scenario makes (a request takes about ten: arrival,
/// messages, stages, replies), for sizing the event queue's buckets (speed only).
fn expected_events_per_s(sc: &Scenario) -> f64 {
    let requests_per_s = match sc.clients.arrival {
        Arrival::Poisson { rate_per_s } | Arrival::Fixed { rate_per_s } => rate_per_s,
        Arrival::Closed { .. } => 0.0,
    };
    if requests_per_s > 0.0 {
        10.0 * requests_per_s
    } else {
        100_000.0
    }
}

fn required(cl: ConsistencyLevel, rf: usize) -> usize {
    cl.required(rf).clamp(1, rf)
}
