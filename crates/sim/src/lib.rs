//! replica-lb's deterministic discrete-event simulator of a replicated store.
//!
//! It runs the project's real policies ([`replica_lb_policy::Policy`]) against a modelled cluster:
//! clients (open or closed loop, key patterns, demand skew, token-aware or not), coordinators
//! (consistency levels, time-outs, speculative retry, writes), replicas (CPU stage, LRU row
//! cache with its own hit-rate tracker, disk stage), a zoned asymmetric network, and faults on a
//! timeline. Same scenario and seed, same results, bit for bit.
//!
//! - [`scenario`]: the TOML scenario format (docs/scenarios.md) and its checks;
//! - [`runs`]: the `--policy` list;
//! - [`engine`]: the simulation loop;
//! - [`compare`]: several runs on threads, results in list order;
//! - [`memory`]: what a batch of runs needs in memory, estimated before it starts;
//! - [`speculation`]: the speculative-retry threshold of a percentile policy;
//! - [`tournament`]: a tournament's entrants.
//!
//! The scenario model (format, checks, `--policy` lists, fault timeline, distributions, key
//! choice) comes from the [`workload`] crate, shared with the real cluster (re-exported here
//! as [`scenario`], [`runs`], [`dist`] and [`keys`]).

#![warn(missing_docs)]

pub mod compare;
pub mod engine;
pub mod lru;
pub mod memory;
pub mod prefetch;
pub mod queue;
pub mod speculation;
pub mod tournament;

pub use compare::{run_all, run_jobs, Job, RunResult};
pub use engine::{Outcome, Sim};
pub use replica_lb_workload::{dist, keys, runs, scenario};
pub use runs::{parse_list, RunSpec};
pub use scenario::{apply_overrides, parse, Scenario, ScenarioError};
