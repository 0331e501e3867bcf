//! `replica-lb warmup status|wait`: is a Cassandra cluster's restarted node warm enough to take
//! the next one down? Per node, the row cache's hit ratio and reads over a window, judged by
//! the rule every engine shares (`replica_lb_metrics::warm_gate`).

use crate::error::{CliError, CliResult};
use clap::{Args, Subcommand};
use replica_lb_experiment::gate::{describe, Gate, Reading, WarmSource};
use replica_lb_loadgen::cql::ContactPoints;
use replica_lb_metrics::warm_gate::{WarmRule, DEFAULT_WINDOW_S};
use std::time::Duration;

/// The `warmup` subcommands.
#[derive(Subcommand, Debug)]
pub enum WarmupCommand {
    /// Per node: the row-cache hit ratio and reads over the next --window-s seconds, and whether
    /// it is warm (misses per read within --within of the other nodes' median; a node not read
    /// is not warm).
    #[command(after_help = "Examples:
  replica-lb warmup status --contact-points 127.0.1.1,127.0.1.2
  replica-lb warmup status --contact-points 10.0.0.5:9042 --window-s 60 --json")]
    Status(StatusArgs),
    /// Wait until the node (or every node) is warm: exit 0 once it is, 1 when --timeout-s comes
    /// first (naming the cold nodes), 2 on bad input or a cluster that does not answer.
    #[command(after_help = "Examples:
  replica-lb warmup wait --contact-points 127.0.1.1 --node 127.0.1.3
  replica-lb warmup wait --contact-points 10.0.0.5 --within 0.3 --timeout-s 900 && echo next")]
    Wait(WaitArgs),
}

/// What both subcommands share: the cluster, the rule and the window.
#[derive(Args, Debug)]
pub struct GateArgs {
    /// One or more nodes of the cluster, IP or IP:PORT (CQL's 9042 by default), comma-separated;
    /// every node the driver discovers from them is asked directly.
    #[arg(long, value_name = "HOSTS", value_parser = ContactPoints::parse)]
    contact_points: ContactPoints,
    /// Warm: misses per read at most (1 + WITHIN) x the other nodes' median (0..10).
    #[arg(long, value_name = "WITHIN", allow_hyphen_values = true, default_value_t = replica_lb_metrics::warm_gate::DEFAULT_WITHIN, value_parser = parse_within)]
    within: f64,
    /// The window the ratios are measured over, seconds (1..3600).
    #[arg(long, value_name = "S", default_value_t = DEFAULT_WINDOW_S, value_parser = clap::value_parser!(u32).range(1..=3600))]
    window_s: u32,
}

/// `warmup status` arguments.
#[derive(Args, Debug)]
pub struct StatusArgs {
    #[command(flatten)]
    gate: GateArgs,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// `warmup wait` arguments.
#[derive(Args, Debug)]
pub struct WaitArgs {
    #[command(flatten)]
    gate: GateArgs,
    /// The node to wait for (its address, as `warmup status` names it); every node by default.
    #[arg(long, value_name = "ADDR")]
    node: Option<String>,
    /// Give up after this many seconds (exit 1), 1..86400.
    #[arg(long, value_name = "S", default_value_t = 1800, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    timeout_s: u64,
}

/// `--within`: a number the rule accepts.
pub(crate) fn parse_within(text: &str) -> Result<f64, String> {
    let v: f64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a number (0.2 = 20% above the peers' median)"))?;
    WarmRule::new(v).map(|r| r.within())
}

/// Runs a `warmup` subcommand.
pub fn run(cmd: WarmupCommand) -> CliResult {
    match cmd {
        WarmupCommand::Status(a) => status(a),
        WarmupCommand::Wait(a) => wait(a),
    }
}

fn gate(a: &GateArgs) -> Result<Gate, CliError> {
    let rule = WarmRule::new(a.within).map_err(CliError::usage)?;
    let source = WarmSource::cassandra(&a.contact_points.0)?;
    Ok(Gate::new(source, rule, Duration::from_secs(a.window_s as u64))?)
}

fn status(a: StatusArgs) -> CliResult {
    let mut g = gate(&a.gate)?;
    eprintln!("measuring {} node(s) over {} s ...", g.names().len(), a.gate.window_s);
    let mut reading = g.poll()?;
    while reading.is_none() {
        std::thread::sleep(Duration::from_millis(250).min(g.window()));
        reading = g.poll()?;
    }
    let reading = reading.expect("the loop ends with a reading");
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&reading).map_err(|e| CliError::failed(e.to_string()))?
        );
    } else {
        println!("{}", table(&reading));
    }
    Ok(())
}

/// The reading as a table: one row per node.
fn table(r: &Reading) -> String {
    let mut t = format!(
        "{:<18}{:<11}{:>10}{:>10}{:>12}{:>12}{:>10}  verdict",
        "node", "source", "reads", "hit ratio", "misses/read", "peers' med", "limit"
    );
    let f = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.4}"));
    for n in &r.nodes {
        t += &format!(
            "\n{:<18}{:<11}{:>10}{:>10}{:>12}{:>12}{:>10}  {}",
            n.node,
            n.source.unwrap_or("no answer"),
            n.reads,
            n.hit_ratio.map_or_else(|| "-".to_string(), |h| format!("{h:.3}")),
            f(n.verdict.misses_per_read),
            f(n.verdict.peers_median),
            f(n.verdict.limit),
            if n.warm { "warm" } else { "NOT WARM" }
        );
    }
    t + &format!("\n(over the last {:.0} s)", r.window_s)
}

fn wait(a: WaitArgs) -> CliResult {
    let mut g = gate(&a.gate)?;
    let node = a.node.as_deref().map(|n| n.split(':').next().unwrap_or(n).to_string());
    let out = g.wait(node.as_deref(), Duration::from_secs(a.timeout_s), &mut |line| eprintln!("{line}"))?;
    let who = node.as_deref().map_or("every node".to_string(), |n| format!("node {n}"));
    if out.warm {
        if let Some(r) = &out.last {
            for n in r.nodes.iter().filter(|n| node.as_deref().is_none_or(|t| t == n.node)) {
                println!("{}", describe(n));
            }
        }
        println!("{who} warm after {:.0} s", out.waited_s);
        return Ok(());
    }
    Err(CliError::failed(format!(
        "{who} not warm after {} s (--timeout-s): {}",
        a.timeout_s,
        out.cold_nodes(g.names())
    )))
}
