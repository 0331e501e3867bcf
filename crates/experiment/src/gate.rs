//! The warm gate on a running cluster: every node's cache counters sampled over time, and the
//! rule of [`replica_lb_metrics::warm_gate`] applied to the trailing window.
//!
//! Counters are cumulative, so a window is the difference between the newest sample and the
//! newest one at least a window old. A node that restarted in between (its counters went back)
//! has no window until a whole window has passed since it came back: the gate never judges a
//! node on reads from before its restart.

use replica_lb_cassandra::warmth::{CacheProbe, CounterSource};
use replica_lb_cassandra::{CassandraCluster, Engine};
use replica_lb_metrics::warm_gate::{CacheWindow, TableWindows, Verdict, WarmRule};
use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A gate's failure: one line, and whether the caller's input was at fault (a cluster that
/// does not answer counts as bad input: the operator named it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GateError {
    /// Bad input rather than a failed operation.
    pub usage: bool,
    /// One line.
    pub message: String,
}

impl GateError {
    /// Bad input.
    pub fn usage(message: impl Into<String>) -> Self {
        GateError {
            usage: true,
            message: message.into(),
        }
    }

    /// A failed operation.
    pub fn failed(message: impl Into<String>) -> Self {
        GateError {
            usage: false,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for GateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<replica_lb_node::NodeError> for GateError {
    fn from(e: replica_lb_node::NodeError) -> Self {
        GateError {
            usage: e.is_usage(),
            message: e.to_string(),
        }
    }
}

/// How long one node's answer may take.
const QUERY_TIMEOUT: Duration = Duration::from_secs(2);

/// One node's cumulative `(hits, lookups)` per table, and where they came from.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Counters {
    source: &'static str,
    tables: BTreeMap<String, (u64, u64)>,
}

/// Where the gate reads each node's cache counters.
pub enum WarmSource {
    /// A Cassandra cluster, each node asked over CQL.
    Cassandra(Box<CacheProbe>),
    /// The node cluster in this directory, each node asked over gRPC.
    Nodes(PathBuf),
}

impl WarmSource {
    /// A Cassandra cluster reached through `contact_points`; an error (a usage error: the
    /// operator named the cluster) when none answers.
    pub fn cassandra(contact_points: &[SocketAddr]) -> Result<WarmSource, GateError> {
        if contact_points.is_empty() {
            return Err(GateError::usage("--contact-points: give at least one HOST[:PORT]"));
        }
        CacheProbe::connect(contact_points, QUERY_TIMEOUT)
            .map(|p| WarmSource::Cassandra(Box::new(p)))
            .map_err(GateError::usage)
    }

    /// The local cluster in `dir` (either engine), its nodes in id order.
    pub fn of_dir(dir: &Path) -> Result<WarmSource, GateError> {
        match replica_lb_cassandra::engine_of(dir).map_err(GateError::failed)? {
            Engine::Node => Ok(WarmSource::Nodes(dir.to_path_buf())),
            Engine::Cassandra => {
                let c = CassandraCluster::load(dir).map_err(GateError::failed)?;
                WarmSource::cassandra(&c.contact_points())
            }
        }
    }

    /// Each node's name, in sample order: its client address (Cassandra) or `node N`.
    pub fn names(&self) -> Result<Vec<String>, GateError> {
        Ok(match self {
            WarmSource::Cassandra(p) => p.addresses().iter().map(|a| a.ip().to_string()).collect(),
            WarmSource::Nodes(d) => replica_lb_launcher::status(d)?.iter().map(|n| format!("node {}", n.id)).collect(),
        })
    }

    fn sample(&self) -> Result<Vec<Option<Counters>>, GateError> {
        Ok(match self {
            WarmSource::Cassandra(p) => p
                .sample()
                .into_iter()
                .map(|c| {
                    c.map(|c| Counters {
                        source: match c.source {
                            CounterSource::Plugin => "plugin",
                            CounterSource::RowCache => "row-cache",
                        },
                        tables: c.tables,
                    })
                })
                .collect(),
            WarmSource::Nodes(d) => replica_lb_launcher::status(d)?
                .iter()
                .map(|n| {
                    let (hits, misses) = (n.cache_hits?, n.cache_misses?);
                    Some(Counters {
                        source: "node",
                        tables: BTreeMap::from([("cache".to_string(), (hits, hits + misses))]),
                    })
                })
                .collect(),
        })
    }
}

/// What the gate saw of one node over one window.
#[derive(Clone, Debug, serde::Serialize)]
pub struct NodeReading {
    /// The node's name (its address, or `node N`).
    pub node: String,
    /// Where its counters came from: `plugin` (per table), `row-cache` (Cassandra as
    /// shipped) or `node`; `None` when it did not answer.
    pub source: Option<&'static str>,
    /// Cache lookups in the window, all tables.
    pub reads: u64,
    /// Hits per lookup in the window, all tables (`None`: not read).
    pub hit_ratio: Option<f64>,
    /// Whether the gate says warm.
    pub warm: bool,
    /// The verdict and its figures (misses per read, peers' median, limit).
    #[serde(flatten)]
    pub verdict: Verdict,
}

/// Every node's reading over one window.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Reading {
    /// The window's length, seconds.
    pub window_s: f64,
    /// Per node, in the source's order.
    pub nodes: Vec<NodeReading>,
}

impl Reading {
    /// The reading of the node named `name` (an address with or without its port, or `node N`).
    pub fn node(&self, name: &str) -> Option<&NodeReading> {
        self.nodes.iter().find(|n| n.node == name)
    }
}

/// The gate: a source, the rule and the samples of the last window.
pub struct Gate {
    source: WarmSource,
    names: Vec<String>,
    rule: WarmRule,
    window: Duration,
    history: VecDeque<(Instant, Vec<Option<Counters>>)>,
}

impl Gate {
    /// A gate over `source` judging by `rule` over trailing windows of `window`.
    pub fn new(source: WarmSource, rule: WarmRule, window: Duration) -> Result<Gate, GateError> {
        assert!(!window.is_zero(), "a gate needs a window");
        let names = source.names()?;
        Ok(Gate {
            source,
            names,
            rule,
            window,
            history: VecDeque::new(),
        })
    }

    /// The nodes' names, in the readings' order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The window the gate judges over.
    pub fn window(&self) -> Duration {
        self.window
    }

    /// Samples every node now; once a sample at least a window old exists, the reading over
    /// the window from it to now.
    pub fn poll(&mut self) -> Result<Option<Reading>, GateError> {
        let now = Instant::now();
        let sample = self.source.sample()?;
        self.history.push_back((now, sample));
        // Keep the newest sample at least a window old, and everything after it.
        while self.history.len() >= 2 && now.duration_since(self.history[1].0) >= self.window {
            self.history.pop_front();
        }
        let (from, earlier) = &self.history[0];
        if now.duration_since(*from) < self.window {
            return Ok(None);
        }
        let later = &self.history.back().expect("just pushed").1;
        Ok(Some(self.read(now.duration_since(*from), earlier, later)))
    }

    fn read(&self, span: Duration, earlier: &[Option<Counters>], later: &[Option<Counters>]) -> Reading {
        let windows: Vec<Option<TableWindows>> = earlier
            .iter()
            .zip(later)
            .map(|(a, b)| windows_between(a.as_ref(), b.as_ref()))
            .collect();
        let verdicts = self.rule.judge_tables(&windows);
        let nodes = (0..self.names.len())
            .map(|i| {
                let total = windows[i]
                    .iter()
                    .flat_map(|t| t.values())
                    .fold(CacheWindow::default(), |a, w| a.plus(*w));
                NodeReading {
                    node: self.names[i].clone(),
                    source: later.get(i).and_then(|c| c.as_ref()).map(|c| c.source),
                    reads: total.reads,
                    hit_ratio: total.hit_ratio(),
                    warm: verdicts[i].warmth.is_warm(),
                    verdict: verdicts[i],
                }
            })
            .collect();
        Reading {
            window_s: span.as_secs_f64(),
            nodes,
        }
    }
}

/// How a wait for warmth ended.
#[derive(Clone, Debug)]
pub struct WaitOutcome {
    /// Whether the node (or every node) was warm before the time-out.
    pub warm: bool,
    /// Seconds waited.
    pub waited_s: f64,
    /// The last reading (`None`: the time-out came before a whole window had passed).
    pub last: Option<Reading>,
}

impl WaitOutcome {
    /// The nodes that were not warm at the end, with their figures, in one line.
    pub fn cold_nodes(&self, names: &[String]) -> String {
        match &self.last {
            None => format!("no whole window measured ({})", names.join(", ")),
            Some(r) => r.nodes.iter().filter(|n| !n.warm).map(describe).collect::<Vec<_>>().join("; "),
        }
    }
}

/// One node's reading in words: "127.0.1.3 cold: hit ratio 0.412 over 1234 reads, misses
/// x1.90 of its peers' median (limit x1.20)".
pub fn describe(n: &NodeReading) -> String {
    use replica_lb_metrics::warm_gate::Warmth;
    let state = match n.verdict.warmth {
        Warmth::Warm => "warm",
        Warmth::Cold => "cold",
        Warmth::Unread => "not read (not warm)",
        Warmth::NoReference => "no peer read (not warm)",
    };
    let mut line = format!("{} {state}", n.node);
    if let Some(h) = n.hit_ratio {
        line += &format!(": hit ratio {h:.3} over {} reads", n.reads);
    }
    match (n.verdict.misses_per_read, n.verdict.peers_median, n.verdict.limit) {
        (Some(own), Some(median), Some(limit)) => {
            line += &format!(", misses/read {own:.4} against the peers' median {median:.4} (warm up to {limit:.4})")
        }
        _ if n.source.is_none() => line += ", did not answer",
        _ => {}
    }
    line
}

impl Gate {
    /// Polls until `target` (a node's name; `None`: every node) is warm or `timeout` passes,
    /// calling `progress` with one line per node at least every 10 s.
    pub fn wait(&mut self, target: Option<&str>, timeout: Duration, progress: &mut dyn FnMut(&str)) -> Result<WaitOutcome, GateError> {
        self.wait_until(target, Instant::now() + timeout, &|| false, progress)
    }

    /// [`Gate::wait`] to a `deadline`, ending early (not warm) once `stop` says so.
    pub fn wait_until(
        &mut self,
        target: Option<&str>,
        deadline: Instant,
        stop: &dyn Fn() -> bool,
        progress: &mut dyn FnMut(&str),
    ) -> Result<WaitOutcome, GateError> {
        if let Some(t) = target {
            if !self.names.iter().any(|n| n == t) {
                return Err(GateError::usage(format!(
                    "--node {t}: not a node of the cluster; its nodes are {}",
                    self.names.join(", ")
                )));
            }
        }
        let start = Instant::now();
        let mut last_progress: Option<Instant> = None;
        let mut last: Option<Reading> = None;
        loop {
            if let Some(r) = self.poll()? {
                let warm = match target {
                    Some(t) => r.node(t).is_some_and(|n| n.warm),
                    None => r.nodes.iter().all(|n| n.warm),
                };
                last = Some(r);
                if warm {
                    return Ok(WaitOutcome {
                        warm,
                        waited_s: start.elapsed().as_secs_f64(),
                        last,
                    });
                }
            }
            if last_progress.is_none_or(|p| p.elapsed() >= Duration::from_secs(10)) {
                last_progress = Some(Instant::now());
                self.report(last.as_ref(), start.elapsed(), progress);
            }
            if Instant::now() >= deadline || stop() {
                return Ok(WaitOutcome {
                    warm: false,
                    waited_s: start.elapsed().as_secs_f64(),
                    last,
                });
            }
            self.pause_until(deadline);
        }
    }

    /// Sleeps one polling interval (a tenth of the window, 0.5 to 2 s), never past `deadline`.
    pub fn pause_until(&self, deadline: Instant) {
        let every = (self.window / 10).clamp(Duration::from_millis(500), Duration::from_secs(2));
        std::thread::sleep(
            every
                .min(deadline.saturating_duration_since(Instant::now()))
                .max(Duration::from_millis(10)),
        );
    }

    fn report(&self, last: Option<&Reading>, waited: Duration, progress: &mut dyn FnMut(&str)) {
        let t = waited.as_secs();
        match last {
            None => {
                for name in &self.names {
                    progress(&format!("{t:>5} s  {name}: measuring the first {} s window", self.window.as_secs()));
                }
            }
            Some(r) => {
                for n in &r.nodes {
                    progress(&format!("{t:>5} s  {}", describe(n)));
                }
            }
        }
    }
}

/// A node's per-table windows between two samples: tables in both whose counters did not go
/// back (a restart voids them); `None` when either sample is missing.
fn windows_between(earlier: Option<&Counters>, later: Option<&Counters>) -> Option<TableWindows> {
    let (earlier, later) = (earlier?, later?);
    Some(
        later
            .tables
            .iter()
            .filter_map(|(t, now)| Some((t.clone(), CacheWindow::between(*earlier.tables.get(t)?, *now)?)))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counters(hits: u64, lookups: u64) -> Option<Counters> {
        Some(Counters {
            source: "node",
            tables: BTreeMap::from([("cache".to_string(), (hits, lookups))]),
        })
    }

    #[test]
    fn a_window_is_the_difference_and_a_restart_voids_it() {
        let w = windows_between(counters(10, 100).as_ref(), counters(70, 200).as_ref()).unwrap();
        assert_eq!(w["cache"], CacheWindow::new(100, 60));
        let restarted = windows_between(counters(10, 100).as_ref(), counters(1, 5).as_ref()).unwrap();
        assert!(restarted.is_empty(), "counters that went back give no window");
        assert!(windows_between(None, counters(1, 5).as_ref()).is_none());
    }
}
