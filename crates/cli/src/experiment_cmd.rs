//! `replica-lb experiment SCENARIO --real`: a simulator scenario run on a real local cluster,
//! one policy after the other, written in the simulator's formats (summary.json with `real`
//! instead of `sim`, DIR/<label>/timeseries.csv, report.html); with `--compare-sim` the
//! simulator runs the same scenario too and the report shows both side by side.

use crate::checks;
use crate::error::{CliError, CliResult};
use clap::Args;
use replica_lb_engine::experiment::{Experiment, SetupError};
use replica_lb_engine::Engine;
use replica_lb_experiment::tables;
use replica_lb_metrics::{Asked, RunMetrics};
use replica_lb_report::run_dir::{self, OutDir, RunDir};
use replica_lb_sim::Scenario;

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
    #[arg(long, value_name = "ENGINE", value_parser = Engine::parse)]
    engine: Option<Engine>,
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
    let engine = match args.engine {
        None if args.real => Engine::Node,
        None => {
            return Err(CliError::usage(
                "experiment: give --real or --engine node|cassandra (the simulator alone is `replica-lb sim run SCENARIO`)",
            ))
        }
        Some(e) => e,
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
    let sims: Vec<&RunMetrics> = sim_results.iter().flatten().map(|r| &r.metrics).collect();
    let table = tables::render(exp.tables(), &scenario, &real, &sims);
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
