//! `replica-lb hwlb plan` and `replica-lb hwlb sample`: look at an HWLB plan and check it by
//! drawing from it.

use crate::error::{CliError, CliResult};
use clap::{Args, Subcommand};
use replica_lb_policy::hwlb::{tally_draws, HwlbPlan, PlanConfig};
use replica_lb_policy::{Rng, MAX_REPLICAS};
use serde::Serialize;

/// The `hwlb` subcommands.
#[derive(Subcommand, Debug)]
pub enum HwlbCommand {
    /// Print the shares and every coordinator's row for the given hit rates and CL.
    #[command(after_help = "Examples:
  replica-lb hwlb plan --hit-rates 0,0.8,0.8 --cl 2
  replica-lb hwlb plan --hit-rates 0.1,0.9,0.9,0.9 --cl 3 --json")]
    Plan(PlanArgs),
    /// Simulate requests drawn from the plan and count where the reads went.
    #[command(after_help = "Examples:
  replica-lb hwlb sample --hit-rates 0,0.8,0.8 --cl 2 --draws 1000000 --seed 7")]
    Sample(SampleArgs),
}

/// Inputs shared by both subcommands.
#[derive(Args, Debug)]
pub struct PlanInput {
    /// Hit rates of the N replicas, comma-separated, each in [0, 1] (N <= 64).
    #[arg(long, value_name = "H1,...,HN", allow_hyphen_values = true, value_parser = parse_hit_rates)]
    hit_rates: HitRates,
    /// Replicas per request (the consistency level as a count), 1 <= K <= N.
    #[arg(long, value_name = "K", allow_hyphen_values = true, value_parser = parse_cl)]
    cl: usize,
}

/// `hwlb plan` arguments.
#[derive(Args, Debug)]
pub struct PlanArgs {
    #[command(flatten)]
    input: PlanInput,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

/// `hwlb sample` arguments.
#[derive(Args, Debug)]
pub struct SampleArgs {
    #[command(flatten)]
    input: PlanInput,
    /// Number of requests to simulate, 1 to 10,000,000 (under a second with 3 replicas, a few
    /// seconds with 64: the shares come out within 0.1%).
    #[arg(long, value_name = "D", allow_hyphen_values = true, value_parser = parse_draws)]
    draws: u64,
    /// Random seed (the output is fixed by it).
    #[arg(long, value_name = "S", allow_hyphen_values = true, value_parser = parse_seed)]
    seed: u64,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

/// Runs an `hwlb` subcommand.
pub fn run(cmd: HwlbCommand) -> CliResult {
    match cmd {
        HwlbCommand::Plan(args) => plan(args),
        HwlbCommand::Sample(args) => sample(args),
    }
}

/// The replicas' hit rates of `--hit-rates`: 1 to 64 numbers in [0, 1].
#[derive(Clone, Debug)]
pub struct HitRates(Vec<f64>);

/// Parses `--hit-rates`.
fn parse_hit_rates(text: &str) -> Result<HitRates, String> {
    if text.trim().is_empty() {
        return Err("it is empty; give 1 to 64 comma-separated hit rates in [0, 1]".into());
    }
    let rates = text
        .split(',')
        .map(|item| {
            let item = item.trim();
            match item.parse::<f64>() {
                Ok(h) if (0.0..=1.0).contains(&h) => Ok(h),
                Ok(_) => Err(format!("'{item}' is outside [0, 1]; hit rates must be numbers in [0, 1]")),
                Err(_) => Err(format!("'{item}' is not a number; hit rates must be numbers in [0, 1]")),
            }
        })
        .collect::<Result<Vec<f64>, String>>()?;
    if rates.len() > MAX_REPLICAS {
        return Err(format!("{} replicas given; at most {MAX_REPLICAS} are allowed", rates.len()));
    }
    Ok(HitRates(rates))
}

/// The most draws `hwlb sample` makes (a few seconds at most).
const MAX_DRAWS: u64 = 10_000_000;

/// An integer in `[min, max]`, the range named on error.
fn parse_in_range(text: &str, min: u64, max: u64) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(v) if (min..=max).contains(&v) => Ok(v),
        _ => Err(format!("'{text}' is not allowed; it must be an integer in [{min}, {max}]")),
    }
}

/// Parses `--cl` (its upper bound, the number of hit rates, is checked with them).
fn parse_cl(text: &str) -> Result<usize, String> {
    parse_in_range(text, 1, MAX_REPLICAS as u64).map(|k| k as usize)
}

/// Parses `--draws`.
fn parse_draws(text: &str) -> Result<u64, String> {
    parse_in_range(text, 1, MAX_DRAWS)
}

/// Parses `--seed`.
fn parse_seed(text: &str) -> Result<u64, String> {
    parse_in_range(text, 0, u64::MAX)
}

/// The plan inputs, with K checked against N.
fn checked_input(input: &PlanInput) -> Result<(&[f64], usize), CliError> {
    let (rates, k) = (&input.hit_rates.0[..], input.cl);
    let n = rates.len();
    if k > n {
        return Err(CliError::usage(format!(
            "--cl: '{k}' is not allowed; it must be an integer in [1, {n}] (1 <= K <= N, N = {n} hit rates)"
        )));
    }
    Ok((rates, k))
}

#[derive(Serialize)]
struct PlanJson<'a> {
    hit_rates: &'a [f64],
    cl: usize,
    active: bool,
    shares: &'a [f64],
    rows: Vec<&'a [f64]>,
}

fn plan(args: PlanArgs) -> CliResult {
    let (rates, k) = checked_input(&args.input)?;
    let plan = HwlbPlan::compute(rates, k, &PlanConfig::default());
    let n = rates.len();
    if args.json {
        let json = PlanJson {
            hit_rates: rates,
            cl: k,
            active: plan.active(),
            shares: &plan.shares,
            rows: (0..n).map(|c| plan.row(c)).collect(),
        };
        println!("{}", serde_json::to_string(&json).expect("plan serialises"));
        return Ok(());
    }
    match plan.step_aside {
        None => println!("HWLB active: N={n} replicas, CL={k}"),
        Some(why) => println!("HWLB steps aside ({why:?}): N={n} replicas, CL={k}; the naive policy applies"),
    }
    println!();
    print!("{:<14}", "");
    (0..n).for_each(|j| print!("{:>10}", format!("replica {j}")));
    println!();
    print!("{:<14}", "hit rate");
    rates.iter().for_each(|h| print!("{h:>10.4}"));
    println!();
    print!("{:<14}", "share P");
    plan.shares.iter().for_each(|p| print!("{p:>10.4}"));
    println!();
    print!("{:<14}", "misses/read");
    plan.shares
        .iter()
        .zip(rates)
        .for_each(|(p, h)| print!("{:>10.4}", p * (1.0 - h.min(PlanConfig::default().hit_rate_cap))));
    println!();
    println!();
    println!("rows: fraction of coordinator c's replica reads sent to replica j (x CL = inclusion probability)");
    for c in 0..n {
        print!("{:<14}", format!("coordinator {c}"));
        plan.row(c).iter().for_each(|x| print!("{x:>10.4}"));
        println!();
    }
    Ok(())
}

fn sample(args: SampleArgs) -> CliResult {
    let (rates, k) = checked_input(&args.input)?;
    let (draws, seed) = (args.draws, args.seed);
    let plan = HwlbPlan::compute(rates, k, &PlanConfig::default());
    let n = rates.len();
    let out = tally_draws(&plan, k, draws, &mut Rng::seed_from_u64(seed));
    if args.json {
        println!("{}", serde_json::to_string(&out).expect("sample serialises"));
        return Ok(());
    }
    println!(
        "{draws} requests, CL={k}, seed {seed}; HWLB {}",
        if plan.active() { "active" } else { "steps aside" }
    );
    println!(
        "{:<10}{:>12}{:>14}{:>14}{:>12}{:>12}",
        "replica", "reads", "expected", "coordinated", "local", "share"
    );
    let total_reads = (draws * k as u64) as f64;
    for j in 0..n {
        println!(
            "{:<10}{:>12}{:>14.0}{:>14}{:>12}{:>12.4}",
            j,
            out.reads[j],
            total_reads * plan.shares[j],
            out.coordinated[j],
            out.local_reads[j],
            out.reads[j] as f64 / total_reads
        );
    }
    println!("invalid draws: {}", out.invalid);
    Ok(())
}
