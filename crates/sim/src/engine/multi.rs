//! Multi-key requests: a client request for K partitions, recorded apart from single reads
//! from the client's send until the last partition's answer reaches it.
//!
//! - `parallel`: K token-aware single reads, all sent at once, each chosen by the client policy
//!   like any read;
//! - `in`: one `IN` query to one coordinator, chosen uniformly among the live nodes (the keys
//!   have different tokens, so the driver cannot route it): the coordinator plans every
//!   partition with its own policy and answers once, with all K values in one reply, when the
//!   last partition has its CL answers.
//!
//! Each partition is a request record of its own (`Req::parent` points at the multi record),
//! with the read time-out; a partition that fails or times out fails the whole request.

use super::*;
use replica_lb_workload::scenario::{MultiMode, MultiModel};

/// No parent: a single read.
pub(super) const NO_PARENT: u32 = u32::MAX;

/// Extra bytes an `IN` query carries per partition key.
const IN_KEY_BYTES: u32 = 16;

/// One multi-key request in flight.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Multi {
    gen: u32,
    client: u32,
    /// Partitions not finished yet (answered, failed or timed out).
    remaining: u32,
    issued_ns: u64,
    measured: bool,
    failed: bool,
}

impl Slot for Multi {
    fn generation(&self) -> u32 {
        self.gen
    }
    fn set_generation(&mut self, g: u32) {
        self.gen = g;
    }
}

impl Sim<'_> {
    /// Client `c` issues a multi-key request starting with `first_key`, each partition read at
    /// `needed` replicas.
    pub(super) fn issue_multi(&mut self, c: u32, first_key: u64, m: MultiModel, measured: bool, needed: u8) {
        let now = self.now;
        if measured {
            self.rec.multi_issued();
        }
        let (mid, mgen) = self.multis.insert(Multi {
            client: c,
            remaining: m.keys,
            issued_ns: now,
            measured,
            ..Multi::default()
        });
        let mut live = [NodeId(0); MAX_REPLICAS];
        let coord = match m.mode {
            MultiMode::Parallel => None,
            MultiMode::In => {
                let n = self.live_nodes(first_key, &mut live);
                if n == 0 {
                    None
                } else {
                    Some(live[self.multi_rng.below(n)].0)
                }
            }
        };
        let arrive_ns = coord.map(|coord| {
            let client = End::Client {
                zone: self.clients[c as usize].zone,
            };
            let bytes = self.sc.requests.request_bytes.saturating_add(IN_KEY_BYTES.saturating_mul(m.keys));
            now + self.transmit(client, End::Node(coord), bytes)
        });
        for i in 0..m.keys {
            let key = if i == 0 {
                first_key
            } else {
                let cl = &mut self.clients[c as usize];
                cl.keys.next(&mut cl.rng)
            };
            let req = Req {
                client: c,
                key,
                group: self.topo.group_of(key),
                needed,
                coord: coord.unwrap_or(NO_NODE),
                issued_ns: now,
                fallback: NO_NODE,
                parent: mid,
                parent_gen: mgen,
                ..Req::default()
            };
            let (id, gen) = self.reqs.insert(req);
            self.deadlines.push_back((now + self.sc.requests.read_timeout_ns, id, gen));
            match (m.mode, arrive_ns) {
                (MultiMode::Parallel, _) => self.submit_to_requester(c, id, gen),
                (MultiMode::In, Some(t)) => self.q.push(
                    t,
                    Event::AtCoordinator {
                        req: Ref { index: id, gen },
                    },
                ),
                (MultiMode::In, None) => self.fail_request(id, gen),
            }
        }
    }

    /// A partition of an `IN` query has its CL answers at its coordinator: the last one sends
    /// the whole answer to the client; the others are done.
    pub(super) fn in_partition_answered(&mut self, id: u32, req: Req) {
        let last = self
            .multis
            .get(req.parent, req.parent_gen)
            .is_some_and(|m| m.remaining == 1 && !m.failed);
        if !last {
            self.partition_done(&req, true);
            self.finish_request(id, req);
            return;
        }
        let keys = self.sc.requests.multi.map_or(1, |m| m.keys);
        let bytes = self.reply_bytes(req.key).saturating_mul(keys);
        let client = End::Client {
            zone: self.clients[req.client as usize].zone,
        };
        let d = self.transmit(End::Node(req.coord), client, bytes);
        self.q.push(
            self.now + d,
            Event::AtClient {
                req: Ref { index: id, gen: req.gen },
            },
        );
    }

    /// One partition of a multi-key request finished (`ok`: answered); the request completes
    /// when the last one has, and counts as completed only if none failed.
    pub(super) fn partition_done(&mut self, req: &Req, ok: bool) {
        let Some(m) = self.multis.get_mut(req.parent, req.parent_gen) else {
            return;
        };
        m.failed |= !ok;
        m.remaining -= 1;
        if m.remaining > 0 {
            return;
        }
        let m = *m;
        self.multis.remove(req.parent);
        match (m.measured, m.failed) {
            (true, false) => self.rec.multi_completed(self.now - m.issued_ns),
            (true, true) => self.rec.multi_failed(),
            (false, _) => {}
        }
        if let Arrival::Closed { think_time_ns, .. } = self.sc.clients.arrival {
            self.q.push(self.now + think_time_ns, Event::Arrival { client: m.client });
        }
    }
}
