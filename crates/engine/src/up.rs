//! `cluster up` on either engine: the flags as given ([`UpRequest`]), checked against the
//! engine asked for, turned into its settings, and the cluster started.

use crate::error::{EngineError, EngineResult};
use replica_lb_cassandra::cgroup::DiskLimits;
use replica_lb_cassandra::plugin::{self, CoordinatorPolicy, PluginSettings};
use replica_lb_cassandra::{
    config::{NodeSettings, SavedCaches},
    CassandraUp, Engine,
};
use replica_lb_launcher::{NodeCommand, UpOptions, ZoneLayout};
use replica_lb_node::NodeConfig;
use replica_lb_policy::{ParamTable, ParamValue};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

/// What `cluster up` was given, whichever engine.
#[derive(Clone, Debug)]
pub struct UpRequest {
    /// Which engine (`--engine`).
    pub engine: Engine,
    /// How many nodes.
    pub nodes: u32,
    /// The cluster directory.
    pub dir: PathBuf,
    /// The node engine's settings.
    pub node: NodeFlags,
    /// The Cassandra engine's settings.
    pub cassandra: CassandraFlags,
}

/// The node engine's `cluster up` settings.
#[derive(Clone, Debug)]
pub struct NodeFlags {
    /// A node TOML config every node shares (`--config`).
    pub config: Option<PathBuf>,
    /// The coordinator policy of every node (`--policy`).
    pub policy: Option<String>,
    /// Its parameter overrides, NAME=VALUE (`--policy-param`).
    pub policy_params: Vec<String>,
    /// How long to wait for the nodes to see each other.
    pub wait_timeout: Duration,
    /// Zones the nodes are spread over (node i in zone i mod ZONES).
    pub zones: u32,
}

/// The Cassandra engine's `cluster up` settings (defaults as `cluster up` has them).
#[derive(Clone, Debug)]
pub struct CassandraFlags {
    /// JVM heap of each node, MiB.
    pub heap_mb: u32,
    /// How long one node may take to answer CQL, seconds.
    pub node_timeout_s: u64,
    /// The coordinator policy (default `dynamic-snitch`: Cassandra as shipped).
    pub coordinator_policy: Option<CoordinatorPolicy>,
    /// The plug-in's hit-rate tick, ms (default 10,000).
    pub hit_rate_tick_ms: u64,
    /// The plug-in's hit-rate window, ms (default 60,000).
    pub hit_rate_window_ms: u64,
    /// The consistency level the plug-in's reads use (default `quorum`).
    pub read_cl: String,
    /// Each node's row cache, MiB (default 0: off).
    pub row_cache_mb: u32,
    /// Each node's chunk cache, MiB (default 64).
    pub chunk_cache_mb: u32,
    /// Each node's page cache cap, MiB (with `disk_read_iops`).
    pub page_cache_mb: Option<u32>,
    /// Each node's disk reads per second (with `page_cache_mb`).
    pub disk_read_iops: Option<u32>,
    /// Seconds between saves of each node's row cache, loaded again at start (0 = never).
    pub row_cache_save_period_s: u32,
    /// The longest a starting node spends loading its saved caches, seconds (default 30).
    pub cache_load_timeout_s: u32,
}

impl CassandraFlags {
    /// The first of the settings only Cassandra takes that was given, as its flag.
    pub fn first_given(&self) -> Option<&'static str> {
        [
            (self.coordinator_policy.is_some(), "--coordinator-policy"),
            (self.hit_rate_tick_ms != 10_000, "--hit-rate-tick-ms"),
            (self.hit_rate_window_ms != 60_000, "--hit-rate-window-ms"),
            (self.read_cl != "quorum", "--read-cl"),
            (self.row_cache_mb != 0, "--row-cache-mb"),
            (self.chunk_cache_mb != 64, "--chunk-cache-mb"),
            (self.page_cache_mb.is_some(), "--page-cache-mb"),
            (self.disk_read_iops.is_some(), "--disk-read-iops"),
            (
                self.row_cache_save_period_s != SavedCaches::default().row_cache_save_period_s,
                "--row-cache-save-period-s",
            ),
            (
                self.cache_load_timeout_s != SavedCaches::default().cache_load_timeout_s,
                "--cache-load-timeout-s",
            ),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    }
}

/// Parses `NAME=VALUE` items (`flag` names them in the error) into `table`.
pub fn parse_params(flag: &str, items: &[String], table: &mut ParamTable) -> Result<(), EngineError> {
    for item in items {
        let Some((name, value)) = item.split_once('=') else {
            return Err(EngineError::usage(format!("{flag} '{item}' is not NAME=VALUE")));
        };
        table.insert(name.trim().to_string(), ParamValue::parse_text(value.trim()));
    }
    Ok(())
}

/// Starts the cluster `req` asks for; returns the lines to show (each node, then the cluster).
/// `progress` hears what takes time (building the plug-in).
pub fn up(req: &UpRequest, progress: &mut dyn FnMut(&str)) -> EngineResult {
    match req.engine {
        Engine::Cassandra => cassandra_up(req, progress),
        Engine::Node => node_up(req),
    }
}

/// `cluster up` of node processes.
fn node_up(req: &UpRequest) -> EngineResult {
    if let Some(flag) = req.cassandra.first_given() {
        return Err(EngineError::usage(format!(
            "{flag} is for --engine cassandra; the node engine takes its settings from --config and --policy"
        )));
    }
    let a = &req.node;
    let mut base = match &a.config {
        Some(p) => NodeConfig::from_file(p)?,
        None => NodeConfig::default(),
    };
    if let Some(p) = &a.policy {
        base.policy.name = p.clone();
    }
    parse_params("--policy-param", &a.policy_params, &mut base.policy.params)?;
    base.validate()?;
    let opts = UpOptions {
        nodes: req.nodes,
        dir: req.dir.clone(),
        base,
        command: NodeCommand::current_exe_node()?,
        wait_timeout: a.wait_timeout,
        zones: ZoneLayout::RoundRobin(a.zones),
    };
    let launched = replica_lb_launcher::up(&opts)?;
    let mut out = String::new();
    for n in &launched.file.nodes {
        let _ = writeln!(
            out,
            "node {}: grpc {} metrics http://{}/metrics pid {}",
            n.id, n.grpc, n.metrics, n.pid
        );
    }
    let _ = write!(
        out,
        "cluster of {} node(s) up; {}",
        launched.file.nodes.len(),
        req.dir.join(replica_lb_launcher::CLUSTER_FILE).display()
    );
    Ok(out)
}

/// Each Cassandra node's settings from the flags, checked.
fn node_settings(a: &CassandraFlags) -> Result<NodeSettings, EngineError> {
    let disk = match (a.page_cache_mb, a.disk_read_iops) {
        (Some(page_cache_mb), Some(read_iops)) => Some(DiskLimits { page_cache_mb, read_iops }),
        (None, None) => None,
        (Some(_), None) => return Err(EngineError::usage("--page-cache-mb needs --disk-read-iops too")),
        (None, Some(_)) => return Err(EngineError::usage("--disk-read-iops needs --page-cache-mb too")),
    };
    let settings = NodeSettings {
        heap_mb: a.heap_mb,
        row_cache_mb: a.row_cache_mb,
        chunk_cache_mb: a.chunk_cache_mb,
        disk,
        saved_caches: SavedCaches {
            row_cache_save_period_s: a.row_cache_save_period_s,
            cache_load_timeout_s: a.cache_load_timeout_s,
        },
        ..NodeSettings::default()
    };
    settings.validate().map_err(EngineError::usage)?;
    Ok(settings)
}

/// The coordinator policy from the flags; the plug-in's settings refused without the plug-in.
fn coordinator_policy(a: &CassandraFlags) -> Result<CoordinatorPolicy, EngineError> {
    let policy = a.coordinator_policy.unwrap_or(CoordinatorPolicy::DynamicSnitch);
    if !policy.needs_plugin() {
        for (given, flag) in [
            (a.hit_rate_tick_ms != 10_000, "--hit-rate-tick-ms"),
            (a.hit_rate_window_ms != 60_000, "--hit-rate-window-ms"),
            (a.read_cl != "quorum", "--read-cl"),
        ] {
            if given {
                return Err(EngineError::usage(format!(
                    "{flag} sets the replica-lb plug-in, which Cassandra as shipped (dynamic-snitch) does not run: give --coordinator-policy naive|hwlb|unified too"
                )));
            }
        }
    }
    Ok(policy)
}

/// `cluster up` of Apache Cassandra, with the replica-lb plug-in when the coordinator policy
/// needs it (built on first use).
fn cassandra_up(req: &UpRequest, progress: &mut dyn FnMut(&str)) -> EngineResult {
    if req.node.policy.is_some() {
        return Err(EngineError::usage(
            "--policy sets the node engine's coordinator policy; on Cassandra use --coordinator-policy dynamic-snitch|naive|hwlb|unified, and clients choose theirs (bench --client-policy)",
        ));
    }
    let a = &req.cassandra;
    let settings = node_settings(a)?;
    let policy = coordinator_policy(a)?;
    let (settings, coordinator_policy) = if policy.needs_plugin() {
        let plugin = PluginSettings {
            tick_ms: a.hit_rate_tick_ms,
            window_ms: a.hit_rate_window_ms,
            read_cl: a.read_cl.to_uppercase(),
            ..PluginSettings::new(policy)
        };
        plugin
            .validate()
            .map_err(|e| EngineError::usage(format!("--coordinator-policy: {e}")))?;
        let jar = plugin::jar(progress).map_err(EngineError::failed)?;
        let installed = plugin.install(settings, jar).map_err(EngineError::usage)?;
        (installed, Some(policy))
    } else {
        (settings, None)
    };
    let opts = CassandraUp {
        nodes: req.nodes,
        dir: req.dir.clone(),
        settings,
        proxy_program: std::env::current_exe().map_err(|e| EngineError::failed(format!("cannot find this program: {e}")))?,
        node_timeout: Duration::from_secs(a.node_timeout_s.max(1)),
        coordinator_policy,
    };
    let cluster = replica_lb_cassandra::up(&opts, progress).map_err(EngineError::failed)?;
    let mut out = String::new();
    for n in &cluster.nodes {
        let _ = writeln!(out, "node {}: cql {} (node {}) pid {}", n.id, n.cql, n.node_cql, n.pid);
    }
    let _ = write!(
        out,
        "Cassandra {} cluster of {} node(s) up{}; contact points {}; {}",
        cluster.version,
        cluster.nodes.len(),
        cluster
            .coordinator_policy
            .map(|p| format!(" with the replica-lb plug-in ({})", p.as_str()))
            .unwrap_or_else(|| " as shipped (dynamic snitch on, no plug-in)".into()),
        cluster.contact_points().iter().map(|a| a.to_string()).collect::<Vec<_>>().join(","),
        req.dir.join(replica_lb_launcher::CLUSTER_FILE).display()
    );
    Ok(out)
}
