//! replica-lb's harness: what drives a real test cluster of storage nodes (the `node` crate).
//! A launcher for a local cluster of node processes with its faults ([`launcher`]), a
//! token-aware open-loop load generator and benchmark running any client-side policy
//! ([`loadgen`]), and a runner for the simulator's scenarios on real processes
//! ([`experiment`]). The `replica-lb` binary's `cluster`, `load`, `bench` and `experiment`
//! commands are thin wrappers over this crate; the `replica-lb-node` binary (a node on its own)
//! is here so that its integration tests can start node processes. [`cassandra`] starts and
//! faults a real Apache Cassandra cluster the same way; [`engine`] is the one seam between
//! the two engines. What several commands share lives here
//! too: loading a scenario file ([`scenario_file`]), writing a run directory ([`run_dir`]),
//! a tournament's entrants ([`tournament`]), and the memory this machine has free
//! ([`host`]).

#![warn(missing_docs)]

pub mod cassandra;
pub mod engine;
pub mod experiment;
pub mod host;
pub mod launcher;
pub mod loadgen;
pub mod run_dir;
pub mod scenario_file;
pub mod tournament;
