//! The `--policy` list: which policy runs on which side, one simulation per item.
//!
//! An item is a policy name or `CLIENT/COORDINATOR`:
//! - `CLIENT/COORDINATOR` sets both sides (coordinator routing only);
//! - a name replaces the scenario's policy on the side the policy works on; a policy that works
//!   on both sides replaces the side named by the scenario's `policy.both_side` (default
//!   `coordinator`), except one made to run at both sides together (`unified`, the registry's
//!   `both_sides_together`), which replaces both; with direct routing any name replaces the
//!   client policy (clients choose the replicas themselves);
//! - `ideal` (direct routing only) is not a policy: every server joins one shared FIFO queue
//!   (an M/G/k system), the lower bound no balancer can beat.

use crate::scenario::{PolicyModel, Routing, Scenario};

pub use crate::run_item::IDEAL;
pub use crate::scenario::run_spec::{parse_item, resolve, RunSpec};
/// The most items one list may have.
pub const MAX_RUNS: usize = 64;

/// The scenario's own policies as one run (`CLIENT/COORDINATOR`, or the client with direct
/// routing).
fn own_run(model: &PolicyModel, routing: Routing) -> RunSpec {
    let label = match routing {
        Routing::Direct => model.client.name().to_string(),
        Routing::Coordinator => format!("{}/{}", model.client.name(), model.coordinator.name()),
    };
    RunSpec {
        dir: label.replace('/', "+"),
        label,
        client: model.client.clone(),
        coordinator: model.coordinator.clone(),
        ideal: false,
    }
}

/// Resolves a comma-separated list, or the scenario's default (its `compare` list, else its own
/// policies).
pub fn parse_list(list: Option<&str>, scenario: &Scenario) -> Result<Vec<RunSpec>, String> {
    let routing = scenario.cluster.routing;
    let items: Vec<&str> = match list {
        Some(l) => l.split(',').map(str::trim).collect(),
        None if !scenario.policy.compare.is_empty() => return distinct(scenario.policy.compare.clone()),
        None => return Ok(vec![own_run(&scenario.policy, routing)]),
    };
    if items.len() > MAX_RUNS {
        return Err(format!("{} policy items: at most {MAX_RUNS}", items.len()));
    }
    let mut out: Vec<RunSpec> = Vec::new();
    for item in items {
        let spec = parse_item(item, &scenario.policy, routing).map_err(|e| format!("--policy: {e}"))?;
        out.push(spec);
        distinct_last(&out)?;
    }
    Ok(out)
}

/// `specs` when none is listed twice and there are at most [`MAX_RUNS`].
fn distinct(specs: Vec<RunSpec>) -> Result<Vec<RunSpec>, String> {
    if specs.len() > MAX_RUNS {
        return Err(format!("{} policy items: at most {MAX_RUNS}", specs.len()));
    }
    for i in 1..=specs.len() {
        distinct_last(&specs[..i])?;
    }
    Ok(specs)
}

/// Refuses the last of `specs` when an earlier one writes to the same directory.
fn distinct_last(specs: &[RunSpec]) -> Result<(), String> {
    match specs.split_last() {
        Some((last, before)) if before.iter().any(|s| s.dir == last.dir) => Err(format!("--policy: '{}' is listed twice", last.label)),
        _ => Ok(()),
    }
}
