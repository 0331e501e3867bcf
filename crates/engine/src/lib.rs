//! The engine seam: a running cluster of either engine (the project's node processes or
//! Apache Cassandra), found once from its directory, with the operations the CLI needs; the
//! CLI never branches on the engine. [`up`] starts one from `cluster up`'s flags.
//!
//! [`Cluster::open`] reads the cluster file's engine (a directory without one is a node
//! cluster, whose operations then say what is missing); every operation after that is one
//! call, whichever engine runs. Each returns the line to show the user, or an [`EngineError`]
//! that says whether the input was bad (exit 2) or the operation failed (exit 1). `load` and
//! `bench` go to a [`ClientTarget`] of either engine ([`client`]); a scenario runs on either
//! as an [`experiment::Experiment`].

#![warn(missing_docs)]

mod client;
mod cluster;
mod error;
pub mod experiment;
mod status;
mod up;

pub use client::{BenchRun, ClientTarget};
pub use cluster::{Cluster, SlowDisk};
pub use error::{EngineError, EngineResult};
pub use replica_lb_cassandra::Engine;
pub use up::{parse_params, up, CassandraFlags, NodeFlags, UpRequest};
