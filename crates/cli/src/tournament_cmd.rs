//! `replica-lb tournament`: every simulator scenario with every policy that applies to it, on
//! every core, then a leaderboard (JSON, Markdown, HTML) of tail latency as a ratio to the best
//! policy of each scenario.

use crate::checks;
use crate::error::{CliError, CliResult};
use crate::progress;
use clap::Args;
use replica_lb_report::run_dir::OutDir;
use replica_lb_report::{Entry, Leaderboard};
use replica_lb_sim::tournament::{entrants, reads_truth};
use replica_lb_sim::{Job, Scenario};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;

/// `tournament` arguments.
#[derive(Args, Debug)]
pub struct TournamentArgs {
    /// Output directory: leaderboard.json, leaderboard.md, leaderboard.html and one
    /// summary.json per scenario (checked before the runs; an earlier run in it is replaced
    /// whole).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Comma-separated scenarios: names in --scenario-dir (`cold-restart`) or paths to TOML
    /// files. Default: every .toml file in --scenario-dir.
    #[arg(long, value_name = "LIST")]
    scenarios: Option<String>,
    /// Comma-separated policies (or CLIENT/COORDINATOR items). Default: every registered policy
    /// (with --quick: each scenario's own comparison list), plus `ideal` where the scenario
    /// lists it.
    #[arg(long, value_name = "LIST")]
    policies: Option<String>,
    /// Each scenario's own comparison list instead of every policy: a few minutes on 2 cores.
    #[arg(long)]
    quick: bool,
    /// Seed for every scenario (default: each scenario's own).
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Where scenario names are looked up.
    #[arg(long, value_name = "DIR", default_value = "scenarios")]
    scenario_dir: PathBuf,
    /// Simulations at once (0 = one per core).
    #[arg(long, value_name = "N", default_value_t = 0)]
    threads: usize,
}

/// Runs the tournament.
pub fn run(args: TournamentArgs) -> CliResult {
    let out = checks::out_dir(&args.out, "--out")?;
    let scenarios = load_scenarios(&args)?;
    let mut jobs: Vec<Job<'_>> = Vec::new();
    for sc in &scenarios {
        let seed = args.seed.unwrap_or(sc.seed);
        for spec in entrants(sc, args.policies.as_deref(), args.quick, &mut |note| eprintln!("{note}")).map_err(CliError::usage)? {
            jobs.push(Job { scenario: sc, spec, seed });
        }
    }
    if jobs.is_empty() {
        return Err(CliError::usage("no policy applies to any of the scenarios given"));
    }
    let batch: Vec<(&Scenario, usize)> = scenarios
        .iter()
        .map(|sc| (sc, jobs.iter().filter(|j| std::ptr::eq(j.scenario, sc)).count()))
        .collect();
    checks::memory(&batch, args.threads)?;
    let results = run_with_progress(&jobs, args.threads)?;
    let mut input: Vec<(String, Vec<Entry>)> = Vec::new();
    let mut summaries: Vec<(String, replica_lb_metrics::Summary)> = Vec::new();
    for sc in &scenarios {
        let seed = args.seed.unwrap_or(sc.seed);
        let runs: Vec<&replica_lb_sim::RunResult> = jobs
            .iter()
            .zip(&results)
            .filter(|(j, _)| std::ptr::eq(j.scenario, sc))
            .map(|(_, r)| r)
            .collect();
        let timeout_ms = sc.requests.read_timeout_ns as f64 / 1e6;
        let entries = runs
            .iter()
            .map(|r| Entry::from_summary(&r.metrics.summary, timeout_ms, reads_truth(&r.spec)))
            .collect();
        input.push((sc.name.clone(), entries));
        summaries.push((
            sc.name.clone(),
            replica_lb_metrics::Summary {
                scenario: sc.name.clone(),
                engine: None,
                seed,
                asked: checks::asked(runs.iter().map(|r| r.spec.label.clone()), &[]),
                runs: runs.iter().map(|r| r.metrics.summary.clone()).collect(),
            },
        ));
    }
    let board = Leaderboard::build(&input);
    write_outputs(&out, &board, &summaries)?;
    print_overall(&board);
    println!("wrote {}", args.out.join("leaderboard.html").display());
    Ok(())
}

/// The scenarios named by --scenarios, or every .toml file of --scenario-dir, parsed.
fn load_scenarios(args: &TournamentArgs) -> Result<Vec<Scenario>, CliError> {
    let paths: Vec<PathBuf> = match &args.scenarios {
        Some(list) => list
            .split(',')
            .map(str::trim)
            .map(|item| {
                if item.is_empty() {
                    return Err(CliError::usage("--scenarios: empty item"));
                }
                let as_path = Path::new(item);
                if item.ends_with(".toml") || as_path.components().count() > 1 {
                    Ok(as_path.to_path_buf())
                } else {
                    Ok(args.scenario_dir.join(format!("{item}.toml")))
                }
            })
            .collect::<Result<_, _>>()?,
        None => {
            let dir = &args.scenario_dir;
            let read = std::fs::read_dir(dir).map_err(|e| {
                CliError::usage(format!(
                    "cannot list scenarios in {}: {e} (give --scenario-dir or --scenarios)",
                    dir.display()
                ))
            })?;
            let mut found: Vec<PathBuf> = read
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .collect();
            found.sort();
            if found.is_empty() {
                return Err(CliError::usage(format!("no .toml scenario in {}", dir.display())));
            }
            found
        }
    };
    let mut out: Vec<Scenario> = Vec::new();
    for path in paths {
        let sc = replica_lb_workload::scenario_file::load(&path, &[]).map_err(CliError::usage)?;
        if out.iter().any(|o| o.name == sc.name) {
            return Err(CliError::usage(format!("--scenarios: '{}' is listed twice", sc.name)));
        }
        out.push(sc);
    }
    Ok(out)
}

/// Runs every job on the pool, showing progress on stderr ([`progress::watch`]); any failed
/// run or failed accounting audit is an error.
fn run_with_progress(jobs: &[Job<'_>], threads: usize) -> Result<Vec<replica_lb_sim::RunResult>, CliError> {
    let done_ms: Vec<AtomicU64> = jobs.iter().map(|_| AtomicU64::new(0)).collect();
    let runs: Vec<progress::Run> = jobs
        .iter()
        .map(|j| progress::Run {
            scenario: j.scenario.name.clone(),
            policy: j.spec.label.clone(),
            total_ms: crate::sim_cmd::simulated_ms(j.scenario),
        })
        .collect();
    let results = progress::watch("tournament", &runs, &done_ms, || {
        replica_lb_sim::run_jobs(jobs, threads, Some(&done_ms))
    });
    let results = results.map_err(|_| CliError::failed("a simulation crashed (a bug: please report it with the scenario and seed)"))?;
    results
        .into_iter()
        .zip(jobs)
        .map(|(r, job)| {
            let r = r.map_err(|e| CliError::usage(format!("{}: {e}", job.scenario.name)))?;
            r.audit
                .clone()
                .map_err(|e| CliError::failed(format!("{} / {}: accounting audit failed: {e}", job.scenario.name, r.spec.label)))?;
            Ok(r)
        })
        .collect()
}

/// Replaces the earlier run in `out` with the leaderboard and each scenario's summary.json.
fn write_outputs(out: &OutDir, board: &Leaderboard, summaries: &[(String, replica_lb_metrics::Summary)]) -> CliResult {
    out.clear().map_err(CliError::failed)?;
    let out = out.path();
    let io = |what: &Path, e: std::io::Error| CliError::failed(format!("cannot write {}: {e}", what.display()));
    let files = [
        ("leaderboard.json", board.to_json()),
        ("leaderboard.md", board.to_markdown()),
        ("leaderboard.html", board.to_html("replica-lb tournament")),
    ];
    for (name, text) in files {
        let p = out.join(name);
        std::fs::write(&p, text).map_err(|e| io(&p, e))?;
    }
    for (name, summary) in summaries {
        let dir = out.join(name);
        std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
        let p = dir.join("summary.json");
        std::fs::write(&p, summary.to_json()).map_err(|e| io(&p, e))?;
    }
    Ok(())
}

fn print_overall(board: &Leaderboard) {
    println!("{:<28} {:>10} {:>11} {:>10}", "policy", "p99 x best", "p99.9 x best", "scenarios");
    for o in &board.overall {
        let name = if o.oracle {
            format!("{} (oracle)", o.policy)
        } else {
            o.policy.clone()
        };
        println!(
            "{:<28} {:>10.2} {:>11.2} {:>10}",
            name, o.p99_geomean_ratio, o.p999_geomean_ratio, o.scenarios
        );
    }
}
