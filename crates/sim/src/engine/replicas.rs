//! Replicas: a node's CPU and disk stages, its row cache, its replies with the feedback
//! record, and its answers to probes.

use super::*;

impl Sim<'_> {
    pub(super) fn on_at_replica(&mut self, op: Ref, node: u16) {
        if self.ops.get(op.index, op.gen).is_none() {
            return;
        }
        let n = self.ops.at(op.index).node as usize;
        debug_assert_eq!(n, node as usize, "an op's arrival names its node");
        if self.nodes[n].paused && self.nodes[n].up {
            self.nodes[n].deferred.push(Event::AtReplica { op, node });
            return;
        }
        self.arrive_at_replica(op.index);
    }

    pub(super) fn arrive_at_replica(&mut self, op_id: u32) {
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
        let read = op.kind == OpKind::Read;
        self.nodes[n].in_flight += 1;
        if let (true, Some(threads)) = (read, self.sc.node.read_threads) {
            // Cassandra runs a read on one of its `concurrent_reads` threads from start to end.
            let node = &mut self.nodes[n];
            if node.read_busy >= threads {
                node.read_waiting.push_back(op_id);
                return;
            }
            node.read_busy += 1;
            self.ops.at_mut(op_id).holds_read_thread = true;
        }
        self.submit_cpu(n, op_id);
    }

    /// A read on node `n` ended: its read thread takes the next read waiting, if any.
    fn release_read_thread(&mut self, n: usize) {
        let node = &mut self.nodes[n];
        node.read_busy -= 1;
        if let Some(next) = node.read_waiting.pop_front() {
            node.read_busy += 1;
            self.ops.at_mut(next).holds_read_thread = true;
            self.submit_cpu(n, next);
        }
    }

    /// An op lost in a crash: failed at once if peers already see the node down, else when
    /// they do.
    pub(super) fn drop_op(&mut self, op_id: u32) {
        let op = *self.ops.at(op_id);
        if op.kind == OpKind::Coordinate {
            self.ops.remove(op_id);
            return;
        }
        if !self.seen_by(self.is_client(op.requester))[op.node as usize] {
            self.give_outcome(op_id, Err(Failure::ConnectionLost));
            self.ops.remove(op_id);
        } else {
            self.ops.at_mut(op_id).state = OpState::Dropped;
        }
    }

    pub(super) fn service_ns(&mut self, n: usize, disk: bool, read: bool) -> u64 {
        let node = &mut self.nodes[n];
        let (dist, factor): (Dist, f64) = if disk {
            let d = node.disk.as_deref().map(|d| d.service).unwrap_or(node.cpu.service);
            // Behind a throttle a slow disk is a lower rate (`Throttle::admit`), the device alike.
            let slow = if node.throttle.is_some() { 1.0 } else { node.disk_factor };
            (d, slow * node.fluct_factor)
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

    pub(super) fn submit_cpu(&mut self, n: usize, op_id: u32) {
        let node = &mut self.nodes[n];
        if node.cpu.busy < node.cpu.concurrency {
            node.cpu.busy += 1;
            self.start_service(n, op_id, StageKind::Cpu);
        } else {
            node.cpu.queue.push_back(op_id);
        }
    }

    pub(super) fn submit_disk(&mut self, n: usize, op_id: u32) {
        // The real experiments lift their disk limits for the warm-up: the throttle counts
        // measured time only.
        let throttled = self.now >= self.measure_ns;
        let now = self.now;
        let node = &mut self.nodes[n];
        let pass_ns = match node.throttle.as_deref_mut() {
            Some(t) if throttled => t.admit(now, node.disk_factor),
            _ => 0,
        };
        let Some(disk) = node.disk.as_deref_mut() else {
            return;
        };
        if disk.busy < disk.concurrency {
            disk.busy += 1;
            self.start_service_at(n, op_id, StageKind::Disk, pass_ns);
        } else {
            disk.queue.push_back(op_id);
            if let Some(t) = node.throttle.as_deref_mut() {
                t.ready_ns.push_back(pass_ns);
            }
        }
    }

    /// Starts serving `op_id` on `stage`; the slot is already taken.
    pub(super) fn start_service(&mut self, n: usize, op_id: u32, stage: StageKind) {
        self.start_service_at(n, op_id, stage, 0);
    }

    /// Starts serving `op_id` on `stage` once the time is `pass_ns` (a disk read waiting for
    /// its throttle holds the slot until then: first come first served, the same order).
    fn start_service_at(&mut self, n: usize, op_id: u32, stage: StageKind, pass_ns: u64) {
        let op = *self.ops.at(op_id);
        let dur = if op.kind == OpKind::Coordinate {
            let svc = self.sc.node.coordinator_service.unwrap_or(self.sc.node.cpu_service);
            let node = &mut self.nodes[n];
            (svc.sample_ns(&mut node.rng) * node.cpu_factor * node.fluct_factor).max(1.0) as u64
        } else {
            self.service_ns(n, stage == StageKind::Disk, op.kind == OpKind::Read)
        };
        self.ops.at_mut(op_id).service_ns += dur;
        let done = Event::StageDone {
            op: Ref {
                index: op_id,
                gen: self.ops.at(op_id).gen,
            },
            stage,
            node_gen: self.nodes[n].gen,
            node: n as u16,
        };
        self.q.push(self.now.max(pass_ns) + dur, done);
    }

    pub(super) fn on_stage_done(&mut self, done: Ref, stage: StageKind, node_gen: u32, node: u16) {
        let op_id = done.index;
        if self.ops.get(op_id, done.gen).is_none() {
            return;
        }
        let op = *self.ops.at(op_id);
        let n = op.node as usize;
        debug_assert_eq!(n, node as usize, "a stage's end names its op's node");
        if self.nodes[n].gen != node_gen {
            self.drop_op(op_id);
            return;
        }
        if self.nodes[n].paused {
            self.nodes[n].deferred.push(Event::StageDone {
                op: done,
                stage,
                node_gen,
                node,
            });
            return;
        }
        // Free the slot and start the next op waiting for this stage.
        let next = {
            let node = &mut self.nodes[n];
            let st = if stage == StageKind::Cpu {
                &mut node.cpu
            } else {
                node.disk.as_deref_mut().expect("disk op on a node without disk")
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
            let pass_ns = match (stage, self.nodes[n].throttle.as_deref_mut()) {
                (StageKind::Disk, Some(t)) => t.ready_ns.pop_front().unwrap_or(0),
                _ => 0,
            };
            self.start_service_at(n, next, stage, pass_ns);
        }
        match (op.kind, stage) {
            (OpKind::Coordinate, _) => {
                self.ops.remove(op_id);
                if self.reqs.get(op.req, op.req_gen).is_some() {
                    self.submit_to_requester(op.requester, op.req, op.req_gen);
                }
            }
            (OpKind::Write, _) => {
                if let Some(c) = self.nodes[n].cache.as_deref_mut() {
                    if c.contains(op.key) {
                        c.insert(op.key);
                    }
                }
                self.reply(op_id);
            }
            (OpKind::Read, StageKind::Cpu) => {
                let kind = if op.local { ReadKind::Local } else { ReadKind::Replica };
                let node = &mut self.nodes[n];
                let outcome = match node.cache.as_deref_mut() {
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
                    // Its index page not in the page cache: the index is read first.
                    let index_read = !self.nodes[n].index_page_cached(op.key);
                    let reads = self.disk_reads_per_miss(n) + index_read as u8;
                    self.ops.at_mut(op_id).disk_reads_left = reads;
                    self.submit_disk(n, op_id);
                } else {
                    self.reply(op_id);
                }
            }
            (OpKind::Read, StageKind::Disk) => {
                if op.disk_reads_left > 1 {
                    self.ops.at_mut(op_id).disk_reads_left -= 1;
                    self.submit_disk(n, op_id);
                    return;
                }
                if let Some(c) = self.nodes[n].cache.as_deref_mut() {
                    c.insert(op.key);
                }
                self.reply(op_id);
            }
        }
    }

    /// The disk reads a miss at node `n` makes: `node.disk_reads_per_miss` on average, its
    /// whole part always and one more with the probability of its fraction.
    fn disk_reads_per_miss(&mut self, n: usize) -> u8 {
        let mean = self.sc.node.disk_reads_per_miss;
        let whole = mean.trunc();
        if mean == whole {
            return whole as u8;
        }
        let extra = self.nodes[n].rng.unit_f64() < mean - whole;
        whole as u8 + extra as u8
    }

    /// The replica answers op `op_id` with its feedback record.
    pub(super) fn reply(&mut self, op_id: u32) {
        let now = self.now;
        let op = *self.ops.at(op_id);
        let n = op.node as usize;
        if op.holds_read_thread {
            self.release_read_thread(n);
        }
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
        let o = self.ops.at_mut(op_id);
        o.fb_hit_rate = hit_rate;
        o.fb_queue_len = queue_len;
        o.fb_in_flight = in_flight;
        if op.local {
            self.at_requester(op_id);
        } else {
            let requester = &self.requesters[op.requester as usize];
            let to = match requester.local {
                Some(l) => End::Node(l.0),
                None => End::Client { zone: requester.zone },
            };
            let d = self.transmit(End::Node(op.node), to, self.reply_bytes(op.key));
            self.q.push(
                now + d,
                Event::ReplyArrives {
                    op: Ref { index: op_id, gen: op.gen },
                    requester: op.requester,
                },
            );
        }
    }

    pub(super) fn on_reply_arrives(&mut self, reply: Ref, requester: u32) {
        if self.ops.get(reply.index, reply.gen).is_none() {
            return;
        }
        let op = *self.ops.at(reply.index);
        debug_assert_eq!(op.requester, requester, "a reply names its op's requester");
        if !self.is_client(op.requester) {
            let c = op.node_of_requester(self.clients.len());
            let node = &mut self.nodes[c];
            if !node.up || self.requesters[op.requester as usize].gen != op.requester_gen {
                self.ops.remove(reply.index);
                return;
            }
            if node.paused {
                node.deferred.push(Event::ReplyArrives { op: reply, requester });
                return;
            }
        }
        self.at_requester(reply.index);
    }

    pub(super) fn on_probe_at_node(&mut self, requester: u32, probed: u16) {
        let n = probed as usize;
        if !self.nodes[n].up {
            return;
        }
        if self.nodes[n].paused {
            self.nodes[n].deferred.push(Event::ProbeAtNode { requester, node: probed });
            return;
        }
        let node = &self.nodes[n];
        let answer = Event::ProbeReply {
            requester,
            node: probed,
            in_flight: node.in_flight,
            latency_us: ((node.latency_ewma_ns / 1000.0) as u64).min(u32::MAX as u64) as u32,
        };
        let to = self.requesters[requester as usize].zone;
        let d = self.delay(node.zone, to, n as u16);
        self.q.push(self.now + d, answer);
    }
}
