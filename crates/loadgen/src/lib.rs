//! The load generator: `load` writes keys 0..N-1; `bench` drives an open-loop load and
//! reports latency, through one loop ([`open_loop`]) over a transport (gRPC to the project's
//! nodes, CQL through the scylla Rust driver, CQL through the Apache Cassandra Java driver in a
//! child JVM: [`java`]).
//!
//! Open loop: request i has an intended send time fixed in advance (Poisson or evenly spaced
//! arrivals at the target rate) and its latency is measured from that time, not from when it
//! was actually sent, so a stall of the cluster or of the generator shows up in full (no
//! coordinated omission). The dispatcher is one OS thread that sleeps until each intended
//! time (thread sleeps are precise to tens of microseconds, tokio's timer only to 1 ms), owns
//! the client-side policy and the histograms, and hands each request to the tokio runtime.
//!
//! The client is token-aware: a client-side policy from the registry, in the shared policy
//! runtime ([`client_policy`]), picks each request's coordinator among the key's live
//! replicas; by default uniformly (as in the seeds).
//!
//! Multi-key requests ([`MultiOptions`], `bench --multi K`): every request reads K distinct
//! keys, either as K token-aware single reads sent at once (`parallel`) or as one `IN` request
//! (`MultiGet`) to the coordinator the policy chooses for the first key (`in`); its latency runs
//! from its intended send time to its last answer.

#![warn(missing_docs)]

mod bench;
pub mod choice;
pub mod client_policy;
pub mod cql;
mod cql_load;
pub mod cql_session;
mod grpc_load;
pub mod java;
pub mod keys;
pub mod open_loop;
pub mod options;
pub mod report;

pub use bench::{bench, bench_multi, bench_with};
pub use choice::ClientChoice;
pub use client_policy::{token_aware_random, ClientPolicy};
pub use grpc_load::{load, LoadOptions, LoadOutcome};
pub use open_loop::{Ended, Transport};
pub use options::{
    check_bench_options, client_runtime, multi_mode_name, parse_multi_mode, Arrivals, BenchHooks, BenchOptions, ClientRuntime, Completion,
    MultiOptions, Schedule, MAX_MULTI_KEYS,
};
pub use replica_lb_metrics::Outcome;
pub use replica_lb_workload::scenario::MultiMode;
