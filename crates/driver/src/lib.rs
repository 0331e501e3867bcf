#![doc = include_str!("../README.md")]
//!
//! Modules: [`builder`] (the policy by name, checked against what the driver provides),
//! [`policy`] (the driver's `LoadBalancingPolicy`: candidates from the cluster state, the
//! fallback order, the callbacks), [`core`] (the state behind the lock, free of driver types),
//! [`nodes`] (host ids to dense node ids, zones, liveness), [`inflight`] (picks matched to
//! the attempts' ends, and their expiry) and [`hit_rates`] (the nodes' cache hit rates polled
//! off the request path, for `hwlb-client`).

#![warn(missing_docs)]

pub mod builder;
pub mod core;
pub mod hit_rates;
pub mod inflight;
pub mod nodes;
pub mod policy;

pub use builder::{Error, ReplicaLbPolicyBuilder, DRIVER};
pub use core::{AdapterStats, Outcome};
pub use policy::ReplicaLbPolicy;
