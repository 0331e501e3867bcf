//! Experiments on the real cluster: the simulator's scenarios run on real processes.
//!
//! A [`RealPlan`] is what a scenario asks of a real run (the CLI builds it from a scenario
//! file); [`run_real`] runs it for one policy:
//!
//! 1. start the cluster on loopback with the plan's node settings and the run's policy;
//! 2. write every key (CL=ALL);
//! 3. warm the caches: the load at the warm-up consistency level (ALL) for `warmup_s`, with the
//!    emulated slow disk switched off meanwhile (so filling the caches takes seconds and never
//!    overloads a disk; nothing of it is measured), then switched on again;
//! 4. the measured run: the open-loop load for `duration_s` while a timeline thread injects the
//!    faults at their times (restart = kill -9, then a new process on the same data with an
//!    empty cache; pause = SIGSTOP/SIGCONT; delay and slow disk through `Internode/SetFaults`)
//!    and a sampler reads every node's counters (Stats) once a second;
//! 5. stop the cluster and turn the samples and every request's latency into the same
//!    [`replica_lb_metrics::RunMetrics`] the simulator produces (per node per second counters, cluster
//!    latency per second and per phase, `warmup_s`).
//!
//! While a node is down the load generator does not pick it as coordinator (as a driver that
//! knows the host is down), from the kill until the new process answers and sees every node.

#![warn(missing_docs)]

pub mod cassandra;
pub mod gate;
mod interrupt;
mod node_run;
pub mod plan;
pub mod rolling;
mod sampler;
pub mod series;
pub mod tables;

pub use interrupt::{defer_to_interrupt, forget_cassandra_dir, watch_cassandra_dir};
pub use node_run::{run_real, RunOptions};
pub use plan::{warmup_seed, FaultAction, FaultStep, PolicyRun, RealPlan, RealRoll};
