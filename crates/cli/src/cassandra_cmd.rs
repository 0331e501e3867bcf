//! `cluster up`'s flags of the Cassandra engine and the hidden `cluster proxy` (`cluster up`
//! and every other `cluster` command go through [`replica_lb_engine`]).

use crate::error::{CliError, CliResult};
use clap::Args;
use replica_lb_cassandra::config::SavedCaches;
use replica_lb_cassandra::plugin::CoordinatorPolicy;
use replica_lb_engine::CassandraFlags;
use std::path::PathBuf;

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
    #[arg(long, value_name = "NAME", value_parser = CoordinatorPolicy::parse)]
    pub(crate) coordinator_policy: Option<CoordinatorPolicy>,
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
    /// Cassandra: save each node's row cache to disk every this many seconds and load it at
    /// start, Cassandra's own remedy for a cold restart (0 = never, as shipped).
    #[arg(long, value_name = "S", default_value_t = SavedCaches::default().row_cache_save_period_s)]
    pub(crate) row_cache_save_period_s: u32,
    /// Cassandra: the longest a starting node spends loading its saved caches before it
    /// answers, seconds (as shipped: 30).
    #[arg(long, value_name = "S", default_value_t = SavedCaches::default().cache_load_timeout_s)]
    pub(crate) cache_load_timeout_s: u32,
}

impl CassandraUpArgs {
    /// The settings as the engine takes them.
    pub fn flags(&self) -> CassandraFlags {
        CassandraFlags {
            heap_mb: self.heap_mb,
            node_timeout_s: self.node_timeout_s,
            coordinator_policy: self.coordinator_policy,
            hit_rate_tick_ms: self.hit_rate_tick_ms,
            hit_rate_window_ms: self.hit_rate_window_ms,
            read_cl: self.read_cl.clone(),
            row_cache_mb: self.row_cache_mb,
            chunk_cache_mb: self.chunk_cache_mb,
            page_cache_mb: self.page_cache_mb,
            disk_read_iops: self.disk_read_iops,
            row_cache_save_period_s: self.row_cache_save_period_s,
            cache_load_timeout_s: self.cache_load_timeout_s,
        }
    }
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
