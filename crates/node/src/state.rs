//! What a running node shares between its tasks: configuration, store, cache, slow disk,
//! counters, the policy handle, and the current membership view (peers, liveness, ring).
//!
//! The view is immutable and swapped whole when gossip changes it: a request takes one
//! `Arc` clone under a read lock and then works on a consistent snapshot.

use crate::cache::RowCache;
use crate::config::NodeConfig;
use crate::metrics::Counters;
use crate::policy_runtime::{Clock, PolicyHandle};
use crate::proto::internode_client::InternodeClient;
use crate::slow_disk::SlowDisk;
use crate::storage::Storage;
use replica_lb_policy::{ConsistencyLevel, NodeId};
use replica_lb_workload::placement::{Member, Ring};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use tonic::transport::{Channel, Endpoint};

/// One cluster member as this node knows it.
#[derive(Clone, Debug)]
pub struct Peer {
    /// Its id.
    pub id: NodeId,
    /// Its gRPC address.
    pub grpc: SocketAddr,
    /// Its gossip generation (changes when it restarts).
    pub generation: u64,
    /// Whether the failure detector sees it alive.
    pub live: bool,
    /// Its zone (rack or availability zone).
    pub zone: u32,
    /// A client for its internode API (connects lazily, reconnects by itself).
    pub client: InternodeClient<Channel>,
}

/// A consistent snapshot of the membership.
#[derive(Clone, Debug)]
pub struct View {
    /// Every known member by id (dead ones included: they keep their ranges).
    pub peers: Vec<Option<Peer>>,
    /// The ring over every known member.
    pub ring: Ring,
}

impl View {
    /// The member `id`, if known.
    pub fn peer(&self, id: NodeId) -> Option<&Peer> {
        self.peers.get(id.index()).and_then(|p| p.as_ref())
    }

    /// Whether `id` is known and live.
    pub fn is_live(&self, id: NodeId) -> bool {
        self.peer(id).is_some_and(|p| p.live)
    }

    /// Live members, this node included.
    pub fn live_count(&self) -> usize {
        self.peers.iter().flatten().filter(|p| p.live).count()
    }
}

/// Builds a lazily connecting internode client for `addr`.
pub fn internode_client(addr: SocketAddr, connect_timeout_ms: u64, max_message_bytes: usize) -> InternodeClient<Channel> {
    let endpoint = Endpoint::from_shared(format!("http://{addr}"))
        .expect("a socket address is a valid URI")
        .connect_timeout(Duration::from_millis(connect_timeout_ms))
        .tcp_nodelay(true)
        .http2_keep_alive_interval(Duration::from_secs(5))
        .keep_alive_timeout(Duration::from_secs(5));
    InternodeClient::new(endpoint.connect_lazy())
        .max_decoding_message_size(max_message_bytes)
        .max_encoding_message_size(max_message_bytes)
}

/// Everything a node's tasks share.
pub struct NodeState {
    /// The configuration it started with.
    pub config: NodeConfig,
    /// This node's id.
    pub id: NodeId,
    /// The monotonic clock policies see.
    pub clock: Clock,
    /// Counters for Stats and /metrics.
    pub counters: Arc<Counters>,
    /// The row cache.
    pub cache: RowCache,
    /// The on-disk store.
    pub storage: Storage,
    /// The emulated slow disk.
    pub disk: SlowDisk,
    /// The coordinator's policy.
    pub policy: PolicyHandle,
    /// The level used when a request gives none.
    pub default_cl: ConsistencyLevel,
    /// The node's live hit rate (f64 bits), updated by the tracker task.
    pub own_rate: Arc<AtomicU64>,
    /// Last hit rate heard from each peer (gossip or piggy-back), for Stats.
    pub peer_rates: Mutex<Vec<Option<f64>>>,
    /// Extra delay on every message this node sends (its answers to clients, its internode
    /// requests and replies), ms: the `cluster delay` fault, as netem on the node's interface
    /// would add and as the simulator models it. 0 = none.
    pub reply_delay_ms: AtomicU32,
    view: RwLock<Arc<View>>,
    last_timestamp_us: AtomicU64,
    /// Moving average (weight 0.1 on the newest) of replica-read residence times, ns (f64
    /// bits; 0 before the first read): the latency estimate a probe answers with.
    residence_ewma_ns: AtomicU64,
}

impl NodeState {
    /// Assembles the state; the view starts with this node alone.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        config: NodeConfig,
        clock: Clock,
        counters: Arc<Counters>,
        storage: Storage,
        disk: SlowDisk,
        policy: PolicyHandle,
        default_cl: ConsistencyLevel,
        own_rate: Arc<AtomicU64>,
    ) -> NodeState {
        let id = NodeId(config.id as u16);
        let me = Peer {
            id,
            grpc: config.grpc_addr,
            generation: 0,
            live: true,
            zone: config.zone,
            client: internode_client(config.grpc_addr, config.connect_timeout_ms, config.max_message_bytes as usize),
        };
        let mut peers = vec![None; id.index() + 1];
        peers[id.index()] = Some(me);
        let ring = Ring::new(
            &[Member { id, zone: config.zone }],
            config.vnodes,
            config.replication_factor as usize,
            config.placement(),
        );
        NodeState {
            cache: RowCache::new(config.cache_rows),
            reply_delay_ms: AtomicU32::new(config.reply_delay_ms),
            id,
            clock,
            counters,
            storage,
            disk,
            policy,
            default_cl,
            own_rate,
            peer_rates: Mutex::new(Vec::new()),
            view: RwLock::new(Arc::new(View { peers, ring })),
            last_timestamp_us: AtomicU64::new(0),
            residence_ewma_ns: AtomicU64::new(0f64.to_bits()),
            config,
        }
    }

    /// The current membership snapshot.
    pub fn view(&self) -> Arc<View> {
        self.view.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Replaces the membership snapshot.
    pub fn set_view(&self, view: View) {
        *self.view.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(view);
    }

    /// Holds an outgoing message for the injected delay, if any (see `reply_delay_ms`).
    pub async fn hold_outgoing(&self) {
        let delay_ms = self.reply_delay_ms.load(std::sync::atomic::Ordering::Relaxed);
        if delay_ms > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(delay_ms as u64)).await;
        }
    }

    /// The node's live hit rate.
    pub fn hit_rate(&self) -> f64 {
        f64::from_bits(self.own_rate.load(Ordering::Relaxed))
    }

    /// Folds one replica read's residence time (arrival to reply, queueing included) into
    /// the moving average probes report.
    pub fn note_residence(&self, residence_ns: u64) {
        let sample = residence_ns as f64;
        let _ = self.residence_ewma_ns.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
            let old = f64::from_bits(bits);
            let new = if old == 0.0 { sample } else { 0.9 * old + 0.1 * sample };
            Some(new.to_bits())
        });
    }

    /// The node's latency estimate for probes, ns.
    pub fn residence_ewma_ns(&self) -> u64 {
        f64::from_bits(self.residence_ewma_ns.load(Ordering::Relaxed)) as u64
    }

    /// What this node says about itself as a coordinator answering a client: its live hit
    /// rate, the disk queue and its replica reads in flight (no service time: the client
    /// measures the whole response).
    pub fn feedback(&self) -> replica_lb_policy::Feedback {
        replica_lb_policy::Feedback {
            hit_rate: Some(self.hit_rate()),
            queue_len: Some(self.disk.waiting()),
            service_time_ns: None,
            in_flight: Some(self.counters.replica_in_flight.load(Ordering::Relaxed) as u32),
        }
    }

    /// Records a hit rate heard from `node`.
    pub fn note_peer_rate(&self, node: NodeId, rate: f64) {
        let mut rates = self.peer_rates.lock().unwrap_or_else(|p| p.into_inner());
        if rates.len() <= node.index() {
            rates.resize(node.index() + 1, None);
        }
        rates[node.index()] = Some(rate);
    }

    /// A write timestamp: wall-clock microseconds, strictly increasing on this node.
    pub fn next_timestamp_us(&self) -> u64 {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0);
        let mut last = self.last_timestamp_us.load(Ordering::Relaxed);
        loop {
            let next = now.max(last + 1);
            match self
                .last_timestamp_us
                .compare_exchange_weak(last, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return next,
                Err(seen) => last = seen,
            }
        }
    }
}
