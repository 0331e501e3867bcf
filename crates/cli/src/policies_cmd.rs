//! `replica-lb policies [--json]`: every registered policy with its side, a one-line
//! description and its parameters with their published defaults.

use crate::error::{CliError, CliResult};
use clap::Args;
use replica_lb_policy::{ParamValue, POLICIES};
use serde::Serialize;
use std::collections::BTreeMap;

/// `policies` arguments.
#[derive(Args, Debug)]
pub struct PoliciesArgs {
    /// Print a JSON array of {name, side, description, parameters, needs} instead of a table.
    #[arg(long)]
    json: bool,
}

/// One policy as listed in JSON.
#[derive(Serialize)]
struct PolicyJson {
    name: &'static str,
    side: &'static str,
    description: &'static str,
    /// Parameter name -> default value.
    parameters: BTreeMap<&'static str, ParamValue>,
    /// What it needs from its caller: `probes`, `feedback`, `truth`, `topology`.
    needs: Vec<&'static str>,
}

/// Runs `policies`.
pub fn run(args: PoliciesArgs) -> CliResult {
    if args.json {
        let list: Vec<PolicyJson> = POLICIES
            .iter()
            .map(|p| PolicyJson {
                name: p.name,
                side: p.side.as_str(),
                description: p.description,
                parameters: p.params.iter().map(|s| (s.name, s.default.value())).collect(),
                needs: p.needs.names(),
            })
            .collect();
        let text = serde_json::to_string(&list).map_err(|e| CliError::failed(format!("could not write the policy list as JSON: {e}")))?;
        println!("{text}");
        return Ok(());
    }
    let width = POLICIES.iter().map(|p| p.name.len()).max().unwrap_or(4).max(4);
    println!("{:<width$}  {:<11}  DESCRIPTION", "NAME", "SIDE");
    for p in POLICIES {
        println!("{:<width$}  {:<11}  {}", p.name, p.side.as_str(), p.description);
        if p.needs != replica_lb_policy::Needs::NONE {
            println!("{:<width$}  {:<11}  needs: {}", "", "", p.needs.names().join(", "));
        }
        if !p.params.is_empty() {
            let params: Vec<String> = p.params.iter().map(|s| format!("{}={}", s.name, s.default.value())).collect();
            println!("{:<width$}  {:<11}  parameters: {}", "", "", params.join(", "));
        }
    }
    println!();
    println!("Override a parameter in a scenario file or node configuration by its name; `--json` lists the defaults.");
    Ok(())
}
