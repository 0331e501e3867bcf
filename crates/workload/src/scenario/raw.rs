//! The scenario file as written: serde structs that mirror the TOML one to one. Unknown keys
//! are rejected (`deny_unknown_fields`) and values that later checks need to blame keep their
//! position (`Spanned`). [`super::validate`] turns this into a checked [`super::Scenario`].

use replica_lb_policy::ParamTable;
use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

/// The whole file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawScenario {
    pub name: Option<Spanned<String>>,
    pub description: Option<String>,
    pub seed: Option<Spanned<i64>>,
    pub cluster: Spanned<RawCluster>,
    pub node: Spanned<RawNode>,
    #[serde(default)]
    pub network: Option<Spanned<RawNetwork>>,
    pub clients: Spanned<RawClients>,
    #[serde(default)]
    pub requests: Option<Spanned<RawRequests>>,
    pub run: Spanned<RawRun>,
    #[serde(default)]
    pub feedback: Option<Spanned<RawFeedback>>,
    pub policy: Spanned<RawPolicy>,
    #[serde(default)]
    pub phase: Vec<Spanned<RawPhase>>,
    #[serde(default)]
    pub fault: Vec<Spanned<RawFault>>,
    #[serde(default)]
    pub cassandra: Option<Spanned<RawCassandra>>,
}

/// `[cassandra]`: how the nodes run when the scenario runs on Apache Cassandra.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCassandra {
    pub heap_mb: Option<Spanned<i64>>,
    pub row_cache_mb: Option<Spanned<i64>>,
    pub chunk_cache_mb: Option<Spanned<i64>>,
    pub page_cache_mb: Option<Spanned<i64>>,
    pub disk_read_iops: Option<Spanned<i64>>,
    pub row_cache_save_period_s: Option<Spanned<i64>>,
    pub cache_load_timeout_s: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCluster {
    pub nodes: Spanned<i64>,
    pub zones: Option<Spanned<Vec<String>>>,
    pub replication_factor: Spanned<i64>,
    pub placement: Option<Spanned<String>>,
    pub vnodes: Option<Spanned<i64>>,
    pub routing: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawNode {
    pub cpu_concurrency: Spanned<i64>,
    pub cpu_service: Spanned<RawDist>,
    pub coordinator_service: Option<Spanned<RawDist>>,
    pub extra_delay: Option<Spanned<RawExtra>>,
    pub disk_concurrency: Option<Spanned<i64>>,
    pub disk_service: Option<Spanned<RawDist>>,
    pub disk_iops: Option<Spanned<f64>>,
    pub disk_burst_ms: Option<Spanned<f64>>,
    pub disk_reads_per_miss: Option<Spanned<f64>>,
    pub read_threads: Option<Spanned<i64>>,
    pub index_pages: Option<Spanned<i64>>,
    pub cache_rows: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDist {
    pub dist: String,
    pub mean_us: f64,
    pub sigma: Option<f64>,
    pub shape: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawExtra {
    pub probability: f64,
    pub dist: String,
    pub mean_us: f64,
    pub sigma: Option<f64>,
    pub shape: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawNetwork {
    pub same_zone_us: Option<Spanned<f64>>,
    pub cross_zone_us: Option<Spanned<f64>>,
    pub jitter_us: Option<Spanned<f64>>,
    pub nic_gbps: Option<Spanned<f64>>,
    pub compression: Option<Spanned<RawCompression>>,
    #[serde(default)]
    pub link: Vec<Spanned<RawLink>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCompression {
    pub ratio: f64,
    pub cpu_us_per_kb: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSize {
    pub dist: String,
    pub mean_bytes: f64,
    pub sigma: Option<f64>,
    pub shape: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLink {
    pub from: String,
    pub to: String,
    pub one_way_us: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawClients {
    pub count: Spanned<i64>,
    pub zones: Option<Spanned<Vec<String>>>,
    pub token_aware: Option<bool>,
    pub arrival: Spanned<String>,
    pub rate_per_s: Option<Spanned<f64>>,
    pub outstanding: Option<Spanned<i64>>,
    pub think_time_us: Option<Spanned<f64>>,
    pub demand_skew: Option<Spanned<RawSkew>>,
    pub keys: Spanned<RawKeys>,
    pub write_fraction: Option<Spanned<f64>>,
    pub candidates: Option<Spanned<String>>,
    pub bursts: Option<Spanned<RawBursts>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawBursts {
    pub every_s: f64,
    pub duration_ms: f64,
    pub factor: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSkew {
    pub clients: f64,
    pub requests: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawKeys {
    pub pattern: String,
    pub count: i64,
    pub hot_keys: Option<i64>,
    pub hot_fraction: Option<f64>,
    pub exponent: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRequests {
    pub consistency: Option<Spanned<String>>,
    pub warmup_consistency: Option<Spanned<String>>,
    pub read_timeout_ms: Option<Spanned<f64>>,
    pub speculative_retry: Option<Spanned<String>>,
    pub shadow_read_fraction: Option<Spanned<f64>>,
    pub request_bytes: Option<Spanned<f64>>,
    pub value_bytes: Option<Spanned<RawSize>>,
    pub multi: Option<Spanned<RawMulti>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMulti {
    pub fraction: f64,
    pub keys: i64,
    pub mode: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRun {
    pub warmup_s: Option<Spanned<f64>>,
    pub duration_s: Spanned<i64>,
    pub failure_detection_ms: Option<Spanned<f64>>,
    pub client_failure_detection_ms: Option<Spanned<f64>>,
    pub up_detection_ms: Option<Spanned<f64>>,
    pub restart_start_ms: Option<Spanned<f64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFeedback {
    pub hit_rate_tick_s: Option<Spanned<f64>>,
    pub hit_rate_window_s: Option<Spanned<f64>>,
    pub piggyback: Option<bool>,
    pub load_reports: Option<bool>,
    pub gossip: Option<bool>,
    pub gossip_delay_ms: Option<Spanned<f64>>,
    pub gossip_heartbeat: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPolicy {
    pub client: Option<Spanned<String>>,
    pub coordinator: Option<Spanned<String>>,
    pub both_side: Option<Spanned<String>>,
    pub compare: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    pub params: BTreeMap<String, Spanned<ParamTable>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPhase {
    pub name: String,
    pub start_s: i64,
    pub end_s: i64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFault {
    pub kind: Spanned<String>,
    pub node: Option<i64>,
    pub nodes: Option<Vec<i64>>,
    pub zone: Option<String>,
    pub stagger_s: Option<f64>,
    pub at_s: Option<f64>,
    pub duration_s: Option<f64>,
    pub every_s: Option<f64>,
    pub until_s: Option<f64>,
    pub added_delay_us: Option<f64>,
    pub factor: Option<f64>,
    pub stage: Option<String>,
    pub interval_ms: Option<f64>,
    pub probability: Option<f64>,
    pub gate: Option<String>,
    pub gate_within: Option<f64>,
    pub gate_window_s: Option<i64>,
    pub gate_timeout_s: Option<f64>,
    pub cache: Option<String>,
}
