//! Experiments on a real Apache Cassandra cluster through the scylla driver: one cluster for
//! the whole experiment ([`crate::cassandra`]), the scenario's keys written once, then for each
//! client policy an unmeasured warm-up and the measured open-loop run while a timeline thread
//! injects the scenario's faults at their times (pause = SIGSTOP/SIGCONT, delay through the
//! node's proxy, restart = kill -9 and start again). Every request's end is recorded into the
//! same [`metrics::RunMetrics`] the simulator produces: cluster latency per second and per
//! phase, time-outs, and per node the reads it coordinated (at CL=ONE a coordinator that is a
//! replica serves its read itself).

use super::{FaultAction, RealPlan};
use crate::cassandra::{self, config::NodeSettings, CassandraCluster, CassandraUp};
use crate::launcher::{send_signal, Signal};
use crate::loadgen::cql::{self, CqlCompletion, CqlHooks, CqlTarget};
use crate::loadgen::{BenchOptions, LoadOptions, Outcome};
use metrics::{CacheOutcome, ReadKind, RealStats, Recorder, RecorderConfig, RunMetrics, RunStats};
use policy::ParamTable;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// One policy run of a Cassandra experiment.
#[derive(Clone, Debug)]
pub struct CassandraRun {
    /// Its label (summary's `policy`).
    pub label: String,
    /// The client policy (`driver-default` or a project policy).
    pub policy: String,
    /// Its parameter overrides.
    pub params: ParamTable,
}

/// Starts the cluster for `plan` in `dir` and writes its keys; returns the cluster.
pub fn prepare(plan: &RealPlan, dir: &Path, progress: &mut dyn FnMut(&str)) -> Result<CassandraCluster, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let up = CassandraUp {
        nodes: plan.nodes,
        dir: dir.to_path_buf(),
        settings: NodeSettings::default(),
        proxy_program: exe,
        node_timeout: Duration::from_secs(180),
    };
    let cluster = cassandra::up(&up, progress)?;
    progress(&format!("writing {} keys (CL=ALL)", plan.key_count));
    let rt = crate::loadgen::client_runtime(2)?;
    let target = target(&cluster, cql::DRIVER_DEFAULT, &ParamTable::new(), plan.seed);
    let out = rt.block_on(cql::load(
        &target,
        &LoadOptions {
            keys: plan.key_count,
            value_bytes: plan.value_bytes,
            cl: policy::ConsistencyLevel::All,
            concurrency: 64,
            timeout_ms: 10_000,
        },
    ))?;
    if out.failed > 0 {
        return Err(format!(
            "{} write(s) failed; first: {}",
            out.failed,
            out.first_error.unwrap_or_default()
        ));
    }
    Ok(cluster)
}

fn target(cluster: &CassandraCluster, policy: &str, params: &ParamTable, seed: u64) -> CqlTarget {
    CqlTarget {
        contact_points: cluster.contact_points(),
        policy: policy.to_string(),
        params: params.clone(),
        seed,
        replication_factor: 3,
    }
}

fn bench_options(plan: &RealPlan, duration_s: f64, warmup: bool) -> BenchOptions {
    BenchOptions {
        rate: plan.rate_per_s,
        duration_s,
        cl: if warmup { plan.warmup_cl } else { plan.cl },
        keys: plan.keys,
        read_fraction: plan.read_fraction,
        value_bytes: plan.value_bytes,
        timeout_ms: plan.timeout_ms,
        max_in_flight: 20_000,
        arrivals: plan.arrivals,
        seed: plan.seed,
        verify: false,
        zone: None,
    }
}

/// Injects `plan`'s faults into the cluster in `dir`, timed from `t0`.
fn run_faults(plan: &RealPlan, dir: &Path, t0: Instant, progress: &mut dyn FnMut(&str)) -> Result<(), String> {
    let mut i = 0;
    while i < plan.faults.len() {
        let step = &plan.faults[i];
        let at = t0 + Duration::from_secs_f64(step.at_s.max(0.0));
        std::thread::sleep(at.saturating_duration_since(Instant::now()));
        let c = CassandraCluster::load(dir)?;
        let pid = c.node(step.node)?.pid;
        match step.action {
            FaultAction::Stop => send_signal(pid, Signal::Stop).map_err(|e| e.to_string())?,
            FaultAction::Cont => send_signal(pid, Signal::Cont).map_err(|e| e.to_string())?,
            FaultAction::DelayMs(ms) => cassandra::set_delay(dir, step.node, ms)?,
            FaultAction::Kill => {
                // Down until the matching start, then back on the same data.
                let back = plan.faults[i + 1..]
                    .iter()
                    .find(|s| s.node == step.node && s.action == FaultAction::Start)
                    .map_or(0.0, |s| s.at_s);
                let down = Duration::from_secs_f64((back - step.at_s).max(0.0));
                cassandra::restart(dir, step.node, down, Duration::from_secs(180))?;
            }
            FaultAction::Start => {}
            FaultAction::DiskFactor(_) => return Err("a Cassandra node has no emulated disk (fault kind \"slow\")".into()),
        }
        progress(&format!("t={:5.1} s: node {} {:?}", step.at_s, step.node, step.action));
        i += 1;
    }
    Ok(())
}

/// Runs one policy on the prepared cluster: warm-up, then the measured run with the faults.
pub fn run_policy(plan: &RealPlan, dir: &Path, run: &CassandraRun, progress: &mut dyn FnMut(&str)) -> Result<RunMetrics, String> {
    let wall = Instant::now();
    let cluster = CassandraCluster::load(dir)?;
    let rt = crate::loadgen::client_runtime(2)?;
    let t = target(&cluster, &run.policy, &run.params, plan.seed);
    if plan.warmup_s > 0.0 {
        progress(&format!("{}: warming up {:.0} s", run.label, plan.warmup_s));
        cql::bench(rt.handle(), &t, &bench_options(plan, plan.warmup_s, true), &mut |_| {})?;
    }
    let mut rec = Recorder::new(RecorderConfig {
        nodes: plan.nodes as usize,
        duration_s: plan.duration_s,
        phases: plan.phases.clone(),
    })?;
    let index: Vec<_> = cluster.contact_points();
    let t0 = Instant::now() + Duration::from_millis(200);
    let faults_dir: PathBuf = dir.to_path_buf();
    let plan2 = plan.clone();
    let label = run.label.clone();
    let injector = std::thread::spawn(move || run_faults(&plan2, &faults_dir, t0, &mut |l| eprintln!("{label}: {l}")));
    let mut on_done = |c: &CqlCompletion| {
        let Some(intended_ns) = c.intended.checked_duration_since(t0).map(|d| d.as_nanos() as u64) else {
            return;
        };
        let finished_ns = c.finished.saturating_duration_since(t0).as_nanos() as u64;
        rec.issued();
        match c.outcome {
            Outcome::Ok => {
                rec.completed(finished_ns, finished_ns.saturating_sub(intended_ns));
                if let Some(n) = c.coordinator.and_then(|a| index.iter().position(|x| *x == a)) {
                    rec.read(finished_ns, n, ReadKind::Local, CacheOutcome::NoCache);
                }
            }
            Outcome::Timeout => rec.timeout(finished_ns),
            Outcome::Error => rec.error(),
        }
    };
    progress(&format!(
        "{}: measuring {} s at {} requests/s, CL={}",
        run.label,
        plan.duration_s,
        plan.rate_per_s,
        plan.cl.as_str()
    ));
    let hooks = CqlHooks {
        start: Some(t0),
        on_done: Some(&mut on_done),
    };
    let report = cql::bench_with(
        rt.handle(),
        &t,
        &bench_options(plan, plan.duration_s as f64, false),
        &mut |s| {
            if s.t_s % 10 == 9 {
                eprintln!("{}: {}", run.label, s.text());
            }
        },
        hooks,
    );
    let faults = injector.join().map_err(|_| "the fault thread panicked".to_string())?;
    // A paused node must not stay paused, whatever happened.
    if let Ok(c) = CassandraCluster::load(dir) {
        for n in &c.nodes {
            let _ = send_signal(n.pid, Signal::Cont);
            let _ = cassandra::set_delay(dir, n.id, 0);
        }
    }
    let report = report?;
    faults?;
    for step in &plan.faults {
        rec.marker(step.at_s, format!("node {} {:?}", step.node, step.action));
    }
    let mut m = rec.finish(run.label.clone(), None, 0, 0.0);
    m.summary.run = RunStats::Real(RealStats {
        wall_s: wall.elapsed().as_secs_f64(),
    });
    progress(&format!(
        "{}: {} requests, {} completed, {} time-outs; p50 {:.2} ms, p99 {:.2} ms, p99.9 {:.2} ms",
        run.label,
        report.report.requests,
        report.report.completed,
        report.report.timeouts,
        m.summary.latency_ms.p50,
        m.summary.latency_ms.p99,
        m.summary.latency_ms.p999
    ));
    Ok(m)
}
