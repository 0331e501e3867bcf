//! The `--policy` list: which policy runs on which side, one simulation per item.
//!
//! An item is a policy name or `CLIENT/COORDINATOR`:
//! - `CLIENT/COORDINATOR` sets both sides (coordinator routing only);
//! - a name replaces the scenario's policy on the side the policy works on; a policy that works
//!   on both sides replaces the side named by the scenario's `policy.both_side` (default
//!   `coordinator`); with direct routing any name replaces the client policy (clients choose
//!   the replicas themselves);
//! - `ideal` (direct routing only) is not a policy: every server joins one shared FIFO queue
//!   (an M/G/k system), the lower bound no balancer can beat.

use crate::scenario::{PolicyModel, Routing, Scenario};
use policy::{registry, ParamTable, Side};

/// The item that selects the ideal shared queue.
pub const IDEAL: &str = "ideal";
/// The most items one list may have.
pub const MAX_RUNS: usize = 64;

/// One simulation to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunSpec {
    /// The item as given (the `policy` field of summary.json).
    pub label: String,
    /// The item with `/` replaced by `+` (its output directory).
    pub dir: String,
    /// Client policy.
    pub client: String,
    /// Coordinator policy (unused with direct routing).
    pub coordinator: String,
    /// The ideal shared queue instead of a policy.
    pub ideal: bool,
}

fn check(name: &str, side: Option<Side>, params: &PolicyModel) -> Result<(), String> {
    let table = params.params.get(name).cloned().unwrap_or_else(ParamTable::new);
    let built = match side {
        Some(s) => registry::build_for(name, s, &table),
        None => registry::build(name, &table),
    };
    built.map(|_| ()).map_err(|e| e.to_string())
}

/// Resolves one item against the scenario's policies.
pub fn parse_item(item: &str, model: &PolicyModel, routing: Routing) -> Result<RunSpec, String> {
    let item = item.trim();
    let mut spec = RunSpec {
        label: item.to_string(),
        dir: item.replace('/', "+"),
        client: model.client.clone(),
        coordinator: model.coordinator.clone(),
        ideal: false,
    };
    if item.is_empty() {
        return Err("empty policy item".into());
    }
    if item == IDEAL {
        if routing != Routing::Direct {
            return Err("'ideal' (one shared queue) needs routing = \"direct\"".into());
        }
        spec.ideal = true;
        return Ok(spec);
    }
    if let Some((client, coordinator)) = item.split_once('/') {
        if routing == Routing::Direct {
            return Err(format!(
                "'{item}': with routing = \"direct\" there is no coordinator; give one policy name"
            ));
        }
        check(client, Some(Side::Client), model)?;
        check(coordinator, Some(Side::Coordinator), model)?;
        spec.client = client.to_string();
        spec.coordinator = coordinator.to_string();
        return Ok(spec);
    }
    if routing == Routing::Direct {
        check(item, None, model)?;
        spec.client = item.to_string();
        return Ok(spec);
    }
    let info = registry::find(item).map_err(|e| e.to_string())?;
    let side = match info.side {
        Side::Both => model.both_side,
        s => s,
    };
    check(item, Some(side), model)?;
    match side {
        Side::Client => spec.client = item.to_string(),
        _ => spec.coordinator = item.to_string(),
    }
    Ok(spec)
}

/// Resolves a comma-separated list, or the scenario's default (its `compare` list, else its own
/// policies).
pub fn parse_list(list: Option<&str>, scenario: &Scenario) -> Result<Vec<RunSpec>, String> {
    let routing = scenario.cluster.routing;
    let items: Vec<String> = match list {
        Some(l) => l.split(',').map(|s| s.trim().to_string()).collect(),
        None if !scenario.policy.compare.is_empty() => scenario.policy.compare.clone(),
        None if routing == Routing::Direct => vec![scenario.policy.client.clone()],
        None => vec![format!("{}/{}", scenario.policy.client, scenario.policy.coordinator)],
    };
    if items.len() > MAX_RUNS {
        return Err(format!("{} policy items: at most {MAX_RUNS}", items.len()));
    }
    let mut out: Vec<RunSpec> = Vec::new();
    for item in &items {
        let spec = parse_item(item, &scenario.policy, routing).map_err(|e| format!("--policy: {e}"))?;
        if out.iter().any(|s| s.dir == spec.dir) {
            return Err(format!("--policy: '{item}' is listed twice"));
        }
        out.push(spec);
    }
    Ok(out)
}
