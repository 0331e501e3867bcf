//! The load generator: `load` writes keys 0..N-1; `bench` drives an open-loop load and
//! reports latency.
//!
//! Open loop: request i has an intended send time fixed in advance (Poisson or evenly spaced
//! arrivals at the target rate) and its latency is measured from that time, not from when it
//! was actually sent, so a stall of the cluster or of the generator shows up in full (no
//! coordinated omission). The dispatcher is one OS thread that sleeps until each intended
//! time (thread sleeps are precise to tens of microseconds, tokio's timer only to 1 ms), owns
//! the client-side policy and the histograms, and hands each request to the tokio runtime.
//!
//! The client is token-aware: a client-side policy from the registry, in the shared policy
//! runtime ([`client_policy`]), picks each request's coordinator among the key's live
//! replicas; by default uniformly (as in the seeds).

mod bench;
pub mod client_policy;
pub mod cql;
pub mod keys;
pub mod report;

pub use bench::{bench, bench_with};
pub use client_policy::ClientPolicy;

use keys::{key_bytes, value_for};
use node::client::ClusterClient;
use policy::{ConsistencyLevel, NodeId, Rng};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Options of `load`.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// Keys 0..keys-1 are written.
    pub keys: u64,
    /// Value size.
    pub value_bytes: usize,
    /// Consistency level of the writes.
    pub cl: ConsistencyLevel,
    /// Writes in flight at once.
    pub concurrency: usize,
    /// Per-write time-out, ms.
    pub timeout_ms: u32,
}

/// What `load` did.
#[derive(Clone, Debug)]
pub struct LoadOutcome {
    /// Writes acknowledged.
    pub written: u64,
    /// Writes that failed.
    pub failed: u64,
    /// The first failure, if any.
    pub first_error: Option<String>,
    /// Wall time.
    pub elapsed: Duration,
}

/// Writes keys 0..N-1 (closed loop, `concurrency` at a time), each through a coordinator chosen
/// uniformly among its replicas.
pub async fn load(client: &ClusterClient, opts: &LoadOptions) -> LoadOutcome {
    let start = Instant::now();
    let sem = Arc::new(tokio::sync::Semaphore::new(opts.concurrency.max(1)));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Result<(), String>>();
    let mut rng = Rng::seed_from_u64(0x10ad);
    let mut out = LoadOutcome {
        written: 0,
        failed: 0,
        first_error: None,
        elapsed: Duration::ZERO,
    };
    let note = |r: Result<(), String>, out: &mut LoadOutcome| match r {
        Ok(()) => out.written += 1,
        Err(e) => {
            out.failed += 1;
            out.first_error.get_or_insert(e);
        }
    };
    for i in 0..opts.keys {
        let Ok(permit) = sem.clone().acquire_owned().await else { break };
        while let Ok(r) = rx.try_recv() {
            note(r, &mut out);
        }
        let key = key_bytes(i);
        let (replicas, _) = client.replicas(&key);
        let Some(&via) = replicas
            .as_slice()
            .get(rng.below(replicas.len().max(1)).min(replicas.len().saturating_sub(1)))
        else {
            note(Err("the cluster has no members".into()), &mut out);
            continue;
        };
        let client = client.clone();
        let tx = tx.clone();
        let (value, cl, timeout_ms) = (value_for(i, opts.value_bytes), opts.cl, opts.timeout_ms);
        tokio::spawn(async move {
            let r = client
                .put(via, key, value, cl, timeout_ms)
                .await
                .map(|_| ())
                .map_err(|s| format!("key {i} via node {via}: {}", s.message()));
            let _ = tx.send(r);
            drop(permit);
        });
    }
    drop(tx);
    while let Some(r) = rx.recv().await {
        note(r, &mut out);
    }
    out.elapsed = start.elapsed();
    out
}

/// The open-loop schedule both `bench` paths follow (the node cluster's and the driver's):
/// each request's intended send time (latency is measured from it, so a slow cluster does not
/// slow the load: no coordinated omission), key and kind, from one seeded generator.
pub struct Schedule {
    rng: policy::Rng,
    keygen: workload::KeyGen,
    next_at: Instant,
    send_end: Instant,
    mean_gap_s: f64,
    arrivals: Arrivals,
    read_fraction: f64,
}

impl Schedule {
    /// The schedule of `opts` starting at `start`.
    pub fn new(opts: &BenchOptions, start: Instant) -> Schedule {
        Schedule {
            rng: policy::Rng::seed_from_u64(opts.seed),
            keygen: workload::KeyGen::new(opts.keys, 0, 1),
            next_at: start,
            send_end: start + Duration::from_secs_f64(opts.duration_s),
            mean_gap_s: 1.0 / opts.rate,
            arrivals: opts.arrivals,
            read_fraction: opts.read_fraction,
        }
    }

    /// The next request if its intended time has come by `now`.
    pub fn due(&mut self, now: Instant) -> Option<client_policy::Pending> {
        if self.next_at > now || self.next_at >= self.send_end {
            return None;
        }
        let pending = client_policy::Pending {
            key: self.keygen.next(&mut self.rng),
            intended: self.next_at,
            read: self.rng.chance(self.read_fraction),
        };
        self.next_at += Duration::from_secs_f64(match self.arrivals {
            Arrivals::Poisson => self.rng.exponential(self.mean_gap_s),
            Arrivals::Uniform => self.mean_gap_s,
        });
        Some(pending)
    }

    /// When the next request is due (`None`: every request was issued).
    pub fn next_at(&self) -> Option<Instant> {
        (self.next_at < self.send_end).then_some(self.next_at)
    }

    /// Whether every request was issued.
    pub fn done(&self) -> bool {
        self.next_at >= self.send_end
    }

    /// When sending stops.
    pub fn send_end(&self) -> Instant {
        self.send_end
    }
}

/// Inter-arrival times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrivals {
    /// Exponential gaps (Poisson process).
    Poisson,
    /// Even gaps.
    Uniform,
}

/// Options of `bench`.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Target requests per second.
    pub rate: f64,
    /// How long to send, seconds.
    pub duration_s: f64,
    /// Consistency level.
    pub cl: ConsistencyLevel,
    /// Keys 0..keys-1 are used.
    pub keys: workload::KeySpec,
    /// Share of reads (the rest are writes).
    pub read_fraction: f64,
    /// Size of written values.
    pub value_bytes: usize,
    /// Per-request time-out, ms.
    pub timeout_ms: u32,
    /// Requests in flight beyond which new ones fail at once (counted as errors).
    pub max_in_flight: usize,
    /// Arrival process.
    pub arrivals: Arrivals,
    /// Seed of the generator.
    pub seed: u64,
    /// Check that each value read is the one `load` wrote (counts mismatches as errors).
    pub verify: bool,
    /// The client's zone, told to zone-aware policies (`None`: unknown, every node local).
    pub zone: Option<u32>,
}

/// How a request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Answered.
    Ok,
    /// Failed (not a time-out).
    Error,
    /// Timed out.
    Timeout,
}

/// One finished request, as [`BenchHooks::on_done`] receives it.
#[derive(Clone, Copy, Debug)]
pub struct Completion {
    /// Its intended send time, ns since the run's start.
    pub intended_ns: u64,
    /// When it finished, ns since the run's start.
    pub finished_ns: u64,
    /// How it ended.
    pub outcome: Outcome,
    /// Its coordinator.
    pub node: NodeId,
}

/// Extras for an experiment driving [`bench_with`].
#[derive(Default)]
pub struct BenchHooks<'a> {
    /// The run's time origin (default: when `bench_with` starts); must not be in the future
    /// by more than a few ms.
    pub start: Option<Instant>,
    /// Called for every finished request, in the dispatcher thread.
    pub on_done: Option<&'a mut dyn FnMut(&Completion)>,
    /// Nodes the client must not use as coordinator (bit i = node i), like a driver that
    /// knows a host is down; a key whose replicas are all excluded fails at once (an error).
    pub down_mask: Option<Arc<std::sync::atomic::AtomicU64>>,
}

/// The tokio runtime a client runs on.
pub type ClientRuntime = tokio::runtime::Runtime;

/// A multi-threaded runtime with `threads` workers for the client side.
pub fn client_runtime(threads: usize) -> Result<ClientRuntime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.clamp(1, 64))
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}

/// Checks the options a user gives, naming the bad one.
pub fn check_bench_options(opts: &BenchOptions) -> Result<(), String> {
    if !(opts.rate.is_finite() && opts.rate > 0.0 && opts.rate <= 10_000_000.0) {
        return Err(format!(
            "--rate {} must be a number of requests per second in (0, 10000000]",
            opts.rate
        ));
    }
    if !(opts.duration_s.is_finite() && opts.duration_s > 0.0 && opts.duration_s <= 86_400.0) {
        return Err(format!(
            "--duration-s {} must be a number of seconds in (0, 86400]",
            opts.duration_s
        ));
    }
    if !(0.0..=1.0).contains(&opts.read_fraction) {
        return Err(format!("--read-fraction {} must be in [0, 1]", opts.read_fraction));
    }
    if opts.timeout_ms == 0 || opts.timeout_ms > node::service::MAX_TIMEOUT_MS {
        return Err(format!(
            "--timeout-ms {} must be in [1, {}]",
            opts.timeout_ms,
            node::service::MAX_TIMEOUT_MS
        ));
    }
    Ok(())
}
