//! `replica-lb cluster up|status|down|restart|signal`: a local cluster of node processes.

use crate::error::{CliError, CliResult};
use crate::node_cmd::{node_error, parse_params};
use clap::{Args, Subcommand};
use node::launcher::{self, NodeCommand, Signal, UpOptions};
use node::NodeConfig;
use std::path::PathBuf;
use std::time::Duration;

/// The `cluster` subcommands.
#[derive(Subcommand, Debug)]
pub enum ClusterCommand {
    /// Start N nodes on loopback, wait until every node sees all the others, write DIR/cluster.json.
    Up(UpArgs),
    /// Print each node's state.
    Status(DirArgs),
    /// Stop every node (SIGTERM, then SIGKILL after 5 s).
    Down(DirArgs),
    /// Start a stopped node again from its recorded config (same data, empty cache).
    Restart(NodeArgs),
    /// Send a signal to one node: kill (kill -9), term, stop (pause), cont (resume).
    Signal(SignalArgs),
}

/// `cluster up` arguments.
#[derive(Args, Debug)]
pub struct UpArgs {
    /// How many nodes (1..64).
    #[arg(long)]
    nodes: u32,
    /// The cluster directory (node configs, logs, data, cluster.json).
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// A node TOML config whose settings every node shares (addresses, ids, dirs and seeds are set by the launcher).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Coordinator-side policy of every node.
    #[arg(long, value_name = "NAME")]
    policy: Option<String>,
    /// A policy parameter override, NAME=VALUE (repeatable).
    #[arg(long = "policy-param", value_name = "NAME=VALUE")]
    policy_params: Vec<String>,
    /// How long to wait for the nodes to see each other, seconds.
    #[arg(long, default_value_t = 60)]
    wait_timeout_s: u64,
}

/// Arguments naming the cluster directory.
#[derive(Args, Debug)]
pub struct DirArgs {
    /// The cluster directory.
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// Print JSON instead of a table (status only).
    #[arg(long)]
    json: bool,
}

/// Arguments naming one node.
#[derive(Args, Debug)]
pub struct NodeArgs {
    /// The cluster directory.
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// The node id.
    #[arg(long)]
    id: u32,
}

/// `cluster signal` arguments.
#[derive(Args, Debug)]
pub struct SignalArgs {
    /// The cluster directory.
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// The node id.
    #[arg(long)]
    id: u32,
    /// kill, term, stop or cont.
    #[arg(long)]
    signal: String,
}

/// Runs a `cluster` subcommand.
pub fn run(cmd: ClusterCommand) -> CliResult {
    match cmd {
        ClusterCommand::Up(a) => up(a),
        ClusterCommand::Status(a) => status(a),
        ClusterCommand::Down(a) => {
            let n = launcher::down(&a.dir, Duration::from_secs(5)).map_err(node_error)?;
            println!("stopped {n} node(s) of {}", a.dir.display());
            Ok(())
        }
        ClusterCommand::Restart(a) => {
            let cmd = NodeCommand::current_exe_node().map_err(node_error)?;
            let child = launcher::restart_node(&a.dir, a.id, &cmd).map_err(node_error)?;
            println!("node {} restarted, pid {}", a.id, child.id());
            Ok(())
        }
        ClusterCommand::Signal(a) => {
            let sig = Signal::parse(&a.signal).map_err(node_error)?;
            launcher::signal_node(&a.dir, a.id, sig).map_err(node_error)?;
            println!("sent {sig:?} to node {}", a.id);
            Ok(())
        }
    }
}

fn up(a: UpArgs) -> CliResult {
    let mut base = match &a.config {
        Some(p) => NodeConfig::from_file(p).map_err(node_error)?,
        None => NodeConfig::default(),
    };
    if let Some(p) = a.policy {
        base.policy.name = p;
    }
    parse_params("--policy-param", &a.policy_params, &mut base.policy.params)?;
    base.validate().map_err(node_error)?;
    let opts = UpOptions {
        nodes: a.nodes,
        dir: a.dir.clone(),
        base,
        command: NodeCommand::current_exe_node().map_err(node_error)?,
        wait_timeout: Duration::from_secs(a.wait_timeout_s),
    };
    let launched = launcher::up(&opts).map_err(node_error)?;
    for n in &launched.file.nodes {
        println!("node {}: grpc {} metrics http://{}/metrics pid {}", n.id, n.grpc, n.metrics, n.pid);
    }
    println!(
        "cluster of {} node(s) up; {}",
        launched.file.nodes.len(),
        a.dir.join(launcher::CLUSTER_FILE).display()
    );
    Ok(())
}

fn status(a: DirArgs) -> CliResult {
    let nodes = launcher::status(&a.dir).map_err(node_error)?;
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&nodes).map_err(|e| CliError::failed(e.to_string()))?
        );
        return Ok(());
    }
    println!(
        "{:<6}{:<9}{:<14}{:<22}{:>10}{:>10}{:>12}  policy",
        "node", "pid", "state", "grpc", "live seen", "hit rate", "reads"
    );
    let dash = || "-".to_string();
    for n in nodes {
        println!(
            "{:<6}{:<9}{:<14}{:<22}{:>10}{:>10}{:>12}  {}",
            n.id,
            n.pid,
            n.state,
            n.grpc.to_string(),
            n.live_seen.zip(n.members).map(|(l, m)| format!("{l}/{m}")).unwrap_or_else(dash),
            n.hit_rate.map(|h| format!("{h:.3}")).unwrap_or_else(dash),
            n.reads.map(|r| r.to_string()).unwrap_or_else(dash),
            n.policy.unwrap_or_else(dash)
        );
    }
    Ok(())
}
