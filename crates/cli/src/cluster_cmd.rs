//! `replica-lb cluster up|status|down|restart|pause|delay|slow-disk|signal`: a local cluster of
//! node processes and the faults an experiment injects into it.

use crate::cassandra_cmd;
use crate::error::{CliError, CliResult};
use crate::node_cmd::{node_error, parse_params};
use clap::{Args, Subcommand};
use harness::cassandra::{self, Engine};
use harness::launcher::{self, NodeCommand, Signal, UpOptions, ZoneLayout};
use node::proto::FaultsRequest;
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
    /// Restart one node: kill -9 it if it runs, keep it down --down-s seconds, start it again
    /// from its recorded config (same data, an empty cache) and wait until it is back.
    Restart(RestartArgs),
    /// Pause one node for --for-s seconds (SIGSTOP, wait, SIGCONT: a real "GC pause").
    Pause(PauseArgs),
    /// Add --ms milliseconds to every replica read reply of one node (0 clears).
    Delay(DelayArgs),
    /// Make one node's emulated disk slower: service times x --factor (1 = as configured), or
    /// switch it --on / --off.
    SlowDisk(SlowDiskArgs),
    /// Send a signal to one node: kill (kill -9), term, stop (pause), cont (resume).
    Signal(SignalArgs),
    /// Cassandra with the replica-lb plug-in: switch every coordinator to `hwlb` or `naive` at
    /// run time (and for nodes started again later).
    Switch(SwitchArgs),
    /// The delay proxy in front of a Cassandra cluster's CQL ports (started by `cluster up
    /// --engine cassandra`; not for direct use).
    #[command(hide = true)]
    Proxy(ProxyArgs),
}

/// `cluster proxy` arguments.
#[derive(Args, Debug)]
pub struct ProxyArgs {
    /// The cluster directory.
    #[arg(long, value_name = "DIR")]
    pub(crate) dir: PathBuf,
    /// How many nodes.
    #[arg(long)]
    pub(crate) nodes: u32,
}

/// `cluster up` arguments.
#[derive(Args, Debug)]
pub struct UpArgs {
    /// How many nodes (1..64; 1..5 with --engine cassandra).
    #[arg(long)]
    pub(crate) nodes: u32,
    /// `node` (the project's own storage nodes) or `cassandra` (Apache Cassandra 5.0, its jars
    /// fetched with Maven on first use).
    #[arg(long, default_value = "node")]
    pub(crate) engine: String,
    /// JVM heap of each Cassandra node, MiB.
    #[arg(long, value_name = "MIB", default_value_t = 768)]
    pub(crate) heap_mb: u32,
    /// How long one Cassandra node may take to answer CQL, seconds.
    #[arg(long, value_name = "S", default_value_t = 180)]
    pub(crate) node_timeout_s: u64,
    /// Cassandra: the coordinator policy. `dynamic-snitch` (the default) is Cassandra as
    /// shipped, no plug-in; `naive` (the coordinator first, no dynamic snitch), `hwlb` (HWLB at
    /// every coordinator) and `unified` (HWLB passing over slow or silent replicas) install the
    /// replica-lb plug-in, built with Maven on first use.
    #[arg(long, value_name = "NAME")]
    pub(crate) coordinator_policy: Option<String>,
    /// Cassandra with the plug-in: its hit-rate tracker's tick, ms (published: 10,000).
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    pub(crate) hit_rate_tick_ms: u64,
    /// Cassandra with the plug-in: its hit-rate moving-average window, ms (published: 60,000).
    #[arg(long, value_name = "MS", default_value_t = 60_000)]
    pub(crate) hit_rate_window_ms: u64,
    /// Cassandra with the plug-in: the consistency level reads use (HWLB draws that many
    /// replicas; the snitch is not told a read's level).
    #[arg(long, value_name = "CL", default_value = "quorum")]
    pub(crate) read_cl: String,
    /// Cassandra: each node's row cache, MiB (0 = off; tables `load` creates cache whole rows).
    #[arg(long, value_name = "MIB", default_value_t = 0)]
    pub(crate) row_cache_mb: u32,
    /// Cassandra: each node's chunk cache of data file pages, MiB (0 = off).
    #[arg(long, value_name = "MIB", default_value_t = 64)]
    pub(crate) chunk_cache_mb: u32,
    /// Cassandra: cap each node's page cache at about this much once started (a memory cgroup;
    /// needs --disk-read-iops too, and root).
    #[arg(long, value_name = "MIB")]
    pub(crate) page_cache_mb: Option<u32>,
    /// Cassandra: throttle each node's reads from its disk to this many per second (a blkio
    /// cgroup; needs --page-cache-mb too, and root).
    #[arg(long, value_name = "N")]
    pub(crate) disk_read_iops: Option<u32>,
    /// The cluster directory (node configs, logs, data, cluster.json).
    #[arg(long, value_name = "DIR")]
    pub(crate) dir: PathBuf,
    /// A node TOML config whose settings every node shares (addresses, ids, dirs and seeds are set by the launcher).
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Coordinator-side policy of every node.
    #[arg(long, value_name = "NAME")]
    pub(crate) policy: Option<String>,
    /// A policy parameter override, NAME=VALUE (repeatable).
    #[arg(long = "policy-param", value_name = "NAME=VALUE")]
    pub(crate) policy_params: Vec<String>,
    /// How long to wait for the nodes to see each other, seconds.
    #[arg(long, default_value_t = 60)]
    pub(crate) wait_timeout_s: u64,
    /// Spread the nodes over this many zones (node i in zone i mod ZONES); zone-aware policies
    /// (weighted-least-loaded) weigh them.
    #[arg(long, value_name = "ZONES", default_value_t = 1)]
    pub(crate) zones: u32,
}

/// Arguments naming the cluster directory.
#[derive(Args, Debug)]
pub struct DirArgs {
    /// The cluster directory.
    #[arg(long, value_name = "DIR")]
    pub(crate) dir: PathBuf,
    /// Print JSON instead of a table (status only).
    #[arg(long)]
    pub(crate) json: bool,
}

/// `cluster switch` arguments.
#[derive(Args, Debug)]
pub struct SwitchArgs {
    /// The cluster directory.
    #[arg(long, value_name = "DIR")]
    pub(crate) dir: PathBuf,
    /// `dynamic-snitch` (Cassandra's own, the plug-in out of the read path), `naive`, `hwlb`
    /// or `unified`.
    #[arg(long, value_name = "NAME")]
    pub(crate) coordinator_policy: String,
}

/// `cluster restart` arguments.
#[derive(Args, Debug)]
pub struct RestartArgs {
    /// The cluster directory.
    #[arg(long, value_name = "DIR")]
    pub(crate) dir: PathBuf,
    /// The node id.
    #[arg(long, visible_alias = "id", value_name = "ID")]
    pub(crate) node: u32,
    /// Seconds the node stays down between the kill and the new start.
    #[arg(long, value_name = "S", default_value_t = 0.0, allow_hyphen_values = true)]
    pub(crate) down_s: f64,
    /// How long to wait for the node to come back and see every node live, seconds.
    #[arg(long, value_name = "S", default_value_t = 30)]
    pub(crate) up_timeout_s: u64,
}

/// `cluster pause` arguments.
#[derive(Args, Debug)]
pub struct PauseArgs {
    /// The cluster directory.
    #[arg(long, value_name = "DIR")]
    pub(crate) dir: PathBuf,
    /// The node id.
    #[arg(long, visible_alias = "id", value_name = "ID")]
    pub(crate) node: u32,
    /// Seconds the node stays stopped.
    #[arg(long, value_name = "S", allow_hyphen_values = true)]
    pub(crate) for_s: f64,
}

/// `cluster delay` arguments.
#[derive(Args, Debug)]
pub struct DelayArgs {
    /// The cluster directory.
    #[arg(long, value_name = "DIR")]
    pub(crate) dir: PathBuf,
    /// The node id.
    #[arg(long, visible_alias = "id", value_name = "ID")]
    pub(crate) node: u32,
    /// Milliseconds added to each replica read reply (0 clears).
    #[arg(long, value_name = "M")]
    pub(crate) ms: u32,
}

/// `cluster slow-disk` arguments.
#[derive(Args, Debug)]
pub struct SlowDiskArgs {
    /// The cluster directory.
    #[arg(long, value_name = "DIR")]
    pub(crate) dir: PathBuf,
    /// The node id.
    #[arg(long, visible_alias = "id", value_name = "ID")]
    pub(crate) node: u32,
    /// Multiply the emulated disk's service times by F (0.01..1000; 1 = as configured). Also
    /// switches the emulated disk on, unless --off is given.
    #[arg(long, value_name = "F", allow_hyphen_values = true)]
    pub(crate) factor: Option<f64>,
    /// Switch the emulated disk on (its configured shape).
    #[arg(long, conflicts_with = "off")]
    pub(crate) on: bool,
    /// Switch the emulated disk off (real reads only).
    #[arg(long)]
    pub(crate) off: bool,
}

/// `cluster signal` arguments.
#[derive(Args, Debug)]
pub struct SignalArgs {
    /// The cluster directory.
    #[arg(long, value_name = "DIR")]
    pub(crate) dir: PathBuf,
    /// The node id.
    #[arg(long, visible_alias = "node", value_name = "ID")]
    pub(crate) id: u32,
    /// kill, term, stop or cont.
    #[arg(long)]
    pub(crate) signal: String,
}

/// Runs a `cluster` subcommand.
pub fn run(cmd: ClusterCommand) -> CliResult {
    if let Some(dir) = cassandra_dir(&cmd) {
        if cassandra::engine_of(dir).map_err(CliError::failed)? == Engine::Cassandra {
            return cassandra_cmd::run(cmd);
        }
    }
    match cmd {
        ClusterCommand::Up(a) => up(a),
        ClusterCommand::Proxy(a) => cassandra_cmd::proxy(a.dir, a.nodes),
        ClusterCommand::Status(a) => status(a),
        ClusterCommand::Down(a) => {
            let n = launcher::down(&a.dir, Duration::from_secs(5)).map_err(node_error)?;
            println!("stopped {n} node(s) of {}", a.dir.display());
            Ok(())
        }
        ClusterCommand::Restart(a) => {
            let down = launcher::check_fault_s("--down-s", a.down_s).map_err(node_error)?;
            let cmd = NodeCommand::current_exe_node().map_err(node_error)?;
            let child =
                launcher::restart_node_after(&a.dir, a.node, down, &cmd, Duration::from_secs(a.up_timeout_s)).map_err(node_error)?;
            println!(
                "node {} restarted after {:.1} s down (same data, empty cache), pid {}",
                a.node,
                a.down_s,
                child.id()
            );
            Ok(())
        }
        ClusterCommand::Pause(a) => {
            let pause = launcher::check_fault_s("--for-s", a.for_s).map_err(node_error)?;
            launcher::pause_node(&a.dir, a.node, pause).map_err(node_error)?;
            println!("node {} paused for {:.1} s and resumed", a.node, a.for_s);
            Ok(())
        }
        ClusterCommand::Delay(a) => {
            let req = FaultsRequest {
                reply_delay_ms: Some(a.ms),
                ..Default::default()
            };
            let r = launcher::set_faults(&a.dir, a.node, req).map_err(node_error)?;
            match r.reply_delay_ms {
                0 => println!("node {}: added delay cleared", a.node),
                ms => println!("node {}: every message it sends delayed by {ms} ms", a.node),
            }
            Ok(())
        }
        ClusterCommand::SlowDisk(a) => slow_disk(a),
        ClusterCommand::Switch(_) => Err(CliError::usage(
            "cluster switch is for a Cassandra cluster with the replica-lb plug-in; a node cluster's coordinator policy is set by cluster up --policy",
        )),
        ClusterCommand::Signal(a) => {
            let sig = Signal::parse(&a.signal).map_err(node_error)?;
            launcher::signal_node(&a.dir, a.id, sig).map_err(node_error)?;
            println!("sent {sig:?} to node {}", a.id);
            Ok(())
        }
    }
}

/// The directory of a command that acts on a running cluster, when it has a cluster file (its
/// engine then decides who handles it).
fn cassandra_dir(cmd: &ClusterCommand) -> Option<&std::path::Path> {
    let dir = match cmd {
        ClusterCommand::Up(_) | ClusterCommand::Proxy(_) => return None,
        ClusterCommand::Status(a) | ClusterCommand::Down(a) => &a.dir,
        ClusterCommand::Restart(a) => &a.dir,
        ClusterCommand::Pause(a) => &a.dir,
        ClusterCommand::Delay(a) => &a.dir,
        ClusterCommand::SlowDisk(a) => &a.dir,
        ClusterCommand::Signal(a) => &a.dir,
        ClusterCommand::Switch(a) => &a.dir,
    };
    dir.join(launcher::CLUSTER_FILE).exists().then_some(dir.as_path())
}

fn slow_disk(a: SlowDiskArgs) -> CliResult {
    if a.factor.is_none() && !a.on && !a.off {
        return Err(CliError::usage("cluster slow-disk: give --factor F, --on or --off"));
    }
    if let Some(f) = a.factor {
        let (lo, hi) = node::slow_disk::FACTOR_RANGE;
        if !(f.is_finite() && (lo..=hi).contains(&f)) {
            return Err(CliError::usage(format!("--factor {f} must be in [{lo}, {hi}]")));
        }
    }
    let req = FaultsRequest {
        slow_disk_factor: a.factor,
        slow_disk: if a.off { Some(false) } else { Some(true) },
        ..Default::default()
    };
    let r = launcher::set_faults(&a.dir, a.node, req).map_err(node_error)?;
    if r.slow_disk {
        println!("node {}: emulated disk on, service times x{}", a.node, r.slow_disk_factor);
    } else {
        println!("node {}: emulated disk off (real reads only)", a.node);
    }
    Ok(())
}

fn up(a: UpArgs) -> CliResult {
    match Engine::parse(&a.engine).map_err(CliError::usage)? {
        Engine::Cassandra => return cassandra_cmd::up(&a),
        Engine::Node => {}
    }
    for (given, flag) in [
        (a.coordinator_policy.is_some(), "--coordinator-policy"),
        (a.hit_rate_tick_ms != 10_000, "--hit-rate-tick-ms"),
        (a.hit_rate_window_ms != 60_000, "--hit-rate-window-ms"),
        (a.read_cl != "quorum", "--read-cl"),
        (a.row_cache_mb != 0, "--row-cache-mb"),
        (a.chunk_cache_mb != 64, "--chunk-cache-mb"),
        (a.page_cache_mb.is_some(), "--page-cache-mb"),
        (a.disk_read_iops.is_some(), "--disk-read-iops"),
    ] {
        if given {
            return Err(CliError::usage(format!(
                "{flag} is for --engine cassandra; the node engine takes its settings from --config and --policy"
            )));
        }
    }
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
        zones: ZoneLayout::RoundRobin(a.zones),
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
