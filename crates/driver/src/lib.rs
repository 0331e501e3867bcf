#![doc = include_str!("../README.md")]
//!
//! Modules: [`builder`] (the policy by name, checked against what the driver provides),
//! [`policy`] (the driver's `LoadBalancingPolicy`: candidates from the cluster state, the
//! fallback order, the callbacks), [`core`] (the state behind the lock, free of driver types),
//! [`nodes`] (host ids to dense node ids, zones, liveness) and [`inflight`] (picks matched to
//! the attempts' ends, and their expiry).

#![warn(missing_docs)]

pub mod builder;
pub mod core;
pub mod inflight;
pub mod nodes;
pub mod policy;

pub use builder::{Error, ReplicaLbPolicyBuilder, DRIVER};
pub use core::{AdapterStats, Outcome};
pub use policy::ReplicaLbPolicy;
