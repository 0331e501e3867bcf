//! Every policy by name: its side, a one-line description, its parameters, and how to build it
//! from a table of overrides. Scenario files, node configurations and `replica-lb policies`
//! all go through here.

use crate::params::{ParamSpec, ParamTable, PolicyError};
use crate::policy::Policy;
use crate::types::Side;
use crate::{hwlb, naive};

/// One registered policy.
pub struct PolicyInfo {
    /// The name used everywhere (`hwlb`, `c3`, ...).
    pub name: &'static str,
    /// Which decisions it makes.
    pub side: Side,
    /// One line: what it does.
    pub description: &'static str,
    /// Its parameters with the published defaults.
    pub params: &'static [ParamSpec],
    build: fn(&ParamTable) -> Result<Box<dyn Policy>, PolicyError>,
}

fn boxed<P: Policy + 'static>(built: Result<P, PolicyError>) -> Result<Box<dyn Policy>, PolicyError> {
    built.map(|p| Box::new(p) as Box<dyn Policy>)
}

/// The catalogue, in the order listings show it.
pub static POLICIES: &[PolicyInfo] = &[
    PolicyInfo {
        name: naive::NAME,
        side: Side::Coordinator,
        description: "pre-HWLB coordinator: read locally if a replica, the other CL-1 replicas uniformly at random",
        params: &naive::PARAMS,
        build: |o| boxed(naive::Naive::new(o)),
    },
    PolicyInfo {
        name: hwlb::policy::NAME,
        side: Side::Coordinator,
        description: "heat-weighted load balancing: equal cache misses per replica, local work kept, exact systematic sampling",
        params: &hwlb::policy::PARAMS,
        build: |o| boxed(hwlb::Hwlb::new(o)),
    },
];

/// The registered policy called `name`.
pub fn find(name: &str) -> Result<&'static PolicyInfo, PolicyError> {
    POLICIES.iter().find(|p| p.name == name).ok_or_else(|| PolicyError::UnknownPolicy {
        name: name.to_string(),
        known: names().join(", "),
    })
}

/// Every registered name.
pub fn names() -> Vec<&'static str> {
    POLICIES.iter().map(|p| p.name).collect()
}

/// Builds the policy `name` with parameter `overrides`.
pub fn build(name: &str, overrides: &ParamTable) -> Result<Box<dyn Policy>, PolicyError> {
    (find(name)?.build)(overrides)
}

/// Builds the policy `name` for decisions of side `wanted` (client or coordinator), failing
/// clearly when the policy works on the other side.
pub fn build_for(name: &str, wanted: Side, overrides: &ParamTable) -> Result<Box<dyn Policy>, PolicyError> {
    let info = find(name)?;
    if !info.side.serves(wanted) {
        return Err(PolicyError::WrongSide {
            policy: name.to_string(),
            side: info.side.as_str(),
            wanted: wanted.as_str(),
        });
    }
    (info.build)(overrides)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ParamValue;

    #[test]
    fn every_policy_builds_with_defaults_and_reports_its_name_and_side() {
        for info in POLICIES {
            let p = build(info.name, &ParamTable::new()).unwrap();
            assert_eq!(p.name(), info.name);
            assert_eq!(p.side(), info.side);
            assert_eq!(p.params().values().count(), info.params.len());
        }
    }

    #[test]
    fn errors_name_the_bad_input() {
        let e = build("nope", &ParamTable::new()).err().unwrap().to_string();
        assert!(e.contains("'nope'") && e.contains("hwlb"), "{e}");
        let mut o = ParamTable::new();
        o.insert("hit_rate_cap".into(), ParamValue::Float(1.5));
        let e = build("hwlb", &o).err().unwrap().to_string();
        assert!(e.contains("hit_rate_cap") && e.contains("1.5"), "{e}");
        let e = build_for("hwlb", Side::Client, &ParamTable::new()).err().unwrap().to_string();
        assert!(e.contains("coordinator side"), "{e}");
    }
}
