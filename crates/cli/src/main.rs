//! `replica-lb`: the one binary. Thin: parses arguments and calls the crates.

mod cassandra_cmd;
mod checks;
mod cluster_cmd;
mod error;
mod experiment_cmd;
mod host;
mod hwlb_cmd;
mod load_cmd;
mod node_cmd;
mod policies_cmd;
mod progress;
mod sim_cmd;
mod tournament_cmd;
mod warmup_cmd;

use clap::{Parser, Subcommand};
use error::{one_line, CliResult};

/// Replica selection for replicated data stores: plans, policies, simulator, real cluster.
#[derive(Parser, Debug)]
#[command(
    name = "replica-lb",
    version,
    about,
    propagate_version = true,
    arg_required_else_help = true,
    after_help = "Examples:
  replica-lb demo                                          # cold restart, naive vs hwlb, HTML report
  replica-lb sim run scenarios/cold-restart.toml --policy naive,hwlb,c3 --out out/cr"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Heat-weighted load balancing: compute a plan, or sample from one.
    #[command(subcommand, arg_required_else_help = true)]
    #[command(after_help = "Examples:
  replica-lb hwlb plan --hit-rates 0,0.8,0.8 --cl 2
  replica-lb hwlb sample --hit-rates 0,0.8,0.8 --cl 2 --draws 1000000 --seed 7")]
    Hwlb(hwlb_cmd::HwlbCommand),
    /// The deterministic cluster simulator: run a scenario file for one or more policies.
    #[command(subcommand, arg_required_else_help = true)]
    #[command(after_help = "Examples:
  replica-lb sim run scenarios/cold-restart.toml --policy naive,hwlb,c3 --out out/cr
  replica-lb sim run scenarios/large-rolling-restart.toml --set run.duration_s=120 --json")]
    Sim(sim_cmd::SimCommand),
    /// Run the cold-restart comparison (naive vs hwlb) and write its report.
    #[command(after_help = "Examples:
  replica-lb demo                      # writes out/demo/report.html
  replica-lb demo --out /tmp/demo --seed 7")]
    Demo(sim_cmd::DemoArgs),
    /// List every replica-selection policy with its side, description and parameter defaults.
    #[command(after_help = "Examples:
  replica-lb policies
  replica-lb policies --json")]
    Policies(policies_cmd::PoliciesArgs),
    /// Run one storage node of the real test cluster.
    #[command(after_help = "Examples:
  replica-lb node --id 0 --grpc 127.0.0.1:9400 --gossip 127.0.0.1:9500 --data-dir /tmp/n0
  replica-lb node --config node0.toml --policy hwlb")]
    Node(node_cmd::NodeArgs),
    /// A local cluster of node processes: up, status, down, restart, signal.
    #[command(subcommand, arg_required_else_help = true)]
    #[command(after_help = "Examples:
  replica-lb cluster up --nodes 3 --dir /tmp/rlb --policy hwlb
  replica-lb cluster restart --dir /tmp/rlb --node 2 --down-s 10")]
    Cluster(cluster_cmd::ClusterCommand),
    /// Write keys 0..N-1 into a running cluster.
    #[command(after_help = "Examples:
  replica-lb load --cluster /tmp/rlb --keys 100000
  replica-lb load --contact-points 127.0.0.1:9042 --keys 100000 --cl one")]
    Load(load_cmd::LoadArgs),
    /// Drive an open-loop load against a running cluster and report latency.
    #[command(after_help = "Examples:
  replica-lb bench --cluster /tmp/rlb --rate 1000 --duration-s 30 --out bench.json
  replica-lb bench --cluster /tmp/cass --rate 300 --duration-s 60 --client-policy unified --driver java")]
    Bench(load_cmd::BenchArgs),
    /// Run a scenario on a real local cluster (--real), optionally next to the simulator.
    #[command(after_help = "Examples:
  replica-lb experiment scenarios/cold-restart-real.toml --real --policy naive,hwlb --compare-sim
  replica-lb experiment scenarios/gc-pause-cassandra.toml --engine cassandra --compare-sim")]
    Experiment(experiment_cmd::ExperimentArgs),
    /// Every simulator scenario with every policy that applies, then a leaderboard.
    #[command(after_help = "Examples:
  replica-lb tournament --out out/tournament --quick
  replica-lb tournament --out out/t --scenarios cold-restart,queueing-16 --policies c3,hwlb,unified")]
    Tournament(tournament_cmd::TournamentArgs),
    /// Is a Cassandra cluster's restarted node warm enough to take the next one down? Status,
    /// or wait for it.
    #[command(subcommand, arg_required_else_help = true)]
    #[command(after_help = "Examples:
  replica-lb warmup status --contact-points 127.0.1.1
  replica-lb warmup wait --contact-points 127.0.1.1 --node 127.0.1.3 --timeout-s 900")]
    Warmup(warmup_cmd::WarmupCommand),
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
        Command::Warmup(cmd) => warmup_cmd::run(cmd),
    }
}

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // A bare command (or group): the help with its commands, on stderr, exit 2.
            if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                eprint!("{}", e.render());
                std::process::exit(2);
            }
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
        // An experiment being interrupted fails because its cluster is being stopped: the
        // interrupt handler finishes that and exits 130.
        replica_lb_experiment::defer_to_interrupt(std::time::Duration::from_secs(60));
        eprintln!("replica-lb: {e}");
        std::process::exit(e.code);
    }
}
