//! `replica-lb cluster up|status|down|restart|pause|delay|slow-disk|signal`: a local cluster of
//! node processes and the faults an experiment injects into it.

use crate::cassandra_cmd;
use crate::error::{CliError, CliResult};
use clap::{Args, Subcommand};
use replica_lb_cassandra::plugin::CoordinatorPolicy;
use replica_lb_cassandra::Engine;
use replica_lb_engine::{Cluster, NodeFlags, SlowDisk, UpRequest};
use replica_lb_experiment::rolling::{self, Pace, RollingPlan};
use replica_lb_launcher::Signal;
use replica_lb_metrics::warm_gate::WarmRule;
use std::path::PathBuf;
use std::time::Duration;

/// The `cluster` subcommands.
#[derive(Subcommand, Debug)]
pub enum ClusterCommand {
    /// Start N nodes on loopback, wait until every node sees all the others, write DIR/cluster.json.
    #[command(after_help = "Examples:
  replica-lb cluster up --nodes 3 --dir /tmp/rlb --policy hwlb
  replica-lb cluster up --engine cassandra --nodes 3 --dir /tmp/cass --coordinator-policy unified")]
    Up(UpArgs),
    /// Print each node's state.
    #[command(after_help = "Examples:
  replica-lb cluster status --dir /tmp/rlb
  replica-lb cluster status --dir /tmp/rlb --json")]
    Status(DirArgs),
    /// Stop every node (SIGTERM, then SIGKILL after 5 s).
    #[command(after_help = "Examples:
  replica-lb cluster down --dir /tmp/rlb")]
    Down(DirArgs),
    /// Restart one node: kill -9 it if it runs, keep it down --down-s seconds, start it again
    /// from its recorded config (same data, an empty cache) and wait until it is back.
    #[command(after_help = "Examples:
  replica-lb cluster restart --dir /tmp/rlb --node 2 --down-s 10")]
    Restart(RestartArgs),
    /// Restart every node one after another, cold, the next only when the gate says so: `warm`
    /// (the last one's misses per read within --within of its peers' median, --timeout-s as a
    /// ceiling) or a fixed --interval-s after it came back. Writes DIR/rolling-restart.json.
    #[command(after_help = "Examples:
  replica-lb cluster rolling-restart --dir /tmp/cass --gate warm --down-s 5
  replica-lb cluster rolling-restart --dir /tmp/rlb --interval-s 60")]
    RollingRestart(RollingRestartArgs),
    /// Pause one node for --for-s seconds (SIGSTOP, wait, SIGCONT: a real "GC pause").
    #[command(after_help = "Examples:
  replica-lb cluster pause --dir /tmp/rlb --node 1 --for-s 20")]
    Pause(PauseArgs),
    /// Add --ms milliseconds to every replica read reply of one node (0 clears).
    #[command(after_help = "Examples:
  replica-lb cluster delay --dir /tmp/rlb --node 1 --ms 10
  replica-lb cluster delay --dir /tmp/rlb --node 1 --ms 0     # clears it")]
    Delay(DelayArgs),
    /// Make one node's emulated disk slower: service times x --factor (1 = as configured), or
    /// switch it --on / --off.
    #[command(after_help = "Examples:
  replica-lb cluster slow-disk --dir /tmp/rlb --node 1 --factor 5
  replica-lb cluster slow-disk --dir /tmp/rlb --node 1 --off")]
    SlowDisk(SlowDiskArgs),
    /// Send a signal to one node: kill (kill -9), term, stop (pause), cont (resume).
    #[command(after_help = "Examples:
  replica-lb cluster signal --dir /tmp/rlb --id 2 --signal stop
  replica-lb cluster signal --dir /tmp/rlb --id 2 --signal cont")]
    Signal(SignalArgs),
    /// Cassandra with the replica-lb plug-in: switch every coordinator to `hwlb` or `naive` at
    /// run time (and for nodes started again later).
    #[command(after_help = "Examples:
  replica-lb cluster switch --dir /tmp/cass --coordinator-policy dynamic-snitch")]
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
    #[arg(long, default_value = "node", value_parser = Engine::parse)]
    pub(crate) engine: Engine,
    /// The Cassandra engine's settings.
    #[command(flatten)]
    pub(crate) cassandra: cassandra_cmd::CassandraUpArgs,
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
    #[arg(long, value_name = "NAME", value_parser = CoordinatorPolicy::parse)]
    pub(crate) coordinator_policy: CoordinatorPolicy,
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

/// `cluster rolling-restart --gate`: the gates besides the fixed interval.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum GateKind {
    /// The last restarted node is warm.
    Warm,
}

/// `cluster rolling-restart` arguments.
#[derive(Args, Debug)]
pub struct RollingRestartArgs {
    /// The cluster directory.
    #[arg(long, value_name = "DIR")]
    pub(crate) dir: PathBuf,
    /// `warm`: the next node goes down once the last one is warm (the default unless
    /// --interval-s is given).
    #[arg(long, value_name = "GATE", value_enum, conflicts_with = "interval_s")]
    pub(crate) gate: Option<GateKind>,
    /// A fixed interval instead: the next node goes down S seconds after the last came back
    /// (1..86400).
    #[arg(long, value_name = "S", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub(crate) interval_s: Option<u64>,
    /// Seconds each node stays down.
    #[arg(long, value_name = "S", default_value_t = 0.0, allow_hyphen_values = true)]
    pub(crate) down_s: f64,
    /// Warm: misses per read at most (1 + WITHIN) x the other nodes' median (0..10).
    #[arg(long, value_name = "WITHIN", allow_hyphen_values = true, default_value_t = replica_lb_metrics::warm_gate::DEFAULT_WITHIN, value_parser = crate::warmup_cmd::parse_within)]
    pub(crate) within: f64,
    /// The gate's window, seconds (1..3600).
    #[arg(long, value_name = "S", default_value_t = replica_lb_metrics::warm_gate::DEFAULT_WINDOW_S, value_parser = clap::value_parser!(u32).range(1..=3600))]
    pub(crate) window_s: u32,
    /// The warm gate's ceiling on each wait, seconds (1..86400).
    #[arg(long, value_name = "S", default_value_t = 1800, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub(crate) timeout_s: u64,
    /// How long each node may take to come back, seconds.
    #[arg(long, value_name = "S", default_value_t = 120)]
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
    #[arg(long, value_parser = |s: &str| Signal::parse(s).map_err(|e| e.to_string()))]
    pub(crate) signal: Signal,
}

/// Runs a `cluster` subcommand: `up` on the engine asked for, every other on the engine its
/// directory holds ([`Cluster::at`]).
pub fn run(cmd: ClusterCommand) -> CliResult {
    let line = match cmd {
        ClusterCommand::Up(a) => return up(a),
        ClusterCommand::Proxy(a) => return cassandra_cmd::proxy(a.dir, a.nodes),
        ClusterCommand::Status(a) => Cluster::at(&a.dir)?.status(a.json),
        ClusterCommand::Down(a) => Cluster::at(&a.dir)?.down(),
        ClusterCommand::Restart(a) => Cluster::at(&a.dir)?.restart(a.node, a.down_s, Duration::from_secs(a.up_timeout_s)),
        ClusterCommand::RollingRestart(a) => return rolling_restart(a),
        ClusterCommand::Pause(a) => Cluster::at(&a.dir)?.pause(a.node, a.for_s),
        ClusterCommand::Delay(a) => Cluster::at(&a.dir)?.delay(a.node, a.ms),
        ClusterCommand::SlowDisk(a) => {
            let s = SlowDisk {
                factor: a.factor,
                on: a.on,
                off: a.off,
            };
            Cluster::at(&a.dir)?.slow_disk(a.node, s)
        }
        ClusterCommand::Signal(a) => Cluster::at(&a.dir)?.signal(a.id, a.signal),
        ClusterCommand::Switch(a) => Cluster::at(&a.dir)?.switch(a.coordinator_policy),
    }?;
    println!("{line}");
    Ok(())
}

fn up(a: UpArgs) -> CliResult {
    let req = UpRequest {
        engine: a.engine,
        nodes: a.nodes,
        dir: a.dir,
        node: NodeFlags {
            config: a.config,
            policy: a.policy,
            policy_params: a.policy_params,
            wait_timeout: Duration::from_secs(a.wait_timeout_s),
            zones: a.zones,
        },
        cassandra: a.cassandra.flags(),
    };
    let lines = replica_lb_engine::up(&req, &mut |line| eprintln!("{line}"))?;
    println!("{lines}");
    Ok(())
}

fn rolling_restart(a: RollingRestartArgs) -> CliResult {
    let rule = WarmRule::new(a.within).map_err(CliError::usage)?;
    let pace = match a.interval_s {
        Some(s) => Pace::AfterUp {
            interval: Duration::from_secs(s),
        },
        None => Pace::Warm {
            timeout: Duration::from_secs(a.timeout_s),
        },
    };
    let plan = RollingPlan {
        pace,
        rule,
        window: Duration::from_secs(a.window_s as u64),
        down_s: a.down_s,
    };
    let up_timeout = Duration::from_secs(a.up_timeout_s);
    let record = Cluster::at(&a.dir)?.rolling_restart(plan, up_timeout, &mut |line| eprintln!("{line}"))?;
    let warm = record.nodes.iter().filter(|n| n.warm_at_s.is_some()).count();
    println!(
        "restarted {} node(s) ({} gate), {warm} seen warm, {}; record in {}",
        record.nodes.len(),
        record.gate,
        record
            .duration_s
            .map_or("duration not known".to_string(), |d| format!("{d:.0} s from the first kill")),
        a.dir.join(rolling::RECORD_FILE).display()
    );
    Ok(())
}
