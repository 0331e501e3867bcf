//! `replica-lb experiment SCENARIO --real`: a simulator scenario run on a real local cluster,
//! one policy after the other, written in the simulator's formats (summary.json with `real`
//! instead of `sim`, DIR/<label>/timeseries.csv, report.html); with `--compare-sim` the
//! simulator runs the same scenario too and the report shows both side by side.

use crate::checks;
use crate::error::{CliError, CliResult};
use clap::Args;
use replica_lb_engine::experiment::{Experiment, SetupError, Tables};
use replica_lb_engine::Engine;
use replica_lb_metrics::{Asked, RunMetrics};
use replica_lb_report::run_dir::{self, OutDir, RunDir};
use replica_lb_sim::Scenario;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// `experiment` arguments.
#[derive(Args, Debug)]
pub struct ExperimentArgs {
    /// The scenario file (TOML; see docs/scenarios.md and docs/experiments.md).
    scenario: PathBuf,
    /// Run on a real local cluster of the project's node processes on 127.0.0.1 (the same as
    /// `--engine node`). The simulator alone is `replica-lb sim run`.
    #[arg(long)]
    real: bool,
    /// The real cluster: `node` (the project's storage nodes) or `cassandra` (Apache Cassandra
    /// 5.0 through the scylla driver; policies are client policies or `driver-default`).
    #[arg(long, value_name = "ENGINE")]
    engine: Option<String>,
    /// Comma-separated policy items: a policy name (replaces the scenario's policy on its
    /// side) or CLIENT/COORDINATOR. Default: the scenario's own list.
    #[arg(long, value_name = "LIST")]
    policy: Option<String>,
    /// Output directory (default: out/<scenario name>): checked before any work, and an
    /// earlier run in it is replaced whole.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Also run the simulator on the same scenario and show both in one report.
    #[arg(long)]
    compare_sim: bool,
    /// Override one scenario key before the run, as `sim run --set` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Where the clusters live (one subdirectory per policy, kept after the run for their
    /// logs). Default: a temporary directory, removed afterwards.
    #[arg(long, value_name = "DIR")]
    cluster_dir: Option<PathBuf>,
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
    let engine = match args.engine.as_deref() {
        None if args.real => Engine::Node,
        None => {
            return Err(CliError::usage(
                "experiment: give --real or --engine node|cassandra (the simulator alone is `replica-lb sim run SCENARIO`)",
            ))
        }
        Some(e) => Engine::parse(e).map_err(CliError::usage)?,
    };
    let path = args.scenario.display().to_string();
    let scenario = replica_lb_workload::scenario_file::load(&args.scenario, &args.sets).map_err(CliError::usage)?;
    let mut notes = Vec::new();
    let exp = Experiment::new(engine, &scenario, args.policy.as_deref(), &mut notes).map_err(|e| match e {
        SetupError::Policy(e) => CliError::usage(e),
        SetupError::Scenario(e) => CliError::usage(format!("{path}: {e}")),
    })?;
    let out = args.out.unwrap_or_else(|| Path::new("out").join(&scenario.name));
    let out = checks::out_dir(&out, "--out")?;
    let specs = exp.sim_specs();
    if args.compare_sim {
        checks::memory(&[(&scenario, specs.len())], 0)?;
    }
    let asked = checks::asked(exp.runs().iter().map(|r| r.label.clone()), &args.sets);
    let (cluster_root, _temp) = match args.cluster_dir {
        Some(d) => (d, None),
        None => {
            let d = exp.scratch_dir();
            (d.clone(), Some(TempClusters(d)))
        }
    };
    std::fs::create_dir_all(&cluster_root).map_err(|e| CliError::failed(format!("cannot create {}: {e}", cluster_root.display())))?;
    for n in &notes {
        eprintln!("note: {n}");
    }
    // This run's results replace the earlier one's whole, written as each run ends.
    out.clear().map_err(CliError::failed)?;

    // The simulator first (seconds), so a long real run is not needed to see it fail.
    let sim_results = if args.compare_sim {
        eprintln!("simulating {} run(s) of {}", specs.len(), scenario.name);
        let r = crate::sim_cmd::simulate(&scenario, &specs, scenario.seed)?;
        let sim_asked = checks::asked(specs.iter().map(|s| s.label.clone()), &args.sets);
        write_sim(&scenario, &sim_asked, &r, &out.path().join("sim"))?;
        Some(r)
    } else {
        None
    };

    let mut progress = |line: &str| eprintln!("{line}");
    let mut started = exp.start(&cluster_root, &mut progress).map_err(CliError::failed)?;
    let mut real: Vec<RunMetrics> = Vec::new();
    for i in 0..exp.runs().len() {
        let m = started.run(i, &mut progress).map_err(CliError::failed)?;
        // Written after every run, so a later failure keeps the earlier results.
        real.push(m);
        write_real(&scenario, &exp, &asked, &real, sim_results.as_deref(), &out)?;
    }
    drop(started);
    let sims = sim_results.as_deref();
    let table = match exp.tables() {
        Tables::Cache => compare_table(&real, sims),
        Tables::CacheAndRolling => compare_table(&real, sims) + &rolling_table(&scenario, &real, sims),
        Tables::Tail => tail_table(&real, sims),
    };
    print!("{table}");
    let p = out.path().join("compare.md");
    std::fs::write(&p, &table).map_err(|e| CliError::failed(format!("cannot write {}: {e}", p.display())))?;
    println!("wrote {}", out.path().join("report.html").display());
    Ok(())
}

fn write_sim(sc: &Scenario, asked: &Asked, results: &[replica_lb_sim::RunResult], out: &Path) -> Result<(), CliError> {
    let dir = RunDir {
        scenario: &sc.name,
        engine: None,
        seed: sc.seed,
        asked,
        runs: results.iter().map(|r| (r.spec.dir.as_str(), &r.metrics)).collect(),
    };
    dir.write(out).map_err(CliError::failed)?;
    Ok(())
}

fn write_real(
    sc: &Scenario,
    exp: &Experiment,
    asked: &Asked,
    real: &[RunMetrics],
    sims: Option<&[replica_lb_sim::RunResult]>,
    out: &OutDir,
) -> Result<(), CliError> {
    let out = out.path();
    let dir = RunDir {
        scenario: &sc.name,
        engine: Some(exp.engine().as_str()),
        seed: sc.seed,
        asked,
        runs: exp.runs().iter().zip(real).map(|(r, m)| (r.dir.as_str(), m)).collect(),
    };
    dir.write(out).map_err(CliError::failed)?;
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
    let what = exp.description();
    let description = if sims.is_some() {
        format!("{what} next to the simulator.\n{}", sc.run_description())
    } else {
        format!("{what}.\n{}", sc.run_description())
    };
    let input = replica_lb_report::ReportInput {
        scenario: &sc.name,
        description: &description,
        seed: sc.seed,
        asked,
        timeout_ms: sc.requests.read_timeout_ns as f64 / 1e6,
        runs: &refs,
    };
    run_dir::write_report(out, &input, false).map_err(CliError::failed)
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
        cells.push(format!("{:.2}", p.latency_all_ms.mean));
        cells.push(format!("{:.2}", p.latency_all_ms.p99));
    }
    let ph = |name: &str| s.phases.iter().find(|p| p.name == name).map(|p| p.latency_all_ms);
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
fn compare_table(real: &[RunMetrics], sims: Option<&[replica_lb_sim::RunResult]>) -> String {
    let mut t = String::new();
    let Some(first) = real.first() else {
        return t;
    };
    let mut head = vec!["policy".to_string(), "run".to_string()];
    for p in &first.summary.phases {
        head.push(format!("{} hit ratio", p.name));
        head.push(format!("{} mean ms (every request)", p.name));
        head.push(format!("{} p99 ms (every request)", p.name));
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

/// The phases named `after-restart*` and, for each, the node restarted last before it starts
/// (the scenario's restart faults): a rolling restart's per-node windows.
fn restart_windows(scenario: &Scenario) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for phase in scenario.phases.iter().filter(|p| p.name.starts_with("after-restart")) {
        let start_ns = i64::from(phase.start_s) * 1_000_000_000;
        let node = scenario
            .faults
            .iter()
            .filter(|f| f.kind == replica_lb_sim::scenario::FaultKind::Restart && f.at_ns < start_ns)
            .max_by_key(|f| f.at_ns)
            .and_then(|f| f.nodes.first());
        if let Some(&node) = node {
            out.push((phase.name.clone(), node as usize));
        }
    }
    out
}

/// With more than one restart window, each restarted node's misses per second against its
/// peers' in the minute after its return, real next to simulated, as a Markdown table.
fn rolling_table(scenario: &Scenario, real: &[RunMetrics], sims: Option<&[replica_lb_sim::RunResult]>) -> String {
    let windows = restart_windows(scenario);
    let mut t = String::new();
    if windows.len() < 2 {
        return t;
    }
    let mut head = vec!["policy".to_string(), "run".to_string()];
    head.extend(
        windows
            .iter()
            .map(|(phase, node)| format!("node {node}: misses/s / peers ({phase})")),
    );
    let _ = writeln!(t, "\n| {} |", head.join(" | "));
    let _ = writeln!(t, "|{}", "---|".repeat(head.len()));
    let line = |t: &mut String, m: &RunMetrics, source: &str| {
        let mut cells = vec![m.summary.policy.clone(), source.to_string()];
        for (phase, node) in &windows {
            cells.push(crate::sim_cmd::restart_misses_in(m, *node, phase).map_or("-".into(), |(o, p)| {
                format!("{o:.0} / {p:.0} (x{:.2})", if p > 0.0 { o / p } else { 0.0 })
            }));
        }
        let _ = writeln!(t, "| {} |", cells.join(" | "));
    };
    for (i, m) in real.iter().enumerate() {
        line(&mut t, m, "real");
        if let Some(s) = sims.and_then(|s| s.get(i)) {
            line(&mut t, &s.metrics, "sim");
        }
    }
    t
}

/// Tail latency and time-outs per policy, real next to simulated, as a Markdown table.
fn tail_table(real: &[RunMetrics], sims: Option<&[replica_lb_sim::RunResult]>) -> String {
    let mut t = String::new();
    let Some(first) = real.first() else {
        return t;
    };
    let mut head = [
        "policy",
        "run",
        "p50 ms (every request)",
        "p99 ms (every request)",
        "p99.9 ms (every request)",
        "p99 ms (completed only)",
        "time-outs",
        "completed",
    ]
    .join(" | ");
    for p in &first.summary.phases {
        let _ = write!(head, " | {} p99 ms (every request)", p.name);
    }
    let cols = 8 + first.summary.phases.len();
    let _ = writeln!(t, "| {head} |");
    let _ = writeln!(t, "|{}", "---|".repeat(cols));
    let line = |t: &mut String, m: &RunMetrics, source: &str| {
        let s = &m.summary;
        let l = &s.latency_all_ms;
        let _ = write!(
            t,
            "| {} | {source} | {:.2} | {:.2} | {:.2} | {:.2} | {} | {}",
            s.policy, l.p50, l.p99, l.p999, s.latency_ms.p99, s.timeouts, s.completed
        );
        for p in &s.phases {
            let _ = write!(t, " | {:.2}", p.latency_all_ms.p99);
        }
        t.push_str(" |\n");
    };
    for (i, m) in real.iter().enumerate() {
        line(&mut t, m, "real");
        if let Some(s) = sims.and_then(|s| s.get(i)) {
            line(&mut t, &s.metrics, "sim");
        }
    }
    t
}
