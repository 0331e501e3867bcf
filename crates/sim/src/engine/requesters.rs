//! Where requests go: every decision through the requester's policy runtime (clients
//! choosing a coordinator or replicas, coordinators choosing replicas), the sends it counts,
//! the outcomes it is told, probes and the runtime's timer.

use super::*;
use replica_lb_policy::PolicyChoice;

/// What the simulator provides to a policy: everything, ground truth included.
pub(super) const SIMULATOR: Caller = Caller {
    name: "the simulator",
    provides: replica_lb_policy::Needs::ALL,
};

impl Sim<'_> {
    pub(super) fn feed_truth(&mut self, r: u32, candidates: &[NodeId]) {
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

    /// Asks requester `r`'s runtime where request `id` goes and sends it; a request held back
    /// by rate control comes back later through [`Self::pump`].
    pub(super) fn submit_to_requester(&mut self, r: u32, id: u32, gen: u32) {
        let req = *self.reqs.at(id);
        let choose_coordinator = self.is_client(r) && self.sc.cluster.routing == Routing::Coordinator;
        let local = self.requesters[r as usize].local.map(|n| n.0);
        let mut cand = [NodeId(0); MAX_REPLICAS];
        let n = if choose_coordinator && !self.sc.clients.token_aware {
            self.live_nodes(req.key, &mut cand)
        } else if choose_coordinator && self.requesters[r as usize].beyond_replicas {
            self.replicas_then_others(req.group, req.key, &mut cand)
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
            rq.dispatch_requester = r;
            for (i, &t) in cand[..n].iter().enumerate() {
                self.send_op(r, id, t.0, d.ticket(i), false);
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
    pub(super) fn pump(&mut self, r: u32) {
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
                self.q.push(t, Event::RuntimeTimer { requester: r });
            }
        }
    }

    pub(super) fn send_probes(&mut self, r: u32) {
        while let Some(probe) = self.requesters[r as usize].rt.poll_probe() {
            let from = self.requesters[r as usize].zone;
            let local = self.requesters[r as usize].local;
            let d = self.delay(from, self.nodes[probe.node.index()].zone, local.map_or(NO_NODE, |l| l.0));
            self.q.push(
                self.now + d,
                Event::ProbeAtNode {
                    requester: r,
                    node: probe.node.0,
                },
            );
        }
    }

    /// Sends a planned request: to its coordinator (a client choosing one) or as replica ops.
    pub(super) fn send_dispatch(&mut self, r: u32, id: u32, d: Dispatch) {
        let now = self.now;
        let req = *self.reqs.at(id);
        if self.is_client(r) && self.sc.cluster.routing == Routing::Coordinator {
            let coord = d.plan.targets()[0];
            let client = End::Client {
                zone: self.clients[r as usize].zone,
            };
            let delay = self.transmit(client, End::Node(coord.0), self.sc.requests.request_bytes);
            let rq = self.reqs.at_mut(id);
            rq.coord = coord.0;
            rq.client_dispatch = Some(d.id);
            self.q.push(
                now + delay,
                Event::AtCoordinator {
                    req: Ref { index: id, gen: req.gen },
                },
            );
            return;
        }
        let rq = self.reqs.at_mut(id);
        rq.dispatch = Some(d.id);
        rq.dispatch_gen = self.requesters[r as usize].gen;
        rq.dispatch_requester = r;
        for (node, ticket) in d.targets() {
            self.send_op(r, id, node.0, ticket, false);
        }
        if !req.write {
            if let Some(node) = d.plan.background() {
                self.send_background_read(r, id, &d, node);
            }
            if self.sc.requests.shadow_read_fraction > 0.0 {
                self.maybe_send_shadow_reads(r, id, &d);
            }
        }
        if let Some(&fb) = d.plan.fallbacks().first() {
            let delay = match self.sc.requests.speculative {
                Speculative::None => u64::MAX,
                Speculative::After { delay_ns } => delay_ns,
                Speculative::Percentile { .. } => self.speculate_after_ns,
            };
            if delay != u64::MAX {
                self.reqs.at_mut(id).fallback = fb.0;
                self.q.push(
                    now + delay,
                    Event::Speculate {
                        req: Ref { index: id, gen: req.gen },
                    },
                );
            }
        }
    }

    /// With probability `shadow_read_fraction`, also reads request `id`'s key from every other
    /// live replica (the C3 authors' shadow reads): each is a real read, counted as sent in the
    /// runtime, whose reply feeds the policy without counting towards the request.
    fn maybe_send_shadow_reads(&mut self, r: u32, id: u32, d: &Dispatch) {
        if self.shadow_rng.unit_f64() >= self.sc.requests.shadow_read_fraction {
            return;
        }
        let group = self.reqs.at(id).group;
        let mut others = [NodeId(0); MAX_REPLICAS];
        let mut n = 0;
        for &node in self.topo.replicas(group) {
            others[n] = node;
            n += 1;
        }
        for &node in &others[..n] {
            self.send_background_read(r, id, d, node);
        }
    }

    /// Reads request `id`'s key from `node` in the background (a shadow or warm-up read): a
    /// real read, counted as sent in the runtime, whose reply feeds the policy without counting
    /// towards the request. Skipped when peers see `node` down or it is a target already.
    fn send_background_read(&mut self, r: u32, id: u32, d: &Dispatch, node: NodeId) {
        if !self.seen_up[node.index()] || d.plan.targets().contains(&node) {
            return;
        }
        if let Some(ticket) = self.requesters[r as usize].rt.send_extra(d.id, node, self.now) {
            self.send_op(r, id, node.0, ticket, true);
        }
    }

    /// Sends one replica op of request `id` from requester `r` to `node` (already counted as
    /// sent in the requester's runtime under `ticket`); a `shadow` op's reply does not count
    /// towards the request.
    pub(super) fn send_op(&mut self, r: u32, id: u32, node: u16, ticket: Ticket, shadow: bool) {
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
            shadow,
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
            let from = match local {
                Some(l) => End::Node(l.0),
                None => End::Client {
                    zone: self.requesters[r as usize].zone,
                },
            };
            let d = self.transmit(from, End::Node(node), self.sc.requests.request_bytes);
            self.q.push(
                now + d,
                Event::AtReplica {
                    op: Ref { index: op_id, gen: op_gen },
                    node,
                },
            );
        }
    }

    /// Tells an op's requester how it ended (once).
    pub(super) fn give_outcome(&mut self, op_id: u32, outcome: Result<(), Failure>) {
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
            Ok(()) => rt.on_reply(op.ticket, now - op.sent_ns, op.feedback(&self.sc.feedback), now),
            Err(f) => rt.on_failure(op.ticket, f, now),
        };
        debug_assert!(counted.is_ok(), "op {op_id}: {counted:?}");
        self.pump(op.requester);
    }

    pub(super) fn on_at_coordinator(&mut self, at: Ref) {
        let Some(req) = self.reqs.get(at.index, at.gen).copied() else {
            return;
        };
        let n = req.coord as usize;
        if !self.nodes[n].up {
            return; // lost; the client times out
        }
        if self.nodes[n].paused {
            self.nodes[n].deferred.push(Event::AtCoordinator { req: at });
            return;
        }
        if let Some(_svc) = self.sc.node.coordinator_service {
            let op = Op {
                req: at.index,
                req_gen: at.gen,
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
            self.submit_to_requester(r, at.index, at.gen);
        }
    }

    /// A replica's reply reached its requester.
    pub(super) fn at_requester(&mut self, op_id: u32) {
        let op = *self.ops.at(op_id);
        self.give_outcome(op_id, Ok(()));
        self.ops.remove(op_id);
        if op.shadow {
            return;
        }
        if let Some(req) = self.reqs.get_mut(op.req, op.req_gen) {
            req.replies += 1;
            if req.replies == req.needed && !req.answered {
                req.answered = true;
                let req = *req;
                if !req.write && req.measured && self.speculate_by_percentile {
                    // The read's time at its coordinator (from its issue: the client's one-way
                    // trip is in it), what Cassandra's threshold is a percentile of. Measured
                    // reads only: the real experiments warm up without their disk limits, so
                    // their warm-up never sets the threshold to a throttled cold disk's seconds.
                    self.read_latency.record_ns(self.now - req.issued_ns);
                }
                if self.is_client(op.requester) {
                    self.complete(op.req, req);
                } else if req.parent != NO_PARENT && req.client_dispatch.is_none() {
                    self.in_partition_answered(op.req, req);
                } else {
                    let client = End::Client {
                        zone: self.clients[req.client as usize].zone,
                    };
                    let d = self.transmit(End::Node(req.coord), client, self.reply_bytes(req.key));
                    self.q.push(
                        self.now + d,
                        Event::AtClient {
                            req: Ref {
                                index: op.req,
                                gen: op.req_gen,
                            },
                        },
                    );
                }
            }
        }
    }
}

pub(super) fn runtime_config(local: Option<NodeId>, seed: u64) -> RuntimeConfig {
    RuntimeConfig {
        local,
        seed,
        max_waiting: replica_lb_runtime::DEFAULT_MAX_WAITING,
    }
}

/// A runtime of a new instance of the policy `choice` names (checked for its side, or for
/// either with direct routing, when the scenario and the `--policy` item were read).
pub(super) fn build_runtime(choice: &PolicyChoice, local: Option<NodeId>, seed: u64) -> Result<Runtime<ReqKey>, String> {
    Runtime::of(choice, SIMULATOR, runtime_config(local, seed))
}
