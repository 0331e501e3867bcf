//! A token-aware client of the cluster: learns the members and the ring parameters from any
//! node's Stats, computes each key's replicas the same way the nodes do, and talks gRPC to the
//! coordinator it is given.

use crate::proto::{self, replica_lb_client::ReplicaLbClient};
use crate::service::cl_to_proto;
use bytes::Bytes;
use replica_lb_policy::{ConsistencyLevel, NodeId, ReplicaSet};
use replica_lb_workload::placement::{Member, Placement, Ring};
use std::net::SocketAddr;
use std::time::Duration;
use tonic::transport::{Channel, Endpoint};

/// Largest message a client sends or accepts.
const MAX_MESSAGE_BYTES: usize = 64 << 20;

/// A lazily connecting client for one node's public API.
pub fn node_client(addr: SocketAddr) -> ReplicaLbClient<Channel> {
    let endpoint = Endpoint::from_shared(format!("http://{addr}"))
        .expect("a socket address is a valid URI")
        .connect_timeout(Duration::from_secs(1))
        .tcp_nodelay(true);
    ReplicaLbClient::new(endpoint.connect_lazy())
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES)
}

/// Asks `addr` for its Stats, within `timeout`.
pub async fn stats(addr: SocketAddr, timeout: Duration) -> Result<proto::StatsResponse, String> {
    let mut c = node_client(addr);
    match tokio::time::timeout(timeout, c.stats(proto::StatsRequest {})).await {
        Err(_) => Err(format!("node at {addr} did not answer Stats within {} ms", timeout.as_millis())),
        Ok(Err(s)) => Err(format!("node at {addr}: {}", s.message())),
        Ok(Ok(r)) => Ok(r.into_inner()),
    }
}

/// A token-aware view of the cluster.
#[derive(Clone)]
pub struct ClusterClient {
    clients: Vec<Option<ReplicaLbClient<Channel>>>,
    ring: Ring,
}

impl ClusterClient {
    /// Connects through the first of `addrs` that answers Stats.
    pub async fn connect(addrs: &[SocketAddr]) -> Result<ClusterClient, String> {
        let mut last = String::from("no node address given");
        for &addr in addrs {
            match stats(addr, Duration::from_secs(2)).await {
                Ok(s) => return ClusterClient::from_stats(&s),
                Err(e) => last = e,
            }
        }
        Err(format!("cannot reach the cluster: {last}"))
    }

    /// The client for the members and ring described by one node's Stats; fails on a
    /// placement it does not know.
    pub fn from_stats(s: &proto::StatsResponse) -> Result<ClusterClient, String> {
        let placement = Placement::parse(&s.placement).map_err(|e| format!("node {} says: {e}", s.node_id))?;
        let mut clients = Vec::new();
        let mut members = Vec::new();
        for m in &s.members {
            let Ok(addr) = m.grpc.parse::<SocketAddr>() else { continue };
            let Ok(id) = u16::try_from(m.id) else { continue };
            if clients.len() <= id as usize {
                clients.resize(id as usize + 1, None);
            }
            clients[id as usize] = Some(node_client(addr));
            members.push(Member {
                id: NodeId(id),
                zone: m.zone,
            });
        }
        Ok(ClusterClient {
            ring: Ring::new(&members, s.vnodes, s.replication_factor as usize, placement),
            clients,
        })
    }

    /// The members, sorted.
    pub fn nodes(&self) -> &[NodeId] {
        self.ring.nodes()
    }

    /// Every member's zone, as the nodes gossip them.
    pub fn zones(&self) -> Vec<(NodeId, u32)> {
        self.ring.members().iter().map(|m| (m.id, m.zone)).collect()
    }

    /// A key's replicas and its group (its replica set's index on the ring).
    pub fn replicas(&self, key: &[u8]) -> (&ReplicaSet, u32) {
        self.ring.replicas_of_key(key)
    }

    /// The client of node `id`.
    pub fn node(&self, id: NodeId) -> Option<ReplicaLbClient<Channel>> {
        self.clients.get(id.index()).cloned().flatten()
    }

    /// Reads `key` through coordinator `via`.
    pub async fn get(&self, via: NodeId, key: Bytes, cl: ConsistencyLevel, timeout_ms: u32) -> Result<proto::GetResponse, tonic::Status> {
        let mut c = self
            .node(via)
            .ok_or_else(|| tonic::Status::not_found(format!("node {via} is not a member")))?;
        let req = proto::GetRequest {
            key,
            consistency: cl_to_proto(cl) as i32,
            timeout_ms,
        };
        deadline(timeout_ms, c.get(req)).await
    }

    /// Reads every key of `keys` in one request (an `IN` query) through coordinator `via`.
    pub async fn multi_get(
        &self,
        via: NodeId,
        keys: Vec<Bytes>,
        cl: ConsistencyLevel,
        timeout_ms: u32,
    ) -> Result<proto::MultiGetResponse, tonic::Status> {
        let mut c = self
            .node(via)
            .ok_or_else(|| tonic::Status::not_found(format!("node {via} is not a member")))?;
        let req = proto::MultiGetRequest {
            keys,
            consistency: cl_to_proto(cl) as i32,
            timeout_ms,
        };
        deadline(timeout_ms, c.multi_get(req)).await
    }

    /// Writes `key` through coordinator `via`.
    pub async fn put(
        &self,
        via: NodeId,
        key: Bytes,
        value: Bytes,
        cl: ConsistencyLevel,
        timeout_ms: u32,
    ) -> Result<proto::PutResponse, tonic::Status> {
        let mut c = self
            .node(via)
            .ok_or_else(|| tonic::Status::not_found(format!("node {via} is not a member")))?;
        let req = proto::PutRequest {
            key,
            value,
            consistency: cl_to_proto(cl) as i32,
            timeout_ms,
        };
        deadline(timeout_ms, c.put(req)).await
    }
}

/// Runs a call with a client-side deadline a little after the server's, so a node that never
/// answers (paused, partitioned) still ends the call.
async fn deadline<T>(
    timeout_ms: u32,
    call: impl std::future::Future<Output = Result<tonic::Response<T>, tonic::Status>>,
) -> Result<T, tonic::Status> {
    let limit = Duration::from_millis(timeout_ms as u64 + 250);
    match tokio::time::timeout(limit, call).await {
        Err(_) => Err(tonic::Status::deadline_exceeded(format!("no answer within {timeout_ms} ms"))),
        Ok(r) => r.map(|r| r.into_inner()),
    }
}

/// Sends a fault request (`Internode/SetFaults`) to the node at `addr`, within `timeout`;
/// returns what the node now has.
pub async fn set_faults(addr: SocketAddr, request: proto::FaultsRequest, timeout: Duration) -> Result<proto::FaultsResponse, String> {
    let endpoint = Endpoint::from_shared(format!("http://{addr}"))
        .map_err(|e| e.to_string())?
        .connect_timeout(Duration::from_secs(1));
    let mut c = proto::internode_client::InternodeClient::new(endpoint.connect_lazy());
    match tokio::time::timeout(timeout, c.set_faults(request)).await {
        Err(_) => Err(format!("node at {addr} did not answer SetFaults within {} ms", timeout.as_millis())),
        Ok(Err(s)) => Err(format!("node at {addr}: {}", s.message())),
        Ok(Ok(r)) => Ok(r.into_inner()),
    }
}
