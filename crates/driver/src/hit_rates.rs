//! Every node's cache hit rate, learnt off the request path, for `hwlb-client` (HWLB at the
//! client, for users who cannot install the server plug-in).
//!
//! Apache Cassandra 5.0 counts each cache's hits and requests and shows them in the virtual
//! table `system_views.caches` (one row per cache: `rows`, `keys`, `chunks`, `counters`) of
//! each node. The poller reads the chosen cache's counters on every node a few times a second,
//! feeds the differences to the published hit-rate tracker ([`replica_lb_policy::hwlb::HitRateTracker`]:
//! moving averages of hits/s and misses/s ticked every 10 s over 1 min, configurable), and
//! tells the policy each node's rate ([`ReplicaLbPolicy::record_hit_rate`]) after every poll,
//! so the rate stays fresh for the policy's staleness rule. A node that restarted (its counters
//! went back) starts again from zero, as the node's own tracker would; a node that does not
//! answer is left alone, and ages into the policy's stale rate.

use crate::policy::ReplicaLbPolicy;
use replica_lb_policy::hwlb::HitRateTracker;
use rustc_hash::FxHashMap;
use scylla::client::session::Session;
use scylla::policies::load_balancing::{NodeIdentifier, SingleTargetLoadBalancingPolicy};
use scylla::statement::unprepared::Statement;
use std::sync::Arc;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// The caches a Cassandra 5.0 node shows in `system_views.caches`.
pub const CACHES: [&str; 3] = ["rows", "chunks", "keys"];

/// How to poll.
#[derive(Clone, Debug, PartialEq)]
pub struct HitRatePolling {
    /// Which cache's misses count: `rows` (the row cache: its misses read the SSTables),
    /// `chunks` (the chunk cache of data file pages) or `keys` (the partition key cache).
    pub cache: String,
    /// Time between polls of every node (keep it below the policy's `stale_after_ms`).
    pub every: Duration,
    /// The tracker's tick (published: 10 s).
    pub tick: Duration,
    /// The tracker's moving-average window (published: 60 s).
    pub window: Duration,
    /// How long one node's answer may take.
    pub timeout: Duration,
}

impl Default for HitRatePolling {
    fn default() -> Self {
        HitRatePolling {
            cache: "rows".into(),
            every: Duration::from_millis(500),
            tick: Duration::from_secs(10),
            window: Duration::from_secs(60),
            timeout: Duration::from_millis(800),
        }
    }
}

impl HitRatePolling {
    /// Checks the settings, naming a bad one and what is allowed.
    pub fn validate(&self) -> Result<(), String> {
        if !CACHES.contains(&self.cache.as_str()) {
            return Err(format!("cache '{}': must be one of {}", self.cache, CACHES.join(", ")));
        }
        let ms = |d: Duration| d.as_millis();
        if !(ms(self.every) >= 10 && ms(self.every) <= 60_000) {
            return Err(format!("poll every {} ms: must be in [10, 60000]", ms(self.every)));
        }
        if self.tick < Duration::from_millis(100) || self.window < self.tick {
            return Err(format!(
                "tick {} ms / window {} ms: the tick must be at least 100 ms and the window at least the tick",
                ms(self.tick),
                ms(self.window)
            ));
        }
        if self.timeout.is_zero() {
            return Err("timeout must be positive".into());
        }
        Ok(())
    }
}

/// One node's last counters and its tracker.
struct NodeRate {
    hits: u64,
    requests: u64,
    tracker: HitRateTracker,
    /// Whether the tracker has completed a tick (before that it has no rate to tell).
    ticked: bool,
}

/// The poller's state: per host, its counters and tracker.
pub struct HitRatePoller {
    opts: HitRatePolling,
    epoch: Instant,
    nodes: FxHashMap<Uuid, NodeRate>,
}

impl HitRatePoller {
    /// A poller with `opts` (checked).
    pub fn new(opts: HitRatePolling) -> Result<Self, String> {
        opts.validate()?;
        Ok(HitRatePoller {
            opts,
            epoch: Instant::now(),
            nodes: FxHashMap::default(),
        })
    }

    fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    /// Feeds one reading of `host`'s cumulative counters; returns the rate to tell the policy,
    /// if the node's tracker has one.
    pub fn observe(&mut self, host: Uuid, hits: u64, requests: u64, now_ns: u64) -> Option<f64> {
        let (tick, window) = (self.opts.tick.as_nanos() as u64, self.opts.window.as_nanos() as u64);
        let entry = self.nodes.entry(host).or_insert_with(|| NodeRate {
            hits,
            requests,
            tracker: HitRateTracker::new(tick, window, now_ns),
            ticked: false,
        });
        if hits < entry.hits || requests < entry.requests {
            // The node restarted: its caches and counters started again.
            *entry = NodeRate {
                hits: 0,
                requests: 0,
                tracker: HitRateTracker::new(tick, window, now_ns),
                ticked: false,
            };
        }
        let (dh, dr) = (hits - entry.hits, requests - entry.requests);
        entry.tracker.record(dh, dr.saturating_sub(dh));
        entry.hits = hits;
        entry.requests = requests;
        if entry.tracker.advance(now_ns) {
            entry.ticked = true;
        }
        entry.ticked.then(|| entry.tracker.hit_rate())
    }

    /// Polls every node the session knows once and tells `policy` their rates.
    pub async fn poll_once(&mut self, session: &Session, policy: &ReplicaLbPolicy) {
        let state = session.get_cluster_state();
        for node in state.get_nodes_info() {
            // A node that does not answer keeps its last rate (it turns stale in the policy).
            let target = NodeIdentifier::Node(node.clone());
            let Ok(Some((hits, requests))) = cache_counters(session, target, &self.opts.cache, self.opts.timeout).await else {
                continue;
            };
            let now = self.now_ns();
            if let Some(rate) = self.observe(node.host_id, hits, requests, now) {
                // The rate is in [0, 1] by construction.
                let _ = policy.record_hit_rate(node.host_id, rate);
            }
        }
    }

    /// Polls every `opts.every` until the task is aborted (spawn it on the session's runtime
    /// and abort the handle when done).
    pub async fn run(mut self, session: Arc<Session>, policy: Arc<ReplicaLbPolicy>) {
        let mut every = tokio::time::interval(self.opts.every);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            self.poll_once(&session, &policy).await;
        }
    }
}

/// One cache's cumulative (hits, requests) on the node `target` names, from Cassandra's
/// `system_views.caches` (`cache`: "rows", "chunks" or "keys"); `None` when the node has no such
/// row. Shared by the poller and the experiments' observer, so both read the same counters.
pub async fn cache_counters(
    session: &Session,
    target: NodeIdentifier,
    cache: &str,
    timeout: Duration,
) -> Result<Option<(u64, u64)>, String> {
    let mut st = Statement::new("SELECT hit_count, request_count FROM system_views.caches WHERE name = ?");
    st.set_load_balancing_policy(Some(SingleTargetLoadBalancingPolicy::new(target, None)));
    st.set_request_timeout(Some(timeout));
    let what = |e: &dyn std::fmt::Display| format!("system_views.caches: {e}");
    let rows = session
        .query_unpaged(st, (cache,))
        .await
        .map_err(|e| what(&e))?
        .into_rows_result()
        .map_err(|e| what(&e))?;
    let row = rows.maybe_first_row::<(Option<i64>, Option<i64>)>().map_err(|e| what(&e))?;
    Ok(row.map(|(hits, requests)| (hits.unwrap_or(0).max(0) as u64, requests.unwrap_or(0).max(0) as u64)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn rates_follow_the_published_tracker_and_restarts_start_over() {
        let mut p = HitRatePoller::new(HitRatePolling {
            tick: Duration::from_secs(1),
            window: Duration::from_secs(6),
            ..HitRatePolling::default()
        })
        .unwrap();
        let host = Uuid::from_u128(7);
        assert_eq!(p.observe(host, 1000, 1000, 0), None, "the baseline");
        assert_eq!(p.observe(host, 1080, 1100, S / 2), None, "no tick yet");
        let r = p.observe(host, 1160, 1200, S).unwrap();
        assert!((r - 0.8).abs() < 1e-12, "{r}");
        // A restart: counters go back; the node counts as new (no rate until its first tick).
        assert_eq!(p.observe(host, 5, 50, S + S / 2), None);
        let r = p.observe(host, 5, 100, 2 * S + S / 2).unwrap();
        assert!(r < 0.1, "a cold node: {r}");
    }

    #[test]
    fn settings_are_checked() {
        let bad = HitRatePolling {
            cache: "row".into(),
            ..HitRatePolling::default()
        };
        assert!(HitRatePoller::new(bad).err().unwrap().contains("'row'"));
        let bad = HitRatePolling {
            tick: Duration::from_secs(10),
            window: Duration::from_secs(1),
            ..HitRatePolling::default()
        };
        assert!(bad.validate().unwrap_err().contains("window"));
    }
}
