//! A run's per-second series: each node's counters and the cluster's latency per second, the
//! phases and fault markers the charts draw. The data the recorder fills and everything else
//! reads (the CSV, the warm-up measure, the report).

/// One node's counters for one second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeSecond {
    /// Replica reads the node served (local + for other coordinators + for clients).
    pub reads: u32,
    /// Reads answered from the row cache.
    pub cache_hits: u32,
    /// Reads that went to disk.
    pub cache_misses: u32,
    /// Reads the node did for itself as coordinator.
    pub local_reads: u32,
    /// Reads the node, as coordinator, sent to other replicas.
    pub remote_reads: u32,
    /// Reads the node did for other coordinators (or for clients reading directly).
    pub replica_reads: u32,
    /// Reads waiting for the disk (not in service) at the end of the second.
    pub disk_queue: u32,
    /// Bytes the node's NIC sent (to clients and to other nodes).
    pub nic_out_bytes: u64,
    /// Bytes the node's NIC received (from clients and from other nodes).
    pub nic_in_bytes: u64,
    /// Of `nic_out_bytes`, those sent to other nodes.
    pub internode_out_bytes: u64,
}

impl NodeSecond {
    /// Hits / (hits + misses), 0 without cache lookups.
    pub fn hit_ratio(&self) -> f64 {
        let lookups = self.cache_hits + self.cache_misses;
        if lookups == 0 {
            0.0
        } else {
            self.cache_hits as f64 / lookups as f64
        }
    }

    fn add(&mut self, o: &NodeSecond) {
        self.reads += o.reads;
        self.cache_hits += o.cache_hits;
        self.cache_misses += o.cache_misses;
        self.local_reads += o.local_reads;
        self.remote_reads += o.remote_reads;
        self.replica_reads += o.replica_reads;
        self.disk_queue += o.disk_queue;
        self.nic_out_bytes += o.nic_out_bytes;
        self.nic_in_bytes += o.nic_in_bytes;
        self.internode_out_bytes += o.internode_out_bytes;
    }
}

/// Cluster-wide latency for one second (requests that ended in it), ms.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ClusterSecond {
    /// Requests completed.
    pub completed: u32,
    /// Exact mean of the completed requests.
    pub mean_ms: f64,
    /// Median of the completed requests.
    pub p50_ms: f64,
    /// 99th percentile of the completed requests.
    pub p99_ms: f64,
    /// Requests that timed out in this second.
    pub timeouts: u32,
    /// Requests that failed (not timed out) in this second.
    pub errors: u32,
    /// Median of every request that ended in this second (failures at the time-out).
    pub p50_all_ms: f64,
    /// 99th percentile of every request that ended in this second (failures at the time-out).
    pub p99_all_ms: f64,
}

impl ClusterSecond {
    /// Requests that ended in this second, however.
    pub fn ended(&self) -> u32 {
        self.completed + self.timeouts + self.errors
    }
}

/// A named span of the measured run, whole seconds `[start_s, end_s)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhaseSpec {
    /// Its name (`steady`, `after-restart`, ...).
    pub name: String,
    /// First second, inclusive.
    pub start_s: u32,
    /// Last second, exclusive.
    pub end_s: u32,
}

/// A fault starting or ending, for the charts.
#[derive(Clone, Debug, PartialEq)]
pub struct Marker {
    /// When, seconds since the start of measurement.
    pub t_s: f64,
    /// What happened: `node N WHAT` (`node 2 down`, `node 0 paused`, `node 1 delay 10 ms`).
    pub label: String,
}

impl Marker {
    /// The node the label names (`node 2 down` -> 2).
    pub fn node(&self) -> Option<usize> {
        self.label.strip_prefix("node ")?.split(' ').next()?.parse().ok()
    }

    /// What happened, its first word after the node (`node 2 down` -> `down`, `node 1 delay
    /// 10 ms` -> `delay`): the kind of mark the charts group by.
    pub fn kind(&self) -> &str {
        let rest = match self.label.strip_prefix("node ") {
            Some(r) => r.split_once(' ').map_or("", |(_, what)| what),
            None => self.label.as_str(),
        };
        rest.split(' ').next().unwrap_or("")
    }
}

/// The per-second series of a run.
#[derive(Clone, Debug)]
pub struct Series {
    /// Nodes.
    pub nodes: usize,
    /// Seconds recorded.
    pub seconds: u32,
    /// `seconds x nodes`, second-major.
    pub node_rows: Vec<NodeSecond>,
    /// One per second.
    pub cluster: Vec<ClusterSecond>,
    /// Fault markers for the charts.
    pub markers: Vec<Marker>,
    /// The node that restarted, drawn highlighted.
    pub highlight: Option<usize>,
    /// The phases, for shading.
    pub phases: Vec<PhaseSpec>,
    /// Each node's NIC, bits per second, when NICs were modelled (for utilisation).
    pub nic_bits_per_s: Option<f64>,
    /// Zone index of each node (empty: zones unknown, every node in one).
    pub node_zone: Vec<u16>,
    /// Zone names, by index.
    pub zone_names: Vec<String>,
}

impl Series {
    /// Node `node`'s counters in second `t`.
    pub fn node(&self, t: u32, node: usize) -> &NodeSecond {
        &self.node_rows[t as usize * self.nodes + node]
    }

    /// Every node's counters summed for second `t`.
    pub fn all(&self, t: u32) -> NodeSecond {
        let mut sum = NodeSecond::default();
        for n in 0..self.nodes {
            sum.add(self.node(t, n));
        }
        sum
    }

    /// Node `node`'s counters summed over seconds `[from, to)`.
    pub fn node_total(&self, node: usize, from: u32, to: u32) -> NodeSecond {
        let mut sum = NodeSecond::default();
        for t in from..to.min(self.seconds) {
            sum.add(self.node(t, node));
        }
        sum
    }

    /// Misses per second of the restarted node and its peers' mean during `after-restart`.
    pub fn restart_misses(&self) -> Option<(f64, f64)> {
        self.misses_against_peers(self.highlight?, "after-restart")
    }

    /// Misses per second of `node` and its peers' mean during the phase named `phase`.
    pub fn misses_against_peers(&self, node: usize, phase: &str) -> Option<(f64, f64)> {
        let phase = self.phases.iter().find(|p| p.name == phase)?;
        let secs = (phase.end_s - phase.start_s) as f64;
        let own = self.node_total(node, phase.start_s, phase.end_s).cache_misses as f64 / secs;
        let peers: Vec<f64> = (0..self.nodes)
            .filter(|&n| n != node)
            .map(|n| self.node_total(n, phase.start_s, phase.end_s).cache_misses as f64 / secs)
            .collect();
        Some((own, peers.iter().sum::<f64>() / peers.len().max(1) as f64))
    }

    /// The cluster's cache hit ratio over seconds `[from, to)` (0 without lookups).
    pub fn hit_ratio(&self, from: u32, to: u32) -> f64 {
        let (mut h, mut l) = (0u64, 0u64);
        for n in 0..self.nodes {
            let t = self.node_total(n, from, to);
            h += t.cache_hits as u64;
            l += (t.cache_hits + t.cache_misses) as u64;
        }
        if l == 0 {
            0.0
        } else {
            h as f64 / l as f64
        }
    }
}
