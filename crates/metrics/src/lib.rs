//! replica-lb's metrics: what a run (simulated or real) measured, in one format.
//!
//! - [`latency`]: HdrHistogram-backed latency histograms (3 significant digits, so p99.9 is
//!   trustworthy) with an exact mean;
//! - [`recorder`]: the per-node per-second counters and the per-second / per-phase latency a
//!   run records while it goes, compact enough for hours of simulated time;
//! - [`summary`]: `summary.json` (the contract checked from outside);
//! - [`csv`](crate::csv): `timeseries.csv`;
//! - [`tally`]: requests counted by outcome with their latency (a load generator's run and
//!   seconds);
//! - [`warmup`]: how long a restarted node takes to reach its peers' hit ratio;
//! - [`warm_gate`]: the rolling restart's gate (is the node that came back warm enough?);
//! - [`rolling`]: what a rolling restart did, node by node (summary.json's `rolling_restarts`);
//! - [`format`]: numbers as reports write them.
//!
//! It depends on nothing of ours, so the simulator and the real cluster both feed it and one
//! report compares them.

#![warn(missing_docs)]

pub mod csv;
pub mod format;
pub mod latency;
pub mod recorder;
pub mod rolling;
pub mod series;
pub mod summary;
pub mod tally;
pub mod warm_gate;
pub mod warmup;

pub use latency::{LatencyHistogram, LatencyStats, TailStats};
pub use recorder::{CacheOutcome, ReadKind, Recorder, RecorderConfig, RunMetrics};
pub use rolling::{NodeRestart, RollingRestart};
pub use series::{ClusterSecond, Marker, NodeSecond, PhaseSpec, Series};
pub use summary::{Asked, MultiSummary, NetworkSummary, NodeTotals, PhaseSummary, RealStats, RunStats, RunSummary, SimStats, Summary};
pub use tally::{Outcome, Tally};
