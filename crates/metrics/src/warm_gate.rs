//! The warm gate of a rolling restart: is the node that came back warm enough to take the next
//! one down?
//!
//! The rule (ScyllaDB's request for `nodetool waitforcachewarmup`, scylladb/scylladb#14927,
//! made one-sided): over a trailing window, a node is **warm** when it was read and its cache
//! misses per read are at most `(1 + within)` times the median of the other nodes' misses per
//! read, or at most [`MISS_SLACK`] above that median where that is more. Fewer misses than its
//! peers is warm too: the gate asks whether the node would hurt the cluster if the next one went
//! down, not whether it looks like the others.
//!
//! - A node **not read** in the window is not warm, whatever its ratio: a node a load balancer
//!   leaves out never warms, and the next restart would meet it cold.
//! - Peers not read in the window do not count towards the median; with no peer read there is
//!   **no reference** and the node is not warm either (nothing says what warm is).
//! - The slack keeps the rule meaningful where the peers almost never miss: 0.2 x a median of
//!   0.001 misses per read would ask a just-restarted node for a precision no window of a few
//!   thousand reads can show. It is a floor, not an addition: with the default `within` it only
//!   matters below a median of 0.025, so "within 20%" means 1.2x wherever misses are common.
//!
//! One rule for every engine: the simulator's gated rolling restart, `replica-lb warmup
//! status|wait` and `cluster rolling-restart` all call [`WarmRule::judge`].

use serde::Serialize;

/// The `--within` an operator gets by default: 20% above the peers' median.
pub const DEFAULT_WITHIN: f64 = 0.2;
/// The largest `within` accepted (10 = eleven times the peers' misses still counts as warm).
pub const MAX_WITHIN: f64 = 10.0;
/// The trailing window an operator gets by default, seconds.
pub const DEFAULT_WINDOW_S: u32 = 30;
/// Misses per read always tolerated above the peers' median (half a percentage point of miss
/// ratio): the limit is never below `median + MISS_SLACK`.
pub const MISS_SLACK: f64 = 0.005;

/// One node's (or one node's table's) cache lookups over a window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CacheWindow {
    /// Lookups (reads that asked the cache).
    pub reads: u64,
    /// Of those, hits.
    pub hits: u64,
}

impl CacheWindow {
    /// A window of `reads` lookups and `hits` hits; `hits` is capped at `reads`.
    pub fn new(reads: u64, hits: u64) -> CacheWindow {
        CacheWindow {
            reads,
            hits: hits.min(reads),
        }
    }

    /// The window between two samples of cumulative `(hits, reads)` counters; `None` when the
    /// counters went back (the node restarted in between, so the difference means nothing).
    pub fn between(earlier: (u64, u64), later: (u64, u64)) -> Option<CacheWindow> {
        let (h0, r0) = earlier;
        let (h1, r1) = later;
        if h1 < h0 || r1 < r0 {
            return None;
        }
        Some(CacheWindow::new(r1 - r0, h1 - h0))
    }

    /// Misses per read; `None` when not read.
    pub fn misses_per_read(&self) -> Option<f64> {
        (self.reads > 0).then(|| (self.reads - self.hits) as f64 / self.reads as f64)
    }

    /// Hits per read; `None` when not read.
    pub fn hit_ratio(&self) -> Option<f64> {
        (self.reads > 0).then(|| self.hits as f64 / self.reads as f64)
    }

    /// This window and `other` summed (a node's tables, or consecutive windows).
    pub fn plus(self, other: CacheWindow) -> CacheWindow {
        CacheWindow::new(self.reads + other.reads, self.hits + other.hits)
    }
}

/// What the gate says of one node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Warmth {
    /// Read, with misses per read within the limit.
    Warm,
    /// Read, with more misses per read than the limit.
    Cold,
    /// Not read in the window: not warm.
    Unread,
    /// Read, but no other node was: nothing to compare with, so not warm.
    NoReference,
}

impl Warmth {
    /// Whether the gate lets the next restart go.
    pub fn is_warm(self) -> bool {
        self == Warmth::Warm
    }

    /// Its name, as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Warmth::Warm => "warm",
            Warmth::Cold => "cold",
            Warmth::Unread => "unread",
            Warmth::NoReference => "no-reference",
        }
    }
}

/// The gate's verdict on one node, with the figures behind it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Verdict {
    /// Warm, cold, unread or without a reference.
    pub warmth: Warmth,
    /// The node's misses per read (`None`: not read).
    pub misses_per_read: Option<f64>,
    /// The median of the other read nodes' misses per read (`None`: none read).
    pub peers_median: Option<f64>,
    /// The most misses per read that count as warm (`None` without a median).
    pub limit: Option<f64>,
}

/// The gate's rule with its tolerance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WarmRule {
    within: f64,
}

impl Default for WarmRule {
    fn default() -> Self {
        WarmRule { within: DEFAULT_WITHIN }
    }
}

impl WarmRule {
    /// The rule with tolerance `within` (0.2: up to 20% more misses per read than the peers'
    /// median); refuses a value that is not a finite number in [0, [`MAX_WITHIN`]].
    pub fn new(within: f64) -> Result<WarmRule, String> {
        if !within.is_finite() || !(0.0..=MAX_WITHIN).contains(&within) {
            return Err(format!(
                "within {within}: must be a number from 0 to {MAX_WITHIN} (0.2 = 20% above the peers' median)"
            ));
        }
        Ok(WarmRule { within })
    }

    /// The tolerance.
    pub fn within(&self) -> f64 {
        self.within
    }

    /// The verdict on a node whose window is `node`, against the windows of every other node
    /// (`peers`, in any order, the node itself left out).
    pub fn judge(&self, node: CacheWindow, peers: &[CacheWindow]) -> Verdict {
        let peers_median = median(peers.iter().filter_map(CacheWindow::misses_per_read).collect());
        let limit = peers_median.map(|m| (m * (1.0 + self.within)).max(m + MISS_SLACK));
        let misses_per_read = node.misses_per_read();
        let warmth = match (misses_per_read, limit) {
            (None, _) => Warmth::Unread,
            (Some(_), None) => Warmth::NoReference,
            (Some(own), Some(limit)) if own <= limit => Warmth::Warm,
            (Some(_), Some(_)) => Warmth::Cold,
        };
        Verdict {
            warmth,
            misses_per_read,
            peers_median,
            limit,
        }
    }
}

/// One node's windows, per table (a single entry where the source counts node-wide, as
/// Cassandra's `system_views.caches` does); `None`: the node did not answer.
pub type TableWindows = std::collections::BTreeMap<String, CacheWindow>;

impl WarmRule {
    /// The verdict on every node whose per-table windows are `nodes` (index = node; `None`:
    /// it did not answer, and counts as unread). A node is judged on each table it read, against
    /// the other nodes' windows of that table, and takes its worst verdict (cold before no
    /// reference before warm): a node warm on one table and cold on another would still meet
    /// the next restart cold. A node that read nothing is unread.
    pub fn judge_tables(&self, nodes: &[Option<TableWindows>]) -> Vec<Verdict> {
        let empty = TableWindows::new();
        let of = |i: usize| nodes[i].as_ref().unwrap_or(&empty);
        (0..nodes.len())
            .map(|i| {
                let mut worst: Option<Verdict> = None;
                for (table, own) in of(i).iter().filter(|(_, w)| w.reads > 0) {
                    let peers: Vec<CacheWindow> = (0..nodes.len())
                        .filter(|&j| j != i)
                        .filter_map(|j| of(j).get(table).copied())
                        .collect();
                    let v = self.judge(*own, &peers);
                    if worst.is_none_or(|w| severity(v.warmth) > severity(w.warmth)) {
                        worst = Some(v);
                    }
                }
                worst.unwrap_or_else(|| self.judge(CacheWindow::default(), &[]))
            })
            .collect()
    }
}

/// How bad a verdict is, for picking a node's worst table.
fn severity(w: Warmth) -> u8 {
    match w {
        Warmth::Warm => 0,
        Warmth::NoReference => 1,
        Warmth::Cold => 2,
        Warmth::Unread => 3,
    }
}

/// The median of finite values (the mean of the middle two for an even count); `None` if empty.
fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(reads: u64, misses: u64) -> CacheWindow {
        CacheWindow::new(reads, reads - misses)
    }

    #[test]
    fn a_node_within_the_tolerance_of_its_peers_median_is_warm_and_one_above_is_cold() {
        let rule = WarmRule::default();
        let peers = [w(1000, 100), w(1000, 120), w(1000, 500)];
        // Median 0.12; limit 0.12 x 1.2 = 0.144 (the slack's floor, 0.125, is below it).
        let v = rule.judge(w(1000, 144), &peers);
        assert_eq!(v.warmth, Warmth::Warm, "{v:?}");
        assert!((v.peers_median.unwrap() - 0.12).abs() < 1e-12);
        assert!((v.limit.unwrap() - 0.144).abs() < 1e-12);
        assert_eq!(rule.judge(w(1000, 145), &peers).warmth, Warmth::Cold, "1.21x is cold");
        assert_eq!(
            rule.judge(w(1000, 0), &peers).warmth,
            Warmth::Warm,
            "fewer misses than its peers is warm"
        );
    }

    #[test]
    fn an_unread_node_is_not_warm_and_unread_peers_do_not_count() {
        let rule = WarmRule::default();
        let v = rule.judge(w(0, 0), &[w(1000, 100), w(1000, 100)]);
        assert_eq!(v.warmth, Warmth::Unread);
        assert!(!v.warmth.is_warm());
        // The unread peer is left out of the median (else the median would be 0.05).
        let v = rule.judge(w(1000, 110), &[w(1000, 100), w(0, 0)]);
        assert_eq!(v.peers_median, Some(0.1));
        assert_eq!(v.warmth, Warmth::Warm);
        assert_eq!(rule.judge(w(1000, 100), &[w(0, 0), w(0, 0)]).warmth, Warmth::NoReference);
        assert_eq!(rule.judge(w(1000, 100), &[]).warmth, Warmth::NoReference);
    }

    #[test]
    fn the_slack_admits_a_near_perfect_node_beside_perfect_peers() {
        let rule = WarmRule::new(0.0).unwrap();
        assert_eq!(rule.judge(w(10_000, 40), &[w(10_000, 0)]).warmth, Warmth::Warm);
        assert_eq!(rule.judge(w(10_000, 60), &[w(10_000, 0)]).warmth, Warmth::Cold);
        // A floor, not an addition: median 0.01 -> limit 0.015 (1.2x would be 0.012).
        let v = WarmRule::default().judge(w(10_000, 150), &[w(10_000, 100)]);
        assert_eq!(v.warmth, Warmth::Warm, "{v:?}");
        assert!((v.limit.unwrap() - 0.015).abs() < 1e-12, "{v:?}");
        assert_eq!(WarmRule::default().judge(w(10_000, 151), &[w(10_000, 100)]).warmth, Warmth::Cold);
    }

    #[test]
    fn each_node_is_judged_against_the_others() {
        let one = |w: CacheWindow| Some(TableWindows::from([("rows".to_string(), w)]));
        let v = WarmRule::default().judge_tables(&[one(w(1000, 500)), one(w(1000, 100)), one(w(1000, 100)), one(w(0, 0))]);
        let warmth: Vec<Warmth> = v.iter().map(|v| v.warmth).collect();
        assert_eq!(warmth, [Warmth::Cold, Warmth::Warm, Warmth::Warm, Warmth::Unread]);
        assert_eq!((v[0].misses_per_read, v[0].peers_median), (Some(0.5), Some(0.1)));
    }

    #[test]
    fn a_node_takes_its_worst_table_and_tables_it_does_not_read_are_not_judged() {
        let tables = |v: &[(&str, CacheWindow)]| Some(v.iter().map(|(t, w)| (t.to_string(), *w)).collect::<TableWindows>());
        let nodes = [
            tables(&[("ks.a", w(1000, 100)), ("ks.b", w(1000, 400))]),
            tables(&[("ks.a", w(1000, 100)), ("ks.b", w(1000, 100))]),
            tables(&[("ks.a", w(1000, 100)), ("ks.b", w(1000, 100)), ("ks.c", w(0, 0))]),
            tables(&[("ks.c", w(500, 50))]),
            None,
        ];
        let v = WarmRule::default().judge_tables(&nodes);
        assert_eq!(v[0].warmth, Warmth::Cold, "cold on ks.b: {:?}", v[0]);
        assert_eq!(v[0].misses_per_read, Some(0.4));
        assert_eq!(v[1].warmth, Warmth::Warm);
        assert_eq!(v[2].warmth, Warmth::Warm, "an unread table of its own is not judged");
        assert_eq!(v[3].warmth, Warmth::NoReference, "nobody else reads ks.c");
        assert_eq!(v[4].warmth, Warmth::Unread, "a node that did not answer");
    }

    #[test]
    fn windows_come_from_cumulative_counters_and_a_restart_voids_them() {
        assert_eq!(
            CacheWindow::between((10, 100), (60, 200)),
            Some(CacheWindow { reads: 100, hits: 50 })
        );
        assert_eq!(CacheWindow::between((10, 100), (5, 20)), None, "the counters went back");
        assert_eq!(CacheWindow::new(5, 9).hits, 5, "hits are capped at reads");
        assert_eq!(w(4, 1).plus(w(6, 3)), w(10, 4));
    }

    #[test]
    fn the_tolerance_is_checked() {
        for bad in [-0.1, f64::NAN, f64::INFINITY, 10.5] {
            let e = WarmRule::new(bad).unwrap_err();
            assert!(e.contains("within") && e.contains("from 0 to 10"), "{e}");
        }
        assert_eq!(WarmRule::new(0.5).unwrap().within(), 0.5);
    }
}
