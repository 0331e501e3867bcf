//! `replica-lb cluster up --engine cassandra` and the hidden `cluster proxy`: starting an Apache
//! Cassandra cluster (every other `cluster` command goes through [`replica_lb_engine`]).

use crate::error::{CliError, CliResult};
use clap::Args;
use replica_lb_cassandra::cgroup::DiskLimits;
use replica_lb_cassandra::plugin::{self, CoordinatorPolicy, PluginSettings};
use replica_lb_cassandra::{config::NodeSettings, CassandraUp};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `cluster up`'s settings of the Cassandra engine.
#[derive(Args, Debug)]
pub struct CassandraUpArgs {
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
}

impl CassandraUpArgs {
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
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    }
}

/// `cluster up --engine cassandra` of `nodes` nodes in `dir` (`policy_given`: the node
/// engine's `--policy` was given, which Cassandra refuses).
pub fn up(nodes: u32, dir: &Path, policy_given: bool, a: &CassandraUpArgs) -> CliResult {
    if policy_given {
        return Err(CliError::usage(
            "--policy sets the node engine's coordinator policy; on Cassandra use --coordinator-policy dynamic-snitch|naive|hwlb|unified, and clients choose theirs (bench --client-policy)",
        ));
    }
    let disk = match (a.page_cache_mb, a.disk_read_iops) {
        (Some(page_cache_mb), Some(read_iops)) => Some(DiskLimits { page_cache_mb, read_iops }),
        (None, None) => None,
        (Some(_), None) => return Err(CliError::usage("--page-cache-mb needs --disk-read-iops too")),
        (None, Some(_)) => return Err(CliError::usage("--disk-read-iops needs --page-cache-mb too")),
    };
    let settings = NodeSettings {
        heap_mb: a.heap_mb,
        row_cache_mb: a.row_cache_mb,
        chunk_cache_mb: a.chunk_cache_mb,
        disk,
        ..NodeSettings::default()
    };
    settings.validate().map_err(CliError::usage)?;
    let policy = a
        .coordinator_policy
        .as_deref()
        .map(CoordinatorPolicy::parse)
        .transpose()
        .map_err(|e| CliError::usage(format!("--coordinator-policy: {e}")))?
        .unwrap_or(CoordinatorPolicy::DynamicSnitch);
    if !policy.needs_plugin() {
        for (given, flag) in [
            (a.hit_rate_tick_ms != 10_000, "--hit-rate-tick-ms"),
            (a.hit_rate_window_ms != 60_000, "--hit-rate-window-ms"),
            (a.read_cl != "quorum", "--read-cl"),
        ] {
            if given {
                return Err(CliError::usage(format!(
                    "{flag} sets the replica-lb plug-in, which Cassandra as shipped (dynamic-snitch) does not run: give --coordinator-policy naive|hwlb|unified too"
                )));
            }
        }
    }
    let mut progress = |line: &str| eprintln!("{line}");
    let (settings, coordinator_policy) = if policy.needs_plugin() {
        let plugin = PluginSettings {
            tick_ms: a.hit_rate_tick_ms,
            window_ms: a.hit_rate_window_ms,
            read_cl: a.read_cl.to_uppercase(),
            ..PluginSettings::new(policy)
        };
        plugin
            .validate()
            .map_err(|e| CliError::usage(format!("--coordinator-policy: {e}")))?;
        let jar = plugin::jar(&mut progress).map_err(CliError::failed)?;
        let installed = plugin.install(settings, jar).map_err(CliError::usage)?;
        (installed, Some(policy.as_str().to_string()))
    } else {
        (settings, None)
    };
    let opts = CassandraUp {
        nodes,
        dir: dir.to_path_buf(),
        settings,
        proxy_program: std::env::current_exe().map_err(|e| CliError::failed(format!("cannot find this program: {e}")))?,
        node_timeout: Duration::from_secs(a.node_timeout_s.max(1)),
        coordinator_policy,
    };
    let cluster = replica_lb_cassandra::up(&opts, &mut progress).map_err(CliError::failed)?;
    for n in &cluster.nodes {
        println!("node {}: cql {} (node {}) pid {}", n.id, n.cql, n.node_cql, n.pid);
    }
    println!(
        "Cassandra {} cluster of {} node(s) up{}; contact points {}; {}",
        cluster.version,
        cluster.nodes.len(),
        cluster
            .coordinator_policy
            .as_deref()
            .map(|p| format!(" with the replica-lb plug-in ({p})"))
            .unwrap_or_else(|| " as shipped (dynamic snitch on, no plug-in)".into()),
        cluster.contact_points().iter().map(|a| a.to_string()).collect::<Vec<_>>().join(","),
        dir.join(replica_lb_launcher::CLUSTER_FILE).display()
    );
    Ok(())
}

/// The hidden `cluster proxy`: runs until stopped.
pub fn proxy(dir: PathBuf, nodes: u32) -> CliResult {
    if !(1..=replica_lb_cassandra::cluster::MAX_NODES).contains(&nodes) {
        return Err(CliError::usage(format!(
            "--nodes {nodes}: 1..{}",
            replica_lb_cassandra::cluster::MAX_NODES
        )));
    }
    replica_lb_cassandra::proxy::run(&dir, nodes).map_err(CliError::failed)
}
