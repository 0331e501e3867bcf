//! Control: hit-rate trackers and gossip, the once-a-second tick, and the fault timeline
//! (crash, restart, pause, delay, slow-down, fluctuations, failure detection).

use super::*;

impl Sim<'_> {
    /// The coordinator's own rate, read live by its policy.
    pub(super) fn publish_own_rate(&mut self, n: usize) {
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

    pub(super) fn on_tick(&mut self) {
        let now = self.now;
        // Disk queues are sampled for the second that just ended.
        if let Some(t) = now.checked_sub(self.measure_ns) {
            if t >= SECOND_NS {
                for n in 0..self.nodes.len() {
                    let q = self.nodes[n].disk.as_deref().map_or(0, |d| d.queue.len() as u32);
                    self.rec.disk_queue(t - 1, n, q);
                }
            }
        }
        for n in 0..self.nodes.len() {
            if !self.nodes[n].up || self.nodes[n].cache.is_none() {
                continue;
            }
            let mut published = false;
            if self.nodes[n].tracker.advance(now) {
                self.publish_own_rate(n);
                if self.sc.feedback.gossip {
                    let rate = self.nodes[n].tracker.hit_rate();
                    published = self.nodes[n].gossiped.offer(rate, now);
                }
            }
            // What travels: a newly published rate, or with heartbeats the last one again.
            let heartbeat = self.sc.feedback.gossip_heartbeat;
            if let (true, Some(rate)) = (published || heartbeat, self.nodes[n].gossiped.last()) {
                let gossip = Event::Gossip {
                    node: n as u16,
                    only: None,
                    rate,
                };
                self.q.push(now + self.sc.feedback.gossip_delay_ns, gossip);
            }
        }
        if let Speculative::Percentile { quantile } = self.sc.requests.speculative {
            // Re-read every THRESHOLD_INTERVAL_S (Cassandra re-reads it every read_request_timeout).
            let tick_s = now / SECOND_NS;
            if tick_s.is_multiple_of(crate::speculation::THRESHOLD_INTERVAL_S) {
                if let Some(ns) = self.read_latency.quantile_ns(quantile) {
                    self.speculate_after_ns = ns;
                }
            }
            self.read_latency.decay(1.0);
        }
        if !self.rolls.is_empty() {
            self.check_rolls();
        }
        self.q.push(now + SECOND_NS, Event::Tick);
    }

    /// Node `n`'s gossiped rate reaches every other requester, or `only` one (a restarted
    /// node catching up with the gossip state); those whose policy does not read the feedback
    /// record are skipped (`gossip_listeners`).
    pub(super) fn on_gossip(&mut self, n: usize, only: Option<u32>, rate: f64) {
        let info = Feedback {
            hit_rate: Some(rate),
            ..Feedback::default()
        };
        let listeners = match only {
            None => &self.gossip_listeners[..],
            Some(r) => match self.gossip_listeners.binary_search(&r) {
                Ok(i) => &self.gossip_listeners[i..i + 1],
                Err(_) => &[],
            },
        };
        for &r in listeners {
            let rq = &mut self.requesters[r as usize];
            if rq.local == Some(NodeId(n as u16)) {
                continue;
            }
            rq.rt.on_info(NodeId(n as u16), &info, self.now);
        }
    }

    pub(super) fn marker(&mut self, label: String) {
        if let Some(t) = self.measured_t() {
            self.rec.marker(t as f64 / 1e9, label);
        }
    }

    pub(super) fn on_fault(&mut self, i: usize) {
        let a = self.faults.actions[i];
        let n = a.node as usize;
        match a.action {
            Action::Down { cache } => {
                self.roll_down(n);
                self.crash(n, cache);
            }
            Action::Up => {
                self.restart_node(n);
                self.roll_up(n);
            }
            Action::Pause => {
                if self.nodes[n].up && !self.nodes[n].paused {
                    let node = &mut self.nodes[n];
                    node.paused = true;
                    node.pauses += 1;
                    let convicted = Event::PauseConvicted {
                        node: n as u16,
                        pause: node.pauses,
                    };
                    self.q.push(self.now + self.sc.run.failure_detection_ns, convicted);
                    self.marker(format!("node {n} paused"));
                }
            }
            Action::Resume => {
                if self.nodes[n].paused {
                    self.nodes[n].paused = false;
                    self.marker(format!("node {n} resumed"));
                    let deferred = std::mem::take(&mut self.nodes[n].deferred);
                    for e in deferred {
                        self.q.push(self.now, e);
                    }
                    if !self.seen_up[n] || !self.client_seen_up[n] {
                        // Convicted during the pause: its heartbeats resume now.
                        let gen = self.nodes[n].gen;
                        self.q
                            .push(self.now + self.sc.run.up_detection_ns, Event::SeenUp { node: n as u16, gen });
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

    /// Node `n` goes down: what it was doing is lost, its cache too unless `cache` keeps it
    /// for the start (Cassandra's saved row cache, loaded whole).
    pub(super) fn crash(&mut self, n: usize, cache: RestartCache) {
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
        if let Some(d) = node.disk.as_deref_mut() {
            lost.extend(d.queue.drain(..));
            d.busy = 0;
        }
        if let Some(t) = node.throttle.as_deref_mut() {
            t.ready_ns.clear();
        }
        lost.extend(node.read_waiting.drain(..));
        node.read_busy = 0;
        if let (Some(c), RestartCache::Empty) = (node.cache.as_deref_mut(), cache) {
            c.clear();
        }
        if let (Some(pages), RestartCache::Empty) = (node.index_cached.as_deref_mut(), cache) {
            pages.fill(0);
        }
        let deferred = std::mem::take(&mut node.deferred);
        let gen = node.gen;
        for op in lost {
            self.drop_op(op);
        }
        for e in deferred {
            self.q.push(self.now, e);
        }
        if self.sc.cluster.routing == Routing::Coordinator {
            // The crashed process loses the requests it held back; their clients time out.
            let r = self.coordinator_requester(n as u16) as usize;
            self.requesters[r].rt.cancel_waiting(|_| true, |_| {});
        }
        let (peers_ns, clients_ns) = (self.sc.run.failure_detection_ns, self.sc.run.client_failure_detection_ns);
        let node = n as u16;
        if peers_ns == clients_ns {
            let audience = Audience::Everyone;
            self.q.push(self.now + peers_ns, Event::SeenDown { node, gen, audience });
        } else {
            let audience = Audience::Peers;
            self.q.push(self.now + peers_ns, Event::SeenDown { node, gen, audience });
            let audience = Audience::Clients;
            self.q.push(self.now + clients_ns, Event::SeenDown { node, gen, audience });
        }
    }

    pub(super) fn restart_node(&mut self, n: usize) {
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
        node.gossiped = RatePublisher::new();
        node.latency_ewma_ns = 0.0;
        let gen = node.gen;
        if self.sc.cluster.routing == Routing::Coordinator {
            // A restarted process: a fresh policy that knows nothing yet.
            let r = self.coordinator_requester(n as u16) as usize;
            let seed = Rng::seed_from_u64(self.requesters[r].seed ^ u64::from(gen)).next_u64();
            let local = Some(NodeId(n as u16));
            match build_runtime(&self.spec.coordinator, local, seed) {
                Ok(mut rt) => {
                    let zones: Vec<(NodeId, u32)> = (0..self.nodes.len())
                        .map(|i| (NodeId(i as u16), self.topo.node_zone(i) as u32))
                        .collect();
                    rt.set_topology(&zones, Some(self.requesters[r].zone as u32));
                    self.requesters[r].rt = rt;
                    self.requesters[r].gen = gen;
                    self.requesters[r].timer_at = u64::MAX;
                }
                Err(e) => unreachable!("policy {} built at start but not at restart: {e}", self.spec.coordinator.name()),
            }
            self.publish_own_rate(n);
            if self.sc.feedback.gossip {
                // Joining the gossip ring hands the node every peer's published state.
                for peer in 0..self.nodes.len() {
                    if let (true, Some(rate)) = (peer != n && self.nodes[peer].up, self.nodes[peer].gossiped.last()) {
                        let gossip = Event::Gossip {
                            node: peer as u16,
                            only: Some(r as u32),
                            rate,
                        };
                        self.q.push(now + self.sc.feedback.gossip_delay_ns, gossip);
                    }
                }
            }
        }
        self.q
            .push(now + self.sc.run.up_detection_ns, Event::SeenUp { node: n as u16, gen });
    }

    /// A paused node still in pause number `pause` after `failure_detection_ms`: a failure
    /// detector convicts a process that stopped answering as it does a dead one (Cassandra's
    /// phi detector a frozen JVM; the drivers then hear that the node is down), so peers and
    /// clients see it down; it is seen up again `up_detection_ms` after it resumes.
    pub(super) fn on_pause_convicted(&mut self, n: usize, pause: u32) {
        let node = &self.nodes[n];
        if node.up && node.paused && node.pauses == pause && self.seen_up[n] {
            self.on_seen_down(n, node.gen, Audience::Everyone);
        }
    }

    /// `audience` sees node `n` (down since generation `gen`) down: its view turns (`seen_up`
    /// for the nodes, `client_seen_up` for the clients), its policies are told, and the work it
    /// had sent the node fails (`ConnectionLost`); a node back up is seen up `up_detection_ms`
    /// later.
    pub(super) fn on_seen_down(&mut self, n: usize, gen: u32, audience: Audience) {
        debug_assert!(self.nodes[n].gen >= gen);
        if audience == Audience::Clients && self.nodes[n].up {
            // Back up before its clients noticed: their new connections work.
            return;
        }
        if audience.peers() {
            self.seen_up[n] = false;
        }
        if audience.clients() {
            self.client_seen_up[n] = false;
        }
        for r in 0..self.requesters.len() {
            if audience.includes(self.is_client(r as u32)) && self.requesters[r].local != Some(NodeId(n as u16)) {
                self.requesters[r].rt.on_node_down(NodeId(n as u16), self.now);
                self.pump(r as u32);
            }
        }
        let dropped: Vec<u32> = self
            .ops
            .live_indices()
            .filter(|&i| {
                let o = self.ops.at(i);
                o.node as usize == n && o.state == OpState::Dropped && audience.includes(self.is_client(o.requester))
            })
            .collect();
        for op in dropped {
            self.give_outcome(op, Err(Failure::ConnectionLost));
            self.ops.remove(op);
        }
        if audience == Audience::Clients && self.sc.cluster.routing == Routing::Coordinator {
            self.fail_requests_at_reset_coordinator(n);
        }
        if audience.peers() && self.nodes[n].up && !self.nodes[n].paused {
            let g = self.nodes[n].gen;
            self.q
                .push(self.now + self.sc.run.up_detection_ns, Event::SeenUp { node: n as u16, gen: g });
        }
    }

    /// The clients saw their connections to crashed coordinator `n` reset (their own view,
    /// `run.client_failure_detection_ms`): a driver fails the requests in flight on a closed
    /// connection at once, as errors, rather than letting them time out.
    fn fail_requests_at_reset_coordinator(&mut self, n: usize) {
        let lost: Vec<(u32, u32)> = self
            .reqs
            .live_indices()
            .filter_map(|i| {
                let r = self.reqs.at(i);
                (r.client_dispatch.is_some() && r.coord as usize == n && !r.answered).then_some((i, r.gen))
            })
            .collect();
        for (id, gen) in lost {
            self.fail_request(id, gen);
        }
    }

    pub(super) fn on_seen_up(&mut self, n: usize, gen: u32) {
        if self.nodes[n].gen != gen || !self.nodes[n].up || (self.seen_up[n] && self.client_seen_up[n]) {
            return;
        }
        // Told are those who had seen it down: the peers, the clients, or both.
        let audience = match (self.seen_up[n], self.client_seen_up[n]) {
            (false, false) => Audience::Everyone,
            (false, true) => Audience::Peers,
            _ => Audience::Clients,
        };
        self.seen_up[n] = true;
        self.client_seen_up[n] = true;
        for r in 0..self.requesters.len() {
            if audience.includes(self.is_client(r as u32)) && self.requesters[r].local != Some(NodeId(n as u16)) {
                self.requesters[r].rt.on_node_up(NodeId(n as u16), NodeCaps::default(), self.now);
                self.pump(r as u32);
            }
        }
    }

    pub(super) fn on_fluctuate(&mut self, i: usize) {
        let f = self.faults.fluctuations[i].clone();
        for &n in &f.nodes {
            if self.fault_rng.unit_f64() < f.probability {
                let node = &mut self.nodes[n as usize];
                node.fluct_factor = if node.fluct_factor == 1.0 { f.factor } else { 1.0 };
            }
        }
        let next = self.now + f.interval_ns;
        if next < f.end_ns {
            self.q.push(next, Event::Fluctuate { fault: i as u32 });
        }
    }
}
