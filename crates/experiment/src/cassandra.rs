//! Experiments on a real Apache Cassandra cluster through the scylla driver: one cluster for
//! the whole experiment ([`replica_lb_cassandra`]), the scenario's keys written once and flushed to
//! SSTables, then for each policy an unmeasured warm-up and the measured open-loop run while a
//! timeline thread injects the scenario's faults at their times (pause = SIGSTOP/SIGCONT, delay
//! through the node's proxy, restart = kill -9 and start again). Every request's end is
//! recorded into the same [`replica_lb_metrics::RunMetrics`] the simulator produces: cluster latency per
//! second and per phase, and time-outs.
//!
//! Every run has two sides ([`CassandraRun`]):
//! - a client policy chooses each read's coordinator: a project policy through the driver
//!   adapter, or the driver's own token-aware `DefaultPolicy` (`driver-default`, what
//!   applications run); `java:NAME` runs through the Apache Cassandra Java driver instead
//!   (`java:default`: its own DefaultLoadBalancingPolicy, [`replica_lb_loadgen::java`]);
//! - a coordinator policy orders the replicas inside Cassandra: Cassandra's own dynamic snitch
//!   (`dynamic-snitch`, as shipped: the baseline), or the replica-lb plug-in's `naive`, `hwlb`
//!   or `unified` ([`replica_lb_cassandra::plugin`]), switched at run time.
//!
//! With the plug-in, or a row cache, a sampler reads every node's counters over CQL once a
//! second ([`replica_lb_cassandra::observe`]): cache hits and misses, local, remote and replica
//! reads, as the node cluster's experiments record them.

use crate::gate::GateError;
use crate::plan::{warmup_seed, FaultAction, RealPlan};
use crate::rolling;
use crate::series::{self, Cumulative, Samples};
use replica_lb_cassandra::observe::{NodeCounters, Observer, Source};
use replica_lb_cassandra::plugin::{self, CoordinatorPolicy, PluginSettings};
use replica_lb_cassandra::{
    cgroup::DiskLimits,
    config::{NodeSettings, SavedCaches},
    CassandraCluster, CassandraUp,
};
use replica_lb_driver::hit_rates::HitRatePolling;
use replica_lb_launcher::{send_signal, Signal};
use replica_lb_loadgen::cql::{self, CqlBenchReport, CqlCompletion, CqlHooks, CqlTarget, RunStart, KEYSPACE};
use replica_lb_loadgen::{BenchOptions, LoadOptions, Outcome};
use replica_lb_metrics::rolling::RollingRestart;
use replica_lb_metrics::{CacheOutcome, NodeSecond, ReadKind, RealStats, Recorder, RecorderConfig, RunMetrics, RunStats};
use replica_lb_policy::{ParamTable, Side};
use replica_lb_workload::run_item::{PolicyName, RunItem};
use replica_lb_workload::scenario::{CassandraModel, FaultKind, RestartCache};
use replica_lb_workload::RunSpec;
use replica_lb_workload::Scenario;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub use replica_lb_loadgen::ClientChoice;

/// One policy run of a Cassandra experiment: who chooses the coordinator, and who orders the
/// replicas at the coordinator.
#[derive(Clone, Debug)]
pub struct CassandraRun {
    /// Its label (the item as given; summary's `policy`).
    pub label: String,
    /// The client policy.
    pub client: ClientChoice,
    /// The coordinator policy (Cassandra's own dynamic snitch, or one of the plug-in's).
    pub coordinator: CoordinatorPolicy,
    /// The same run in the simulator, labelled as this one (the driver's DefaultPolicy is
    /// modelled as token-aware `random`).
    pub sim: RunSpec,
}

/// Resolves `--policy` items ([`RunItem`]) for a Cassandra experiment of `scenario`. An item is
/// `CLIENT/COORDINATOR` or one name; a name that works on one side only sets that side, one
/// that works on both sets the scenario's `policy.both_side` (the client when Cassandra cannot
/// run it at the coordinator), and a driver's own policy (`driver-default`, `java:NAME`) is a
/// client. The side not named is the driver's own `driver-default` (what applications run)
/// or, at the coordinator, the scenario's `policy.coordinator` (Cassandra's `dynamic-snitch` in
/// the project's scenarios).
pub fn runs(items: &[String], scenario: &replica_lb_workload::scenario::Scenario) -> Result<Vec<CassandraRun>, String> {
    let model = scenario.policy.coordinator.info();
    let default_coordinator = CoordinatorPolicy::require(model).map_err(|e| format!("the scenario's policy.coordinator: {e}"))?;
    let mut out: Vec<CassandraRun> = Vec::with_capacity(items.len());
    for item in items {
        let item = item.trim();
        let (client, coordinator) = sides(RunItem::parse(item)?, scenario).map_err(|e| format!("--policy {item}: {e}"))?;
        let coordinator = coordinator.unwrap_or(default_coordinator);
        if out.iter().any(|r| r.label == item) {
            return Err(format!("--policy: '{item}' is listed twice"));
        }
        let params_of = |name: &str| scenario.policy.params_of(name);
        let sim = RunSpec {
            label: item.to_string(),
            dir: item.to_string(),
            client: client.sim_model(params_of)?,
            coordinator: coordinator.sim_model(params_of)?,
            ideal: false,
        };
        out.push(CassandraRun {
            label: item.to_string(),
            client,
            coordinator,
            sim,
        });
    }
    Ok(out)
}

/// The client and (when named) the coordinator policy of one parsed item.
fn sides(item: RunItem, scenario: &replica_lb_workload::scenario::Scenario) -> Result<(ClientChoice, Option<CoordinatorPolicy>), String> {
    // A client takes its policy's parameters from the scenario (NAME's for `java:NAME`).
    let client_of = |name: PolicyName| {
        let params = name.info().map(|info| scenario.policy.params_of(info.name)).unwrap_or_default();
        ClientChoice::new(name, params)
    };
    let coordinator_of = |name: PolicyName| match name {
        PolicyName::Registered(info) => CoordinatorPolicy::require(info),
        driver_own => Err(CoordinatorPolicy::refusal(driver_own)),
    };
    match item {
        RunItem::Ideal => Err("'ideal' is the simulator's shared queue: a real cluster has none".into()),
        RunItem::Pair { client, coordinator } => Ok((client_of(client)?, Some(coordinator_of(coordinator)?))),
        RunItem::One(name @ (PolicyName::DriverDefault | PolicyName::JavaDefault | PolicyName::Java(_))) => Ok((client_of(name)?, None)),
        RunItem::One(name @ PolicyName::Registered(info)) => {
            let side = match info.side {
                Side::Both => scenario.policy.both_side,
                s => s,
            };
            match (side, CoordinatorPolicy::of(info)) {
                (Side::Client, _) => Ok((client_of(name)?, None)),
                // Works on both sides but cannot run inside Cassandra: it chooses the client.
                (_, None) => Ok((client_of(name)?, None)),
                (_, Some(policy)) => Ok((ClientChoice::DriverDefault, Some(policy))),
            }
        }
    }
}

/// Whether any of `runs` needs the replica-lb plug-in (then the cluster runs it, and its runs
/// of `dynamic-snitch` hand the read path to Cassandra's own dynamic snitch): a coordinator
/// policy of the plug-in, or `hwlb-client` through the Java driver, which reads the nodes' hit
/// rates from the plug-in's table.
pub fn needs_plugin(runs: &[CassandraRun]) -> bool {
    runs.iter()
        .any(|r| r.coordinator.needs_plugin() || matches!(&r.client, ClientChoice::Java(j) if j.polls_hit_rates()))
}

/// The node settings a scenario's `[cassandra]` section asks for.
pub fn node_settings(model: &CassandraModel) -> NodeSettings {
    NodeSettings {
        heap_mb: model.heap_mb,
        row_cache_mb: model.row_cache_mb,
        chunk_cache_mb: model.chunk_cache_mb,
        disk: model.disk.map(|(page_cache_mb, read_iops)| DiskLimits { page_cache_mb, read_iops }),
        saved_caches: SavedCaches {
            row_cache_save_period_s: model.row_cache_save_period_s,
            cache_load_timeout_s: model.cache_load_timeout_s,
        },
        ..NodeSettings::default()
    }
}

/// Refuses faults the Cassandra cluster of `model` cannot apply: a slow disk needs the disk
/// limits (`[cassandra]` `page_cache_mb` and `disk_read_iops`), whose read throttle it lowers.
pub fn check_faults(plan: &RealPlan, model: &CassandraModel) -> Result<(), String> {
    match plan.faults.iter().find(|f| matches!(f.action, FaultAction::DiskFactor(_))) {
        Some(f) if model.disk.is_none() => Err(format!(
            "the slow disk of node {} at {:.1} s needs disk limits on Cassandra: set [cassandra] page_cache_mb and disk_read_iops",
            f.node, f.at_s
        )),
        _ => Ok(()),
    }
}

/// Refuses a scenario whose restarts and `[cassandra]` section disagree on the cache a
/// restarted node comes back with, so that the simulator's side models what the real one
/// does: `cache = "kept"` needs the row cache saved (`row_cache_save_period_s`), and nodes that
/// save it load it at every restart (`cache = "kept"`).
pub fn check_restart_caches(scenario: &Scenario) -> Result<(), String> {
    let saves = scenario.cassandra.row_cache_save_period_s > 0;
    for f in &scenario.faults {
        match f.kind {
            FaultKind::Restart { cache: RestartCache::Kept } if !saves => {
                return Err(format!(
                    "fault at line {}: cache = \"kept\" on Cassandra needs the row cache saved and loaded at start: set [cassandra] row_cache_save_period_s (and a cache_load_timeout_s long enough to load it)",
                    f.line
                ));
            }
            FaultKind::Restart {
                cache: RestartCache::Empty,
            } if saves => {
                return Err(format!(
                    "fault at line {}: [cassandra] row_cache_save_period_s = {} makes a restarted node load its saved row cache: say cache = \"kept\" in the restart (what the simulator then models)",
                    f.line, scenario.cassandra.row_cache_save_period_s
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The plug-in settings for a plan whose runs include coordinator policies: the scenario's
/// hit-rate tracker, consistency level, `hwlb` parameters and the `unified` ones the plug-in
/// shares, HWLB off until a run switches it on.
pub fn plugin_settings(plan: &RealPlan, hwlb_params: &ParamTable, unified_params: &ParamTable) -> Result<PluginSettings, String> {
    Ok(PluginSettings {
        tick_ms: plan.base.hit_rate_tick_ms,
        window_ms: plan.base.hit_rate_window_ms,
        read_cl: plan.cl.as_str().to_uppercase(),
        ..PluginSettings::new(CoordinatorPolicy::Naive)
    }
    .with_params(hwlb_params)?
    .with_unified_params(unified_params))
}

/// Starts the cluster for `plan` in `dir` with `settings` (and the plug-in when given), writes
/// its keys at CL=ALL and flushes them to SSTables, so that reads come from the data files (and
/// the caches) rather than from memtables; returns the cluster.
pub fn prepare(
    plan: &RealPlan,
    settings: NodeSettings,
    plugin: Option<&PluginSettings>,
    dir: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<CassandraCluster, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let settings = match plugin {
        Some(p) => p.install(settings, plugin::jar(progress)?)?,
        None => settings,
    };
    let up = CassandraUp {
        nodes: plan.nodes,
        dir: dir.to_path_buf(),
        settings,
        proxy_program: exe,
        node_timeout: Duration::from_secs(180),
        coordinator_policy: plugin.map(|p| p.policy),
    };
    let cluster = replica_lb_cassandra::up(&up, progress)?;
    progress(&format!("writing {} keys (CL=ALL)", plan.key_count));
    let rt = replica_lb_loadgen::client_runtime(2)?;
    let target = target(&cluster, plan, &ClientChoice::DriverDefault);
    let out = rt.block_on(cql::load(
        &target,
        &LoadOptions {
            keys: plan.key_count,
            value_bytes: plan.value_bytes,
            cl: replica_lb_policy::ConsistencyLevel::All,
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
    for n in &cluster.nodes {
        replica_lb_cassandra::nodetool(dir, n.id, &["flush", KEYSPACE])?;
    }
    progress("keys flushed to SSTables on every node");
    Ok(cluster)
}

fn target(cluster: &CassandraCluster, plan: &RealPlan, policy: &ClientChoice) -> CqlTarget {
    CqlTarget {
        contact_points: cluster.contact_points(),
        policy: policy.clone(),
        seed: plan.seed,
        replication_factor: 3,
        // hwlb-client's tracker ticks as the scenario's nodes do.
        hit_rates: Some(HitRatePolling {
            tick: Duration::from_millis(plan.base.hit_rate_tick_ms),
            window: Duration::from_millis(plan.base.hit_rate_window_ms),
            ..HitRatePolling::default()
        }),
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
        seed: if warmup { warmup_seed(plan.seed) } else { plan.seed },
        verify: false,
        zone: None,
    }
}

/// Injects `plan`'s faults into the cluster in `dir`, timed from `t0`. Returns the first
/// restarted node and when it answered again (seconds since `t0`), for the warm-up measure.
fn run_faults(plan: &RealPlan, dir: &Path, t0: Instant, progress: &mut dyn FnMut(&str)) -> Result<Option<(usize, f64)>, String> {
    let mut restarted = None;
    let mut i = 0;
    while i < plan.faults.len() {
        let step = &plan.faults[i];
        let at = t0 + Duration::from_secs_f64(step.at_s.max(0.0));
        std::thread::sleep(at.saturating_duration_since(Instant::now()));
        let c = CassandraCluster::load(dir)?;
        let pid = c.node(step.node)?.pid;
        if step.action != FaultAction::Start {
            progress(&format!("t={:5.1} s: node {} {:?}", step.at_s, step.node, step.action));
        }
        match step.action {
            FaultAction::Stop => send_signal(pid, Signal::Stop).map_err(|e| e.to_string())?,
            FaultAction::Cont => send_signal(pid, Signal::Cont).map_err(|e| e.to_string())?,
            FaultAction::DelayMs(ms) => replica_lb_cassandra::set_delay(dir, step.node, ms)?,
            FaultAction::Kill => {
                // Down until the matching start, then back on the same data.
                let back = plan.faults[i + 1..]
                    .iter()
                    .find(|s| s.node == step.node && s.action == FaultAction::Start)
                    .map_or(0.0, |s| s.at_s);
                let down = Duration::from_secs_f64((back - step.at_s).max(0.0));
                replica_lb_cassandra::restart(dir, step.node, down, Duration::from_secs(180))?;
                let back_s = t0.elapsed().as_secs_f64();
                restarted.get_or_insert((step.node as usize, back_s));
                progress(&format!("t={back_s:5.1} s: node {} answers CQL again", step.node));
            }
            // Started by the kill's restart, once the node was down for the fault's duration.
            FaultAction::Start => {}
            FaultAction::DiskFactor(factor) => replica_lb_cassandra::set_disk_factor(dir, step.node, factor)?,
        }
        i += 1;
    }
    Ok(restarted)
}

impl Cumulative for NodeCounters {
    fn follows(&self, before: &Self) -> bool {
        self.cache_hits >= before.cache_hits
            && self.cache_misses >= before.cache_misses
            && self.local_reads >= before.local_reads
            && self.remote_reads >= before.remote_reads
            && self.table_reads >= before.table_reads
    }

    fn since(&self, before: &Self) -> NodeSecond {
        let d = series::delta;
        let reads = d(self.table_reads, before.table_reads);
        let local_reads = d(self.local_reads, before.local_reads).min(reads);
        NodeSecond {
            reads,
            cache_hits: d(self.cache_hits, before.cache_hits),
            cache_misses: d(self.cache_misses, before.cache_misses),
            local_reads,
            remote_reads: d(self.remote_reads, before.remote_reads),
            // What the node read for other coordinators: its reads less its own.
            replica_reads: reads - local_reads,
            ..NodeSecond::default()
        }
    }
}

/// Reads every node's counters at t0, t0 + 1 s, ..., t0 + `duration_s` s (or until `stop`).
fn sample(nodes: u32, source: Source, t0: Instant, duration_s: u32, stop: &AtomicBool) -> Result<Samples<NodeCounters>, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the sampler's runtime: {e}"))?;
    let observer = std::sync::Arc::new(rt.block_on(Observer::connect(nodes, KEYSPACE, cql::TABLE, source))?);
    let mut out = Vec::with_capacity(duration_s as usize + 1);
    for k in 0..=duration_s {
        let at = t0 + Duration::from_secs(u64::from(k));
        while Instant::now() < at {
            if stop.load(Ordering::Relaxed) && k > 0 && Instant::now() + Duration::from_secs(2) < at {
                return Ok(out);
            }
            std::thread::sleep(at.saturating_duration_since(Instant::now()).min(Duration::from_millis(100)));
        }
        let row = rt.block_on(async {
            let mut set = tokio::task::JoinSet::new();
            for n in 0..nodes {
                let o = observer.clone();
                set.spawn(async move { (n as usize, o.counters(n).await.ok()) });
            }
            let mut row = vec![None; nodes as usize];
            while let Some(Ok((n, c))) = set.join_next().await {
                row[n] = c;
            }
            row
        });
        out.push(row);
    }
    Ok(out)
}

/// Runs one policy on the prepared cluster: the coordinator policy switched on (plug-in runs),
/// the warm-up with disk limits off, then the measured run with the faults (and, for plug-in
/// runs, the per-node sampler).
pub fn run_policy(plan: &RealPlan, dir: &Path, run: &CassandraRun, progress: &mut dyn FnMut(&str)) -> Result<RunMetrics, String> {
    let wall = Instant::now();
    let cluster = CassandraCluster::load(dir)?;
    let rt = replica_lb_loadgen::client_runtime(2)?;
    plugin::switch(dir, run.coordinator)?;
    announce(&cluster, run, progress);
    let t = target(&cluster, plan, &run.client);
    let cx = RunCtx {
        plan,
        dir,
        cluster: &cluster,
        rt: &rt,
        target: &t,
        run,
    };
    if plan.warmup_s > 0.0 {
        warm_up(&cx, progress)?;
    }
    let mut rec = Recorder::new(RecorderConfig {
        nodes: plan.nodes as usize,
        duration_s: plan.duration_s,
        phases: plan.phases.clone(),
        timeout_ns: plan.timeout_ms as u64 * 1_000_000,
    })?;
    let source = counter_source(plan, &cluster);
    progress(&format!(
        "{}: measuring {} s at {} requests/s, CL={}",
        run.label,
        plan.duration_s,
        plan.rate_per_s,
        plan.cl.as_str().to_uppercase()
    ));
    let (report, faults, samples, rolls) = measure(&cx, source, &mut rec);
    release_faults(dir);
    let report = report?;
    let rolls = rolls?;
    let (roll_marks, roll_back) = rolling::markers(&rolls);
    let restarted = faults??.or(roll_back);
    if let Some(samples) = samples {
        for (t, node, second) in series::per_second(&samples??, plan.nodes as usize) {
            series::feed_second(&mut rec, t, node, &second);
        }
    }
    for step in &plan.faults {
        rec.marker(step.at_s, step.marker_label());
    }
    for (at_s, label) in roll_marks {
        rec.marker(at_s, label);
    }
    let mut m = rec.finish(run.label.clone(), restarted, 0, 0.0);
    m.summary.rolling_restarts = rolls;
    m.summary.run = RunStats::Real(RealStats {
        wall_s: wall.elapsed().as_secs_f64(),
    });
    progress(&format!(
        "{}: {} requests, {} completed, {} time-outs; every request: p50 {:.2} ms, p99 {:.2} ms, p99.9 {:.2} ms (completed only: p99 {:.2} ms)",
        run.label,
        report.report.requests,
        report.report.completed,
        report.report.timeouts,
        m.summary.latency_all_ms.p50,
        m.summary.latency_all_ms.p99,
        m.summary.latency_all_ms.p999,
        m.summary.latency_ms.p99
    ));
    if run.coordinator == CoordinatorPolicy::Unified {
        report_plugin_warmup(&cx, progress);
    }
    if let Some(a) = &report.adapter {
        // How well the client policy's picks were paired with the driver's reports: an end
        // matched to no pick, and a pick never ended, skew its view of requests in flight.
        progress(&format!(
            "{}: client policy's tickets: {} picks, {} ends matched, {} untracked, {} expired, {} open at the end",
            run.label, a.picks, a.matched, a.untracked, a.expired, a.open
        ));
    }
    Ok(m)
}

/// Says which client and coordinator policy the run has, and whether the plug-in serves it.
fn announce(cluster: &CassandraCluster, run: &CassandraRun, progress: &mut dyn FnMut(&str)) {
    progress(&format!(
        "{}: client {}, every coordinator runs {}{}",
        run.label,
        run.client.name(),
        run.coordinator.as_str(),
        match (cluster.coordinator_policy.is_some(), run.coordinator.needs_plugin()) {
            (false, _) => " (Cassandra as shipped, no plug-in)",
            (true, false) => " (Cassandra's own, the plug-in out of the read path)",
            (true, true) => " (the replica-lb plug-in)",
        }
    ));
}

/// One policy's run on the cluster: what its parts share.
struct RunCtx<'a> {
    plan: &'a RealPlan,
    dir: &'a Path,
    cluster: &'a CassandraCluster,
    rt: &'a replica_lb_loadgen::ClientRuntime,
    target: &'a CqlTarget,
    run: &'a CassandraRun,
}

/// The warm-up: the load at the warm-up consistency level for `warmup_s`, with the disk
/// limits off meanwhile (to fill the caches quickly) and on again after.
fn warm_up(cx: &RunCtx<'_>, progress: &mut dyn FnMut(&str)) -> Result<(), String> {
    let RunCtx {
        plan,
        dir,
        cluster,
        rt,
        target: t,
        run,
    } = *cx;
    // Fill the caches quickly: no read throttle and no page cache cap meanwhile.
    if cluster.disk.is_some() {
        replica_lb_cassandra::set_disk_limits(dir, None, false)?;
    }
    progress(&format!(
        "{}: warming up {:.0} s at CL={}{}",
        run.label,
        plan.warmup_s,
        plan.warmup_cl.as_str().to_uppercase(),
        if cluster.disk.is_some() {
            " (disk limits off meanwhile)"
        } else {
            ""
        }
    ));
    cql::bench(rt.handle(), t, &bench_options(plan, plan.warmup_s, true), &mut |_| {})?;
    if cluster.disk.is_some() {
        replica_lb_cassandra::set_disk_limits(dir, None, true)?;
    }
    Ok(())
}

/// Where the per node counters come from: the plug-in's, or with a row cache Cassandra's own
/// (which then do not say which reads a node coordinated, except at CL=ONE, where it read them
/// itself); without either (`None`), each read counts at the coordinator that answered it.
fn counter_source(plan: &RealPlan, cluster: &CassandraCluster) -> Option<Source> {
    match (cluster.coordinator_policy.is_some(), cluster.row_cache_mb > 0) {
        (true, _) => Some(Source::Plugin),
        (false, true) => Some(Source::RowCache {
            every_read_local: plan.cl == replica_lb_policy::ConsistencyLevel::One,
        }),
        (false, false) => None,
    }
}

/// What the measured part of a run gives: the driver's report, the fault thread's outcome
/// (restarts and the seconds they took), and the per node samples when sampled.
type Measured = (
    Result<CqlBenchReport, String>,
    Result<Result<Option<(usize, f64)>, String>, String>,
    Option<Result<Result<Samples<NodeCounters>, String>, String>>,
    Result<Vec<RollingRestart>, String>,
);

/// The measured run: the open-loop load through the driver while a thread injects the faults
/// at their times, another samples every node's counters once a second (with `source`) and,
/// with disk limits, a third follows each node's JVM growth; every request's end goes into
/// `rec`. Everything is timed from the transport's start ([`RunStart`]).
fn measure(cx: &RunCtx<'_>, source: Option<Source>, rec: &mut Recorder) -> Measured {
    let RunCtx {
        plan,
        dir,
        cluster,
        rt,
        target: t,
        run,
    } = *cx;
    let index: Vec<_> = cluster.contact_points();
    // The run's time origin: set by the transport once it is ready (the Java driver's JVM
    // takes seconds to start); the faults and samples wait for it.
    let start = RunStart::new();
    let stop = AtomicBool::new(false);
    let label = run.label.clone();
    std::thread::scope(|scope| {
        let (start, stop, label) = (&start, &stop, &label);
        let injector = scope.spawn(move || match start.wait(stop) {
            Some(t0) => run_faults(plan, dir, t0, &mut |l| eprintln!("{label}: {l}")),
            None => Ok(None),
        });
        let roller = scope.spawn(move || match start.wait(stop) {
            Some(t0) => {
                let mut restart = |id: u32, down_s: f64| {
                    replica_lb_cassandra::restart(dir, id, Duration::from_secs_f64(down_s), Duration::from_secs(180))
                        .map(|_| ())
                        .map_err(GateError::failed)
                };
                rolling::run_rolls(&plan.rolls, dir, t0, stop, &mut restart, &mut |l| eprintln!("{label}: {l}")).map_err(|e| e.message)
            }
            None => Ok(Vec::new()),
        });
        let sampler = source.map(|source| {
            scope.spawn(move || match start.wait(stop) {
                Some(t0) => sample(plan.nodes, source, t0, plan.duration_s, stop),
                None => Ok(Samples::default()),
            })
        });
        // With disk limits, each node's page-cache budget follows its JVM's growth under load
        // (a node killed by the kernel for a few MiB of buffer pool would end the run).
        let keeper = cluster
            .disk
            .is_some()
            .then(|| scope.spawn(move || follow_jvm_growth(dir, stop, label)));
        let mut on_done = |c: &CqlCompletion| {
            if let Some(t0) = start.get() {
                record(rec, c, t0, source.is_none(), &index);
            }
        };
        let hooks = CqlHooks {
            start: Some(start),
            on_done: Some(&mut on_done),
        };
        let report = cql::bench_with(
            rt.handle(),
            t,
            &bench_options(plan, plan.duration_s as f64, false),
            &mut |s| {
                if s.t_s % 10 == 9 {
                    eprintln!("{}: {}", run.label, s.text());
                }
            },
            hooks,
        );
        stop.store(true, Ordering::Relaxed);
        let faults = injector.join().map_err(|_| "the fault thread panicked".to_string());
        let rolls = roller
            .join()
            .map_err(|_| "the rolling restart's thread panicked".to_string())
            .and_then(|r| r);
        let samples = sampler.map(|h| h.join().map_err(|_| "the sampler panicked".to_string()));
        if let Some(k) = keeper {
            let _ = k.join();
        }
        (report, faults, samples, rolls)
    })
}

/// Until `stop`, once a second, sets each node's page-cache budget on its JVM's growth (a
/// failure said once).
fn follow_jvm_growth(dir: &Path, stop: &AtomicBool, label: &str) {
    let mut warned = false;
    while !stop.load(Ordering::Relaxed) {
        if let Err(e) = replica_lb_cassandra::follow_jvm_growth(dir) {
            if !std::mem::replace(&mut warned, true) {
                eprintln!("{label}: page cache budget (said once): {e}");
            }
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Records one finished request (timed from `t0`; one intended before it is not counted);
/// `by_coordinator` (not sampled): an answered read counts at the coordinator the client
/// chose, which served it (CL=ONE), found among `index`.
fn record(rec: &mut Recorder, c: &CqlCompletion, t0: Instant, by_coordinator: bool, index: &[std::net::SocketAddr]) {
    let Some(intended_ns) = c.intended.checked_duration_since(t0).map(|d| d.as_nanos() as u64) else {
        return;
    };
    let finished_ns = c.finished.saturating_duration_since(t0).as_nanos() as u64;
    rec.issued();
    match c.outcome {
        Outcome::Ok => {
            rec.completed(finished_ns, finished_ns.saturating_sub(intended_ns));
            // Not sampled: the coordinator the client chose served the read (CL=ONE).
            if by_coordinator {
                if let Some(n) = c.coordinator.and_then(|a| index.iter().position(|x| *x == a)) {
                    rec.read(finished_ns, n, ReadKind::Local, CacheOutcome::NoCache);
                }
            }
        }
        Outcome::Timeout => rec.timeout(finished_ns),
        Outcome::Error => rec.error(finished_ns),
    }
}

/// A paused node must not stay paused, whatever happened: every node continued, its delay
/// off.
fn release_faults(dir: &Path) {
    if let Ok(c) = CassandraCluster::load(dir) {
        for n in &c.nodes {
            let _ = send_signal(n.pid, Signal::Cont);
            let _ = replica_lb_cassandra::set_delay(dir, n.id, 0);
        }
    }
}

/// Says what the plug-in's warm-up did on each node (a restarted replica left out of reads,
/// read in the background instead); a node that does not answer is said, not fatal.
fn report_plugin_warmup(cx: &RunCtx<'_>, progress: &mut dyn FnMut(&str)) {
    let RunCtx { plan, rt, run, .. } = *cx;
    let line = rt.block_on(async {
        let observer = Observer::connect(plan.nodes, KEYSPACE, cql::TABLE, Source::Plugin).await?;
        let mut cells = Vec::new();
        for node in 0..plan.nodes {
            let w = observer.warmup_counters(node).await?;
            cells.push(format!(
                "node {node} {} left out, {} sent, {} skipped, {} failed",
                w.cold_left_out, w.sent, w.skipped, w.failed
            ));
        }
        Ok::<_, String>(cells.join("; "))
    });
    match line {
        Ok(l) => progress(&format!("{}: plug-in warm-up reads: {l}", run.label)),
        Err(e) => progress(&format!("{}: plug-in warm-up counters not read: {e}", run.label)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gc_pause() -> replica_lb_workload::scenario::Scenario {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/gc-pause-cassandra.toml");
        replica_lb_workload::scenario_file::load(&path, &[]).unwrap()
    }

    #[test]
    fn run_items_name_a_client_a_coordinator_or_both() {
        let sc = gc_pause();
        let items: Vec<String> = [
            "dynamic-snitch",
            "unified",
            "unified/unified",
            "c3",
            "driver-default",
            "c3/naive",
            "java:default",
            "java:default/naive",
        ]
        .map(String::from)
        .into();
        let r = runs(&items, &sc).unwrap();
        let sides: Vec<(&str, &str, &str)> = r
            .iter()
            .map(|r| (r.sim.client.name(), r.coordinator.as_str(), r.sim.coordinator.name()))
            .collect();
        assert_eq!(
            sides,
            [
                // A name that works on both sides is the scenario's both_side: the coordinator.
                ("random", "dynamic-snitch", "dynamic-snitch"),
                ("random", "unified", "unified"),
                ("unified", "unified", "unified"),
                // A client-only name keeps the scenario's coordinator: Cassandra as shipped.
                ("c3", "dynamic-snitch", "dynamic-snitch"),
                ("random", "dynamic-snitch", "dynamic-snitch"),
                ("c3", "naive", "naive"),
                // The Java driver's default policy is modelled by datastax-default.
                ("datastax-default", "dynamic-snitch", "dynamic-snitch"),
                ("datastax-default", "naive", "naive"),
            ]
        );
        assert_eq!(r[6].client, ClientChoice::Java(replica_lb_loadgen::java::JavaPolicy::Default));
        assert_eq!(r[7].label, "java:default/naive");
        assert_eq!(r[1].client, ClientChoice::DriverDefault, "the client of a bare coordinator item");
        assert_eq!((r[5].sim.label.as_str(), r[5].sim.dir.as_str()), ("c3/naive", "c3/naive"));
        for (bad, says) in [
            ("c3/c3", "'c3' does not run inside Cassandra"),
            ("naive/naive", "naive"),
            ("nonesuch", "nonesuch"),
            ("java:hwlb", "allowed: java:default or java:CLIENT-POLICY"),
            ("java:nonesuch/naive", "allowed: java:default or java:CLIENT-POLICY"),
        ] {
            let e = runs(&[bad.to_string()], &sc).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        let twice = runs(&["hwlb".to_string(), "hwlb".to_string()], &sc).unwrap_err();
        assert!(twice.contains("listed twice"), "{twice}");
    }

    fn at(hits: u64, misses: u64, local: u64, remote: u64, table: u64) -> NodeCounters {
        NodeCounters {
            cache_hits: hits,
            cache_misses: misses,
            coordinated: local,
            local_reads: local,
            remote_reads: remote,
            table_reads: table,
            hit_rate: 0.0,
        }
    }

    #[test]
    fn a_nodes_second_splits_its_reads_into_its_own_and_other_coordinators() {
        let before = at(100, 20, 50, 50, 120);
        let now = at(180, 40, 90, 100, 220);
        assert!(now.follows(&before));
        let s = now.since(&before);
        assert_eq!((s.reads, s.cache_hits, s.cache_misses), (100, 80, 20));
        assert_eq!((s.local_reads, s.remote_reads, s.replica_reads), (40, 50, 60));
        // A restarted node's counters start again: it does not follow.
        assert!(!at(5, 5, 2, 2, 10).follows(&before));
        // Its own reads never exceed what it executed (counters read a moment apart).
        let odd = at(180, 40, 200, 100, 220).since(&before);
        assert!(odd.local_reads <= odd.reads && odd.replica_reads == odd.reads - odd.local_reads);
    }

    #[test]
    fn node_settings_follow_the_scenarios_cassandra_section() {
        let m = CassandraModel {
            heap_mb: 1024,
            row_cache_mb: 12,
            chunk_cache_mb: 0,
            disk: Some((8, 220)),
            row_cache_save_period_s: 30,
            cache_load_timeout_s: 600,
        };
        let s = node_settings(&m);
        assert_eq!(s.saved_caches.row_cache_save_period_s, 30);
        assert_eq!(s.saved_caches.cache_load_timeout_s, 600);
        assert_eq!((s.heap_mb, s.row_cache_mb, s.chunk_cache_mb), (1024, 12, 0));
        assert_eq!(
            s.disk,
            Some(DiskLimits {
                page_cache_mb: 8,
                read_iops: 220
            })
        );
        assert!(node_settings(&CassandraModel::default()).disk.is_none());
    }

    #[test]
    fn a_slow_disk_needs_the_clusters_disk_limits() {
        let text = include_str!("../../../scenarios/slow-disk-cassandra.toml");
        let mut sc = replica_lb_workload::parse(text, "slow-disk-cassandra").unwrap();
        // Cassandra's coordinators retry on their own, as the engine plans it.
        sc.requests.speculative = replica_lb_workload::scenario::Speculative::None;
        let plan = crate::plan::real_plan(&sc, &mut Vec::new()).unwrap();
        let steps: Vec<(f64, u32, FaultAction)> = plan.faults.iter().map(|f| (f.at_s, f.node, f.action)).collect();
        assert_eq!(
            steps,
            vec![(20.0, 1, FaultAction::DiskFactor(5.0)), (40.0, 1, FaultAction::DiskFactor(1.0))]
        );
        check_faults(&plan, &sc.cassandra).unwrap();
        let bare = CassandraModel {
            disk: None,
            ..sc.cassandra
        };
        let e = check_faults(&plan, &bare).unwrap_err();
        assert!(e.contains("slow disk of node 1 at 20.0 s") && e.contains("disk_read_iops"), "{e}");
    }

    /// A restart with a kept cache needs the row cache saved, and a saved row cache needs the
    /// restarts to say so, each refused naming the fault's line and the key to set.
    #[test]
    fn a_kept_cache_and_a_saved_row_cache_go_together() {
        let text = include_str!("../../../scenarios/rolling-restart-gated-cassandra.toml");
        let parse = |edits: &[&str]| {
            let edits: Vec<String> = edits.iter().map(|e| e.to_string()).collect();
            let text = replica_lb_workload::apply_overrides(text, &edits).unwrap();
            replica_lb_workload::parse(&text, "rolling-restart-gated-cassandra").unwrap()
        };
        check_restart_caches(&parse(&[])).unwrap();
        check_restart_caches(&parse(&["cassandra.row_cache_save_period_s=30", "fault.0.cache=kept"])).unwrap();
        let e = check_restart_caches(&parse(&["fault.0.cache=kept"])).unwrap_err();
        assert!(
            e.contains("cache = \"kept\" on Cassandra needs") && e.contains("row_cache_save_period_s"),
            "{e}"
        );
        let e = check_restart_caches(&parse(&["cassandra.row_cache_save_period_s=30"])).unwrap_err();
        assert!(
            e.contains("row_cache_save_period_s = 30") && e.contains("say cache = \"kept\""),
            "{e}"
        );
    }
}
