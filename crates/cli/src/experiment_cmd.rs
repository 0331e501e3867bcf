//! `replica-lb experiment SCENARIO --real`: a simulator scenario run on a real local cluster,
//! one policy after the other, written in the simulator's formats (summary.json with `real`
//! instead of `sim`, DIR/<label>/timeseries.csv, report.html); with `--compare-sim` the
//! simulator runs the same scenario too and the report shows both side by side.

use crate::error::{CliError, CliResult};
use clap::Args;
use harness::experiment::{self, FaultAction, FaultStep, PolicyRun, RealPlan, RunOptions};
use harness::launcher::NodeCommand;
use harness::loadgen::Arrivals;
use metrics::{csv::timeseries_csv, RunMetrics, Summary};
use node::NodeConfig;
use policy::ParamTable;
use sim::scenario::{Arrival, FaultKind, Placement, Routing, Speculative, StageSel};
use sim::Scenario;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// `experiment` arguments.
#[derive(Args, Debug)]
pub struct ExperimentArgs {
    /// The scenario file (TOML; see docs/scenarios.md and docs/experiments-real.md).
    scenario: PathBuf,
    /// Run on a real local cluster (node processes on 127.0.0.1). Required: the simulator
    /// alone is `replica-lb sim run`.
    #[arg(long)]
    real: bool,
    /// Comma-separated policy items: a policy name (replaces the scenario's policy on its
    /// side) or CLIENT/COORDINATOR. Default: the scenario's own list.
    #[arg(long, value_name = "LIST")]
    policy: Option<String>,
    /// Output directory (default: out/<scenario name>).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Also run the simulator on the same scenario and show both in one report.
    #[arg(long)]
    compare_sim: bool,
    /// Where the clusters live (one subdirectory per policy, kept after the run for their
    /// logs). Default: a temporary directory, removed afterwards.
    #[arg(long, value_name = "DIR")]
    cluster_dir: Option<PathBuf>,
}

/// Size of every value written, bytes.
const VALUE_BYTES: usize = 100;

/// Turns a scenario into a real run's plan, refusing what a real cluster cannot do (one line,
/// naming the setting). Settings that only the simulator models are listed in `notes`.
pub fn real_plan(sc: &Scenario, notes: &mut Vec<String>) -> Result<RealPlan, String> {
    if sc.cluster.routing != Routing::Coordinator {
        return Err("cluster.routing = \"direct\" cannot run on the real cluster (its clients always go through a coordinator)".into());
    }
    if sc.cluster.placement == Placement::OnePerZone {
        return Err("cluster.placement = \"one-per-zone\" cannot run on the real cluster (one zone: loopback)".into());
    }
    if !sc.clients.token_aware {
        return Err("clients.token_aware = false cannot run on the real cluster (its client is token-aware)".into());
    }
    if sc.requests.speculative != Speculative::None {
        return Err("requests.speculative_retry cannot run on the real cluster (its coordinators do not retry)".into());
    }
    let mut base = NodeConfig {
        replication_factor: sc.cluster.replication_factor as u32,
        cache_rows: sc.node.cache_rows.unwrap_or(0) as u64,
        hit_rate_tick_ms: (sc.feedback.tick_ns / 1_000_000).max(1),
        hit_rate_window_ms: (sc.feedback.window_ns / 1_000_000).max(1),
        ..NodeConfig::default()
    };
    let timeout_ms = u32::try_from((sc.requests.read_timeout_ns / 1_000_000).max(1)).unwrap_or(u32::MAX);
    base.read_timeout_ms = timeout_ms;
    base.write_timeout_ms = timeout_ms;
    match &sc.node.disk {
        None => base.slow_disk.enabled = false,
        Some((concurrency, dist)) => {
            use sim::dist::Dist;
            let (name, mean_ns, sigma) = match *dist {
                Dist::Constant { mean_ns } => ("constant", mean_ns, None),
                Dist::Exponential { mean_ns } => ("exponential", mean_ns, None),
                Dist::LogNormal { mean_ns, sigma, .. } => ("lognormal", mean_ns, Some(sigma)),
                Dist::Pareto { .. } => {
                    return Err(
                        "node.disk_service dist = \"pareto\" cannot run on the real cluster (constant, exponential or lognormal)".into(),
                    )
                }
            };
            base.slow_disk.enabled = true;
            base.slow_disk.concurrency = *concurrency;
            base.slow_disk.service_time_mean_us = (mean_ns / 1000.0).round().max(1.0) as u64;
            base.slow_disk.distribution = name.into();
            if let Some(s) = sigma {
                base.slow_disk.lognormal_sigma = s;
            }
        }
    }
    notes
        .push("node CPU (cpu_concurrency, cpu_service, coordinator_service) and the network are real on this machine, not modelled".into());
    if sc.node.extra_delay.is_some() {
        notes.push("node.extra_delay is not applied on the real cluster".into());
    }
    if sc.clients.count > 1 {
        notes.push(format!(
            "the {} clients are one load generator at the same total rate",
            sc.clients.count
        ));
    }
    let (rate_per_s, arrivals) = match sc.clients.arrival {
        Arrival::Poisson { rate_per_s } => (rate_per_s, Arrivals::Poisson),
        Arrival::Fixed { rate_per_s } => (rate_per_s, Arrivals::Uniform),
        Arrival::Closed { .. } => return Err("clients.arrival = \"closed\" cannot run on the real cluster (its load is open-loop)".into()),
    };
    // The load generator chooses keys with the simulator's own key model.
    let keys = sc.clients.keys;
    let mut faults = Vec::new();
    let end_s = sc.run.duration_s as f64;
    for f in &sc.faults {
        let line = f.line;
        if f.at_ns < 0 {
            return Err(format!(
                "fault at line {line}: the real cluster applies faults from t = 0 (at_s >= 0)"
            ));
        }
        let (on, off) = match f.kind {
            FaultKind::Restart => (FaultAction::Kill, FaultAction::Start),
            FaultKind::Pause => (FaultAction::Stop, FaultAction::Cont),
            FaultKind::Delay { added_ns } => {
                let ms = u32::try_from((added_ns as f64 / 1e6).round() as u64).unwrap_or(u32::MAX);
                (FaultAction::DelayMs(ms), FaultAction::DelayMs(0))
            }
            FaultKind::Slow { factor, stage } => {
                if stage != StageSel::Disk {
                    return Err(format!(
                        "fault at line {line}: kind = \"slow\" runs on the real cluster only with stage = \"disk\" (its CPU is real)"
                    ));
                }
                if sc.node.disk.is_none() {
                    return Err(format!(
                        "fault at line {line}: a slow disk needs node.disk_concurrency and node.disk_service"
                    ));
                }
                (FaultAction::DiskFactor(factor), FaultAction::DiskFactor(1.0))
            }
            FaultKind::Fluctuate { .. } => {
                return Err(format!("fault at line {line}: kind = \"fluctuate\" cannot run on the real cluster"));
            }
        };
        let until = f.until_ns.map_or(end_s, |u| u as f64 / 1e9).min(end_s);
        let mut start = f.at_ns as f64 / 1e9;
        while start < until && faults.len() < 10_000 {
            for &node in &f.nodes {
                faults.push(FaultStep {
                    at_s: start,
                    node: node as u32,
                    action: on,
                });
                if let Some(d) = f.duration_ns {
                    faults.push(FaultStep {
                        at_s: start + d as f64 / 1e9,
                        node: node as u32,
                        action: off,
                    });
                }
            }
            match f.every_ns {
                Some(every) => start += every as f64 / 1e9,
                None => break,
            }
        }
    }
    faults.retain(|s| s.at_s < end_s);
    faults.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
    Ok(RealPlan {
        name: sc.name.clone(),
        nodes: sc.cluster.nodes as u32,
        base,
        key_count: keys.count,
        keys,
        value_bytes: VALUE_BYTES,
        rate_per_s,
        arrivals,
        read_fraction: 1.0 - sc.clients.write_fraction,
        cl: sc.requests.consistency,
        warmup_cl: sc.requests.warmup_consistency,
        warmup_s: sc.run.warmup_ns as f64 / 1e9,
        duration_s: sc.run.duration_s,
        phases: sc.phases.clone(),
        faults,
        timeout_ms,
        seed: sc.seed,
    })
}

fn policy_run(spec: &sim::RunSpec, sc: &Scenario) -> Result<PolicyRun, String> {
    if spec.ideal {
        return Err("--policy: 'ideal' is a simulator bound, not a policy a real cluster can run".into());
    }
    let params = |name: &str| sc.policy.params.get(name).cloned().unwrap_or_else(ParamTable::new);
    let client = match spec.client.as_str() {
        "random" => None,
        other => Some(other.to_string()),
    };
    Ok(PolicyRun {
        label: spec.label.clone(),
        coordinator: spec.coordinator.clone(),
        coordinator_params: params(&spec.coordinator),
        client_params: client.as_deref().map(params).unwrap_or_default(),
        client,
    })
}

/// A scratch directory for clusters, removed when dropped.
struct TempClusters(PathBuf);

impl Drop for TempClusters {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `experiment`.
pub fn run(args: ExperimentArgs) -> CliResult {
    if !args.real {
        return Err(CliError::usage(
            "experiment: give --real (the simulator alone is `replica-lb sim run SCENARIO`)",
        ));
    }
    let path = args.scenario.display().to_string();
    let text = std::fs::read_to_string(&args.scenario).map_err(|e| CliError::usage(format!("cannot read scenario {path}: {e}")))?;
    let stem = args.scenario.file_stem().and_then(|s| s.to_str()).unwrap_or("scenario");
    let scenario = sim::parse(&text, stem).map_err(|e| CliError::usage(e.render(&path)))?;
    let specs = sim::parse_list(args.policy.as_deref(), &scenario).map_err(CliError::usage)?;
    let mut notes = Vec::new();
    let plan = real_plan(&scenario, &mut notes).map_err(|e| CliError::usage(format!("{path}: {e}")))?;
    let runs: Vec<PolicyRun> = specs
        .iter()
        .map(|s| policy_run(s, &scenario))
        .collect::<Result<_, _>>()
        .map_err(CliError::usage)?;
    let out = args.out.unwrap_or_else(|| Path::new("out").join(&scenario.name));
    let (cluster_root, _temp) = match args.cluster_dir {
        Some(d) => (d, None),
        None => {
            let d = std::env::temp_dir().join(format!("replica-lb-experiment-{}", std::process::id()));
            (d.clone(), Some(TempClusters(d)))
        }
    };
    std::fs::create_dir_all(&cluster_root).map_err(|e| CliError::failed(format!("cannot create {}: {e}", cluster_root.display())))?;
    std::fs::create_dir_all(&out).map_err(|e| CliError::failed(format!("cannot create {}: {e}", out.display())))?;
    for n in &notes {
        eprintln!("note: {n}");
    }
    let command = NodeCommand::current_exe_node().map_err(crate::node_cmd::node_error)?;

    // The simulator first (seconds), so a long real run is not needed to see it fail.
    let sim_results = if args.compare_sim {
        eprintln!("simulating {} run(s) of {}", specs.len(), scenario.name);
        let r = sim::run_all(&scenario, &specs, scenario.seed, 0, None).map_err(CliError::usage)?;
        write_sim(&scenario, &r, &out.join("sim"))?;
        Some(r)
    } else {
        None
    };

    let mut real: Vec<RunMetrics> = Vec::new();
    for (spec, run) in specs.iter().zip(&runs) {
        let mut progress = |line: &str| eprintln!("{line}");
        let mut opts = RunOptions {
            cluster_dir: cluster_root.join(&spec.dir),
            command: command.clone(),
            progress: &mut progress,
        };
        let m = experiment::run_real(&plan, run, &mut opts).map_err(|e| CliError::failed(format!("{}: {e}", spec.label)))?;
        // Written after every run, so a later failure keeps the earlier results.
        real.push(m);
        write_real(&scenario, &specs, &real, sim_results.as_deref(), &out)?;
    }
    let table = compare_table(&real, sim_results.as_deref());
    print!("{table}");
    let p = out.join("compare.md");
    std::fs::write(&p, &table).map_err(|e| CliError::failed(format!("cannot write {}: {e}", p.display())))?;
    println!("wrote {}", out.join("report.html").display());
    Ok(())
}

fn io_err(what: &Path, e: std::io::Error) -> CliError {
    CliError::failed(format!("cannot write {}: {e}", what.display()))
}

fn write_sim(sc: &Scenario, results: &[sim::RunResult], out: &Path) -> Result<(), CliError> {
    std::fs::create_dir_all(out).map_err(|e| io_err(out, e))?;
    let summary = Summary {
        scenario: sc.name.clone(),
        seed: sc.seed,
        runs: results.iter().map(|r| r.metrics.summary.clone()).collect(),
    };
    let p = out.join("summary.json");
    std::fs::write(&p, summary.to_json()).map_err(|e| io_err(&p, e))?;
    for r in results {
        let dir = out.join(&r.spec.dir);
        std::fs::create_dir_all(&dir).map_err(|e| io_err(&dir, e))?;
        let p = dir.join("timeseries.csv");
        std::fs::write(&p, timeseries_csv(&r.metrics.series)).map_err(|e| io_err(&p, e))?;
    }
    Ok(())
}

fn write_real(
    sc: &Scenario,
    specs: &[sim::RunSpec],
    real: &[RunMetrics],
    sims: Option<&[sim::RunResult]>,
    out: &Path,
) -> Result<(), CliError> {
    let summary = metrics::Summary {
        scenario: sc.name.clone(),
        seed: sc.seed,
        runs: real.iter().map(|m| m.summary.clone()).collect(),
    };
    let p = out.join("summary.json");
    std::fs::write(&p, summary.to_json()).map_err(|e| io_err(&p, e))?;
    for (spec, m) in specs.iter().zip(real) {
        let dir = out.join(&spec.dir);
        std::fs::create_dir_all(&dir).map_err(|e| io_err(&dir, e))?;
        let p = dir.join("timeseries.csv");
        std::fs::write(&p, timeseries_csv(&m.series)).map_err(|e| io_err(&p, e))?;
    }
    // The report: "label (real)" next to "label (sim)" when comparing.
    let mut columns: Vec<RunMetrics> = Vec::new();
    for (i, m) in real.iter().enumerate() {
        let mut r = m.clone();
        if let Some(s) = sims.and_then(|s| s.get(i)) {
            r.summary.policy = format!("{} (real)", m.summary.policy);
            columns.push(r);
            let mut c = s.metrics.clone();
            c.summary.policy = format!("{} (sim)", s.spec.label);
            columns.push(c);
        } else {
            columns.push(r);
        }
    }
    let refs: Vec<&RunMetrics> = columns.iter().collect();
    let description = if sims.is_some() {
        format!("Real cluster on this machine next to the simulator. {}", sc.description)
    } else {
        format!("Real cluster on this machine. {}", sc.description)
    };
    let html = report::render(&report::ReportInput {
        scenario: &sc.name,
        description: &description,
        seed: sc.seed,
        runs: &refs,
    });
    let p = out.join("report.html");
    std::fs::write(&p, html).map_err(|e| io_err(&p, e))?;
    Ok(())
}

/// Cluster hit ratio over `[from, to)`.
fn hit_ratio(m: &RunMetrics, from: u32, to: u32) -> f64 {
    let (mut h, mut l) = (0u64, 0u64);
    for n in 0..m.series.nodes {
        let t = m.series.node_total(n, from, to);
        h += t.cache_hits as u64;
        l += (t.cache_hits + t.cache_misses) as u64;
    }
    if l == 0 {
        0.0
    } else {
        h as f64 / l as f64
    }
}

fn row(m: &RunMetrics, source: &str) -> String {
    let s = &m.summary;
    let mut cells = vec![s.policy.clone(), source.to_string()];
    for p in &s.phases {
        cells.push(format!("{:.3}", hit_ratio(m, p.start_s as u32, p.end_s as u32)));
        cells.push(format!("{:.2}", p.latency_ms.mean));
        cells.push(format!("{:.2}", p.latency_ms.p99));
    }
    let ph = |name: &str| s.phases.iter().find(|p| p.name == name).map(|p| p.latency_ms);
    match (ph("steady"), ph("after-restart")) {
        (Some(a), Some(b)) if a.mean > 0.0 && a.p99 > 0.0 => {
            cells.push(format!("{:.2}", b.mean / a.mean));
            cells.push(format!("{:.2}", b.p99 / a.p99));
        }
        _ => cells.extend(["-".to_string(), "-".to_string()]),
    }
    cells.push(crate::sim_cmd::restart_misses(m).map_or("-".into(), |(o, p)| {
        format!("{o:.0} / {p:.0} (x{:.2})", if p > 0.0 { o / p } else { 0.0 })
    }));
    cells.push(s.warmup_s.map_or("-".into(), |w| format!("{w:.0}")));
    cells.push(format!("{} / {}", s.timeouts, s.errors));
    format!("| {} |\n", cells.join(" | "))
}

/// The key numbers, real next to simulated, as a Markdown table.
fn compare_table(real: &[RunMetrics], sims: Option<&[sim::RunResult]>) -> String {
    let mut t = String::new();
    let Some(first) = real.first() else {
        return t;
    };
    let mut head = vec!["policy".to_string(), "run".to_string()];
    for p in &first.summary.phases {
        head.push(format!("{} hit ratio", p.name));
        head.push(format!("{} mean ms", p.name));
        head.push(format!("{} p99 ms", p.name));
    }
    head.extend(
        [
            "after/steady mean",
            "after/steady p99",
            "misses/s restarted / peers (after-restart)",
            "warmup s",
            "timeouts / errors",
        ]
        .map(String::from),
    );
    let _ = writeln!(t, "| {} |", head.join(" | "));
    let _ = writeln!(t, "|{}", "---|".repeat(head.len()));
    for (i, m) in real.iter().enumerate() {
        t.push_str(&row(m, "real"));
        if let Some(s) = sims.and_then(|s| s.get(i)) {
            t.push_str(&row(&s.metrics, "sim"));
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCENARIO: &str = include_str!("../../../scenarios/cold-restart-real.toml");

    #[test]
    fn the_real_scenario_becomes_a_plan() {
        let sc = sim::parse(SCENARIO, "cold-restart-real").unwrap();
        let mut notes = Vec::new();
        let plan = real_plan(&sc, &mut notes).unwrap();
        assert_eq!(plan.nodes, 3);
        assert_eq!(plan.base.replication_factor, 3);
        assert!(plan.base.slow_disk.enabled);
        assert_eq!(plan.cl, policy::ConsistencyLevel::Quorum);
        assert_eq!(plan.warmup_cl, policy::ConsistencyLevel::All);
        let actions: Vec<FaultAction> = plan.faults.iter().map(|f| f.action).collect();
        assert_eq!(actions, vec![FaultAction::Kill, FaultAction::Start]);
        assert!(plan.faults[0].at_s < plan.faults[1].at_s);
    }

    #[test]
    fn what_a_real_cluster_cannot_do_is_refused() {
        let base = SCENARIO.to_string();
        let bad = [
            ("routing = \"coordinator\"", "routing = \"direct\"", "routing"),
            ("arrival = \"poisson\"", "arrival = \"closed\"\noutstanding = 4", "closed"),
        ];
        for (from, to, word) in bad {
            assert!(base.contains(from), "{from}");
            let text = base.replace(from, to);
            let Ok(sc) = sim::parse(&text, "x") else { continue };
            let err = real_plan(&sc, &mut Vec::new()).unwrap_err();
            assert!(err.contains(word), "{err}");
        }
    }
}
