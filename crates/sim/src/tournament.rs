//! A tournament's entrants: which policies run on a scenario, and which of them cannot win.

use replica_lb_policy::{registry, Need};
use replica_lb_workload::run_item::{RunItem, IDEAL};
use replica_lb_workload::{runs, RunSpec, Scenario};

/// What runs on `sc`: the policies given (`policies`, a comma-separated list of items), or
/// every registered one (with `quick`, the scenario's own list), keeping those that apply to
/// the scenario's routing and side; `ideal` joins where the scenario's own list has it. A name
/// that is not a policy is an error (one line); an item the user named that does not apply to
/// this scenario is left out and `left_out` hears why.
pub fn entrants(sc: &Scenario, policies: Option<&str>, quick: bool, left_out: &mut dyn FnMut(&str)) -> Result<Vec<RunSpec>, String> {
    let named = policies.is_some();
    let items: Vec<String> = match policies {
        Some(list) => list.split(',').map(|s| s.trim().to_string()).collect(),
        None if quick => runs::parse_list(None, sc)
            .map_err(|e| format!("{}: {e}", sc.name))?
            .into_iter()
            .map(|s| s.label)
            .collect(),
        None => registry::names().into_iter().map(String::from).collect(),
    };
    let mut out: Vec<RunSpec> = Vec::new();
    for text in &items {
        // A name that is not a policy is the user's mistake in every scenario: an error.
        let item = RunItem::parse(text).map_err(|e| format!("--policies: {e}"))?;
        match runs::resolve(text, item, &sc.policy, sc.cluster.routing) {
            Ok(spec) if !out.iter().any(|s| s.dir == spec.dir) => out.push(spec),
            Ok(_) => {}
            Err(why) if named => left_out(&format!("{}: {text} left out: {why}", sc.name)),
            Err(_) => {}
        }
    }
    // The ideal queue has no faults and no fluctuations: a bound only where the scenario says so.
    let listed = sc.policy.compare.iter().any(|c| c.ideal);
    if !named && listed && !out.iter().any(|s| s.ideal) {
        out.push(runs::resolve(IDEAL, RunItem::Ideal, &sc.policy, sc.cluster.routing)?);
    }
    Ok(out)
}

/// Whether a run reads ground truth (the oracle) or is no policy at all (the ideal queue):
/// listed, never the best.
pub fn reads_truth(spec: &RunSpec) -> bool {
    spec.ideal || [&spec.client, &spec.coordinator].iter().any(|c| c.info().needs.has(Need::Truth))
}
