//! replica-lb's storage node, the server side of the real test cluster: a persistent store, a
//! row cache, an emulated slow disk, a token ring, a coordinator running a policy from the
//! policy crate, gossip membership, the gRPC API ([`proto`]) with its token-aware client
//! ([`client`]), and a Prometheus endpoint with the node's counters, bytes on the wire
//! ([`traffic`]) included. The `replica-lb` binary's `node` command is a thin
//! wrapper over [`server::run_blocking`]; launching clusters, load generation and experiments
//! are in the `launcher`, `loadgen` and `experiment` crates.
//!
//! Threading: each node's coordinator policy lives in the shared policy runtime behind a short
//! lock ([`policy_runtime`]); everything else is shared through [`state::NodeState`].

#![warn(missing_docs)]

pub mod cache;
pub mod client;
pub mod config;
pub mod coordinator;
pub mod error;
pub mod gossip;
pub mod metrics;
pub mod policy_runtime;
pub mod replica;
pub mod server;
pub mod service;
pub mod slow_disk;
pub mod state;
pub mod storage;
pub mod traffic;

/// Generated gRPC code for proto/replica_lb.proto.
#[allow(missing_docs, clippy::all)]
pub mod proto {
    tonic::include_proto!("replica_lb.v1");
}

pub use config::NodeConfig;
pub use error::NodeError;
