//! `replica-lb`: the one binary. Thin: parses arguments and calls the crates.

mod cassandra_cmd;
mod checks;
mod cluster_cmd;
mod error;
mod experiment_cmd;
mod hwlb_cmd;
mod load_cmd;
mod node_cmd;
mod policies_cmd;
mod progress;
mod sim_cmd;
mod tournament_cmd;

use clap::{Parser, Subcommand};
use error::{one_line, CliResult};

/// Replica selection for replicated data stores: plans, policies, simulator, real cluster.
#[derive(Parser, Debug)]
#[command(name = "replica-lb", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Heat-weighted load balancing: compute a plan, or sample from one.
    #[command(subcommand)]
    Hwlb(hwlb_cmd::HwlbCommand),
    /// The deterministic cluster simulator: run a scenario file for one or more policies.
    #[command(subcommand)]
    Sim(sim_cmd::SimCommand),
    /// Run the cold-restart comparison (naive vs hwlb) and write its report.
    Demo(sim_cmd::DemoArgs),
    /// List every replica-selection policy with its side, description and parameter defaults.
    Policies(policies_cmd::PoliciesArgs),
    /// Run one storage node of the real test cluster.
    Node(node_cmd::NodeArgs),
    /// A local cluster of node processes: up, status, down, restart, signal.
    #[command(subcommand)]
    Cluster(cluster_cmd::ClusterCommand),
    /// Write keys 0..N-1 into a running cluster.
    Load(load_cmd::LoadArgs),
    /// Drive an open-loop load against a running cluster and report latency.
    Bench(load_cmd::BenchArgs),
    /// Run a scenario on a real local cluster (--real), optionally next to the simulator.
    Experiment(experiment_cmd::ExperimentArgs),
    /// Every simulator scenario with every policy that applies, then a leaderboard.
    Tournament(tournament_cmd::TournamentArgs),
}

fn run(cli: Cli) -> CliResult {
    match cli.command {
        Command::Hwlb(cmd) => hwlb_cmd::run(cmd),
        Command::Sim(cmd) => sim_cmd::run(cmd),
        Command::Demo(args) => sim_cmd::demo(args),
        Command::Node(args) => node_cmd::run(args),
        Command::Cluster(cmd) => cluster_cmd::run(cmd),
        Command::Load(args) => load_cmd::load(args),
        Command::Bench(args) => load_cmd::bench(args),
        Command::Experiment(args) => experiment_cmd::run(args),
        Command::Policies(args) => policies_cmd::run(args),
        Command::Tournament(args) => tournament_cmd::run(args),
    }
}

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            if e.use_stderr() {
                eprintln!("replica-lb: {}", one_line(&e.render().to_string()));
                std::process::exit(2);
            }
            // --help and --version.
            let _ = e.print();
            std::process::exit(0);
        }
    };
    if let Err(e) = run(cli) {
        eprintln!("replica-lb: {e}");
        std::process::exit(e.code);
    }
}
