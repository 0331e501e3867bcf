//! What a run records while it goes: per node per second counters, and cluster latency per
//! second and per named phase, of the completed requests and of every request (a timed-out or
//! failed one at the read time-out: [`LatencyHistogram::with_failures`]).
//!
//! Memory stays small however long the run: node counters are a flat array of
//! `seconds x nodes` small records, and latency goes into the run's and the phases'
//! histograms as it comes, the current second's values being kept aside only until the second
//! closes and is reduced to p50/p99/mean, never one histogram per second.

use crate::latency::{exact_or_top, recorded_us, round_us, LatencyHistogram};
use crate::series::{ClusterSecond, Marker, NodeSecond, PhaseSpec, Series};
use crate::summary::{MultiSummary, NetworkSummary, NodeTotals, PhaseSummary, RunStats, RunSummary, SimStats};
use crate::warm_gate::CacheWindow;
use crate::warmup::warmup_seconds;

/// The most nodes a recorder tracks.
pub const MAX_NODES: usize = 4096;
/// The longest run a recorder tracks, seconds (10 hours).
pub const MAX_DURATION_S: u32 = 36_000;

/// Who did a replica read, as seen by the node serving it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadKind {
    /// The node's own coordinator asked.
    Local,
    /// Another coordinator (or a client reading directly) asked.
    Replica,
}

/// What the row cache said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheOutcome {
    /// Served from the cache.
    Hit,
    /// Read from disk.
    Miss,
    /// The node has no row cache.
    NoCache,
}

/// The shape of a recording.
#[derive(Clone, Debug)]
pub struct RecorderConfig {
    /// Nodes in the cluster.
    pub nodes: usize,
    /// Measured seconds.
    pub duration_s: u32,
    /// Named phases.
    pub phases: Vec<PhaseSpec>,
    /// The read time-out, ns: where a timed-out or failed request counts in the all-requests
    /// figures.
    pub timeout_ns: u64,
}

impl RecorderConfig {
    /// The bytes a recording of this shape holds (its per-node per-second counters, its
    /// per-second cluster figures, its histograms), for a memory estimate before a run.
    pub fn bytes(&self) -> u64 {
        let seconds = self.duration_s as u64;
        let counters = seconds * self.nodes as u64 * std::mem::size_of::<NodeSecond>() as u64;
        let cluster = seconds * std::mem::size_of::<ClusterSecond>() as u64;
        counters + cluster + (self.phases.len() as u64 + 2) * HISTOGRAM_BYTES
    }
}

/// About what one latency histogram holds (1 us to 1 h at 3 significant digits).
const HISTOGRAM_BYTES: u64 = 200_000;

/// Records one run.
#[derive(Debug)]
pub struct Recorder {
    nodes: usize,
    duration_s: u32,
    node_rows: Vec<NodeSecond>,
    cluster: Vec<ClusterSecond>,
    open_second: u32,
    second: SecondLatencies,
    /// Time-outs in the open second.
    second_timeouts: u32,
    /// Errors in the open second.
    second_errors: u32,
    timeout_ns: u64,
    overall: LatencyHistogram,
    /// Each phase with its completed requests' latency and its failed (timed-out or errored)
    /// requests.
    phases: Vec<(PhaseSpec, LatencyHistogram, u64)>,
    requests: u64,
    completed: u64,
    timeouts: u64,
    errors: u64,
    markers: Vec<Marker>,
    /// Multi-key requests, when the run has them.
    multi: Option<MultiCounts>,
    /// `Some` when bytes are summarised: each node's NIC, bits per second (`None` inside:
    /// unlimited).
    network: Option<Option<f64>>,
    /// Zone of each node (empty: unknown), see [`Recorder::set_zones`].
    node_zone: Vec<u16>,
    /// Zone names, by index.
    zone_names: Vec<String>,
}

/// A run's multi-key requests so far.
#[derive(Debug, Default)]
struct MultiCounts {
    issued: u64,
    completed: u64,
    /// Ended with a part timed out or failed.
    failed: u64,
    latency: LatencyHistogram,
}

/// The latencies completed in the open second, as recorded (us) plus their exact sum. Its
/// figures equal those of a [`LatencyHistogram`] holding the same values, at a cost that
/// follows the values rather than the histogram's size (summarising and clearing a histogram
/// every second would scan all its buckets, twice).
#[derive(Debug, Default)]
struct SecondLatencies {
    us: Vec<u64>,
    sum_ns: u128,
    /// The time-out, us, once failures were added at it (as in [`LatencyHistogram`]).
    exact_us: Option<u64>,
}

impl SecondLatencies {
    #[inline]
    fn record_ns(&mut self, latency_ns: u64) {
        self.us.push(recorded_us(latency_ns));
        self.sum_ns += latency_ns as u128;
    }

    /// Adds `failed` requests at `timeout_ns`, as [`LatencyHistogram::with_failures`] does.
    fn record_failures(&mut self, failed: u32, timeout_ns: u64) {
        if failed == 0 {
            return;
        }
        let us = recorded_us(timeout_ns);
        self.us.extend(std::iter::repeat_n(us, failed as usize));
        self.sum_ns += timeout_ns as u128 * failed as u128;
        self.exact_us = Some(us);
    }

    /// Empties it for the next second.
    fn clear(&mut self) {
        self.us.clear();
        self.sum_ns = 0;
        self.exact_us = None;
    }

    /// As [`LatencyHistogram::mean_ms`].
    fn mean_ms(&self) -> f64 {
        if self.us.is_empty() {
            0.0
        } else {
            self.sum_ns as f64 / self.us.len() as f64 / 1e6
        }
    }

    /// As [`LatencyHistogram::quantile_ms`] for `q` in (0, 1], with `scale` (any histogram)
    /// giving the buckets: the histogram reports the top of the bucket where the running count
    /// reaches `ceil(q * count)`, which is the bucket of the value of that rank. Reorders the
    /// values.
    fn quantile_ms(&mut self, q: f64, scale: &LatencyHistogram) -> f64 {
        let n = self.us.len();
        if n == 0 {
            return 0.0;
        }
        let rank = ((q.min(1.0) * n as f64).ceil() as usize).clamp(1, n);
        let (_, &mut us, _) = self.us.select_nth_unstable(rank - 1);
        let top = scale.highest_equivalent_us(us);
        exact_or_top(self.exact_us, top, |us| scale.highest_equivalent_us(us)) as f64 / 1000.0
    }
}

/// Everything one run measured: the summary (for summary.json) and the series (for the CSV
/// and the charts).
#[derive(Clone, Debug)]
pub struct RunMetrics {
    /// The run's summary.
    pub summary: RunSummary,
    /// Per second, per node.
    pub series: Series,
}

impl Recorder {
    /// A recorder for `config`; fails when it exceeds the limits.
    pub fn new(config: RecorderConfig) -> Result<Self, String> {
        if config.nodes == 0 || config.nodes > MAX_NODES {
            return Err(format!("{} nodes: a recording holds 1 to {MAX_NODES}", config.nodes));
        }
        if config.duration_s == 0 || config.duration_s > MAX_DURATION_S {
            return Err(format!("{} s: a recording lasts 1 to {MAX_DURATION_S} s", config.duration_s));
        }
        for p in &config.phases {
            if p.start_s >= p.end_s || p.end_s > config.duration_s {
                return Err(format!(
                    "phase '{}' [{}, {}) s must be non-empty and end within the {} s run",
                    p.name, p.start_s, p.end_s, config.duration_s
                ));
            }
        }
        Ok(Recorder {
            nodes: config.nodes,
            duration_s: config.duration_s,
            node_rows: vec![NodeSecond::default(); config.nodes * config.duration_s as usize],
            cluster: Vec::with_capacity(config.duration_s as usize),
            open_second: 0,
            second: SecondLatencies::default(),
            second_timeouts: 0,
            second_errors: 0,
            timeout_ns: config.timeout_ns,
            overall: LatencyHistogram::new(),
            phases: config.phases.into_iter().map(|p| (p, LatencyHistogram::new(), 0)).collect(),
            requests: 0,
            completed: 0,
            timeouts: 0,
            errors: 0,
            markers: Vec::new(),
            multi: None,
            network: None,
            node_zone: Vec::new(),
            zone_names: Vec::new(),
        })
    }

    /// Names each node's zone (`node_zone[n]` indexes `zone_names`), so that a report can
    /// aggregate a large cluster by zone. Without it every node is in one zone.
    pub fn set_zones(&mut self, node_zone: Vec<u16>, zone_names: Vec<String>) {
        assert_eq!(node_zone.len(), self.nodes, "one zone per node");
        assert!(
            node_zone.iter().all(|&z| (z as usize) < zone_names.len()),
            "zone index without a name"
        );
        self.node_zone = node_zone;
        self.zone_names = zone_names;
    }

    #[inline]
    fn row(&mut self, t_ns: u64, node: usize) -> Option<&mut NodeSecond> {
        let second = t_ns / 1_000_000_000;
        if second >= self.duration_s as u64 {
            return None;
        }
        debug_assert!(node < self.nodes);
        self.node_rows.get_mut(second as usize * self.nodes + node)
    }

    /// A replica read served by `node` at `t_ns` (since measurement start).
    #[inline]
    pub fn read(&mut self, t_ns: u64, node: usize, kind: ReadKind, cache: CacheOutcome) {
        if let Some(r) = self.row(t_ns, node) {
            r.reads += 1;
            match kind {
                ReadKind::Local => r.local_reads += 1,
                ReadKind::Replica => r.replica_reads += 1,
            }
            match cache {
                CacheOutcome::Hit => r.cache_hits += 1,
                CacheOutcome::Miss => r.cache_misses += 1,
                CacheOutcome::NoCache => {}
            }
        }
    }

    /// `node`'s cache lookups over measured seconds `[from_s, to_s)` (those recorded so far;
    /// seconds past the run count nothing): what the warm gate judges.
    pub fn cache_window(&self, node: usize, from_s: u32, to_s: u32) -> CacheWindow {
        let to_s = to_s.min(self.duration_s);
        let (mut reads, mut hits) = (0u64, 0u64);
        for s in from_s..to_s {
            let r = &self.node_rows[s as usize * self.nodes + node];
            reads += u64::from(r.cache_hits) + u64::from(r.cache_misses);
            hits += u64::from(r.cache_hits);
        }
        CacheWindow::new(reads, hits)
    }

    /// `node`, as coordinator, sent a read to another replica.
    #[inline]
    pub fn remote_read(&mut self, t_ns: u64, node: usize) {
        if let Some(r) = self.row(t_ns, node) {
            r.remote_reads += 1;
        }
    }

    /// Summarises multi-key requests in this run ([`RunSummary::multi`]).
    pub fn track_multi(&mut self) {
        self.multi.get_or_insert_with(MultiCounts::default);
    }

    /// A multi-key request was issued (during measurement).
    pub fn multi_issued(&mut self) {
        if let Some(m) = &mut self.multi {
            m.issued += 1;
        }
    }

    /// A multi-key request issued during measurement was answered in full after `latency_ns`.
    pub fn multi_completed(&mut self, latency_ns: u64) {
        if let Some(m) = &mut self.multi {
            m.completed += 1;
            m.latency.record_ns(latency_ns);
        }
    }

    /// A multi-key request issued during measurement ended with a part timed out or failed.
    pub fn multi_failed(&mut self) {
        if let Some(m) = &mut self.multi {
            m.failed += 1;
        }
    }

    /// Summarises the bytes sent ([`RunSummary::network`]) for NICs of `nic_bits_per_s` each
    /// (`None`: unlimited, utilisation 0).
    pub fn track_network(&mut self, nic_bits_per_s: Option<f64>) {
        self.network = Some(nic_bits_per_s);
    }

    /// `bytes` left `node`'s NIC at `t_ns`, to another node when `internode` (else to a client).
    #[inline]
    pub fn sent_bytes(&mut self, t_ns: u64, node: usize, bytes: u64, internode: bool) {
        if let Some(r) = self.row(t_ns, node) {
            r.nic_out_bytes += bytes;
            if internode {
                r.internode_out_bytes += bytes;
            }
        }
    }

    /// `bytes` arrived at `node`'s NIC at `t_ns`.
    #[inline]
    pub fn received_bytes(&mut self, t_ns: u64, node: usize, bytes: u64) {
        if let Some(r) = self.row(t_ns, node) {
            r.nic_in_bytes += bytes;
        }
    }

    /// Samples `node`'s disk queue for the second containing `t_ns`.
    pub fn disk_queue(&mut self, t_ns: u64, node: usize, waiting: u32) {
        if let Some(r) = self.row(t_ns, node) {
            r.disk_queue = waiting;
        }
    }

    /// A request was issued.
    #[inline]
    pub fn issued(&mut self) {
        self.requests += 1;
    }

    /// A request timed out at `t_ns` (counted in the total whenever it happens, and in its
    /// second's `timeouts` and its phase when that second is recorded).
    pub fn timeout(&mut self, t_ns: u64) {
        self.timeouts += 1;
        if self.close_for_failure(t_ns) {
            self.second_timeouts += 1;
        }
    }

    /// A request failed (no replica available) at `t_ns` (counted in the total whenever it
    /// happens, and in its second's `errors` and its phase when that second is recorded).
    pub fn error(&mut self, t_ns: u64) {
        self.errors += 1;
        if self.close_for_failure(t_ns) {
            self.second_errors += 1;
        }
    }

    /// Closes the seconds before the one of `t_ns` and counts a failure in the phases of the
    /// open second (a failure reported late counts there, as a late completion does); `false`
    /// when `t_ns` is past the recording.
    fn close_for_failure(&mut self, t_ns: u64) -> bool {
        let second = t_ns / 1_000_000_000;
        if second >= self.duration_s as u64 {
            return false;
        }
        self.close_until(second as u32);
        let open = self.open_second;
        for (p, _, failed) in &mut self.phases {
            if p.start_s <= open && open < p.end_s {
                *failed += 1;
            }
        }
        true
    }

    /// A request completed at `t_ns` after `latency_ns`.
    #[inline]
    pub fn completed(&mut self, t_ns: u64, latency_ns: u64) {
        let second = t_ns / 1_000_000_000;
        if second >= self.duration_s as u64 {
            return;
        }
        self.close_until(second as u32);
        // The open second: a completion reported late counts in it, as in its window.
        let open = self.open_second;
        self.second.record_ns(latency_ns);
        self.overall.record_ns(latency_ns);
        for (p, ph, _) in &mut self.phases {
            if p.start_s <= open && open < p.end_s {
                ph.record_ns(latency_ns);
            }
        }
        self.completed += 1;
    }

    /// Adds a chart marker.
    pub fn marker(&mut self, t_s: f64, label: impl Into<String>) {
        self.markers.push(Marker { t_s, label: label.into() });
    }

    /// Closes every second before `second`.
    fn close_until(&mut self, second: u32) {
        while self.open_second < second {
            let s = &mut self.second;
            let mut c = ClusterSecond {
                completed: s.us.len() as u32,
                mean_ms: round_us(s.mean_ms()),
                p50_ms: round_us(s.quantile_ms(0.5, &self.overall)),
                p99_ms: round_us(s.quantile_ms(0.99, &self.overall)),
                timeouts: std::mem::take(&mut self.second_timeouts),
                errors: std::mem::take(&mut self.second_errors),
                ..ClusterSecond::default()
            };
            s.record_failures(c.timeouts + c.errors, self.timeout_ns);
            c.p50_all_ms = round_us(s.quantile_ms(0.5, &self.overall));
            c.p99_all_ms = round_us(s.quantile_ms(0.99, &self.overall));
            self.cluster.push(c);
            s.clear();
            self.open_second += 1;
        }
    }

    /// Ends the recording. `restart` is the first restarted node and when it came back
    /// (seconds since measurement start), for `warmup_s`.
    pub fn finish(mut self, policy: String, restart: Option<(usize, f64)>, events: u64, wall_s: f64) -> RunMetrics {
        self.close_until(self.duration_s);
        let series = Series {
            nodes: self.nodes,
            seconds: self.duration_s,
            node_rows: self.node_rows,
            cluster: self.cluster,
            markers: self.markers,
            highlight: restart.map(|(n, _)| n),
            phases: self.phases.iter().map(|(p, _, _)| p.clone()).collect(),
            nic_bits_per_s: self.network.flatten(),
            node_zone: self.node_zone,
            zone_names: self.zone_names,
        };
        let nodes = (0..series.nodes)
            .map(|n| {
                let t = series.node_total(n, 0, series.seconds);
                NodeTotals {
                    id: n,
                    reads: t.reads as u64,
                    cache_hits: t.cache_hits as u64,
                    cache_misses: t.cache_misses as u64,
                    local_reads: t.local_reads as u64,
                    remote_reads: t.remote_reads as u64,
                    replica_reads: t.replica_reads as u64,
                }
            })
            .collect();
        let warmup_s = restart.and_then(|(node, back_s)| warmup_seconds(&series, node, back_s));
        let timeout_ns = self.timeout_ns;
        let summary = RunSummary {
            policy,
            requests: self.requests,
            completed: self.completed,
            timeouts: self.timeouts,
            errors: self.errors,
            latency_ms: self.overall.stats(),
            latency_all_ms: self.overall.with_failures(self.timeouts + self.errors, timeout_ns).stats(),
            phases: self
                .phases
                .iter()
                .map(|(p, h, failed)| PhaseSummary {
                    name: p.name.clone(),
                    start_s: p.start_s as f64,
                    end_s: p.end_s as f64,
                    latency_ms: h.stats(),
                    latency_all_ms: h.with_failures(*failed, timeout_ns).stats(),
                })
                .collect(),
            nodes,
            warmup_s,
            multi: self.multi.as_ref().map(|m| MultiSummary {
                requests: m.issued,
                completed: m.completed,
                latency_ms: m.latency.stats(),
                latency_all_ms: m.latency.with_failures(m.failed, timeout_ns).stats(),
            }),
            network: self.network.map(|nic| network_summary(&series, nic)),
            rolling_restarts: Vec::new(),
            run: RunStats::Sim(SimStats { events, wall_s }),
        };
        RunMetrics { summary, series }
    }
}

/// The run's bytes: every internode byte is counted once leaving and once arriving, every
/// client byte once (at the node's end), so client bytes = out + in - 2 x internode.
fn network_summary(series: &Series, nic_bits_per_s: Option<f64>) -> NetworkSummary {
    let (mut out, mut inb, mut internode, mut peak_bytes) = (0u64, 0u64, 0u64, 0u64);
    for row in &series.node_rows {
        out += row.nic_out_bytes;
        inb += row.nic_in_bytes;
        internode += row.internode_out_bytes;
        peak_bytes = peak_bytes.max(row.nic_out_bytes.max(row.nic_in_bytes));
    }
    NetworkSummary {
        client_bytes: (out + inb).saturating_sub(2 * internode),
        internode_bytes: internode,
        nic_peak_utilization: nic_bits_per_s.map_or(0.0, |bps| (peak_bytes as f64 * 8.0 / bps).min(1.0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn counters_and_latency_land_in_their_second_and_phase() {
        let mut r = Recorder::new(RecorderConfig {
            nodes: 2,
            duration_s: 3,
            phases: vec![PhaseSpec {
                name: "p".into(),
                start_s: 1,
                end_s: 3,
            }],
            timeout_ns: 5 * S,
        })
        .unwrap();
        r.read(0, 0, ReadKind::Local, CacheOutcome::Hit);
        r.read(S + 1, 1, ReadKind::Replica, CacheOutcome::Miss);
        r.remote_read(S + 2, 0);
        r.completed(10, 1_000_000);
        r.completed(S + 10, 3_000_000);
        r.completed(10 * S, 3_000_000); // after the end: ignored
        r.timeout(2 * S + 5);
        r.timeout(2 * S + 6);
        r.timeout(9 * S); // after the end: in the total only
        r.error(2 * S + 7);
        r.issued();
        let m = r.finish("x".into(), None, 7, 0.0);
        assert_eq!(m.series.node(0, 0).local_reads, 1);
        assert_eq!(m.series.node(1, 1).cache_misses, 1);
        assert_eq!(m.series.node(1, 0).remote_reads, 1);
        assert_eq!(m.series.cluster.len(), 3);
        assert!((m.series.cluster[1].p50_ms - 3.0).abs() < 0.005);
        assert_eq!(m.summary.completed, 2);
        let per_second: Vec<u32> = m.series.cluster.iter().map(|c| c.timeouts).collect();
        assert_eq!((per_second, m.summary.timeouts), (vec![0, 0, 2], 3));
        assert_eq!(m.summary.latency_ms.mean, 2.0);
        assert_eq!(m.summary.phases[0].latency_ms.mean, 3.0);
        assert_eq!(m.summary.nodes[0].reads, 1);
        // Every request: 2 completed, 3 timed out, 1 failed; the last three at the time-out.
        let all = m.summary.latency_all_ms;
        assert_eq!((all.p50, all.p99, m.summary.errors), (5000.0, 5000.0, 1));
        assert!((all.mean - (1.0 + 3.0 + 4.0 * 5000.0) / 6.0).abs() < 1e-9, "{all:?}");
        // The phase [1, 3) s: one completion and the failures of second 2 (not the late one).
        let phase = m.summary.phases[0].latency_all_ms;
        assert!((phase.mean - (3.0 + 3.0 * 5000.0) / 4.0).abs() < 1e-9, "{phase:?}");
        let c = m.series.cluster[2];
        assert_eq!((c.timeouts, c.errors, c.ended(), c.p99_ms, c.p99_all_ms), (2, 1, 3, 0.0, 5000.0));
        assert_eq!((m.series.cluster[1].p99_all_ms, m.series.cluster[1].p99_ms), (3.001, 3.001));
    }

    #[test]
    fn a_markers_node_and_kind_come_from_its_label() {
        let m = |label: &str| Marker {
            t_s: 1.0,
            label: label.into(),
        };
        assert_eq!((m("node 2 down").node(), m("node 2 down").kind()), (Some(2), "down"));
        assert_eq!(
            (m("node 11 delay 10 ms").node(), m("node 11 delay 10 ms").kind()),
            (Some(11), "delay")
        );
        assert_eq!((m("zone b lost").node(), m("zone b lost").kind()), (None, "zone"));
    }

    #[test]
    fn second_figures_equal_a_histograms() {
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        for n in [1usize, 2, 3, 10, 99, 100, 1000, 4321] {
            let mut h = LatencyHistogram::new();
            let mut s = SecondLatencies::default();
            for _ in 0..n {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let ns = (rng % 50_000_000_000) >> (rng % 24);
                h.record_ns(ns);
                s.record_ns(ns);
            }
            assert_eq!(s.mean_ms(), h.mean_ms());
            for q in [0.001, 0.5, 0.9, 0.99, 0.999, 1.0] {
                assert_eq!(s.quantile_ms(q, &h), h.quantile_ms(q), "n = {n}, q = {q}");
            }
            // With failures at the time-out, as the all-requests histogram has them.
            let failed = (n / 20) as u32 + 1;
            let all = h.with_failures(failed as u64, 5_000_000_000);
            s.record_failures(failed, 5_000_000_000);
            assert_eq!(s.mean_ms(), all.mean_ms());
            for q in [0.5, 0.99, 0.999] {
                assert_eq!(s.quantile_ms(q, &h), all.quantile_ms(q), "n = {n}, q = {q}, with failures");
            }
        }
    }

    #[test]
    fn limits_are_enforced() {
        let bad = |nodes, duration_s| {
            Recorder::new(RecorderConfig {
                nodes,
                duration_s,
                phases: vec![],
                timeout_ns: 5_000_000_000,
            })
            .is_err()
        };
        assert!(bad(0, 10) && bad(2, 0) && bad(2, MAX_DURATION_S + 1));
    }
}
