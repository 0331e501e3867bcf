//! One policy's run on a fresh local cluster of node processes ([`run_real`]): start the
//! cluster, write the keys, warm the caches, the measured load with the fault timeline and the
//! sampler beside it, and the run's metrics.

use crate::interrupt::{install_interrupt_handler, register_pid, unregister_pid};
use crate::plan::{warmup_seed, FaultAction, PolicyRun, RealPlan};
use crate::{sampler, series};
use replica_lb_launcher::{ClusterFile, NodeCommand, UpOptions, ZoneLayout};
use replica_lb_loadgen::report::BenchReport;
use replica_lb_loadgen::{BenchHooks, BenchOptions, ClientPolicy, ClientRuntime, Completion, LoadOptions, Outcome};
use replica_lb_metrics::{Recorder, RecorderConfig, RunMetrics};
use replica_lb_node::client::ClusterClient;
use replica_lb_node::proto::FaultsRequest;
use replica_lb_policy::ConsistencyLevel;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How to run.
pub struct RunOptions<'a> {
    /// The cluster's directory (node configs, logs, data); must not hold a running cluster.
    /// Existing contents from an earlier run are replaced.
    pub cluster_dir: PathBuf,
    /// How to start a node process.
    pub command: NodeCommand,
    /// Progress lines for a human (stderr).
    pub progress: &'a mut dyn FnMut(&str),
}

/// The node processes of a run: killed and reaped when dropped, whatever happened.
struct Nodes(Mutex<Vec<Child>>);

impl Nodes {
    fn push(&self, c: Child) {
        register_pid(c.id());
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(c);
    }
}

impl Drop for Nodes {
    fn drop(&mut self) {
        let mut v = self.0.lock().unwrap_or_else(|p| p.into_inner());
        for c in v.iter_mut() {
            let _ = c.kill();
            let _ = c.wait();
            unregister_pid(c.id());
        }
    }
}

/// Prepares `dir` for a new cluster: refuses one with a running cluster, clears one left by an
/// earlier run (it has a cluster.json), refuses any other non-empty directory.
fn fresh_dir(dir: &Path) -> Result<(), String> {
    if dir.join(replica_lb_launcher::CLUSTER_FILE).exists() {
        if let Ok(old) = ClusterFile::load(dir) {
            if old
                .nodes
                .iter()
                .any(|n| replica_lb_launcher::process_state(n.pid).is_some_and(|s| s != 'Z'))
            {
                let _ = replica_lb_launcher::down(dir, Duration::from_secs(5));
            }
        }
        std::fs::remove_dir_all(dir).map_err(|e| format!("cannot clear {}: {e}", dir.display()))?;
    } else if dir.read_dir().is_ok_and(|mut d| d.next().is_some()) {
        return Err(format!(
            "{} exists and is not a cluster directory of an earlier run; give an empty or new directory",
            dir.display()
        ));
    }
    Ok(())
}

/// The fault timeline's record: markers for the charts and the first restart.
#[derive(Default)]
struct Timeline {
    markers: Vec<(f64, String)>,
    restart: Option<(usize, f64)>,
    error: Option<String>,
    /// The gated rolling restarts' records.
    rolls: Vec<replica_lb_metrics::rolling::RollingRestart>,
}

impl Timeline {
    /// Adds the rolling restarts' outcome: their records, markers and first node back.
    fn with_rolls(mut self, rolls: Result<Vec<replica_lb_metrics::rolling::RollingRestart>, String>) -> Timeline {
        match rolls {
            Ok(rolls) => {
                let (marks, first_back) = crate::rolling::markers(&rolls);
                self.markers.extend(marks);
                self.restart = self.restart.or(first_back);
                self.rolls = rolls;
            }
            Err(e) => {
                self.error.get_or_insert(format!("rolling restart: {e}"));
            }
        }
        self
    }
}

/// Starts node `id` again from its recorded config (an empty cache), keeps its process in
/// `nodes`, and waits until it sees the cluster's `members` nodes.
fn start_again(dir: &Path, id: u32, command: &NodeCommand, nodes: &Nodes, members: usize) -> Result<(), String> {
    let mut child = replica_lb_launcher::restart_node(dir, id, command).map_err(|e| e.to_string())?;
    let file = ClusterFile::load(dir).map_err(|e| e.to_string())?;
    let entry = file.node(id).map_err(|e| e.to_string())?.clone();
    let up = replica_lb_launcher::wait_node_up(&entry, members, Some(&mut child), Duration::from_secs(30));
    nodes.push(child);
    up.map_err(|e| e.to_string())
}

/// A gated rolling restart's restart of node `id`: killed (the load generator told), down
/// `down_s`, started again.
fn restart_for_roll(
    dir: &Path,
    id: u32,
    down_s: f64,
    command: &NodeCommand,
    nodes: &Nodes,
    members: usize,
    down_mask: &AtomicU64,
) -> Result<(), String> {
    let bit = 1u64 << (id.min(63));
    down_mask.fetch_or(bit, Ordering::Relaxed);
    replica_lb_launcher::kill_node(dir, id).map_err(|e| e.to_string())?;
    std::thread::sleep(Duration::from_secs_f64(down_s.max(0.0)));
    start_again(dir, id, command, nodes, members)?;
    down_mask.fetch_and(!bit, Ordering::Relaxed);
    Ok(())
}

fn sleep_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        std::thread::sleep(t - now);
    }
}

/// Runs the fault steps at their times (relative to `t0`); stops early when `stop` is set.
fn run_timeline(
    plan: &RealPlan,
    dir: &Path,
    command: &NodeCommand,
    nodes: &Nodes,
    down_mask: &AtomicU64,
    t0: Instant,
    stop: &AtomicBool,
) -> Timeline {
    let mut tl = Timeline::default();
    let since = |t: Instant| t.saturating_duration_since(t0).as_secs_f64();
    for step in &plan.faults {
        let at = t0 + Duration::from_secs_f64(step.at_s);
        while Instant::now() < at {
            if stop.load(Ordering::Relaxed) {
                return tl;
            }
            sleep_until(at.min(Instant::now() + Duration::from_millis(100)));
        }
        let id = step.node;
        let bit = 1u64 << (id.min(63));
        let t = since(Instant::now());
        tl.markers.push((t, step.marker_label()));
        let result: Result<(), String> = match step.action {
            FaultAction::Kill => {
                down_mask.fetch_or(bit, Ordering::Relaxed);
                replica_lb_launcher::kill_node(dir, id).map_err(|e| e.to_string())
            }
            FaultAction::Start => {
                if tl.restart.is_none() {
                    tl.restart = Some((id as usize, t));
                }
                start_again(dir, id, command, nodes, plan.nodes as usize).map(|()| {
                    down_mask.fetch_and(!bit, Ordering::Relaxed);
                })
            }
            FaultAction::Stop => replica_lb_launcher::signal_node(dir, id, replica_lb_launcher::Signal::Stop).map_err(|e| e.to_string()),
            FaultAction::Cont => replica_lb_launcher::signal_node(dir, id, replica_lb_launcher::Signal::Cont).map_err(|e| e.to_string()),
            FaultAction::DelayMs(ms) => {
                let req = FaultsRequest {
                    reply_delay_ms: Some(ms),
                    ..Default::default()
                };
                replica_lb_launcher::set_faults(dir, id, req).map(|_| ()).map_err(|e| e.to_string())
            }
            FaultAction::DiskFactor(f) => {
                let req = FaultsRequest {
                    slow_disk_factor: Some(f),
                    ..Default::default()
                };
                replica_lb_launcher::set_faults(dir, id, req).map(|_| ()).map_err(|e| e.to_string())
            }
        };
        if let Err(e) = result {
            tl.error = Some(format!("fault at {:.1} s on node {id} ({:?}): {e}", step.at_s, step.action));
            return tl;
        }
    }
    tl
}

/// Turns a node's counters of one second into recorder calls (the recorder keeps marginal
/// sums per second, so any pairing of kinds and outcomes with the same sums is equivalent).
fn set_disk_everywhere(file: &ClusterFile, on: bool) -> Result<(), String> {
    for n in &file.nodes {
        let req = FaultsRequest {
            slow_disk: Some(on),
            ..Default::default()
        };
        replica_lb_launcher::block_on(replica_lb_node::client::set_faults(n.grpc, req, Duration::from_secs(2)))
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("node {}: {e}", n.id))?;
    }
    Ok(())
}

/// Runs `plan` once for `run` on a fresh local cluster and returns what it measured (the
/// summary's `real.wall_s` is the run's wall time). Every node started is
/// stopped before it returns, on success and on failure.
pub fn run_real(plan: &RealPlan, run: &PolicyRun, opts: &mut RunOptions<'_>) -> Result<RunMetrics, String> {
    install_interrupt_handler();
    let wall = Instant::now();
    let dir = opts.cluster_dir.clone();
    fresh_dir(&dir)?;
    let mut base = plan.base.clone();
    // The nodes read their policy from their configuration files.
    base.policy.name = run.coordinator.name().to_string();
    base.policy.params = run.coordinator.params().clone();
    base.validate().map_err(|e| e.to_string())?;
    let mut choice = ClientPolicy::new(&run.client, plan.seed)?;
    let mut recorder = Recorder::new(RecorderConfig {
        nodes: plan.nodes as usize,
        duration_s: plan.duration_s,
        phases: plan.phases.clone(),
        timeout_ns: plan.timeout_ms as u64 * 1_000_000,
    })?;

    (opts.progress)(&format!("{}: starting {} nodes in {}", run.label, plan.nodes, dir.display()));
    let launched = replica_lb_launcher::up(&UpOptions {
        nodes: plan.nodes,
        dir: dir.clone(),
        base,
        command: opts.command.clone(),
        wait_timeout: Duration::from_secs(60),
        zones: ZoneLayout::PerNode(plan.node_zones.clone()),
    })
    .map_err(|e| e.to_string())?;
    let nodes = Nodes(Mutex::new(Vec::new()));
    for c in launched.children {
        nodes.push(c);
    }
    let file = launched.file;
    let result = measure(plan, run, opts, &dir, &file, &nodes, &mut choice, &mut recorder);
    // Stop the cluster whatever happened (SIGTERM, then SIGKILL; the guard reaps).
    let _ = replica_lb_launcher::down(&dir, Duration::from_secs(5));
    drop(nodes);
    let (timeline, completions) = result?;
    for (t, label) in &timeline.markers {
        recorder.marker(*t, label.clone());
    }
    let end_ns = plan.duration_s as u64 * 1_000_000_000;
    let mut completions = completions;
    completions.sort_by_key(|c| c.finished_ns);
    for c in &completions {
        if c.intended_ns < end_ns {
            recorder.issued();
        }
        // Requests still out at the end count in none of completed/timeouts/errors.
        if c.finished_ns >= end_ns {
            continue;
        }
        match c.outcome {
            Outcome::Ok => recorder.completed(c.finished_ns, c.finished_ns.saturating_sub(c.intended_ns)),
            Outcome::Timeout => recorder.timeout(c.finished_ns),
            Outcome::Error => recorder.error(c.finished_ns),
        }
    }
    let mut metrics = recorder.finish(run.label.clone(), timeline.restart, 0, 0.0);
    metrics.summary.rolling_restarts = timeline.rolls;
    metrics.summary.run = replica_lb_metrics::RunStats::Real(replica_lb_metrics::RealStats {
        wall_s: wall.elapsed().as_secs_f64(),
    });
    // Fault times are wall-clock readings: keep warmup_s to the millisecond.
    metrics.summary.warmup_s = metrics.summary.warmup_s.map(|w| (w * 1000.0).round() / 1000.0);
    Ok(metrics)
}

type Measured = (Timeline, Vec<Completion>);

/// Everything of a run on a started cluster: the keys written, the caches warmed, the
/// measured load (every request's end returned), the nodes' samples fed to `recorder`.
#[allow(clippy::too_many_arguments)]
fn measure(
    plan: &RealPlan,
    run: &PolicyRun,
    opts: &mut RunOptions<'_>,
    dir: &Path,
    file: &ClusterFile,
    nodes: &Nodes,
    choice: &mut ClientPolicy,
    recorder: &mut Recorder,
) -> Result<Measured, String> {
    let rt = replica_lb_loadgen::client_runtime(2)?;
    let client: ClusterClient = rt.block_on(ClusterClient::connect(&file.grpc_addrs()))?;
    write_keys(plan, run, &rt, &client, opts.progress)?;
    if plan.warmup_s > 0.0 {
        warm_up(plan, run, &rt, &client, file, opts.progress)?;
    }
    (opts.progress)(&format!(
        "{}: measuring {} s at {} requests/s, CL={}",
        run.label,
        plan.duration_s,
        plan.rate_per_s,
        plan.cl.as_str().to_uppercase()
    ));
    let (timeline, samples, completions, bench) = measured_load(plan, run, opts, dir, file, nodes, &rt, &client, choice);
    let bench = bench?;
    if let Some(e) = &timeline.error {
        return Err(e.clone());
    }
    (opts.progress)(&format!(
        "{}: {} requests, {} completed, {} errors, {} time-outs; every request: mean {:.2} ms, p99 {:.2} ms (completed only: p99 {:.2} ms)",
        run.label,
        bench.requests,
        bench.completed,
        bench.errors,
        bench.timeouts,
        bench.latency_all_ms.mean,
        bench.latency_all_ms.p99,
        bench.latency_ms.p99
    ));
    // The nodes count their bytes; utilisation is against the scenario's NIC speed, if any.
    recorder.track_network(plan.nic_bits_per_s);
    for (t, node, second) in series::per_second(&samples, plan.nodes as usize) {
        series::feed_second(recorder, t, node, &second);
    }
    drop(rt);
    Ok((timeline, completions))
}

/// The load's options at consistency level `cl` for `duration_s` from `seed`, the rest the
/// plan's.
fn bench_options(plan: &RealPlan, cl: ConsistencyLevel, duration_s: f64, seed: u64) -> BenchOptions {
    BenchOptions {
        rate: plan.rate_per_s,
        duration_s,
        cl,
        keys: plan.keys,
        read_fraction: plan.read_fraction,
        value_bytes: plan.value_bytes,
        timeout_ms: plan.timeout_ms,
        max_in_flight: 100_000,
        arrivals: plan.arrivals,
        seed,
        verify: false,
        zone: None,
    }
}

/// Writes every key once (CL=ALL); an error if any write failed.
fn write_keys(
    plan: &RealPlan,
    run: &PolicyRun,
    rt: &ClientRuntime,
    client: &ClusterClient,
    progress: &mut dyn FnMut(&str),
) -> Result<(), String> {
    progress(&format!("{}: writing {} keys (CL=ALL)", run.label, plan.key_count));
    let load = rt.block_on(replica_lb_loadgen::load(
        client,
        &LoadOptions {
            keys: plan.key_count,
            value_bytes: plan.value_bytes,
            cl: ConsistencyLevel::All,
            concurrency: 64,
            timeout_ms: 10_000,
        },
    ));
    if load.failed > 0 {
        return Err(format!(
            "loading the data failed for {} of {} keys: {}",
            load.failed,
            plan.key_count,
            load.first_error.unwrap_or_default()
        ));
    }
    progress(&format!(
        "{}: {} keys written in {:.1} s",
        run.label,
        load.written,
        load.elapsed.as_secs_f64()
    ));
    Ok(())
}

/// Warm-up: caches filled at the warm-up level with the emulated disk off meanwhile, through
/// token-aware `random` from the warm-up's own seed.
fn warm_up(
    plan: &RealPlan,
    run: &PolicyRun,
    rt: &ClientRuntime,
    client: &ClusterClient,
    file: &ClusterFile,
    progress: &mut dyn FnMut(&str),
) -> Result<(), String> {
    let slow = plan.base.slow_disk.enabled;
    progress(&format!(
        "{}: warming the caches for {:.0} s at CL={}{}",
        run.label,
        plan.warmup_s,
        plan.warmup_cl.as_str().to_uppercase(),
        if slow { " (emulated disk off meanwhile)" } else { "" }
    ));
    if slow {
        set_disk_everywhere(file, false)?;
    }
    let mut warm_choice = ClientPolicy::new(&replica_lb_loadgen::token_aware_random()?, warmup_seed(plan.seed))?;
    let r = replica_lb_loadgen::bench(
        rt.handle(),
        client,
        &mut warm_choice,
        &bench_options(plan, plan.warmup_cl, plan.warmup_s, warmup_seed(plan.seed)),
        &mut |_| {},
    )?;
    if slow {
        set_disk_everywhere(file, true)?;
    }
    progress(&format!(
        "{}: warm-up done: {} reads, {} errors, {} time-outs",
        run.label, r.completed, r.errors, r.timeouts
    ));
    Ok(())
}

/// The measured load: the open loop for `duration_s` while a thread runs the fault timeline
/// (its node down in the client's mask meanwhile) and another samples every node's counters;
/// returns the timeline, the samples, every request's end and the load's report.
#[allow(clippy::too_many_arguments)]
fn measured_load(
    plan: &RealPlan,
    run: &PolicyRun,
    opts: &mut RunOptions<'_>,
    dir: &Path,
    file: &ClusterFile,
    nodes: &Nodes,
    rt: &ClientRuntime,
    client: &ClusterClient,
    choice: &mut ClientPolicy,
) -> (Timeline, sampler::Samples, Vec<Completion>, Result<BenchReport, String>) {
    let down_mask = Arc::new(AtomicU64::new(0));
    let stop = AtomicBool::new(false);
    let t0 = Instant::now();
    let mut completions: Vec<Completion> = Vec::with_capacity((plan.rate_per_s * plan.duration_s as f64) as usize + 1024);
    let addrs: Vec<_> = file.nodes.iter().map(|n| n.grpc).collect();
    let label = run.label.clone();
    let (timeline, samples, bench) = std::thread::scope(|s| {
        let faults = s.spawn(|| run_timeline(plan, dir, &opts.command, nodes, &down_mask, t0, &stop));
        let roller = s.spawn(|| {
            let mut restart = |id: u32, down_s: f64| {
                restart_for_roll(dir, id, down_s, &opts.command, nodes, plan.nodes as usize, &down_mask)
                    .map_err(crate::gate::GateError::failed)
            };
            let label = run.label.clone();
            crate::rolling::run_rolls(&plan.rolls, dir, t0, &stop, &mut restart, &mut |l| eprintln!("{label}: {l}")).map_err(|e| e.message)
        });
        let sampler = s.spawn(|| sampler::sample(&addrs, t0, plan.duration_s, &stop));
        let mut on_done = |c: &Completion| completions.push(*c);
        let mut last_print = 0usize;
        let duration_s = plan.duration_s;
        let progress = &mut opts.progress;
        let mut on_second = |l: &replica_lb_loadgen::report::SecondReport| {
            if l.t_s >= last_print + 10 || l.t_s + 1 == duration_s as usize {
                last_print = l.t_s;
                progress(&format!("{label}: t={:>4} s  {}", l.t_s, l.text()));
            }
        };
        let bench = replica_lb_loadgen::bench_with(
            rt.handle(),
            client,
            choice,
            &bench_options(plan, plan.cl, plan.duration_s as f64, plan.seed),
            &mut on_second,
            BenchHooks {
                start: Some(t0),
                on_done: Some(&mut on_done),
                down_mask: Some(down_mask.clone()),
            },
        );
        stop.store(true, Ordering::Relaxed);
        let rolls = roller.join().map_err(|_| "its thread panicked".to_string()).and_then(|r| r);
        let timeline = faults.join().unwrap_or_default().with_rolls(rolls);
        let samples = sampler.join().unwrap_or_default();
        (timeline, samples, bench)
    });
    (timeline, samples, completions, bench)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_of_something_else_is_refused() {
        let dir = std::env::temp_dir().join(format!("replica-lb-fresh-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        assert!(fresh_dir(&dir).is_ok(), "an empty directory is fine");
        std::fs::write(dir.join("precious.txt"), "x").unwrap();
        assert!(fresh_dir(&dir).unwrap_err().contains("not a cluster directory"));
        assert!(dir.join("precious.txt").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
