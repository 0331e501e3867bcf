//! replica-lb's policy core: the replica-selection algorithms of the field behind one
//! interface ([`Policy`]), pure code with no I/O, no clock, no threads and no global RNG, so the
//! simulator, the real node and a driver all run the very same decisions.
//!
//! Start with [`types`] (the vocabulary), [`policy`] (the interface), [`registry`] (policies by
//! name), [`choice`] (a policy chosen for a side with its parameters, checked once) and
//! [`hwlb`] (heat-weighted load balancing). The field's other policies, one module each:
//! [`baselines`] (random, round-robin, least-outstanding, p2c, oracle), [`peak_ewma`],
//! [`dynamic_snitch`], [`c3`], [`datastax`], [`weighted_least_loaded`], [`latency_aware`] and
//! [`prequal`]; [`unified`] combines them (docs/unified.md); shared pieces: [`nodes`]
//! (per-node state), [`order`] (allocation-free ordering helpers) and [`health`] (the Java
//! driver's unhealthy-node rule).

#![warn(missing_docs)]

pub mod baselines;
pub mod c3;
pub mod choice;
pub mod datastax;
pub mod dynamic_snitch;
pub mod health;
pub mod hwlb;
pub mod latency_aware;
pub mod naive;
pub mod needs;
pub mod nodes;
pub mod order;
pub mod params;
pub mod peak_ewma;
pub mod policy;
pub mod prequal;
pub mod registry;
pub mod rng;
pub mod types;
pub mod unified;
pub mod weighted_least_loaded;

#[cfg(test)]
mod testkit;

pub use choice::PolicyChoice;
pub use needs::{Need, Needs};
pub use params::{ParamDefault, ParamSpec, ParamTable, ParamValue, Params, PolicyError};
pub use policy::{Event, Policy};
pub use registry::{build, build_for, Built, PolicyInfo, POLICIES};
pub use rng::Rng;
pub use types::*;
