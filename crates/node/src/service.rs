//! The gRPC services: the public `ReplicaLb` API (Get, MultiGet, Put, Stats, Probe) and the
//! `Internode` API (replica reads and writes, fault injection). Every input is checked here; a
//! bad request gets an `INVALID_ARGUMENT` status naming the problem and the node keeps serving.
//! The handlers count the bytes of what they serve ([`crate::traffic`]): every request on
//! arrival (valid or not), every reply as it is answered.

use crate::coordinator::{self, CoordError};
use crate::metrics::inc;
use crate::proto::{self, internode_server::Internode, replica_lb_server::ReplicaLb};
use crate::replica;
use crate::state::NodeState;
use crate::storage::Row;
use crate::traffic::Link;
use replica_lb_policy::ConsistencyLevel;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tonic::{Request, Response, Status};

/// Longest time-out a client may ask for, ms.
pub const MAX_TIMEOUT_MS: u32 = 600_000;

/// Both services over one shared node state.
#[derive(Clone)]
pub struct Api {
    state: Arc<NodeState>,
}

impl Api {
    /// The services of `state`'s node.
    pub fn new(state: Arc<NodeState>) -> Api {
        Api { state }
    }

    /// Counts a request that arrived on `link`.
    fn arrived<M: prost::Message>(&self, link: Link, request: &M) {
        self.state.counters.traffic.received(link, request);
    }

    /// Counts a reply sent on `link` and answers with it.
    fn answer<M: prost::Message>(&self, link: Link, reply: M) -> Result<Response<M>, Status> {
        self.state.counters.traffic.sent(link, &reply);
        Ok(Response::new(reply))
    }

    fn check_key(&self, key: &[u8]) -> Result<(), Status> {
        if key.is_empty() {
            return Err(Status::invalid_argument("key is empty; give 1 or more bytes"));
        }
        let max = self.state.config.max_key_bytes as usize;
        if key.len() > max {
            return Err(Status::invalid_argument(format!(
                "key is {} bytes; at most {max} are allowed",
                key.len()
            )));
        }
        Ok(())
    }

    fn consistency(&self, raw: i32) -> Result<ConsistencyLevel, Status> {
        match proto::Consistency::try_from(raw) {
            Ok(proto::Consistency::Unspecified) => Ok(self.state.default_cl),
            Ok(proto::Consistency::One) => Ok(ConsistencyLevel::One),
            Ok(proto::Consistency::Two) => Ok(ConsistencyLevel::Two),
            Ok(proto::Consistency::Quorum) => Ok(ConsistencyLevel::Quorum),
            Ok(proto::Consistency::All) => Ok(ConsistencyLevel::All),
            Err(_) => Err(Status::invalid_argument(format!(
                "consistency {raw} is not one of 0 (default), 1 (one), 2 (two), 3 (quorum), 4 (all)"
            ))),
        }
    }

    fn deadline(&self, asked_ms: u32, default_ms: u32) -> Result<(tokio::time::Instant, u32), Status> {
        if asked_ms > MAX_TIMEOUT_MS {
            return Err(Status::invalid_argument(format!(
                "timeout_ms {asked_ms} is above the maximum {MAX_TIMEOUT_MS}"
            )));
        }
        let ms = if asked_ms == 0 { default_ms } else { asked_ms };
        Ok((tokio::time::Instant::now() + Duration::from_millis(ms as u64), ms))
    }

    fn fail(&self, e: CoordError) -> Status {
        inc(&self.state.counters.errors);
        match e {
            CoordError::Unavailable(m) => Status::unavailable(m),
            CoordError::Timeout(m) => {
                inc(&self.state.counters.timeouts);
                Status::deadline_exceeded(m)
            }
        }
    }
}

/// Converts a client value into a protobuf enum value for requests.
pub fn cl_to_proto(cl: ConsistencyLevel) -> proto::Consistency {
    match cl {
        ConsistencyLevel::One => proto::Consistency::One,
        ConsistencyLevel::Two => proto::Consistency::Two,
        ConsistencyLevel::Quorum => proto::Consistency::Quorum,
        ConsistencyLevel::All => proto::Consistency::All,
    }
}

#[tonic::async_trait]
impl ReplicaLb for Api {
    async fn get(&self, request: Request<proto::GetRequest>) -> Result<Response<proto::GetResponse>, Status> {
        let r = request.into_inner();
        self.arrived(Link::Client, &r);
        self.check_key(&r.key)?;
        let cl = self.consistency(r.consistency)?;
        let (deadline, ms) = self.deadline(r.timeout_ms, self.state.config.read_timeout_ms)?;
        // In its own task: a client that hangs up cancels this handler, but never a read
        // halfway (every send the policy counted ends, at the latest at the deadline).
        let state = self.state.clone();
        let out = tokio::spawn(async move { coordinator::get(&state, r.key, cl, deadline, ms).await })
            .await
            .unwrap_or_else(|e| Err(CoordError::Unavailable(format!("the read failed: {e}"))));
        self.state.hold_outgoing().await;
        let out = out.map_err(|e| self.fail(e))?;
        let (found, value, ts) = match out.row {
            Some(row) => (true, row.value, row.timestamp_us),
            None => (false, Default::default(), 0),
        };
        self.answer(
            Link::Client,
            proto::GetResponse {
                found,
                value,
                timestamp_us: ts,
                replicas_answered: out.answered as u32,
                coordinator: self.state.id.0 as u32,
                feedback: Some(replica::feedback_to_proto(&self.state.feedback())),
            },
        )
    }

    async fn multi_get(&self, request: Request<proto::MultiGetRequest>) -> Result<Response<proto::MultiGetResponse>, Status> {
        let r = request.into_inner();
        self.arrived(Link::Client, &r);
        let max = coordinator::MAX_MULTI_KEYS;
        if r.keys.is_empty() || r.keys.len() > max {
            return Err(Status::invalid_argument(format!(
                "{} keys; a multi-key read takes 1 to {max}",
                r.keys.len()
            )));
        }
        for (i, key) in r.keys.iter().enumerate() {
            self.check_key(key)
                .map_err(|s| Status::invalid_argument(format!("keys[{i}]: {}", s.message())))?;
        }
        let cl = self.consistency(r.consistency)?;
        let (deadline, ms) = self.deadline(r.timeout_ms, self.state.config.read_timeout_ms)?;
        // In its own task, as a Get: every key's read ends, whatever the client does.
        let state = self.state.clone();
        let out = tokio::spawn(async move { coordinator::multi_get(&state, r.keys, cl, deadline, ms).await })
            .await
            .unwrap_or_else(|e| Err(CoordError::Unavailable(format!("the multi-key read failed: {e}"))));
        self.state.hold_outgoing().await;
        let out = out.map_err(|e| self.fail(e))?;
        let results = out
            .into_iter()
            .map(|read| match read.row {
                Some(row) => proto::KeyResult {
                    found: true,
                    value: row.value,
                    timestamp_us: row.timestamp_us,
                    replicas_answered: read.answered as u32,
                },
                None => proto::KeyResult {
                    replicas_answered: read.answered as u32,
                    ..Default::default()
                },
            })
            .collect();
        self.answer(
            Link::Client,
            proto::MultiGetResponse {
                results,
                coordinator: self.state.id.0 as u32,
                feedback: Some(replica::feedback_to_proto(&self.state.feedback())),
            },
        )
    }

    async fn put(&self, request: Request<proto::PutRequest>) -> Result<Response<proto::PutResponse>, Status> {
        let r = request.into_inner();
        self.arrived(Link::Client, &r);
        self.check_key(&r.key)?;
        let max = self.state.config.max_value_bytes as usize;
        if r.value.len() > max {
            return Err(Status::invalid_argument(format!(
                "value is {} bytes; at most {max} are allowed",
                r.value.len()
            )));
        }
        let cl = self.consistency(r.consistency)?;
        let (deadline, ms) = self.deadline(r.timeout_ms, self.state.config.write_timeout_ms)?;
        let state = self.state.clone();
        let out = tokio::spawn(async move { coordinator::put(&state, r.key, r.value, cl, deadline, ms).await })
            .await
            .unwrap_or_else(|e| Err(CoordError::Unavailable(format!("the write failed: {e}"))));
        self.state.hold_outgoing().await;
        let out = out.map_err(|e| self.fail(e))?;
        self.answer(
            Link::Client,
            proto::PutResponse {
                timestamp_us: out.timestamp_us,
                replicas_acked: out.acked as u32,
                coordinator: self.state.id.0 as u32,
            },
        )
    }

    async fn stats(&self, _request: Request<proto::StatsRequest>) -> Result<Response<proto::StatsResponse>, Status> {
        let s = &self.state;
        let c = &s.counters;
        let g = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        let view = s.view();
        let rates = s.peer_rates.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let members = view
            .peers
            .iter()
            .flatten()
            .map(|p| proto::Member {
                id: p.id.0 as u32,
                grpc: p.grpc.to_string(),
                live: p.live,
                hit_rate: if p.id == s.id {
                    s.hit_rate()
                } else {
                    rates.get(p.id.index()).copied().flatten().unwrap_or(-1.0)
                },
                zone: p.zone,
            })
            .collect();
        let policy = s.policy.stats();
        let bytes = c.traffic.totals();
        Ok(Response::new(proto::StatsResponse {
            node_id: s.id.0 as u32,
            policy: s.config.policy.name.clone(),
            replication_factor: s.config.replication_factor,
            vnodes: s.config.vnodes,
            placement: s.config.placement.clone(),
            members,
            hit_rate: s.hit_rate(),
            reads: g(&c.reads),
            cache_hits: g(&c.cache_hits),
            cache_misses: g(&c.cache_misses),
            local_reads: g(&c.local_reads),
            remote_reads: g(&c.remote_reads),
            replica_reads: g(&c.replica_reads),
            writes: g(&c.writes),
            disk_queue: s.disk.waiting(),
            in_flight: g(&c.in_flight) as u32,
            coordinator_reads: g(&c.coordinator_reads),
            coordinator_writes: g(&c.coordinator_writes),
            errors: g(&c.errors),
            timeouts: g(&c.timeouts),
            cache_rows: s.cache.len() as u64,
            uptime_ms: s.clock.now_ns() / 1_000_000,
            policy_sends: policy.sends,
            policy_ended: policy.replies + policy.failures,
            policy_violations: policy.violations,
            policy_rejected: policy.rejected,
            zone: s.config.zone,
            client_received_bytes: bytes.client_received_bytes,
            client_sent_bytes: bytes.client_sent_bytes,
            internode_received_bytes: bytes.internode_received_bytes,
            internode_sent_bytes: bytes.internode_sent_bytes,
            coordinator_multi_gets: g(&c.coordinator_multi_gets),
        }))
    }

    async fn probe(&self, request: Request<proto::ProbeRequest>) -> Result<Response<proto::ProbeResponse>, Status> {
        self.arrived(Link::Client, request.get_ref());
        let s = &self.state;
        let answer = proto::ProbeResponse {
            node_id: s.id.0 as u32,
            in_flight: s.counters.replica_in_flight.load(Ordering::Relaxed) as u32,
            latency_ns: s.residence_ewma_ns(),
        };
        s.hold_outgoing().await;
        self.answer(Link::Client, answer)
    }
}

#[tonic::async_trait]
impl Internode for Api {
    async fn replica_read(&self, request: Request<proto::ReplicaReadRequest>) -> Result<Response<proto::ReplicaReadResponse>, Status> {
        let r = request.into_inner();
        self.arrived(Link::Internode, &r);
        self.check_key(&r.key)?;
        inc(&self.state.counters.replica_reads);
        let read = replica::read(&self.state, &r.key)
            .await
            .map_err(|e| Status::internal(format!("storage read failed: {e}")))?;
        self.state.hold_outgoing().await;
        let (found, value, ts) = match read.row {
            Some(row) => (true, row.value, row.timestamp_us),
            None => (false, Default::default(), 0),
        };
        self.answer(
            Link::Internode,
            proto::ReplicaReadResponse {
                found,
                value,
                timestamp_us: ts,
                feedback: Some(replica::feedback_to_proto(&read.feedback)),
                node_id: self.state.id.0 as u32,
            },
        )
    }

    async fn replica_write(&self, request: Request<proto::ReplicaWriteRequest>) -> Result<Response<proto::ReplicaWriteResponse>, Status> {
        let r = request.into_inner();
        self.arrived(Link::Internode, &r);
        self.check_key(&r.key)?;
        let max = self.state.config.max_value_bytes as usize;
        if r.value.len() > max {
            return Err(Status::invalid_argument(format!(
                "value is {} bytes; at most {max} are allowed",
                r.value.len()
            )));
        }
        let row = Row {
            timestamp_us: r.timestamp_us,
            value: r.value,
        };
        replica::write(&self.state, r.key, row)
            .await
            .map_err(|e| Status::internal(format!("storage write failed: {e}")))?;
        self.state.hold_outgoing().await;
        self.answer(
            Link::Internode,
            proto::ReplicaWriteResponse {
                node_id: self.state.id.0 as u32,
            },
        )
    }

    async fn set_faults(&self, request: Request<proto::FaultsRequest>) -> Result<Response<proto::FaultsResponse>, Status> {
        let r = request.into_inner();
        // Check everything first, so a bad request changes nothing.
        if let Some(ms) = r.reply_delay_ms.filter(|&ms| ms > MAX_TIMEOUT_MS) {
            return Err(Status::invalid_argument(format!("reply_delay_ms {ms} is above {MAX_TIMEOUT_MS}")));
        }
        let (lo, hi) = crate::slow_disk::FACTOR_RANGE;
        if let Some(f) = r.slow_disk_factor.filter(|f| !(f.is_finite() && (lo..=hi).contains(f))) {
            return Err(Status::invalid_argument(format!("slow_disk_factor {f} must be in [{lo}, {hi}]")));
        }
        if let Some(ms) = r.reply_delay_ms {
            self.state.reply_delay_ms.store(ms, Ordering::Relaxed);
        }
        if let Some(f) = r.slow_disk_factor {
            self.state.disk.set_factor(f).map_err(Status::invalid_argument)?;
        }
        if let Some(on) = r.slow_disk {
            self.state.disk.set_enabled(on);
        }
        Ok(Response::new(proto::FaultsResponse {
            reply_delay_ms: self.state.reply_delay_ms.load(Ordering::Relaxed),
            slow_disk: self.state.disk.enabled(),
            slow_disk_factor: self.state.disk.factor(),
        }))
    }
}
