//! The workload model the simulator and the real cluster share, so that "the same scenario on
//! both" holds by construction rather than by care:
//! - [`scenario`]: the TOML scenario format (docs/scenarios.md), checked with line numbers,
//!   and `--set` overrides; [`scenario_file`]: loading a scenario file as every command does;
//! - [`run_item`]: the grammar of a run item (`CLIENT/COORDINATOR`, `java:NAME`, ...), parsed once;
//! - [`runs`]: the `--policy` list (which policy runs on which side);
//! - [`faults`]: a scenario's fault timeline expanded into primitive actions at absolute times;
//! - [`dist`]: service-time distributions (the simulator's stages and the real node's emulated
//!   slow disk draw from the same code);
//! - [`keys`]: key choice (uniform, Zipfian, hot set, sequential);
//! - [`placement`]: the token ring that places a key's replicas (the simulator's replica
//!   groups and the real nodes' ring are this one ring).

#![warn(missing_docs)]

pub mod dist;
pub mod faults;
pub mod keys;
pub mod placement;
pub mod run_item;
pub mod runs;
pub mod scenario;
pub mod scenario_file;

pub use dist::Dist;
pub use keys::{KeyGen, KeyPattern, KeySpec};
pub use run_item::{PolicyName, RunItem};
pub use runs::{parse_list, RunSpec};
pub use scenario::{apply_overrides, apply_overrides_noting, parse, Edit, Scenario, ScenarioError};
