//! Runs one node: checks the config, opens the store, binds the listeners, joins the cluster
//! by gossip, then serves gRPC and /metrics until SIGTERM or Ctrl-C.
//!
//! Start-up failures come back as a [`NodeError`] saying which part failed and why (bind, data
//! directory, seeds, configuration); the binary prints it on one line and exits non-zero.

use crate::config::NodeConfig;
use crate::error::NodeError;
use crate::gossip;
use crate::metrics::{self, Counters, Gauges};
use crate::policy_runtime::{Clock, PolicyHandle};
use crate::proto::{internode_server::InternodeServer, replica_lb_server::ReplicaLbServer};
use crate::service::Api;
use crate::slow_disk::SlowDisk;
use crate::state::NodeState;
use crate::storage::Storage;
use replica_lb_policy::NodeId;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use tokio::net::TcpListener;

/// Runs a node to completion on its own tokio runtime (`worker_threads` threads).
pub fn run_blocking(cfg: NodeConfig) -> Result<(), NodeError> {
    cfg.validate()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cfg.worker_threads as usize)
        .enable_all()
        .build()
        .map_err(|e| NodeError::Failed(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(run(cfg))
}

async fn bind(what: &'static str, addr: std::net::SocketAddr) -> Result<TcpListener, NodeError> {
    TcpListener::bind(addr).await.map_err(|e| NodeError::Bind {
        what,
        addr,
        why: e.to_string(),
    })
}

async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = term => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

/// Runs a node inside an existing tokio runtime until a shutdown signal.
pub async fn run(cfg: NodeConfig) -> Result<(), NodeError> {
    cfg.validate()?;
    let id = NodeId(cfg.id as u16);
    let default_cl = cfg.default_cl()?;
    let dist = cfg.service_time_dist()?;
    let storage = Storage::open(&cfg.data_dir)?;
    let grpc_listener = bind("gRPC", cfg.grpc_addr).await?;
    let metrics_listener = bind("metrics", cfg.metrics_addr).await?;
    let grpc_addr = grpc_listener.local_addr().map_err(|e| NodeError::Failed(e.to_string()))?;

    let clock = Clock::start();
    let counters = Arc::new(Counters::default());
    let own_rate = Arc::new(AtomicU64::new(0f64.to_bits()));
    let seed = (cfg.id as u64) << 32 ^ std::process::id() as u64;
    let runtime = PolicyHandle::build(&cfg.policy.name, &cfg.policy.params, id, seed).map_err(NodeError::Config)?;
    let policy = PolicyHandle::spawn(runtime, id, clock, own_rate.clone());
    let disk = SlowDisk::new(&cfg.slow_disk, dist);
    let state = Arc::new(NodeState::new(
        cfg.clone(),
        clock,
        counters,
        storage,
        disk,
        policy,
        default_cl,
        own_rate,
    ));

    let gossip = gossip::start(&cfg).await?;
    let chitchat = gossip.chitchat();
    gossip::spawn_watcher(state.clone(), chitchat.clone());
    gossip::spawn_tracker(state.clone(), chitchat.clone());
    gossip::wait_for_seeds(&cfg, &chitchat).await?;

    let page_state = state.clone();
    tokio::spawn(metrics::serve(metrics_listener, move || {
        let s = &page_state;
        let gauges = Gauges {
            hit_rate: s.hit_rate(),
            disk_queue: s.disk.waiting(),
            disk_in_service: s.disk.in_service(),
            cache_rows: s.cache.len() as u64,
            live_nodes: s.view().live_count() as u32,
        };
        metrics::render(s.id.0 as u32, &s.counters, &gauges)
    }));

    let api = Api::new(state.clone());
    let max = cfg.max_message_bytes as usize;
    eprintln!(
        "replica-lb node {}: gRPC {grpc_addr}, metrics {}, gossip {}, policy {}, data {}",
        cfg.id,
        cfg.metrics_addr,
        cfg.gossip_addr,
        cfg.policy.name,
        cfg.data_dir.display()
    );
    let served = tonic::transport::Server::builder()
        .tcp_nodelay(true)
        .add_service(
            ReplicaLbServer::new(api.clone())
                .max_decoding_message_size(max)
                .max_encoding_message_size(max),
        )
        .add_service(
            InternodeServer::new(api)
                .max_decoding_message_size(max)
                .max_encoding_message_size(max),
        )
        .serve_with_incoming_shutdown(
            // `Server::tcp_nodelay` applies only to listeners tonic binds itself: accepted
            // sockets need it here, or Nagle plus delayed ACKs stall replies by ~40 ms.
            tonic::transport::server::TcpIncoming::from(grpc_listener).with_nodelay(Some(true)),
            shutdown_signal(),
        )
        .await;
    let _ = gossip.shutdown().await;
    eprintln!("replica-lb node {}: stopped", cfg.id);
    served.map_err(|e| NodeError::Failed(format!("gRPC server failed: {e}")))
}
