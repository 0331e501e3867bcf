//! The node's error type: one line that says which part failed and why.

use std::net::SocketAddr;

/// Why a node (or a cluster command) could not start or run.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// The configuration is invalid (bad value, unknown key): the user must fix it.
    #[error("bad configuration: {0}")]
    Config(String),
    /// A listening socket could not be bound.
    #[error("cannot bind the {what} address {addr}: {why}")]
    Bind {
        /// Which listener (gRPC, metrics, gossip).
        what: &'static str,
        /// The address asked for.
        addr: SocketAddr,
        /// The operating system's reason.
        why: String,
    },
    /// The data directory or the database in it could not be opened.
    #[error("cannot open the data directory {dir}: {why}")]
    DataDir {
        /// The directory.
        dir: String,
        /// The reason.
        why: String,
    },
    /// None of the seeds answered in time.
    #[error("cannot reach any seed of [{seeds}] within {timeout_ms} ms: no gossip answer; check that a seed node is running at one of these addresses")]
    Seeds {
        /// The seeds tried, comma-separated.
        seeds: String,
        /// How long the node waited.
        timeout_ms: u64,
    },
    /// Something else failed while running (I/O, a peer, the cluster files).
    #[error("{0}")]
    Failed(String),
}

impl NodeError {
    /// Whether the error is the user's input (exit code 2) rather than an operation failing.
    pub fn is_usage(&self) -> bool {
        matches!(self, NodeError::Config(_))
    }
}
