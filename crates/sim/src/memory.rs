//! What simulations need in memory, estimated from their scenarios before any starts, so that
//! a run that cannot fit is refused with the estimate and the key to change instead of ending
//! in an allocation failure hours later (docs/scenarios.md, "Limits").
//!
//! Per simulation running: each node's row cache ([`Lru::bytes_for`]: 32 bytes a row, or 8
//! bytes a key when the key space is small), the requests a read time-out can hold in flight
//! (rate x time-out, each with its replica ops; twice that for the slabs' growth), and each
//! client's and coordinator's policy state (a few bytes per node). Per run until its results are written: its recording
//! ([`RecorderConfig::bytes`], `seconds x nodes x 56` bytes of counters). An overloaded
//! cluster's queues, which grow with the run, are not counted.

use crate::engine::{OP_BYTES, REQUEST_BYTES};
use crate::lru::Lru;
use crate::scenario::{Arrival, Routing, Scenario};
use replica_lb_metrics::format::thousands;
use replica_lb_metrics::RecorderConfig;

/// Bytes of a policy's state per node it knows, per client or coordinator (a bound: the
/// policies keep a few counters and an average per node).
const POLICY_BYTES_PER_NODE: u64 = 32;
/// Bytes of a client's or coordinator's fixed state (its runtime, its generator, its policy).
const REQUESTER_BYTES: u64 = 2048;

/// One part of an estimate: what it is, the scenario key that sets it, its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    /// What it is, with its factors (`row caches: 3 nodes x 1,073,741,824 rows`).
    pub what: String,
    /// The scenario key that changes it most directly (`node.cache_rows`).
    pub key: &'static str,
    /// Its bytes, over every simulation it counts for.
    pub bytes: u64,
}

/// An estimate of the memory a batch of simulations needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Estimate {
    /// The parts, largest first.
    pub parts: Vec<Part>,
}

impl Estimate {
    /// Bytes in all.
    pub fn bytes(&self) -> u64 {
        self.parts.iter().map(|p| p.bytes).sum()
    }

    /// The largest part, the one to shrink.
    pub fn largest(&self) -> Option<&Part> {
        self.parts.first()
    }

    /// Whether it fits in `available` bytes; if not, one line with the estimate, its largest
    /// part, what is available and the key to change.
    pub fn check(&self, available: u64) -> Result<(), String> {
        let need = self.bytes();
        if need <= available {
            return Ok(());
        }
        let largest = self.largest().map_or(String::new(), |p| {
            format!("; the largest part is {} ({}): lower {}", p.what, gib(p.bytes), p.key)
        });
        Err(format!(
            "the run needs about {} of memory and {} is available{largest} (docs/scenarios.md, Limits)",
            gib(need),
            gib(available)
        ))
    }
}

/// Bytes in TB, GB (one decimal) or MB, whichever reads best (`103.1 GB`, `10.6 TB`).
pub fn gib(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= 1e12 {
        format!("{:.1} TB", b / 1e12)
    } else if b >= 1e9 {
        format!("{:.1} GB", b / 1e9)
    } else {
        format!("{:.0} MB", (b / 1e6).ceil())
    }
}

/// The estimate for `runs` simulations of each scenario (`batch`: scenario, runs), at most
/// `threads` running at once: the `threads` largest working sets at once, and every run's
/// recording until the results are written.
pub fn estimate(batch: &[(&Scenario, usize)], threads: usize) -> Estimate {
    let mut working: Vec<(u64, Vec<Part>)> = Vec::new();
    let mut held: Vec<Part> = Vec::new();
    for &(sc, runs) in batch {
        for _ in 0..runs {
            let parts = working_set(sc);
            working.push((parts.iter().map(|p| p.bytes).sum(), parts));
        }
        let recording = RecorderConfig {
            nodes: sc.cluster.nodes,
            duration_s: sc.run.duration_s,
            phases: sc.phases.clone(),
            timeout_ns: sc.requests.read_timeout_ns,
        }
        .bytes();
        held.push(Part {
            what: format!(
                "{runs} run(s) of per-node counters: {} s x {} nodes",
                thousands(sc.run.duration_s as f64),
                thousands(sc.cluster.nodes as f64)
            ),
            key: "run.duration_s",
            bytes: recording * runs as u64,
        });
    }
    // The largest working sets are the ones that can run at once.
    working.sort_by_key(|w| std::cmp::Reverse(w.0));
    let mut counted: Vec<(Part, usize)> = Vec::new();
    for (_, set) in working.into_iter().take(threads.max(1)) {
        for p in set {
            match counted.iter_mut().find(|(q, _)| q.what == p.what) {
                Some((q, n)) => {
                    q.bytes += p.bytes;
                    *n += 1;
                }
                None => counted.push((p, 1)),
            }
        }
    }
    let mut parts: Vec<Part> = counted
        .into_iter()
        .map(|(mut p, n)| {
            if n > 1 {
                p.what = format!("{}, x{n} runs at once", p.what);
            }
            p
        })
        .collect();
    parts.extend(held);
    parts.retain(|p| p.bytes > 0);
    parts.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.what.cmp(&b.what)));
    Estimate { parts }
}

/// What one simulation of `sc` holds while it runs.
fn working_set(sc: &Scenario) -> Vec<Part> {
    let nodes = sc.cluster.nodes as u64;
    let mut parts = Vec::new();
    if let Some(rows) = sc.node.cache_rows {
        parts.push(Part {
            what: format!("row caches: {} nodes x {} rows", thousands(nodes as f64), thousands(rows as f64)),
            key: "node.cache_rows",
            bytes: nodes * Lru::bytes_for(rows, sc.clients.keys.count),
        });
    }
    let ops = sc.requests.consistency.required(sc.cluster.replication_factor) as u64 + 1;
    let per_request = REQUEST_BYTES as u64 + ops * OP_BYTES as u64;
    let timeout_s = sc.requests.read_timeout_ns as f64 / 1e9;
    let (in_flight, what, key) = match sc.clients.arrival {
        Arrival::Poisson { rate_per_s } | Arrival::Fixed { rate_per_s } => {
            let burst = sc.clients.bursts.map_or(1.0, |b| b.factor);
            (
                rate_per_s * burst * timeout_s,
                format!(
                    "requests in flight: {} requests/s x a {} s read time-out",
                    thousands(rate_per_s * burst),
                    replica_lb_metrics::format::trimmed(timeout_s)
                ),
                "clients.rate_per_s",
            )
        }
        Arrival::Closed { outstanding, .. } => (
            sc.clients.count as f64 * outstanding as f64,
            format!(
                "requests in flight: {} clients x {outstanding} outstanding",
                thousands(sc.clients.count as f64)
            ),
            "clients.outstanding",
        ),
    };
    // Twice: a slab grows by doubling.
    parts.push(Part {
        what,
        key,
        bytes: (in_flight.min(1e15) * per_request as f64 * 2.0) as u64,
    });
    let requesters = sc.clients.count as u64 + if sc.cluster.routing == Routing::Coordinator { nodes } else { 0 };
    parts.push(Part {
        what: format!(
            "policy state: {} clients and coordinators x {} nodes",
            thousands(requesters as f64),
            thousands(nodes as f64)
        ),
        key: "clients.count",
        bytes: requesters * (REQUESTER_BYTES + nodes * POLICY_BYTES_PER_NODE),
    });
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = r#"
name = "t"
[cluster]
nodes = 3
replication_factor = 3
[node]
cpu_concurrency = 4
cpu_service = { dist = "exponential", mean_us = 150 }
cache_rows = 100000
[clients]
count = 4
arrival = "poisson"
rate_per_s = 1000
keys = { pattern = "uniform", count = 1000000 }
[requests]
consistency = "quorum"
[run]
duration_s = 780
[policy]
coordinator = "naive"
"#;

    fn scenario(sets: &[&str]) -> Scenario {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        crate::parse(&crate::apply_overrides(SMALL, &sets).unwrap(), "t").unwrap()
    }

    /// The shipped scale fits in tens of MB; each documented limit's extreme names its key.
    #[test]
    fn the_estimate_follows_the_scenario_and_names_the_key_to_change() {
        let sc = scenario(&[]);
        let e = estimate(&[(&sc, 2)], 2);
        assert!(e.bytes() > 10_000_000 && e.bytes() < 100_000_000, "{e:?}");
        assert!(e.check(1 << 30).is_ok());
        for (sets, key, at_least) in [
            // Over a large key space: a small one is cached by key, whatever the capacity.
            (
                &["node.cache_rows=1073741824", "clients.keys.count=1099511627776"][..],
                "node.cache_rows",
                64e9,
            ),
            (&["clients.rate_per_s=1e9"][..], "clients.rate_per_s", 1e12),
        ] {
            let set = sets.join(" ");
            let sc = scenario(sets);
            let e = estimate(&[(&sc, 1)], 1);
            assert_eq!(e.largest().unwrap().key, key, "{e:?}");
            assert!(e.bytes() as f64 >= at_least, "{set}: {}", gib(e.bytes()));
            let msg = e.check(16_000_000_000).unwrap_err();
            assert!(
                msg.contains(&format!("lower {key}")) && msg.contains("16.0 GB is available") && !msg.contains('\n'),
                "{msg}"
            );
            let two = estimate(&[(&sc, 2)], 2);
            assert!(two.largest().unwrap().what.ends_with(", x2 runs at once"), "{two:?}");
        }
        let long = scenario(&[
            "cluster.nodes=4096",
            "cluster.replication_factor=3",
            "run.duration_s=36000",
            "node.cache_rows=10",
        ]);
        let e = estimate(&[(&long, 2)], 1);
        assert_eq!(e.largest().unwrap().key, "run.duration_s", "{e:?}");
        assert!(e.bytes() > 2 * 4096 * 36_000 * 56, "{}", gib(e.bytes()));
    }

    #[test]
    fn sizes_read_plainly() {
        assert_eq!(
            (gib(10_560_000_000_000), gib(103_079_215_104), gib(1)),
            ("10.6 TB".into(), "103.1 GB".into(), "1 MB".into())
        );
    }

    #[test]
    fn a_cache_costs_what_it_allocates() {
        assert_eq!(Lru::bytes_for(1 << 30, 1 << 40), ((1u64 << 31) + 1) * 16);
        assert_eq!(Lru::bytes_for(1_000, 16_000), 16_001 * 8);
    }
}
