//! `replica-lb sim run` and `replica-lb demo`: run a scenario for a list of policies on the
//! simulator, write summary.json, report.html and one timeseries.csv per policy.

use crate::checks;
use crate::error::{CliError, CliResult};
use crate::progress;
use clap::{Args, Subcommand};
use replica_lb_metrics::{Asked, LatencyStats, RunMetrics, Summary};
use replica_lb_report::run_dir::{self, OutDir, RunDir};
use replica_lb_sim::{RunResult, Scenario};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;

/// The cold-restart scenario, built in so `demo` needs no files.
const COLD_RESTART: &str = include_str!("../../../scenarios/cold-restart.toml");

/// The `sim` subcommands.
#[derive(Subcommand, Debug)]
pub enum SimCommand {
    /// Run a scenario file for one or more policies and write the results.
    #[command(after_help = "Examples:
  replica-lb sim run scenarios/cold-restart.toml --policy naive,hwlb,c3 --out out/cr
  replica-lb sim run scenarios/poc-network.toml --set network.nic_gbps=0.65 --charts")]
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
    /// Output directory (default: out/<scenario name>): checked before the run, and an earlier
    /// run in it is replaced whole.
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
    let scenario = replica_lb_workload::scenario_file::load(&args.scenario, &args.set).map_err(CliError::usage)?;
    let seed = parse_seed(args.seed.as_deref(), scenario.seed)?;
    let specs = replica_lb_sim::parse_list(args.policy.as_deref(), &scenario).map_err(CliError::usage)?;
    let out = args.out.unwrap_or_else(|| Path::new("out").join(&scenario.name));
    let out = checks::out_dir(&out, "--out")?;
    checks::memory(&[(&scenario, specs.len())], 0)?;
    let asked = checks::asked(specs.iter().map(|s| s.label.clone()), &args.set);
    let results = simulate(&scenario, &specs, seed)?;
    let summary = write_outputs(&scenario, seed, &asked, &results, &out, args.charts)?;
    if args.json {
        print!("{}", summary.to_json());
    } else {
        print_table(&results, scenario.requests.read_timeout_ns);
        println!("wrote {}", out.path().join("report.html").display());
    }
    Ok(())
}

/// Runs the cold-restart comparison (naive vs hwlb) and writes its report.
pub fn demo(args: DemoArgs) -> CliResult {
    let scenario =
        replica_lb_sim::parse(COLD_RESTART, "cold-restart").map_err(|e| CliError::failed(e.render("cold-restart.toml (built in)")))?;
    let seed = parse_seed(args.seed.as_deref(), scenario.seed)?;
    let specs = replica_lb_sim::parse_list(Some("naive,hwlb"), &scenario).map_err(CliError::failed)?;
    let out = checks::out_dir(&args.out, "--out")?;
    checks::memory(&[(&scenario, specs.len())], 0)?;
    eprintln!(
        "cold-restart: 3 nodes, RF=3, CL=QUORUM, 1000 reads/s; node 2 restarts with an empty cache at t=120 s (simulated {} s per policy)",
        scenario.run.duration_s
    );
    let asked = checks::asked(specs.iter().map(|s| s.label.clone()), &[]);
    let results = simulate(&scenario, &specs, seed)?;
    write_outputs(&scenario, seed, &asked, &results, &out, false)?;
    print_restart_table(&results);
    println!("report: {}", out.path().join("report.html").display());
    Ok(())
}

/// The simulated milliseconds of one run of `sc` (warm-up and measurement).
pub fn simulated_ms(sc: &Scenario) -> u64 {
    sc.run.warmup_ns / 1_000_000 + sc.run.duration_s as u64 * 1000
}

/// Runs every spec on its own thread, showing progress on stderr ([`progress::watch`]), then
/// prints each run's simulation speed to stderr.
pub fn simulate(scenario: &Scenario, specs: &[replica_lb_sim::RunSpec], seed: u64) -> Result<Vec<RunResult>, CliError> {
    let done_ms: Vec<AtomicU64> = specs.iter().map(|_| AtomicU64::new(0)).collect();
    let runs: Vec<progress::Run> = specs
        .iter()
        .map(|s| progress::Run {
            scenario: scenario.name.clone(),
            policy: s.label.clone(),
            total_ms: simulated_ms(scenario),
        })
        .collect();
    let results = progress::watch(&scenario.name, &runs, &done_ms, || {
        replica_lb_sim::run_all(scenario, specs, seed, 0, Some(&done_ms))
    });
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

/// Replaces the earlier run in `out` with this one: summary.json, the time series and the
/// report.
fn write_outputs(
    scenario: &Scenario,
    seed: u64,
    asked: &Asked,
    results: &[RunResult],
    out: &OutDir,
    charts: bool,
) -> Result<Summary, CliError> {
    out.clear().map_err(CliError::failed)?;
    let dir = RunDir {
        scenario: &scenario.name,
        engine: None,
        seed,
        asked,
        runs: results.iter().map(|r| (r.spec.dir.as_str(), &r.metrics)).collect(),
    };
    let summary = dir.write(out.path()).map_err(CliError::failed)?;
    let runs: Vec<&RunMetrics> = results.iter().map(|r| &r.metrics).collect();
    let description = scenario.run_description();
    let input = replica_lb_report::ReportInput {
        scenario: &scenario.name,
        description: &description,
        seed,
        asked,
        timeout_ms: scenario.requests.read_timeout_ns as f64 / 1e6,
        runs: &runs,
    };
    run_dir::write_report(out.path(), &input, charts).map_err(CliError::failed)?;
    Ok(summary)
}

/// mean, p50, p95, p99, p99.9 in columns of 9.
fn latency_columns(l: &LatencyStats) -> String {
    format!("{:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3}", l.mean, l.p50, l.p95, l.p99, l.p999)
}

/// The runs' table: every request's latency first (a failed one at the read time-out,
/// `timeout_ns`), the completed requests' beside it.
fn print_table(results: &[RunResult], timeout_ns: u64) {
    let heads = format!("{:>9} {:>9} {:>9} {:>9} {:>9}", "mean", "p50", "p95", "p99", "p99.9");
    // The groups' titles over their columns: after the 64 of the counts and 2 spaces, 49 and 2.
    println!(
        "{:66}{:<51}completed only, ms",
        "",
        format!("every request (failures at {} ms), ms", timeout_ns / 1_000_000)
    );
    println!(
        "{:<28} {:>9} {:>9} {:>8} {:>6}  {heads}  {heads} {:>8}",
        "policy", "requests", "completed", "timeouts", "errors", "warmup s"
    );
    for r in results {
        let s = &r.metrics.summary;
        println!(
            "{:<28} {:>9} {:>9} {:>8} {:>6}  {}  {} {:>8}",
            s.policy,
            s.requests,
            s.completed,
            s.timeouts,
            s.errors,
            latency_columns(&s.latency_all_ms),
            latency_columns(&s.latency_ms),
            s.warmup_s.map_or("-".into(), |w| format!("{w:.0}"))
        );
    }
    for r in results {
        for roll in &r.metrics.summary.rolling_restarts {
            println!("{:<28} rolling restart, {}", r.metrics.summary.policy, roll.line());
        }
    }
}

/// The demo's table: each phase's mean and p99 over every request (a failed one at the read
/// time-out), the after-restart p99 of the completed requests beside them.
fn print_restart_table(results: &[RunResult]) {
    println!("every request (a timed-out or failed one counted at the read time-out):");
    println!(
        "{:<8} {:>22} {:>26} {:>22} {:>26} {:>9}",
        "policy", "steady mean/p99 ms", "after-restart mean/p99 ms", "completed only: p99 ms", "misses/s restarted/peers", "warmup s"
    );
    for r in results {
        let s = &r.metrics.summary;
        let ph = |name: &str| s.phases.iter().find(|p| p.name == name);
        let all = |name: &str| ph(name).map(|p| p.latency_all_ms).unwrap_or_default();
        let (steady, after) = (all("steady"), all("after-restart"));
        let after_completed = ph("after-restart").map(|p| p.latency_ms.p99).unwrap_or_default();
        let misses = r
            .metrics
            .series
            .restart_misses()
            .map_or("-".into(), |(o, p)| format!("{o:.0} / {p:.0}"));
        println!(
            "{:<8} {:>22} {:>26} {:>22} {:>26} {:>9}",
            s.policy,
            format!("{:.2} / {:.2}", steady.mean, steady.p99),
            format!("{:.2} / {:.2}", after.mean, after.p99),
            format!("{after_completed:.2}"),
            misses,
            s.warmup_s.map_or("-".into(), |w| format!("{w:.0}"))
        );
    }
}
