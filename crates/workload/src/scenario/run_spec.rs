//! One run of a `--policy` list resolved against a scenario's policies ([`RunSpec`]): which
//! policy runs on which side (the rules are in [`crate::runs`]). Part of the scenario, whose
//! `policy.compare` list is checked with it when the file is read.

use super::{PolicyModel, Routing};
use crate::run_item::{PolicyName, RunItem};
use replica_lb_policy::registry::PolicyInfo;
use replica_lb_policy::{PolicyChoice, Side};

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
