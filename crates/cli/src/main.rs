//! `replica-lb`: the one binary. Thin: parses arguments and calls the crates.

mod error;
mod hwlb_cmd;

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
}

fn run(cli: Cli) -> CliResult {
    match cli.command {
        Command::Hwlb(cmd) => hwlb_cmd::run(cmd),
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
