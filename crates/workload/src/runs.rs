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

use crate::run_item::{PolicyName, RunItem};
use crate::scenario::{PolicyModel, Routing, Scenario};
use replica_lb_policy::registry::PolicyInfo;
use replica_lb_policy::{PolicyChoice, Side};

pub use crate::run_item::IDEAL;
/// The most items one list may have.
pub const MAX_RUNS: usize = 64;

/// One simulation to run: its policies chosen and checked once.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSpec {
    /// The item as given (the `policy` field of summary.json).
    pub label: String,
    /// The item with `/` replaced by `+` (its output directory).
    pub dir: String,
    /// Client policy.
    pub client: PolicyChoice,
    /// Coordinator policy (unused with direct routing).
    pub coordinator: PolicyChoice,
    /// The ideal shared queue instead of a policy.
    pub ideal: bool,
}

/// The scenario's policy `info` with its parameters, for decisions of `side` (`None`: either).
fn choose(info: &PolicyInfo, side: Option<Side>, model: &PolicyModel) -> Result<PolicyChoice, String> {
    model.choose(info.name, side).map_err(|e| e.to_string())
}

/// The registered policy a simulation runs for `name` (a driver's own policy runs only
/// against a real cluster).
fn simulated(name: PolicyName) -> Result<&'static PolicyInfo, String> {
    match name {
        PolicyName::Registered(info) => Ok(info),
        other => Err(format!(
            "'{other}' runs only in a driver session against a real cluster (experiment --engine cassandra); name a registered policy"
        )),
    }
}

/// Parses one item ([`RunItem`]) and resolves it against the scenario's policies.
pub fn parse_item(text: &str, model: &PolicyModel, routing: Routing) -> Result<RunSpec, String> {
    resolve(text.trim(), RunItem::parse(text)?, model, routing)
}

/// Resolves a parsed item (`label` as given) against the scenario's policies.
pub fn resolve(label: &str, item: RunItem, model: &PolicyModel, routing: Routing) -> Result<RunSpec, String> {
    let mut spec = RunSpec {
        label: label.to_string(),
        dir: label.replace('/', "+"),
        client: model.client.clone(),
        coordinator: model.coordinator.clone(),
        ideal: false,
    };
    let name = match item {
        RunItem::Ideal => {
            if routing != Routing::Direct {
                return Err("'ideal' (one shared queue) needs routing = \"direct\"".into());
            }
            spec.ideal = true;
            return Ok(spec);
        }
        RunItem::Pair { client, coordinator } => {
            if routing == Routing::Direct {
                return Err(format!(
                    "'{label}': with routing = \"direct\" there is no coordinator; give one policy name"
                ));
            }
            spec.client = choose(simulated(client)?, Some(Side::Client), model)?;
            spec.coordinator = choose(simulated(coordinator)?, Some(Side::Coordinator), model)?;
            return Ok(spec);
        }
        RunItem::One(name) => simulated(name)?,
    };
    if routing == Routing::Direct {
        spec.client = choose(name, None, model)?;
        return Ok(spec);
    }
    if name.both_sides_together {
        spec.client = choose(name, Some(Side::Client), model)?;
        spec.coordinator = choose(name, Some(Side::Coordinator), model)?;
        return Ok(spec);
    }
    let side = match name.side {
        Side::Both => model.both_side,
        s => s,
    };
    match side {
        Side::Client => spec.client = choose(name, Some(side), model)?,
        _ => spec.coordinator = choose(name, Some(side), model)?,
    }
    Ok(spec)
}

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
