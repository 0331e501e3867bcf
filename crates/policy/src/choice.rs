//! A policy chosen by name for one side with its parameters, checked once ([`PolicyChoice`]):
//! the name is registered, the policy makes that side's decisions, and it builds with the
//! parameters. What holds a choice builds instances from it and reads its registry entry; it
//! never looks a policy up by name again.

use crate::params::{ParamTable, PolicyError};
use crate::registry::{self, Built, PolicyInfo};
use crate::types::Side;
use std::fmt;

/// A registered policy with its parameter overrides, checked for the side it decides for.
#[derive(Clone)]
pub struct PolicyChoice {
    info: &'static PolicyInfo,
    side: Option<Side>,
    params: ParamTable,
}

impl PolicyChoice {
    /// The policy `name` deciding for `side` (client or coordinator) with `params`: fails,
    /// naming the bad value, when the name is not registered, the policy works on the other
    /// side, or a parameter is unknown or out of range.
    pub fn new(name: &str, side: Side, params: ParamTable) -> Result<PolicyChoice, PolicyError> {
        Self::checked(registry::find_for(name, side)?, Some(side), params)
    }

    /// The policy `name` with `params` for a caller that lets it decide on either side
    /// (clients that choose the replicas themselves).
    pub fn any_side(name: &str, params: ParamTable) -> Result<PolicyChoice, PolicyError> {
        Self::checked(registry::find(name)?, None, params)
    }

    /// The same policy and parameters checked for `side` (not built again: the parameters
    /// were checked when it was chosen).
    pub fn for_side(&self, side: Side) -> Result<PolicyChoice, PolicyError> {
        self.info.check_side(side)?;
        Ok(PolicyChoice {
            side: Some(side),
            ..self.clone()
        })
    }

    /// Checks the parameters the one way that covers every policy's rules: by building it.
    fn checked(info: &'static PolicyInfo, side: Option<Side>, params: ParamTable) -> Result<PolicyChoice, PolicyError> {
        info.instantiate(&params)?;
        Ok(PolicyChoice { info, side, params })
    }

    /// Its registered name.
    pub fn name(&self) -> &'static str {
        self.info.name
    }

    /// Its registry entry (side, needs, what it plans).
    pub fn info(&self) -> &'static PolicyInfo {
        self.info
    }

    /// The side it was chosen for (`None`: either).
    pub fn side(&self) -> Option<Side> {
        self.side
    }

    /// Its parameter overrides.
    pub fn params(&self) -> &ParamTable {
        &self.params
    }

    /// A new instance (the parameters were checked when it was chosen).
    pub fn build(&self) -> Result<Built, PolicyError> {
        self.info.instantiate(&self.params)
    }
}

impl PartialEq for PolicyChoice {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.info, other.info) && self.side == other.side && self.params == other.params
    }
}

impl fmt::Debug for PolicyChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PolicyChoice")
            .field("name", &self.info.name)
            .field("side", &self.side)
            .field("params", &self.params)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ParamValue;

    #[test]
    fn a_choice_is_checked_once_and_builds_its_policy() {
        let mut p = ParamTable::new();
        p.insert("hit_rate_cap".into(), ParamValue::Float(0.9));
        let c = PolicyChoice::new(crate::hwlb::policy::NAME, Side::Coordinator, p.clone()).unwrap();
        assert_eq!((c.name(), c.side(), c.params()), ("hwlb", Some(Side::Coordinator), &p));
        let built = c.build().unwrap();
        assert_eq!(built.name, "hwlb");
        assert_eq!(c, c.clone());
        let any = PolicyChoice::any_side("hwlb", p).unwrap();
        assert_eq!(any.side(), None);
        assert_ne!(any, c);
        assert_eq!(any.for_side(Side::Coordinator).unwrap(), c);
        let e = any.for_side(Side::Client).unwrap_err().to_string();
        assert!(e.contains("coordinator side"), "{e}");
    }

    #[test]
    fn a_bad_choice_names_the_value() {
        let e = PolicyChoice::new("nope", Side::Client, ParamTable::new()).unwrap_err().to_string();
        assert!(e.contains("'nope'"), "{e}");
        let e = PolicyChoice::new("hwlb", Side::Client, ParamTable::new()).unwrap_err().to_string();
        assert!(e.contains("coordinator side"), "{e}");
        let mut p = ParamTable::new();
        p.insert("hit_rate_cap".into(), ParamValue::Float(1.5));
        let e = PolicyChoice::any_side("hwlb", p).unwrap_err().to_string();
        assert!(e.contains("hit_rate_cap") && e.contains("1.5"), "{e}");
    }
}
