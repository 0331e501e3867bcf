//! `replica-lb node`: runs one storage node of the real test cluster.

use crate::error::{CliError, CliResult};
use clap::Args;
use replica_lb_node::NodeConfig;
use replica_lb_policy::ParamTable;
use std::net::SocketAddr;
use std::path::PathBuf;

/// `node` arguments: a TOML config, and flags for the common settings (flags win).
#[derive(Args, Debug)]
pub struct NodeArgs {
    /// The node's TOML config (every key optional; see docs/cluster.md).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Node id, unique in the cluster (0..1023).
    #[arg(long)]
    id: Option<u32>,
    /// gRPC listen address, e.g. 127.0.0.1:9400.
    #[arg(long, value_name = "ADDR")]
    grpc: Option<SocketAddr>,
    /// Metrics (/metrics) listen address.
    #[arg(long, value_name = "ADDR")]
    metrics: Option<SocketAddr>,
    /// Gossip (UDP) listen address.
    #[arg(long, value_name = "ADDR")]
    gossip: Option<SocketAddr>,
    /// Gossip addresses of nodes to join through, comma-separated.
    #[arg(long, value_delimiter = ',', value_name = "ADDR,...")]
    seeds: Option<Vec<String>>,
    /// Data directory.
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Coordinator-side policy (registry name: naive, hwlb, ...).
    #[arg(long, value_name = "NAME")]
    policy: Option<String>,
    /// A policy parameter override, NAME=VALUE (repeatable).
    #[arg(long = "policy-param", value_name = "NAME=VALUE")]
    policy_params: Vec<String>,
    /// Row-cache capacity in rows (0 = no cache).
    #[arg(long, value_name = "ROWS")]
    cache_rows: Option<u64>,
    /// Replication factor.
    #[arg(long, value_name = "RF")]
    rf: Option<u32>,
}

/// Parses repeated NAME=VALUE policy parameters into `table`.
pub fn parse_params(flag: &str, items: &[String], table: &mut ParamTable) -> Result<(), CliError> {
    Ok(replica_lb_engine::parse_params(flag, items, table)?)
}

/// Maps a node error to the CLI's exit codes (2: bad input, 1: failure).
pub fn node_error(e: replica_lb_node::NodeError) -> CliError {
    if e.is_usage() {
        CliError::usage(e.to_string())
    } else {
        CliError::failed(e.to_string())
    }
}

/// Runs the node until SIGTERM or Ctrl-C.
pub fn run(args: NodeArgs) -> CliResult {
    let mut cfg = match &args.config {
        Some(path) => NodeConfig::from_file(path).map_err(node_error)?,
        None => NodeConfig::default(),
    };
    if let Some(v) = args.id {
        cfg.id = v;
    }
    if let Some(v) = args.grpc {
        cfg.grpc_addr = v;
    }
    if let Some(v) = args.metrics {
        cfg.metrics_addr = v;
    }
    if let Some(v) = args.gossip {
        cfg.gossip_addr = v;
    }
    if let Some(v) = args.seeds {
        cfg.seeds = v.into_iter().filter(|s| !s.trim().is_empty()).collect();
    }
    if let Some(v) = args.data_dir {
        cfg.data_dir = v;
    }
    if let Some(v) = args.policy {
        cfg.policy.name = v;
    }
    parse_params("--policy-param", &args.policy_params, &mut cfg.policy.params)?;
    if let Some(v) = args.cache_rows {
        cfg.cache_rows = v;
    }
    if let Some(v) = args.rf {
        cfg.replication_factor = v;
    }
    replica_lb_node::server::run_blocking(cfg).map_err(node_error)
}
