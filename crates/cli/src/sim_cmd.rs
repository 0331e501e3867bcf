//! `replica-lb sim run` and `replica-lb demo`: run a scenario for a list of policies on the
//! simulator, write summary.json, report.html and one timeseries.csv per policy.

use crate::error::{CliError, CliResult};
use clap::{Args, Subcommand};
use harness::run_dir::{self, RunDir};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use metrics::{RunMetrics, Summary};
use sim::{RunResult, Scenario};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The cold-restart scenario, built in so `demo` needs no files.
const COLD_RESTART: &str = include_str!("../../../scenarios/cold-restart.toml");

/// The `sim` subcommands.
#[derive(Subcommand, Debug)]
pub enum SimCommand {
    /// Run a scenario file for one or more policies and write the results.
    Run(RunArgs),
}

/// `sim run` arguments.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// The scenario file (TOML; see docs/scenarios.md).
    scenario: PathBuf,
    /// Comma-separated policy items: a policy name (replaces the scenario's policy on its
    /// side) or CLIENT/COORDINATOR. Default: the scenario's own list.
    #[arg(long, value_name = "LIST")]
    policy: Option<String>,
    /// Random seed (default: the scenario's).
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    seed: Option<String>,
    /// Output directory (default: out/<scenario name>).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Print summary.json to stdout instead of a table.
    #[arg(long)]
    json: bool,
    /// Override one scenario key before the run, e.g. `--set clients.count=15` (repeatable;
    /// dotted path, a number indexes `[[fault]]` entries; see docs/scenarios.md).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Also write each chart of the report as an SVG file of its own, in DIR/charts/ (to put
    /// in a README or a paper).
    #[arg(long)]
    charts: bool,
}

/// `demo` arguments.
#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Output directory.
    #[arg(long, value_name = "DIR", default_value = "out/demo")]
    out: PathBuf,
    /// Random seed (default: the scenario's).
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    seed: Option<String>,
}

/// Runs a `sim` subcommand.
pub fn run(cmd: SimCommand) -> CliResult {
    match cmd {
        SimCommand::Run(args) => run_file(args),
    }
}

fn parse_seed(text: Option<&str>, default: u64) -> Result<u64, CliError> {
    match text {
        None => Ok(default),
        Some(t) => t
            .trim()
            .parse::<u64>()
            .map_err(|_| CliError::usage(format!("--seed '{t}' is not a whole number in [0, {}]", u64::MAX))),
    }
}

fn run_file(args: RunArgs) -> CliResult {
    let scenario = harness::scenario_file::load(&args.scenario, &args.set).map_err(CliError::usage)?;
    let seed = parse_seed(args.seed.as_deref(), scenario.seed)?;
    let specs = sim::parse_list(args.policy.as_deref(), &scenario).map_err(CliError::usage)?;
    let out = args.out.unwrap_or_else(|| Path::new("out").join(&scenario.name));
    let results = simulate(&scenario, &specs, seed)?;
    let summary = write_outputs(&scenario, seed, &results, &out, args.charts)?;
    if args.json {
        print!("{}", summary.to_json());
    } else {
        print_table(&results);
        println!("wrote {}", out.join("report.html").display());
    }
    Ok(())
}

/// Runs the cold-restart comparison (naive vs hwlb) and writes its report.
pub fn demo(args: DemoArgs) -> CliResult {
    let scenario = sim::parse(COLD_RESTART, "cold-restart").map_err(|e| CliError::failed(e.render("cold-restart.toml (built in)")))?;
    let seed = parse_seed(args.seed.as_deref(), scenario.seed)?;
    let specs = sim::parse_list(Some("naive,hwlb"), &scenario).map_err(CliError::failed)?;
    eprintln!(
        "cold-restart: 3 nodes, RF=3, CL=QUORUM, 1000 reads/s; node 2 restarts with an empty cache at t=120 s (simulated {} s per policy)",
        scenario.run.duration_s
    );
    let results = simulate(&scenario, &specs, seed)?;
    write_outputs(&scenario, seed, &results, &args.out, false)?;
    print_restart_table(&results);
    println!("report: {}", args.out.join("report.html").display());
    Ok(())
}

/// Runs every spec on its own thread with a progress bar per run (stderr, terminals only),
/// then prints each run's simulation speed to stderr.
fn simulate(scenario: &Scenario, specs: &[sim::RunSpec], seed: u64) -> Result<Vec<RunResult>, CliError> {
    let total_ms = scenario.run.warmup_ns / 1_000_000 + scenario.run.duration_s as u64 * 1000;
    let progress: Vec<AtomicU64> = specs.iter().map(|_| AtomicU64::new(0)).collect();
    let target = if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let multi = MultiProgress::with_draw_target(target);
    let style = ProgressStyle::with_template("{prefix:>24} [{bar:30}] {percent:>3}% simulated")
        .map_or_else(|_| ProgressStyle::default_bar(), |s| s.progress_chars("=> "));
    let bars: Vec<ProgressBar> = specs
        .iter()
        .map(|s| {
            let b = multi.add(ProgressBar::new(total_ms.max(1)));
            b.set_style(style.clone());
            b.set_prefix(s.label.clone());
            b
        })
        .collect();
    let done = std::sync::atomic::AtomicBool::new(false);
    let results = std::thread::scope(|scope| {
        let runner = scope.spawn(|| {
            let r = sim::run_all(scenario, specs, seed, 0, Some(&progress));
            done.store(true, Ordering::Release);
            r
        });
        while !done.load(Ordering::Acquire) {
            for (b, p) in bars.iter().zip(&progress) {
                b.set_position(p.load(Ordering::Relaxed).min(total_ms));
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        runner.join()
    });
    for b in &bars {
        b.finish_and_clear();
    }
    let results = match results {
        Ok(r) => r.map_err(CliError::usage)?,
        Err(_) => {
            return Err(CliError::failed(
                "the simulation crashed (a bug: please report it with the scenario and seed)",
            ))
        }
    };
    for r in &results {
        eprintln!(
            "{}: {} requests simulated in {:.2} s wall = {:.2}M requests/s ({} events)",
            r.spec.label,
            r.simulated_requests,
            r.metrics.summary.wall_s(),
            r.requests_per_wall_s() / 1e6,
            r.metrics.summary.events()
        );
    }
    Ok(results)
}

fn write_outputs(scenario: &Scenario, seed: u64, results: &[RunResult], out: &Path, charts: bool) -> Result<Summary, CliError> {
    let dir = RunDir {
        scenario: &scenario.name,
        engine: None,
        seed,
        runs: results.iter().map(|r| (r.spec.dir.as_str(), &r.metrics)).collect(),
    };
    let summary = dir.write(out).map_err(CliError::failed)?;
    let runs: Vec<&RunMetrics> = results.iter().map(|r| &r.metrics).collect();
    let input = report::ReportInput {
        scenario: &scenario.name,
        description: &scenario.description,
        seed,
        runs: &runs,
    };
    run_dir::write_report(out, &input, charts).map_err(CliError::failed)?;
    Ok(summary)
}

fn print_table(results: &[RunResult]) {
    println!(
        "{:<28} {:>9} {:>9} {:>8} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8}",
        "policy", "requests", "completed", "timeouts", "errors", "mean ms", "p50 ms", "p95 ms", "p99 ms", "p99.9 ms", "warmup s"
    );
    for r in results {
        let s = &r.metrics.summary;
        let l = &s.latency_ms;
        println!(
            "{:<28} {:>9} {:>9} {:>8} {:>6} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>8}",
            s.policy,
            s.requests,
            s.completed,
            s.timeouts,
            s.errors,
            l.mean,
            l.p50,
            l.p95,
            l.p99,
            l.p999,
            s.warmup_s.map_or("-".into(), |w| format!("{w:.0}"))
        );
    }
}

/// Misses per second of the restarted node and its peers' mean during `after-restart`.
pub fn restart_misses(m: &RunMetrics) -> Option<(f64, f64)> {
    restart_misses_in(m, m.series.highlight?, "after-restart")
}

/// Misses per second of `node` and its peers' mean during the phase named `phase`.
pub fn restart_misses_in(m: &RunMetrics, node: usize, phase: &str) -> Option<(f64, f64)> {
    let phase = m.series.phases.iter().find(|p| p.name == phase)?;
    let secs = (phase.end_s - phase.start_s) as f64;
    let own = m.series.node_total(node, phase.start_s, phase.end_s).cache_misses as f64 / secs;
    let peers: Vec<f64> = (0..m.series.nodes)
        .filter(|&n| n != node)
        .map(|n| m.series.node_total(n, phase.start_s, phase.end_s).cache_misses as f64 / secs)
        .collect();
    Some((own, peers.iter().sum::<f64>() / peers.len().max(1) as f64))
}

fn print_restart_table(results: &[RunResult]) {
    println!(
        "{:<8} {:>22} {:>22} {:>26} {:>9}",
        "policy", "steady mean/p99 ms", "after-restart mean/p99", "misses/s restarted/peers", "warmup s"
    );
    for r in results {
        let s = &r.metrics.summary;
        let ph = |name: &str| s.phases.iter().find(|p| p.name == name).map(|p| p.latency_ms);
        let (steady, after) = (ph("steady").unwrap_or_default(), ph("after-restart").unwrap_or_default());
        let misses = restart_misses(&r.metrics).map_or("-".into(), |(o, p)| format!("{o:.0} / {p:.0}"));
        println!(
            "{:<8} {:>22} {:>22} {:>26} {:>9}",
            s.policy,
            format!("{:.2} / {:.2}", steady.mean, steady.p99),
            format!("{:.2} / {:.2}", after.mean, after.p99),
            misses,
            s.warmup_s.map_or("-".into(), |w| format!("{w:.0}"))
        );
    }
}
