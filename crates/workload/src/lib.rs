//! The workload model the simulator and the real cluster share, so that "the same scenario on
//! both" holds by construction rather than by care: service-time distributions ([`dist`]:
//! the simulator's stages and the real node's emulated slow disk draw from the same code) and
//! key choice ([`keys`]: uniform, Zipfian, hot set, sequential; the simulator's clients and the
//! load generator pick keys the same way).

#![warn(missing_docs)]

pub mod dist;
pub mod keys;

pub use dist::Dist;
pub use keys::{KeyGen, KeyPattern, KeySpec};
