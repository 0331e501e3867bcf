//! replica-lb's policy core: the replica-selection algorithms of the field behind one
//! interface ([`Policy`]), pure code with no I/O, no clock, no threads and no global RNG, so the
//! simulator, the real node and a driver all run the very same decisions.
//!
//! Start with [`types`] (the vocabulary), [`policy`] (the interface), [`registry`] (policies by
//! name) and [`hwlb`] (heat-weighted load balancing).

#![warn(missing_docs)]

pub mod hwlb;
pub mod naive;
pub mod order;
pub mod params;
pub mod policy;
pub mod registry;
pub mod rng;
pub mod types;

pub use params::{ParamDefault, ParamSpec, ParamTable, ParamValue, Params, PolicyError};
pub use policy::Policy;
pub use registry::{build, build_for, PolicyInfo, POLICIES};
pub use rng::Rng;
pub use types::*;
