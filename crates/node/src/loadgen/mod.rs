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
//! The client is token-aware: by default it picks the coordinator uniformly among the key's
//! replicas (as in the seeds); with a client-side policy from the registry it asks the policy.

pub mod keys;
pub mod report;

use crate::client::ClusterClient;
use hdrhistogram::Histogram;
use keys::{key_bytes, value_for, KeyChooser};
use policy::{ConsistencyLevel, Decision, Failure, NodeId, ParamTable, Plan, Policy, Reply, Request, Rng, Side};
use report::{BenchReport, LatencySummary, SecondReport};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How the coordinator of each request is chosen.
pub enum CoordinatorChoice {
    /// Uniformly among the key's replicas (token-aware random).
    TokenAwareRandom,
    /// A client-side policy from the registry.
    Policy(Box<dyn Policy>),
}

impl CoordinatorChoice {
    /// The default, or the named client-side policy with `params`.
    pub fn from_name(name: Option<&str>, params: &ParamTable) -> Result<CoordinatorChoice, String> {
        match name {
            None | Some("token-aware") | Some("token_aware") => Ok(CoordinatorChoice::TokenAwareRandom),
            Some(n) => policy::registry::build_for(n, Side::Client, params)
                .map(CoordinatorChoice::Policy)
                .map_err(|e| e.to_string()),
        }
    }

    fn pick(&mut self, replicas: &[NodeId], group: u64, now_ns: u64, rng: &mut Rng) -> Option<NodeId> {
        if replicas.is_empty() {
            return None;
        }
        match self {
            CoordinatorChoice::TokenAwareRandom => Some(replicas[rng.below(replicas.len())]),
            CoordinatorChoice::Policy(p) => {
                let req = Request {
                    candidates: replicas,
                    replicas: None,
                    count: 1,
                    local: None,
                    group,
                };
                let mut plan = Plan::new();
                match p.plan(&req, now_ns, rng, &mut plan) {
                    Decision::Send => plan.targets().first().copied(),
                    // A client that must wait falls back to the first replica: the generator is
                    // open-loop and never holds requests back.
                    Decision::Wait { .. } => Some(replicas[0]),
                    Decision::Unavailable => None,
                }
            }
        }
    }
}

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
    pub keys: KeyChooser,
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

struct Done {
    intended: Instant,
    sent: Instant,
    finished: Instant,
    node: NodeId,
    outcome: Outcome,
}

#[derive(Default)]
struct Second {
    completed: u64,
    errors: u64,
    timeouts: u64,
    hist: Option<Histogram<u64>>,
}

fn new_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 120_000_000, 3).expect("valid histogram bounds")
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
    if opts.timeout_ms == 0 || opts.timeout_ms > crate::service::MAX_TIMEOUT_MS {
        return Err(format!(
            "--timeout-ms {} must be in [1, {}]",
            opts.timeout_ms,
            crate::service::MAX_TIMEOUT_MS
        ));
    }
    Ok(())
}

/// Runs the open-loop benchmark on `rt` (call from a thread outside the runtime). `on_second`
/// is called with each second's line as it ends.
pub fn bench(
    rt: &tokio::runtime::Handle,
    client: &ClusterClient,
    choice: &mut CoordinatorChoice,
    opts: &BenchOptions,
    on_second: &mut dyn FnMut(&SecondReport),
) -> Result<BenchReport, String> {
    bench_with(rt, client, choice, opts, on_second, BenchHooks::default())
}

/// [`bench`] with an experiment's extras: a shared time origin, every request's outcome, and
/// nodes to avoid as coordinators.
pub fn bench_with(
    rt: &tokio::runtime::Handle,
    client: &ClusterClient,
    choice: &mut CoordinatorChoice,
    opts: &BenchOptions,
    on_second: &mut dyn FnMut(&SecondReport),
    mut hooks: BenchHooks<'_>,
) -> Result<BenchReport, String> {
    check_bench_options(opts)?;
    let mut rng = Rng::seed_from_u64(opts.seed);
    let (tx, rx) = mpsc::channel::<Done>();
    let start = hooks.start.unwrap_or_else(Instant::now);
    let mut live_buf: Vec<NodeId> = Vec::new();
    let send_end = start + Duration::from_secs_f64(opts.duration_s);
    let hard_end = send_end + Duration::from_millis(opts.timeout_ms as u64 + 2000);
    let mean_gap_s = 1.0 / opts.rate;
    let mut next_at = start;
    let mut requests = 0u64;
    let mut in_flight = 0usize;
    let mut seconds: Vec<Second> = Vec::new();
    let mut total = new_hist();
    let (mut completed, mut errors, mut timeouts) = (0u64, 0u64, 0u64);
    let mut reported = 0usize;
    let bucket = |seconds: &mut Vec<Second>, at: Instant| -> usize {
        let s = at.saturating_duration_since(start).as_secs() as usize;
        while seconds.len() <= s {
            seconds.push(Second::default());
        }
        s
    };
    loop {
        let now = Instant::now();
        // Issue every request whose intended time has come.
        while next_at <= now && next_at < send_end {
            let intended = next_at;
            next_at += Duration::from_secs_f64(match opts.arrivals {
                Arrivals::Poisson => rng.exponential(mean_gap_s),
                Arrivals::Uniform => mean_gap_s,
            });
            requests += 1;
            let k = opts.keys.sample(&mut rng);
            let key = key_bytes(k);
            let (replicas, group) = client.replicas(&key);
            let now_ns = start.elapsed().as_nanos() as u64;
            let down = hooks.down_mask.as_ref().map_or(0, |m| m.load(std::sync::atomic::Ordering::Relaxed));
            let candidates = if down == 0 {
                replicas.as_slice()
            } else {
                live_buf.clear();
                live_buf.extend(
                    replicas
                        .as_slice()
                        .iter()
                        .filter(|n| n.index() >= 64 || down & (1 << n.index()) == 0),
                );
                &live_buf[..]
            };
            let via = choice.pick(candidates, group, now_ns, &mut rng);
            let (Some(via), true) = (via, in_flight < opts.max_in_flight) else {
                let s = bucket(&mut seconds, now);
                seconds[s].errors += 1;
                errors += 1;
                if let Some(f) = hooks.on_done.as_mut() {
                    let at = intended.saturating_duration_since(start).as_nanos() as u64;
                    f(&Completion {
                        intended_ns: at,
                        finished_ns: now.saturating_duration_since(start).as_nanos() as u64,
                        outcome: Outcome::Error,
                        node: NodeId(u16::MAX),
                    });
                }
                continue;
            };
            if let CoordinatorChoice::Policy(p) = choice {
                p.on_send(via, now_ns);
            }
            in_flight += 1;
            let read = rng.chance(opts.read_fraction);
            let client = client.clone();
            let tx = tx.clone();
            let (cl, timeout_ms, vb, verify) = (opts.cl, opts.timeout_ms, opts.value_bytes, opts.verify);
            rt.spawn(async move {
                let sent = Instant::now();
                let result = if read {
                    client.get(via, key, cl, timeout_ms).await.and_then(|r| {
                        if verify && r.found && r.value != value_for(k, r.value.len()) {
                            Err(tonic::Status::data_loss(format!("key {k}: wrong value")))
                        } else {
                            Ok(())
                        }
                    })
                } else {
                    client.put(via, key, value_for(k, vb), cl, timeout_ms).await.map(|_| ())
                };
                let outcome = match result {
                    Ok(()) => Outcome::Ok,
                    Err(s) if s.code() == tonic::Code::DeadlineExceeded => Outcome::Timeout,
                    Err(_) => Outcome::Error,
                };
                let _ = tx.send(Done {
                    intended,
                    sent,
                    finished: Instant::now(),
                    node: via,
                    outcome,
                });
            });
        }
        // Record whatever finished.
        while let Ok(d) = rx.try_recv() {
            in_flight -= 1;
            let s = bucket(&mut seconds, d.finished);
            let now_ns = d.finished.saturating_duration_since(start).as_nanos() as u64;
            let latency_us = d.finished.saturating_duration_since(d.intended).as_micros().max(1) as u64;
            if let Some(f) = hooks.on_done.as_mut() {
                f(&Completion {
                    intended_ns: d.intended.saturating_duration_since(start).as_nanos() as u64,
                    finished_ns: now_ns,
                    outcome: d.outcome,
                    node: d.node,
                });
            }
            match d.outcome {
                Outcome::Ok => {
                    completed += 1;
                    seconds[s].completed += 1;
                    let _ = total.record(latency_us.min(120_000_000));
                    let _ = seconds[s].hist.get_or_insert_with(new_hist).record(latency_us.min(120_000_000));
                    if let CoordinatorChoice::Policy(p) = choice {
                        let reply = Reply {
                            node: d.node,
                            latency_ns: d.finished.saturating_duration_since(d.sent).as_nanos() as u64,
                            feedback: Default::default(),
                        };
                        p.on_reply(&reply, now_ns);
                    }
                }
                Outcome::Error | Outcome::Timeout => {
                    if d.outcome == Outcome::Timeout {
                        timeouts += 1;
                        seconds[s].timeouts += 1;
                    } else {
                        errors += 1;
                        seconds[s].errors += 1;
                    }
                    if let CoordinatorChoice::Policy(p) = choice {
                        let f = if d.outcome == Outcome::Timeout {
                            Failure::Timeout
                        } else {
                            Failure::Error
                        };
                        p.on_failure(d.node, f, now_ns);
                    }
                }
            }
        }
        // Report every second that has ended.
        let now = Instant::now();
        while start + Duration::from_secs(reported as u64 + 1) <= now && (reported as f64) < opts.duration_s.ceil() {
            bucket(&mut seconds, start + Duration::from_secs(reported as u64));
            let line = report::second_line(
                reported,
                seconds[reported].completed,
                seconds[reported].errors,
                seconds[reported].timeouts,
                seconds[reported].hist.as_ref(),
            );
            on_second(&line);
            reported += 1;
        }
        if next_at >= send_end && in_flight == 0 {
            break;
        }
        if now >= hard_end {
            // Requests still out after their time-out (a hung client call): count as time-outs.
            timeouts += in_flight as u64;
            break;
        }
        // Sleep until the next send, or briefly while draining.
        let wake = if next_at < send_end {
            next_at
        } else {
            now + Duration::from_millis(1)
        };
        let gap = wake.saturating_duration_since(Instant::now());
        if !gap.is_zero() {
            match rx.recv_timeout(gap) {
                Ok(d) => {
                    // Put it back through the same path on the next turn.
                    let _ = tx.send(d);
                }
                Err(mpsc::RecvTimeoutError::Timeout) | Err(mpsc::RecvTimeoutError::Disconnected) => {}
            }
        }
    }
    let per_second = (0..seconds.len())
        .map(|s| {
            report::second_line(
                s,
                seconds[s].completed,
                seconds[s].errors,
                seconds[s].timeouts,
                seconds[s].hist.as_ref(),
            )
        })
        .collect();
    Ok(BenchReport {
        requests,
        completed,
        errors,
        timeouts,
        latency_ms: LatencySummary::of(&total),
        per_second,
        target_rate: opts.rate,
        achieved_rate: completed as f64 / opts.duration_s,
        duration_s: opts.duration_s,
        cl: opts.cl.as_str().to_string(),
        read_fraction: opts.read_fraction,
    })
}
