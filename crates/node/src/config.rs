//! A node's configuration: a TOML file (every key optional, with defaults), overridable by
//! command-line flags, checked before anything starts.

use crate::error::NodeError;
use replica_lb_policy::{ConsistencyLevel, ParamTable};
use replica_lb_workload::placement::Placement;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// The most nodes a cluster may have (node ids are 0..MAX_NODES-1).
pub const MAX_NODES: u32 = 1024;

/// Everything one node needs to run.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NodeConfig {
    /// This node's id, unique in the cluster, 0..1023.
    pub id: u32,
    /// Where the gRPC API (public and internode) listens.
    pub grpc_addr: SocketAddr,
    /// Where the Prometheus text endpoint (`/metrics`) listens.
    pub metrics_addr: SocketAddr,
    /// Where gossip (UDP) listens.
    pub gossip_addr: SocketAddr,
    /// Gossip addresses of other nodes to join through (empty: start a new cluster).
    pub seeds: Vec<String>,
    /// How long to wait for a seed to answer before giving up, ms.
    pub seed_timeout_ms: u64,
    /// Nodes with a different cluster id ignore each other.
    pub cluster_id: String,
    /// Where the on-disk store lives (created if missing).
    pub data_dir: PathBuf,
    /// Replicas per key.
    pub replication_factor: u32,
    /// Tokens per node on the ring (1: evenly spaced, one per node; more: random vnodes).
    pub vnodes: u32,
    /// Replica placement on the ring: `ring` or `one-per-zone` (one replica per zone while
    /// there are zones left); [`replica_lb_workload::placement`], shared with the simulator.
    pub placement: String,
    /// Row-cache capacity in rows (0: no cache, every read goes to disk).
    pub cache_rows: u64,
    /// A coordinator's read time-out when the client gives none, ms.
    pub read_timeout_ms: u32,
    /// A coordinator's write time-out when the client gives none, ms.
    pub write_timeout_ms: u32,
    /// Consistency level used when a request leaves it unspecified.
    pub default_consistency: String,
    /// Largest key accepted, bytes.
    pub max_key_bytes: u32,
    /// Largest value accepted, bytes.
    pub max_value_bytes: u32,
    /// Largest gRPC message accepted, bytes (bigger ones get an error status).
    pub max_message_bytes: u32,
    /// Gossip round interval, ms.
    pub gossip_interval_ms: u64,
    /// Failure-detector phi threshold (higher: slower, surer detection).
    pub phi_threshold: f64,
    /// Hit-rate moving-average tick, ms (published: 10 s).
    pub hit_rate_tick_ms: u64,
    /// Hit-rate moving-average window, ms (published: 60 s).
    pub hit_rate_window_ms: u64,
    /// Extra delay before every replica read reply, ms (a fault; 0 = none).
    pub reply_delay_ms: u32,
    /// The node's zone (rack or availability zone), gossiped to peers and told to their
    /// policies; nodes without zones all sit in zone 0.
    pub zone: u32,
    /// Time-out to connect to a peer, ms.
    pub connect_timeout_ms: u64,
    /// Tokio worker threads.
    pub worker_threads: u32,
    /// The coordinator-side replica-selection policy.
    pub policy: PolicyConfig,
    /// The emulated slow disk on the cache-miss path.
    pub slow_disk: SlowDiskConfig,
}

/// Which policy a coordinator runs, by registry name, with parameter overrides.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PolicyConfig {
    /// A registered coordinator-side policy (`naive`, `hwlb`, ...).
    pub name: String,
    /// Parameter overrides (name = value).
    pub params: ParamTable,
}

/// The emulated slow disk: at most `concurrency` misses are served at once, each taking a
/// service time drawn from a distribution, before the real read.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SlowDiskConfig {
    /// Off: cache misses cost only the real read.
    pub enabled: bool,
    /// Reads served at once.
    pub concurrency: u32,
    /// Mean service time, microseconds.
    pub service_time_mean_us: u64,
    /// `constant`, `exponential`, `lognormal` or `pareto` (shape 2): the simulator's distributions.
    pub distribution: String,
    /// Shape of the log-normal (sigma of the underlying normal).
    pub lognormal_sigma: f64,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        PolicyConfig {
            name: "naive".into(),
            params: ParamTable::new(),
        }
    }
}

impl Default for SlowDiskConfig {
    fn default() -> Self {
        SlowDiskConfig {
            enabled: false,
            concurrency: 8,
            service_time_mean_us: 10_000,
            distribution: "exponential".into(),
            lognormal_sigma: 0.5,
        }
    }
}

impl Default for NodeConfig {
    fn default() -> Self {
        let local = |port: u16| SocketAddr::from(([127, 0, 0, 1], port));
        NodeConfig {
            id: 0,
            grpc_addr: local(9400),
            metrics_addr: local(9500),
            gossip_addr: local(9600),
            seeds: Vec::new(),
            seed_timeout_ms: 10_000,
            cluster_id: "replica-lb".into(),
            data_dir: PathBuf::from("replica-lb-data"),
            replication_factor: 3,
            vnodes: 1,
            placement: "ring".into(),
            cache_rows: 100_000,
            read_timeout_ms: 5_000,
            write_timeout_ms: 5_000,
            default_consistency: "quorum".into(),
            max_key_bytes: 1024,
            max_value_bytes: 1 << 20,
            max_message_bytes: (1 << 20) + 64 * 1024,
            gossip_interval_ms: 200,
            phi_threshold: 8.0,
            hit_rate_tick_ms: 10_000,
            hit_rate_window_ms: 60_000,
            reply_delay_ms: 0,
            zone: 0,
            connect_timeout_ms: 1_000,
            worker_threads: 2,
            policy: PolicyConfig::default(),
            slow_disk: SlowDiskConfig::default(),
        }
    }
}

impl NodeConfig {
    /// The placement rule; `validate` has checked the name, so an unknown one cannot reach
    /// here (it would read as `ring`).
    pub fn placement(&self) -> Placement {
        Placement::parse(&self.placement).unwrap_or(Placement::Ring)
    }

    /// Reads a TOML file; unknown keys and bad values are errors naming the key.
    pub fn from_file(path: &Path) -> Result<NodeConfig, NodeError> {
        let text =
            std::fs::read_to_string(path).map_err(|e| NodeError::Config(format!("cannot read config file {}: {e}", path.display())))?;
        NodeConfig::from_toml(&text).map_err(|e| match e {
            NodeError::Config(m) => NodeError::Config(format!("{}: {m}", path.display())),
            other => other,
        })
    }

    /// Parses TOML text.
    pub fn from_toml(text: &str) -> Result<NodeConfig, NodeError> {
        toml::from_str(text).map_err(|e| NodeError::Config(one_line(&e.to_string())))
    }

    /// The config as TOML text.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }

    /// The default consistency level, parsed.
    pub fn default_cl(&self) -> Result<ConsistencyLevel, NodeError> {
        ConsistencyLevel::parse(&self.default_consistency).map_err(|e| NodeError::Config(format!("default_consistency: {e}")))
    }

    /// The slow disk's service-time distribution: the simulator's own ([`replica_lb_workload::Dist`]),
    /// so an emulated disk and a simulated one draw alike.
    pub fn service_time_dist(&self) -> Result<replica_lb_workload::Dist, NodeError> {
        let d = &self.slow_disk;
        let sigma = (d.distribution == "lognormal").then_some(d.lognormal_sigma);
        replica_lb_workload::Dist::new(&d.distribution, d.service_time_mean_us as f64, sigma, None)
            .map_err(|e| NodeError::Config(format!("slow_disk (distribution = \"{}\"): {e}", d.distribution)))
    }

    /// Checks every value; the error names the key, the value and what is allowed.
    pub fn validate(&self) -> Result<(), NodeError> {
        let bad = |key: &str, value: String, allowed: &str| {
            Err(NodeError::Config(format!("{key} = {value} is not allowed; it must be {allowed}")))
        };
        if self.id >= MAX_NODES {
            return bad("id", self.id.to_string(), "an integer in [0, 1023]");
        }
        if !(1..=16).contains(&self.replication_factor) {
            return bad("replication_factor", self.replication_factor.to_string(), "an integer in [1, 16]");
        }
        if !(1..=1024).contains(&self.vnodes) {
            return bad("vnodes", self.vnodes.to_string(), "an integer in [1, 1024]");
        }
        if let Err(e) = Placement::parse(&self.placement) {
            return Err(NodeError::Config(format!("placement: {e}")));
        }
        if self.read_timeout_ms == 0 || self.write_timeout_ms == 0 {
            return bad("read_timeout_ms/write_timeout_ms", "0".into(), "a positive number of ms");
        }
        if self.max_key_bytes == 0 || self.max_value_bytes == 0 {
            return bad("max_key_bytes/max_value_bytes", "0".into(), "positive");
        }
        if self.max_message_bytes < 1024 || self.max_message_bytes > 64 << 20 {
            return bad("max_message_bytes", self.max_message_bytes.to_string(), "in [1024, 67108864]");
        }
        if !(10..=60_000).contains(&self.gossip_interval_ms) {
            return bad("gossip_interval_ms", self.gossip_interval_ms.to_string(), "in [10, 60000]");
        }
        if !(self.phi_threshold.is_finite() && self.phi_threshold > 0.0) {
            return bad("phi_threshold", self.phi_threshold.to_string(), "a positive number");
        }
        if self.hit_rate_tick_ms == 0 || self.hit_rate_window_ms == 0 {
            return bad("hit_rate_tick_ms/hit_rate_window_ms", "0".into(), "positive");
        }
        if !(1..=64).contains(&self.worker_threads) {
            return bad("worker_threads", self.worker_threads.to_string(), "an integer in [1, 64]");
        }
        if self.connect_timeout_ms == 0 {
            return bad("connect_timeout_ms", "0".into(), "positive");
        }
        if self.slow_disk.concurrency == 0 || self.slow_disk.concurrency > 4096 {
            return bad(
                "slow_disk.concurrency",
                self.slow_disk.concurrency.to_string(),
                "an integer in [1, 4096]",
            );
        }
        if !(1..=60_000_000).contains(&self.slow_disk.service_time_mean_us) {
            return bad(
                "slow_disk.service_time_mean_us",
                self.slow_disk.service_time_mean_us.to_string(),
                "an integer in [1, 60000000]",
            );
        }
        if !(self.slow_disk.lognormal_sigma.is_finite() && self.slow_disk.lognormal_sigma > 0.0 && self.slow_disk.lognormal_sigma <= 4.0) {
            return bad(
                "slow_disk.lognormal_sigma",
                self.slow_disk.lognormal_sigma.to_string(),
                "a number in (0, 4]",
            );
        }
        self.service_time_dist()?;
        self.default_cl()?;
        if self.data_dir.as_os_str().is_empty() {
            return bad("data_dir", "''".into(), "a directory path");
        }
        crate::policy_runtime::PolicyHandle::build(&self.policy.name, &self.policy.params, replica_lb_policy::NodeId(0), 0)
            .map_err(NodeError::Config)?;
        Ok(())
    }
}

/// Collapses a multi-line parser message into one line.
fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('|'))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate_and_round_trip() {
        let c = NodeConfig::default();
        c.validate().unwrap();
        let back = NodeConfig::from_toml(&c.to_toml()).unwrap();
        assert_eq!(back.grpc_addr, c.grpc_addr);
        assert_eq!(back.policy.name, "naive");
    }

    #[test]
    fn errors_name_the_key() {
        let e = NodeConfig::from_toml("nope = 3").unwrap_err().to_string();
        assert!(e.contains("nope"), "{e}");
        let mut c = NodeConfig::from_toml("[policy]\nname = \"hwlb\"\nparams = { hit_rate_cap = 0.9 }").unwrap();
        c.validate().unwrap();
        c.policy.name = "zzz".into();
        assert!(c.validate().unwrap_err().to_string().contains("zzz"));
        let c = NodeConfig::from_toml("replication_factor = 0").unwrap();
        assert!(c.validate().unwrap_err().to_string().contains("replication_factor"));
        let c = NodeConfig::from_toml("[slow_disk]\ndistribution = \"weird\"").unwrap();
        assert!(c.validate().unwrap_err().to_string().contains("weird"));
        let c = NodeConfig::from_toml("placement = \"nts\"").unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("placement 'nts' is not one of: ring, one-per-zone"), "{e}");
        let c = NodeConfig::from_toml("placement = \"one-per-zone\"").unwrap();
        c.validate().unwrap();
        assert_eq!(c.placement(), Placement::OnePerZone);
    }
}
