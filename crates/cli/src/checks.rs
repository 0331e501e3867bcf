//! What a command checks before any simulated or real work, so that a run that cannot finish
//! well fails in a second rather than after minutes: the output folder (creatable, writable,
//! not a file, nothing in it but an earlier run), the memory the simulations need against what
//! the machine has, and what the run is asked (recorded with its results).

use crate::error::CliError;
use replica_lb_metrics::Asked;
use replica_lb_report::run_dir::OutDir;
use replica_lb_sim::Scenario;
use std::path::Path;

/// The environment variable that caps the memory a run may take, MB (default: what the
/// machine has available now).
pub const MEMORY_ENV: &str = "REPLICA_LB_MEMORY_MB";

/// `path` checked as the output folder (`flag` names it in the error): exit 2 with one line
/// when it cannot take the results.
pub fn out_dir(path: &Path, flag: &str) -> Result<OutDir, CliError> {
    OutDir::check(path, flag).map_err(CliError::usage)
}

/// Refuses (exit 2, one line with the estimate and the key to change) a batch of simulations
/// (`batch`: scenario, runs) that cannot fit in the memory available, `threads` at once (0:
/// one per core).
pub fn memory(batch: &[(&Scenario, usize)], threads: usize) -> Result<(), CliError> {
    let runs: usize = batch.iter().map(|(_, n)| n).sum();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let at_once = if threads == 0 { cores } else { threads }.clamp(1, runs.max(1));
    let Some(available) = available_bytes()? else {
        return Ok(());
    };
    replica_lb_sim::memory::estimate(batch, at_once)
        .check(available)
        .map_err(CliError::usage)
}

/// The memory a run may take: [`MEMORY_ENV`] if set, else what the machine has available
/// (`None`: unknown, not checked).
fn available_bytes() -> Result<Option<u64>, CliError> {
    match std::env::var(MEMORY_ENV) {
        Ok(text) => match text.trim().parse::<u64>() {
            Ok(mb) if mb > 0 => Ok(Some(mb.saturating_mul(1_000_000))),
            _ => Err(CliError::usage(format!(
                "{MEMORY_ENV}={text}: must be a whole number of MB above 0 (the memory a run may take)"
            ))),
        },
        Err(_) => Ok(crate::host::available_memory_bytes()),
    }
}

/// What a run was asked, for summary.json and the report: this binary's version, the policy
/// items run, the `--set` overrides.
pub fn asked(policies: impl IntoIterator<Item = String>, overrides: &[String]) -> Asked {
    Asked {
        version: env!("CARGO_PKG_VERSION").to_string(),
        policies: policies.into_iter().collect(),
        overrides: overrides.iter().map(|s| s.trim().to_string()).collect(),
    }
}
