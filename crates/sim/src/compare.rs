//! Runs several policy assignments of one scenario, each on its own thread (at most one per
//! core), and returns the results in the order they were asked for.

use crate::engine::Sim;
use crate::runs::RunSpec;
use crate::scenario::Scenario;
use metrics::RunMetrics;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// One finished run.
#[derive(Debug)]
pub struct RunResult {
    /// What ran.
    pub spec: RunSpec,
    /// What it measured.
    pub metrics: RunMetrics,
    /// Requests simulated, warm-up included.
    pub simulated_requests: u64,
    /// Every policy runtime's counters added up.
    pub runtime: runtime::RuntimeStats,
    /// The exactly-once audit of the runtimes' accounting ([`crate::Outcome::audit`]).
    pub audit: Result<(), String>,
}

impl RunResult {
    /// Simulated requests per second of wall time.
    pub fn requests_per_wall_s(&self) -> f64 {
        self.simulated_requests as f64 / self.metrics.summary.wall_s().max(1e-9)
    }
}

/// Runs every spec with `seed`. `progress[i]` (if given, one per spec) receives run i's
/// simulated milliseconds; `threads` caps parallelism (0 = one per core).
pub fn run_all(
    sc: &Scenario,
    specs: &[RunSpec],
    seed: u64,
    threads: usize,
    progress: Option<&[AtomicU64]>,
) -> Result<Vec<RunResult>, String> {
    // Build every simulation first, so a bad policy fails before any work starts.
    for spec in specs {
        Sim::new(sc, spec, seed)?;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let workers = if threads == 0 { cores } else { threads }.clamp(1, specs.len().max(1));
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<RunResult, String>>>> = Mutex::new((0..specs.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= specs.len() {
                    return;
                }
                let r = Sim::new(sc, &specs[i], seed).map(|sim| {
                    let out = sim.run(progress.map(|p| &p[i]));
                    RunResult {
                        spec: specs[i].clone(),
                        metrics: out.metrics,
                        simulated_requests: out.simulated_requests,
                        runtime: out.runtime,
                        audit: out.audit,
                    }
                });
                // A poisoned lock means another worker panicked; that panic propagates anyway.
                if let Ok(mut slots) = results.lock() {
                    slots[i] = Some(r);
                }
            });
        }
    });
    let slots = results.into_inner().map_err(|_| "a simulation thread panicked".to_string())?;
    slots
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err("a run did not finish".into())))
        .collect()
}
