//! Clients: arrivals, request deadlines, the answer reaching the client, speculative retries.

use super::*;

impl Sim<'_> {
    pub(super) fn on_arrival(&mut self, c: u32) {
        let now = self.now;
        let cl = &mut self.clients[c as usize];
        let key = cl.keys.next(&mut cl.rng);
        let write = self.sc.clients.write_fraction > 0.0 && cl.rng.chance(self.sc.clients.write_fraction);
        if let Arrival::Poisson { .. } | Arrival::Fixed { .. } = self.sc.clients.arrival {
            let mut gap = if cl.fixed { cl.gap_ns } else { cl.rng.exponential(cl.gap_ns) };
            if let Some(b) = self.sc.clients.bursts {
                gap /= b.factor_at(now);
            }
            self.q.push(now + gap.max(1.0) as u64, Event::Arrival { client: c });
        }
        let measured = now >= self.measure_ns;
        let cl_level = if measured {
            self.sc.requests.consistency
        } else {
            self.sc.requests.warmup_consistency
        };
        let rf = self.topo.replicas(0).len();
        if let Some(m) = self.sc.requests.multi {
            if !write && self.multi_rng.chance(m.fraction) {
                self.issue_multi(c, key, m, measured, required(cl_level, rf) as u8);
                return;
            }
        }
        if measured {
            self.rec.issued();
        }
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

    pub(super) fn fail_request(&mut self, id: u32, gen: u32) {
        let Some(req) = self.reqs.get(id, gen).copied() else {
            return;
        };
        if req.measured {
            self.rec.error(self.now.saturating_sub(self.measure_ns));
        }
        if let Some(d) = req.client_dispatch {
            // A coordinator that cannot serve the read answers its client at once (Cassandra's
            // UnavailableException): the client's send to it ends as an error. Closing the
            // dispatch alone would leave that send counted in flight at the client forever.
            self.requesters[req.client as usize].rt.abandon(d, Failure::Error, self.now);
        }
        self.partition_done(&req, false);
        self.finish_request(id, req);
        if req.client_dispatch.is_some() {
            self.pump(req.client);
        }
    }

    /// Frees a request and, in closed loop, lets its client issue the next one. Its dispatches
    /// are closed: no more sends will follow (sends still out end when they end).
    pub(super) fn finish_request(&mut self, id: u32, req: Req) {
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
        if let (Arrival::Closed { think_time_ns, .. }, NO_PARENT) = (self.sc.clients.arrival, req.parent) {
            // A multi-key request's client goes on when its last partition is done.
            self.q.push(self.now + think_time_ns, Event::Arrival { client: req.client });
        }
    }

    pub(super) fn expire_deadlines(&mut self, until: u64) {
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
                self.rec.timeout(deadline.saturating_sub(self.measure_ns));
            }
            for &op_id in &req.ops[..req.n_ops as usize] {
                // An op that ended was freed, and its slot may hold another request's op now.
                let mine = self.ops.is_live(op_id) && {
                    let op = self.ops.at(op_id);
                    op.req == id && op.req_gen == gen
                };
                if mine {
                    self.give_outcome(op_id, Err(Failure::Timeout));
                }
            }
            if let Some(d) = req.client_dispatch {
                self.requesters[req.client as usize].rt.abandon(d, Failure::Timeout, deadline);
                self.pump(req.client);
            }
            self.partition_done(&req, false);
            self.finish_request(id, req);
        }
    }

    pub(super) fn on_at_client(&mut self, id: u32, gen: u32) {
        let Some(req) = self.reqs.get(id, gen).copied() else {
            return;
        };
        let now = self.now;
        if self.sc.cluster.routing == Routing::Coordinator && req.coord != NO_NODE {
            let n = &self.nodes[req.coord as usize];
            let load = self.sc.feedback.load_reports;
            let feedback = Feedback {
                hit_rate: n.cache.as_deref().map(|_| n.tracker.hit_rate()),
                queue_len: load.then(|| n.queued()),
                service_time_ns: None,
                in_flight: load.then_some(n.in_flight),
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

    pub(super) fn complete(&mut self, id: u32, req: Req) {
        if req.measured {
            if let Some(t) = self.measured_t() {
                self.rec.completed(t, self.now - req.issued_ns);
            }
        }
        self.partition_done(&req, true);
        self.finish_request(id, req);
    }

    pub(super) fn on_speculate(&mut self, id: u32, gen: u32) {
        let Some(req) = self.reqs.get(id, gen).copied() else {
            return;
        };
        if req.answered || req.replies >= req.needed || req.fallback == NO_NODE {
            return;
        }
        let r = req.dispatch_requester;
        if !self.seen_up[req.fallback as usize] {
            return;
        }
        let (Some(d), true) = (req.dispatch, self.requesters[r as usize].gen == req.dispatch_gen) else {
            return;
        };
        if let Some(ticket) = self.requesters[r as usize].rt.send_extra(d, NodeId(req.fallback), self.now) {
            self.send_op(r, id, req.fallback, ticket, false);
        }
    }
}
