//! Scenario files: TOML in, a checked [`Scenario`] out, every mistake reported with its line.
//!
//! The format is documented in docs/scenarios.md. Parsing is two steps: [`raw`] mirrors the
//! file (unknown keys rejected, positions kept), [`validate`] checks values and the topology and
//! converts units (`_us`, `_ms`, `_s` in the file; nanoseconds inside).

mod describe;
mod overrides;
mod raw;
pub mod run_spec;
mod validate;

pub use overrides::{apply_overrides, apply_overrides_noting, Edit};
pub use validate::parse;

use crate::dist::Dist;
use crate::keys::KeySpec;
use replica_lb_metrics::PhaseSpec;
use replica_lb_policy::{ConsistencyLevel, ParamTable, PolicyChoice, Side};
use run_spec::RunSpec;
use std::collections::BTreeMap;
use std::fmt;

/// The most nodes a simulated cluster has. Per-node state is indexed by node id, so the limit
/// is memory and time, not a node-set width; a read still contacts at most
/// [`replica_lb_policy::MAX_REPLICAS`] candidates whatever the cluster size.
pub const MAX_NODES: usize = 4096;
/// Most tokens per node a scenario may give (`cluster.vnodes`).
pub const MAX_VNODES: usize = 1024;
/// The most clients.
pub const MAX_CLIENTS: usize = 100_000;
/// The largest key space (2^40: keys are only drawn and hashed; a node's row cache costs
/// memory per cached row, not per key).
pub const MAX_KEYS: u64 = 1 << 40;
/// The largest row cache of one node, rows (the simulator's cache numbers its rows in 32 bits).
pub const MAX_CACHE_ROWS: u64 = 1 << 30;
/// The most replicas one read may contact (CL plus one speculative retry).
pub const MAX_OPS_PER_REQUEST: usize = 8;
/// The longest measured run, seconds.
pub const MAX_DURATION_S: u32 = 36_000;
/// The most primitive fault actions a timeline expands to.
pub const MAX_FAULT_ACTIONS: usize = 100_000;

/// A scenario-file mistake: what and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    /// 1-based line in the file, when known.
    pub line: Option<usize>,
    /// One line: what is wrong and what is allowed.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "line {l}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl ScenarioError {
    /// `path:line: message` (or `path: message`), the form the CLI prints.
    pub fn render(&self, path: &str) -> String {
        match self.line {
            Some(l) => format!("{path}:{l}: {}", self.message),
            None => format!("{path}: {}", self.message),
        }
    }
}

pub use crate::placement::Placement;

/// Who chooses the replicas.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Routing {
    /// Clients pick a coordinator (client policy); the coordinator picks CL replicas
    /// (coordinator policy). Cassandra/Scylla.
    Coordinator,
    /// Clients pick the CL replicas themselves and send to them directly (the C3 and
    /// queueing simulators); only the client policy is used.
    Direct,
}

/// The cluster's shape.
#[derive(Clone, Debug)]
pub struct Cluster {
    /// Number of nodes.
    pub nodes: usize,
    /// Zone index of each node.
    pub node_zone: Vec<u16>,
    /// Zone names, by index.
    pub zone_names: Vec<String>,
    /// Replicas per key.
    pub replication_factor: usize,
    /// Replica placement.
    pub placement: Placement,
    /// Tokens per node on the ring (1: evenly spaced, one per node; more: random vnodes).
    pub vnodes: u32,
    /// Who chooses replicas.
    pub routing: Routing,
}

/// One node's resources (every node is alike; faults make them differ).
#[derive(Clone, Debug)]
pub struct NodeModel {
    /// Requests the CPU stage serves at once.
    pub cpu_concurrency: u32,
    /// CPU time of a read (includes the cache lookup), and of a write.
    pub cpu_service: Dist,
    /// CPU time of coordinating one request, if modelled.
    pub coordinator_service: Option<Dist>,
    /// An occasional extra delay added to a read's CPU time (GC pauses): probability, delay.
    pub extra_delay: Option<(f64, Dist)>,
    /// The disk stage: concurrency and service time; reads that miss the cache (or every read
    /// when there is no cache) go there.
    pub disk: Option<(u32, Dist)>,
    /// A throttle in front of the disk stage (a cgroup's `blkio.throttle.read_iops_device`).
    pub disk_throttle: Option<DiskThrottle>,
    /// Disk reads one cache miss makes, on average (1: one; 1.2: one, and a second one time in
    /// five, as an index read before the data).
    pub disk_reads_per_miss: f64,
    /// Replica reads a node executes at once (Cassandra's `concurrent_reads`): a read holds a
    /// thread from its start to its reply, its disk reads included; `None`: no limit.
    pub read_threads: Option<u32>,
    /// The pages of the partition index a miss looks its key up in (`node.index_pages`), if
    /// modelled: a miss whose key's page is not in the OS page cache reads it from the disk
    /// first (one more disk read) and the page stays cached; a restart with empty caches drops
    /// them (the page cache of a rebooted node). Keys spread over the pages in token order.
    pub index_pages: Option<u32>,
    /// Row-cache capacity, rows.
    pub cache_rows: Option<usize>,
}

/// `node.disk_burst_ms` when not given: Linux blk-throttle's time slice on a rotational disk
/// (`throtl_slice`, HZ/10), the window within which it lets a throttled group's reads through.
pub const DEFAULT_DISK_BURST_MS: f64 = 100.0;

/// A token bucket in front of a node's disk: reads wait, first come first served, until the
/// bucket lets them through (Linux's blk-throttle, which lets a slice's worth through at once).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DiskThrottle {
    /// Reads let through per second (a disk slow-down divides it).
    pub reads_per_s: f64,
    /// How much of the rate an idle throttle lets through at once, ns (`disk_burst_ms`).
    pub burst_ns: f64,
}

/// One-way latencies.
#[derive(Clone, Debug)]
pub struct NetworkModel {
    /// `zones x zones`, from-major, ns.
    pub one_way_ns: Vec<u64>,
    /// Zones.
    pub zones: usize,
    /// Mean of the exponential jitter added to each message, ns (0 = none).
    pub jitter_mean_ns: f64,
    /// Each node's NIC, bits per second in each direction (`None`: unlimited, no NIC queue).
    pub nic_bits_per_s: Option<f64>,
    /// Compression of every message, client-server and server-server (`None`: off).
    pub compression: Option<Compression>,
}

/// Message compression (LZ4 in the proof of concept): fewer bytes on the wire for CPU time at
/// both ends.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Compression {
    /// Compressed size / original size, in (0, 1].
    pub ratio: f64,
    /// Time to compress (sender) and again to decompress (receiver), ns per original byte.
    pub cpu_ns_per_byte: f64,
}

/// The size of a value, bytes: a [`Dist`] whose samples are read as bytes, not ns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SizeDist(pub Dist);

impl SizeDist {
    /// The size of key `key`'s value, bytes (at least 1): the same key has the same size in every
    /// reply and every run, drawn from the distribution with a generator seeded by the key.
    pub fn bytes_of(&self, key: u64) -> u32 {
        match self.0 {
            Dist::Constant { mean_ns } => mean_ns.max(1.0) as u32,
            d => {
                let mut rng = replica_lb_policy::Rng::seed_from_u64(key ^ 0x5eed_5123_a1b2_c3d4);
                d.sample_ns(&mut rng).clamp(1.0, u32::MAX as f64) as u32
            }
        }
    }
}

/// How clients issue requests.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arrival {
    /// Open loop, exponential gaps, total rate per second.
    Poisson {
        /// Requests per second, all clients together.
        rate_per_s: f64,
    },
    /// Open loop, fixed gaps.
    Fixed {
        /// Requests per second, all clients together.
        rate_per_s: f64,
    },
    /// Closed loop: each client keeps this many requests outstanding.
    Closed {
        /// Outstanding requests per client.
        outstanding: u32,
        /// Pause between a reply and the next request, ns.
        think_time_ns: u64,
    },
}

/// The clients.
#[derive(Clone, Debug)]
pub struct ClientModel {
    /// How many.
    pub count: usize,
    /// Zone index of each client.
    pub zone: Vec<u16>,
    /// Token-aware: the client sends to one of the key's replicas; otherwise to any node.
    pub token_aware: bool,
    /// Arrival process.
    pub arrival: Arrival,
    /// Each client's share of the open-loop rate (sums to 1).
    pub weight: Vec<f64>,
    /// Key choice.
    pub keys: KeySpec,
    /// Fraction of requests that are writes.
    pub write_fraction: f64,
    /// Token-aware clients choosing a coordinator see the key's replicas, then every other live
    /// node (a driver's token-aware query plan), so that a policy that ranks that plan
    /// (`plans_beyond_replicas` in the policy registry) can pick a coordinator that is not a
    /// replica, which then forwards the read. `false`: the replicas only.
    pub beyond_replicas: bool,
    /// Bursts of load (`None`: a steady rate).
    pub bursts: Option<Bursts>,
}

/// Bursts of load: every `every_ns`, for `duration_ns`, open-loop clients send `factor` times
/// their rate (the proof of concept's usage bursts that filled the network for tens of ms).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bursts {
    /// Period, ns (a burst starts at every multiple of it).
    pub every_ns: u64,
    /// Length of a burst, ns (shorter than the period).
    pub duration_ns: u64,
    /// Rate multiplier during a burst (> 1).
    pub factor: f64,
}

impl Bursts {
    /// The rate multiplier at `t_ns`.
    #[inline]
    pub fn factor_at(&self, t_ns: u64) -> f64 {
        if t_ns % self.every_ns < self.duration_ns {
            self.factor
        } else {
            1.0
        }
    }
}

/// Speculative retry at the coordinator (or the direct client).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Speculative {
    /// Never.
    None,
    /// After a fixed delay without enough replies.
    After {
        /// The delay, ns.
        delay_ns: u64,
    },
    /// After the cluster's latency percentile of the previous second.
    Percentile {
        /// The quantile, in (0, 1).
        quantile: f64,
    },
}

/// Per-request settings.
#[derive(Clone, Copy, Debug)]
pub struct RequestModel {
    /// Consistency level of measured reads.
    pub consistency: ConsistencyLevel,
    /// Consistency level during warm-up (e.g. ALL, to fill every cache).
    pub warmup_consistency: ConsistencyLevel,
    /// Read time-out, from the client's send, ns.
    pub read_timeout_ns: u64,
    /// Speculative retry.
    pub speculative: Speculative,
    /// Share of reads that also send a shadow read to every other replica of the key (the C3
    /// authors' simulator: 10%). A shadow read loads its replica like any read and its reply
    /// feeds the policy, but the request never waits for it.
    pub shadow_read_fraction: f64,
    /// Size of a request message (client to coordinator, coordinator to replica), bytes.
    pub request_bytes: u32,
    /// Size of each key's value; a reply carries the value plus [`REPLY_HEADER_BYTES`].
    pub value_bytes: SizeDist,
    /// Multi-key requests (`None`: every request reads one key).
    pub multi: Option<MultiModel>,
}

/// Requests for many partitions at once ("multi" requests in the proof of concept).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MultiModel {
    /// Share of requests that are multi-key.
    pub fraction: f64,
    /// Partitions per multi-key request.
    pub keys: u32,
    /// How the client sends one.
    pub mode: MultiMode,
}

/// How a client sends a multi-key request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MultiMode {
    /// One `IN` query to one coordinator (not token-aware: the keys have different tokens),
    /// which reads every partition from its replicas and answers once with all of them.
    In,
    /// One token-aware single read per partition, all at once; done when the last answers.
    Parallel,
}

/// Most partitions in one multi-key request.
pub const MAX_MULTI_KEYS: u32 = 10_000;

/// The bytes of a reply besides its value (frame and result metadata).
pub const REPLY_HEADER_BYTES: u32 = 50;

/// Run length and failure detection.
#[derive(Clone, Copy, Debug)]
pub struct RunModel {
    /// Unmeasured warm-up before t = 0, ns.
    pub warmup_ns: u64,
    /// Measured seconds.
    pub duration_s: u32,
    /// Delay until peers see a crashed node down (and a paused one), ns.
    pub failure_detection_ns: u64,
    /// Delay until clients see a crashed node down, ns: a driver sees its connections to a
    /// killed process reset at once, where the nodes' failure detector waits for missed
    /// heartbeats. `failure_detection_ns` unless set.
    pub client_failure_detection_ns: u64,
    /// Delay until peers see a restarted node up, ns.
    pub up_detection_ns: u64,
    /// How long a restarted node's process takes from its start to serving, ns: the
    /// simulator's node stays down this much longer than the fault's `duration_s` (a real
    /// Cassandra node starts its JVM, replays its commit log and opens its ports first).
    pub restart_start_ns: u64,
}

/// How hit rates are measured and spread.
#[derive(Clone, Copy, Debug)]
pub struct FeedbackModel {
    /// Hit-rate tracker tick, ns.
    pub tick_ns: u64,
    /// Hit-rate tracker window, ns.
    pub window_ns: u64,
    /// Replies carry the replica's hit rate.
    pub piggyback: bool,
    /// Replies carry the replica's load: its queue length, the read's service time and its
    /// requests in flight (C3's piggyback; Cassandra's replies carry none of them).
    pub load_reports: bool,
    /// Nodes gossip their hit rate (published rule: changed by > 0.1, or > 0.01 after 5 s).
    pub gossip: bool,
    /// Gossip propagation delay, ns.
    pub gossip_delay_ns: u64,
    /// Every live node's last gossiped rate reaches its peers again every second with its
    /// gossip heartbeat, so a rate that does not change stays fresh (Cassandra's gossip, as
    /// the replica-lb plug-in reads it); otherwise a rate travels only when published.
    pub gossip_heartbeat: bool,
}

/// Policies of the scenario, checked once when the scenario is read.
#[derive(Clone, Debug)]
pub struct PolicyModel {
    /// The client policy (any side with direct routing).
    pub client: PolicyChoice,
    /// The coordinator policy (coordinator routing only; with direct routing the published
    /// `naive`, unused).
    pub coordinator: PolicyChoice,
    /// Which side a `--policy` item naming a both-sided policy replaces.
    pub both_side: Side,
    /// The default comparison list, resolved (each run's label is the item as written).
    pub compare: Vec<RunSpec>,
    /// The policies the scenario gives parameters (`policy.params.NAME`), each with its
    /// overrides, checked once for either side.
    pub params: BTreeMap<String, PolicyChoice>,
}

impl PolicyModel {
    /// The parameter overrides the scenario gives policy `name` (none: the defaults).
    pub fn params_of(&self, name: &str) -> ParamTable {
        self.params.get(name).map(|c| c.params().clone()).unwrap_or_default()
    }

    /// The policy `name` with the scenario's overrides, for decisions of `side` (`None`:
    /// either, for clients that choose the replicas themselves).
    pub fn choose(&self, name: &str, side: Option<Side>) -> Result<PolicyChoice, replica_lb_policy::PolicyError> {
        choose(&self.params, name, side)
    }

    /// The default comparison list's items, as written.
    pub fn compare_items(&self) -> Vec<String> {
        self.compare.iter().map(|r| r.label.clone()).collect()
    }
}

/// The policy `name` with its overrides in `given`, for decisions of `side` (`None`: either);
/// a policy given parameters was checked when the scenario was read and is not built again.
fn choose(given: &BTreeMap<String, PolicyChoice>, name: &str, side: Option<Side>) -> Result<PolicyChoice, replica_lb_policy::PolicyError> {
    match (given.get(name), side) {
        (Some(checked), Some(side)) => checked.for_side(side),
        (Some(checked), None) => Ok(checked.clone()),
        (None, Some(side)) => PolicyChoice::new(name, side, ParamTable::new()),
        (None, None) => PolicyChoice::any_side(name, ParamTable::new()),
    }
}

/// What a restarted node's cache holds when it comes back (a restart fault's `cache`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RestartCache {
    /// `cache = "empty"` (the default): a cold restart.
    #[default]
    Empty,
    /// `cache = "kept"`: the rows it held when it went down, as Cassandra's saved row cache
    /// loaded whole at start (`row_cache_save_period`): the control that separates the
    /// cache's effect from the rest of a restart.
    Kept,
}

impl RestartCache {
    /// The name as written in a scenario file.
    pub fn name(self) -> &'static str {
        match self {
            RestartCache::Empty => "empty",
            RestartCache::Kept => "kept",
        }
    }
}

/// A service stage a slow-down applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StageSel {
    /// CPU only (including coordinator work).
    Cpu,
    /// Disk only.
    Disk,
    /// Both.
    All,
}

/// What a fault does.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FaultKind {
    /// The node crashes, stays down `duration`, comes back with an empty cache or the one it
    /// had (`cache`).
    Restart {
        /// What its cache holds when it comes back.
        cache: RestartCache,
    },
    /// The node freezes (stop/continue) for `duration`.
    Pause,
    /// Messages the node sends take this much longer.
    Delay {
        /// Added one-way delay, ns.
        added_ns: u64,
    },
    /// Service times on the node are multiplied by `factor`.
    Slow {
        /// The factor (> 0; 3 = three times slower).
        factor: f64,
        /// Which stage.
        stage: StageSel,
    },
    /// Every `interval`, each node independently with `probability` flips between its normal
    /// rate and `factor` times slower (C3's time-varying service rates).
    Fluctuate {
        /// Interval, ns.
        interval_ns: u64,
        /// Chance of a flip per interval.
        probability: f64,
        /// Slow-down in the slow state.
        factor: f64,
    },
}

/// One fault of the timeline, times relative to the start of measurement (may be negative,
/// down to the start of warm-up).
#[derive(Clone, Debug)]
pub struct Fault {
    /// What.
    pub kind: FaultKind,
    /// Which nodes.
    pub nodes: Vec<u16>,
    /// When it starts, ns since measurement start.
    pub at_ns: i64,
    /// How long it lasts (None = to the end).
    pub duration_ns: Option<u64>,
    /// Repeat period (None = once).
    pub every_ns: Option<u64>,
    /// The `k`-th listed node's fault starts `k x stagger_ns` after the first's (0 = all at
    /// once): a rolling restart of a zone, node after node.
    pub stagger_ns: u64,
    /// No repetition starts at or after this time.
    pub until_ns: Option<i64>,
    /// A rolling restart's gate (`gate = "warm" | "watch"`): `None` for every other fault.
    pub gate: Option<Gate>,
    /// Line in the file, for messages.
    pub line: usize,
}

/// How a gated rolling restart paces its nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GateMode {
    /// `gate = "warm"`: the next node goes down once the last one is back up and warm by the
    /// rule, or at the time-out after it came back.
    Warm,
    /// `gate = "watch"`: the nodes go down `stagger_s` apart as without a gate; the rule is
    /// only watched and recorded, for a comparison with `warm`.
    Watch,
}

impl GateMode {
    /// The name as written in a scenario file.
    pub fn name(self) -> &'static str {
        match self {
            GateMode::Warm => "warm",
            GateMode::Watch => "watch",
        }
    }
}

/// A rolling restart's warm gate: a restart fault's `gate`, `gate_within`, `gate_window_s`
/// and `gate_timeout_s`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gate {
    /// Wait for warmth, or only watch it.
    pub mode: GateMode,
    /// The rule (`gate_within`, default [`replica_lb_metrics::warm_gate::DEFAULT_WITHIN`]).
    pub rule: replica_lb_metrics::warm_gate::WarmRule,
    /// The trailing window of per-node cache lookups the rule judges, whole seconds
    /// (`gate_window_s`, default [`replica_lb_metrics::warm_gate::DEFAULT_WINDOW_S`]).
    pub window_s: u32,
    /// How long after a node came back the gate waits at most, ns (`gate_timeout_s`,
    /// default [`DEFAULT_GATE_TIMEOUT_S`]).
    pub timeout_ns: u64,
}

/// A gate's ceiling when the file gives no `gate_timeout_s`, seconds.
pub const DEFAULT_GATE_TIMEOUT_S: f64 = 300.0;
/// The longest `gate_window_s`, seconds.
pub const MAX_GATE_WINDOW_S: i64 = 3600;

/// A checked scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Name (defaults to the file stem).
    pub name: String,
    /// Free text.
    pub description: String,
    /// Default seed.
    pub seed: u64,
    /// Cluster shape.
    pub cluster: Cluster,
    /// Node resources.
    pub node: NodeModel,
    /// Network.
    pub network: NetworkModel,
    /// Clients.
    pub clients: ClientModel,
    /// Requests.
    pub requests: RequestModel,
    /// Run length.
    pub run: RunModel,
    /// Hit-rate feedback.
    pub feedback: FeedbackModel,
    /// Policies.
    pub policy: PolicyModel,
    /// Named phases.
    pub phases: Vec<PhaseSpec>,
    /// Faults.
    pub faults: Vec<Fault>,
    /// How the nodes run on Apache Cassandra (`[cassandra]`; the simulator reads the other
    /// sections).
    pub cassandra: CassandraModel,
    /// The `--set` overrides the file was edited with before it was parsed (empty: the file as
    /// it is); set by whoever applied them.
    pub edits: Vec<Edit>,
}

/// `[cassandra]`: the settings of a Cassandra node that the scenario's `[node]` section models
/// for the simulator (its row cache, and what a read from its data files costs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CassandraModel {
    /// JVM heap, MiB.
    pub heap_mb: u32,
    /// Off-heap row cache, MiB (0 = off).
    pub row_cache_mb: u32,
    /// Chunk cache of data file pages, MiB (0 = off).
    pub chunk_cache_mb: u32,
    /// Disk limits: the page cache once warm (MiB) and reads per second from the disk; both
    /// or neither.
    pub disk: Option<(u32, u32)>,
    /// Seconds between saves of the row cache to disk, loaded again at start (0 = never, as
    /// shipped): Cassandra's own remedy for a cold restart.
    pub row_cache_save_period_s: u32,
    /// The longest a starting node spends loading its saved caches, seconds (30 as shipped).
    pub cache_load_timeout_s: u32,
}

impl Default for CassandraModel {
    /// What `cluster up --engine cassandra` runs without options.
    fn default() -> Self {
        CassandraModel {
            heap_mb: 768,
            row_cache_mb: 0,
            chunk_cache_mb: 64,
            disk: None,
            row_cache_save_period_s: 0,
            cache_load_timeout_s: 30,
        }
    }
}
