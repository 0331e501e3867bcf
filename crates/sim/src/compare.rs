//! Runs several simulations — policy assignments of one scenario, or a whole batch of
//! scenarios — each on its own thread (at most one per core), and returns the results in the
//! order they were asked for.

use crate::engine::Sim;
use crate::runs::RunSpec;
use crate::scenario::Scenario;
use replica_lb_metrics::RunMetrics;
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
    pub runtime: replica_lb_runtime::RuntimeStats,
    /// The exactly-once audit of the runtimes' accounting ([`crate::Outcome::audit`]).
    pub audit: Result<(), String>,
}

impl RunResult {
    /// Simulated requests per second of wall time.
    pub fn requests_per_wall_s(&self) -> f64 {
        self.simulated_requests as f64 / self.metrics.summary.wall_s().max(1e-9)
    }
}

/// One simulation of a batch: a scenario, what runs on it, and the seed.
#[derive(Clone, Debug)]
pub struct Job<'a> {
    /// The scenario.
    pub scenario: &'a Scenario,
    /// The policies that run.
    pub spec: RunSpec,
    /// The seed.
    pub seed: u64,
}

/// Runs every spec of one scenario with `seed`. `progress[i]` (if given, one per spec)
/// receives run i's simulated milliseconds; `threads` caps parallelism (0 = one per core).
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
    let jobs: Vec<Job<'_>> = specs
        .iter()
        .map(|spec| Job {
            scenario: sc,
            spec: spec.clone(),
            seed,
        })
        .collect();
    run_jobs(&jobs, threads, progress).into_iter().collect()
}

/// Runs a batch of simulations, possibly of different scenarios, on a pool of threads
/// (`threads` at most, 0 = one per core), each job on one thread, and returns every job's
/// result in the order asked. `progress[i]` (if given, one per job) receives job i's simulated
/// milliseconds. Every result is deterministic: it depends only on its job.
pub fn run_jobs(jobs: &[Job<'_>], threads: usize, progress: Option<&[AtomicU64]>) -> Vec<Result<RunResult, String>> {
    assert!(progress.is_none_or(|p| p.len() == jobs.len()), "one progress counter per job");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let workers = if threads == 0 { cores } else { threads }.clamp(1, jobs.len().max(1));
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<RunResult, String>>>> = Mutex::new((0..jobs.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= jobs.len() {
                    return;
                }
                let job = &jobs[i];
                let r = Sim::new(job.scenario, &job.spec, job.seed).map(|sim| {
                    let out = sim.run(progress.map(|p| &p[i]));
                    RunResult {
                        spec: job.spec.clone(),
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
    match results.into_inner() {
        Ok(slots) => slots
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err("a run did not finish".into())))
            .collect(),
        Err(_) => jobs.iter().map(|_| Err("a simulation thread panicked".to_string())).collect(),
    }
}
