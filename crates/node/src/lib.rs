//! replica-lb's real test cluster: a storage node (persistent store, row cache, emulated slow
//! disk, token ring, coordinator running a policy from the policy crate, gossip membership,
//! gRPC API, Prometheus endpoint), a launcher for a local cluster, a token-aware load
//! generator, and a runner for experiments on it ([`experiment`]). The `replica-lb` binary's
//! `node`, `cluster`, `load`, `bench` and `experiment` commands are thin wrappers over this crate.
//!
//! Threading: each node's coordinator policy lives in the shared policy runtime behind a short
//! lock ([`policy_runtime`]); everything else is shared through [`state::NodeState`].

#![warn(missing_docs)]

pub mod cache;
pub mod client;
pub mod config;
pub mod coordinator;
pub mod error;
pub mod experiment;
pub mod gossip;
pub mod launcher;
pub mod loadgen;
pub mod metrics;
pub mod policy_runtime;
pub mod replica;
pub mod ring;
pub mod server;
pub mod service;
pub mod slow_disk;
pub mod state;
pub mod storage;

/// Generated gRPC code for proto/replica_lb.proto.
#[allow(missing_docs, clippy::all)]
pub mod proto {
    tonic::include_proto!("replica_lb.v1");
}

pub use config::NodeConfig;
pub use error::NodeError;
