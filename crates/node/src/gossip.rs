//! Membership, failure detection and hit-rate spreading by gossip, with chitchat
//! (scuttlebutt anti-entropy plus a phi-accrual failure detector).
//!
//! Each node publishes `id`, `grpc`, `metrics`, `hit_rate` and `zone`. A watcher task turns chitchat's
//! state into this node's [`View`] (members, liveness, ring) and into policy events: a member
//! seen live for the first time, or back with a new generation (a restart), is `on_node_up`; one
//! the detector drops is `on_node_down`; a new gossiped hit rate is `on_info`. A tracker task
//! keeps the node's own hit rate ([`HitRateTracker`]) and publishes it by the published rule
//! ([`RatePublisher`], the simulator's too): when it moved by more than 0.1, or by more than
//! 0.01 and 5 s have passed since the last publication. Zones changing also reach the policy. (Every read reply also carries it, piggy-backed: see [`crate::replica`].)

use crate::config::NodeConfig;
use crate::error::NodeError;
use crate::metrics::get;
use crate::state::{internode_client, NodeState, Peer, View};
use chitchat::transport::UdpTransport;
use chitchat::{spawn_chitchat, Chitchat, ChitchatConfig, ChitchatHandle, ChitchatId, FailureDetectorConfig, ProtocolVersion};
use replica_lb_policy::hwlb::{HitRateTracker, RatePublisher};
use replica_lb_policy::NodeId;
use replica_lb_workload::placement::{Member, Ring};
use std::collections::{BTreeMap, HashSet};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::Mutex;

/// Gossip key: the node's numeric id.
pub const KEY_ID: &str = "id";
/// Gossip key: the node's gRPC address.
pub const KEY_GRPC: &str = "grpc";
/// Gossip key: the node's metrics address.
pub const KEY_METRICS: &str = "metrics";
/// Gossip key: the node's hit rate.
pub const KEY_HIT_RATE: &str = "hit_rate";
/// Gossip key: the node's zone.
pub const KEY_ZONE: &str = "zone";

/// How often the tracker task folds counts into the tracker.
const TRACK_INTERVAL: Duration = Duration::from_millis(100);

/// Starts gossip for `cfg`'s node.
pub async fn start(cfg: &NodeConfig) -> Result<ChitchatHandle, NodeError> {
    let generation = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let interval = Duration::from_millis(cfg.gossip_interval_ms);
    let config = ChitchatConfig {
        chitchat_id: ChitchatId::new(format!("node-{}", cfg.id), generation, cfg.gossip_addr),
        cluster_id: cfg.cluster_id.clone(),
        gossip_interval: interval,
        listen_addr: cfg.gossip_addr,
        seed_nodes: cfg.seeds.clone(),
        failure_detector_config: FailureDetectorConfig {
            phi_threshold: cfg.phi_threshold,
            sampling_window_size: 1000,
            max_interval: interval * 20,
            initial_interval: interval * 2,
            dead_node_grace_period: Duration::from_secs(3600),
        },
        marked_for_deletion_grace_period: Duration::from_secs(3600),
        catchup_callback: None,
        extra_liveness_predicate: None,
        protocol_version: ProtocolVersion::V0,
    };
    let initial = vec![
        (KEY_ID.to_string(), cfg.id.to_string()),
        (KEY_GRPC.to_string(), cfg.grpc_addr.to_string()),
        (KEY_METRICS.to_string(), cfg.metrics_addr.to_string()),
        (KEY_HIT_RATE.to_string(), "0".to_string()),
        (KEY_ZONE.to_string(), cfg.zone.to_string()),
    ];
    spawn_chitchat(config, initial, &UdpTransport).await.map_err(|e| NodeError::Bind {
        what: "gossip",
        addr: cfg.gossip_addr,
        why: e.to_string(),
    })
}

/// Waits until some other node is seen live; fails after `seed_timeout_ms` when the node has
/// seeds other than itself and none answered.
pub async fn wait_for_seeds(cfg: &NodeConfig, chitchat: &Arc<Mutex<Chitchat>>) -> Result<(), NodeError> {
    let others: Vec<&String> = cfg
        .seeds
        .iter()
        .filter(|s| s.parse::<SocketAddr>().ok() != Some(cfg.gossip_addr))
        .collect();
    if others.is_empty() {
        return Ok(());
    }
    let deadline = tokio::time::Instant::now() + Duration::from_millis(cfg.seed_timeout_ms);
    while tokio::time::Instant::now() < deadline {
        if chitchat.lock().await.live_nodes().count() > 1 {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(NodeError::Seeds {
        seeds: others.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", "),
        timeout_ms: cfg.seed_timeout_ms,
    })
}

/// What the watcher last saw of one member.
#[derive(Clone, Debug, PartialEq)]
struct Seen {
    generation: u64,
    grpc: SocketAddr,
    live: bool,
    hit_rate: Option<String>,
    zone: u32,
}

/// Reads chitchat's state into one entry per numeric node id: the live instance with the
/// newest generation, else the newest instance.
fn snapshot(chitchat: &Chitchat) -> BTreeMap<u16, Seen> {
    let live: HashSet<&ChitchatId> = chitchat.live_nodes().collect();
    let mut out: BTreeMap<u16, Seen> = BTreeMap::new();
    for (cid, state) in chitchat.node_states() {
        let Some(id) = state.get(KEY_ID).and_then(|v| v.parse::<u16>().ok()) else {
            continue;
        };
        let Some(grpc) = state.get(KEY_GRPC).and_then(|v| v.parse::<SocketAddr>().ok()) else {
            continue;
        };
        if id as u32 >= crate::config::MAX_NODES {
            continue;
        }
        let seen = Seen {
            generation: cid.generation_id,
            grpc,
            live: live.contains(cid),
            hit_rate: state.get(KEY_HIT_RATE).map(str::to_string),
            zone: state.get(KEY_ZONE).and_then(|v| v.parse().ok()).unwrap_or(0),
        };
        match out.get(&id) {
            Some(old) if (old.live, old.generation) >= (seen.live, seen.generation) => {}
            _ => {
                out.insert(id, seen);
            }
        }
    }
    out
}

/// Follows chitchat's state: keeps the view and the policy up to date.
pub fn spawn_watcher(state: Arc<NodeState>, chitchat: Arc<Mutex<Chitchat>>) {
    let interval = Duration::from_millis((state.config.gossip_interval_ms / 2).max(10));
    tokio::spawn(async move {
        let mut known: BTreeMap<u16, Seen> = BTreeMap::new();
        loop {
            let now = {
                let guard = chitchat.lock().await;
                snapshot(&guard)
            };
            apply(&state, &mut known, now);
            tokio::time::sleep(interval).await;
        }
    });
}

fn apply(state: &NodeState, known: &mut BTreeMap<u16, Seen>, now: BTreeMap<u16, Seen>) {
    let mut changed = false;
    for (&id, seen) in &now {
        let node = NodeId(id);
        if node == state.id {
            continue;
        }
        let old = known.get(&id);
        let restarted = old.is_some_and(|o| o.generation != seen.generation);
        let was_live = old.is_some_and(|o| o.live);
        if was_live && (!seen.live || restarted) {
            state.policy.node_down(node);
        }
        if seen.live && (!was_live || restarted) {
            state.policy.node_up(node);
        }
        if old.map(|o| (o.generation, o.grpc, o.live, o.zone)) != Some((seen.generation, seen.grpc, seen.live, seen.zone)) {
            changed = true;
        }
        if seen.live && (old.map(|o| &o.hit_rate) != Some(&seen.hit_rate) || restarted || !was_live) {
            if let Some(rate) = seen.hit_rate.as_deref().and_then(|r| r.parse::<f64>().ok()) {
                if (0.0..=1.0).contains(&rate) {
                    state.note_peer_rate(node, rate);
                    state.policy.info(
                        node,
                        replica_lb_policy::Feedback {
                            hit_rate: Some(rate),
                            ..Default::default()
                        },
                    );
                }
            }
        }
    }
    let zones_of = |seen: &BTreeMap<u16, Seen>| seen.iter().map(|(&id, s)| (id, s.zone)).collect::<Vec<_>>();
    if zones_of(known) != zones_of(&now) {
        // Policies that weigh zones (weighted-least-loaded) learn them; the node's own is in
        // its configuration.
        let zones: Vec<(NodeId, u32)> = now
            .iter()
            .map(|(&id, s)| (NodeId(id), s.zone))
            .chain([(state.id, state.config.zone)])
            .collect();
        state.policy.topology(&zones, state.config.zone);
    }
    if !changed {
        *known = now;
        return;
    }
    let old_view = state.view();
    let max_id = now.keys().copied().map(|i| i as usize).chain([state.id.index()]).max().unwrap_or(0);
    let mut peers: Vec<Option<Peer>> = vec![None; max_id + 1];
    peers[state.id.index()] = old_view.peer(state.id).cloned();
    for (&id, seen) in &now {
        if NodeId(id) == state.id {
            continue;
        }
        let client = match old_view.peer(NodeId(id)) {
            Some(p) if p.grpc == seen.grpc => p.client.clone(),
            _ => internode_client(seen.grpc, state.config.connect_timeout_ms, state.config.max_message_bytes as usize),
        };
        peers[id as usize] = Some(Peer {
            id: NodeId(id),
            grpc: seen.grpc,
            generation: seen.generation,
            live: seen.live,
            zone: seen.zone,
            client,
        });
    }
    let members: Vec<Member> = peers.iter().flatten().map(|p| Member { id: p.id, zone: p.zone }).collect();
    // Peers are indexed by id, so `members` is sorted as the ring keeps them.
    let ring = if members == old_view.ring.members() {
        old_view.ring.clone()
    } else {
        Ring::new(
            &members,
            state.config.vnodes,
            state.config.replication_factor as usize,
            state.config.placement(),
        )
    };
    state.set_view(View { peers, ring });
    *known = now;
}

/// Keeps the node's own hit rate: folds hit and miss counts into the tracker, stores the live
/// rate for the policy and for replies, and publishes it by gossip by the published rule.
pub fn spawn_tracker(state: Arc<NodeState>, chitchat: Arc<Mutex<Chitchat>>) {
    tokio::spawn(async move {
        let tick_ns = state.config.hit_rate_tick_ms * 1_000_000;
        let window_ns = state.config.hit_rate_window_ms * 1_000_000;
        let mut tracker = HitRateTracker::new(tick_ns, window_ns, state.clock.now_ns());
        let (mut hits_seen, mut misses_seen) = (0u64, 0u64);
        // The rate gossiped at start ("0", see `start`) counts as the first publication.
        let mut publisher = RatePublisher::new();
        publisher.offer(0.0, state.clock.now_ns());
        loop {
            tokio::time::sleep(TRACK_INTERVAL).await;
            let (hits, misses) = (get(&state.counters.cache_hits), get(&state.counters.cache_misses));
            (hits_seen..hits).for_each(|_| tracker.record_hit());
            (misses_seen..misses).for_each(|_| tracker.record_miss());
            (hits_seen, misses_seen) = (hits, misses);
            tracker.advance(state.clock.now_ns());
            let rate = tracker.hit_rate();
            state.own_rate.store(rate.to_bits(), Ordering::Relaxed);
            if publisher.offer(rate, state.clock.now_ns()) {
                chitchat.lock().await.self_node_state().set(KEY_HIT_RATE, format!("{rate:.4}"));
            }
        }
    });
}
