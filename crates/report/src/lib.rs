//! replica-lb's report: one self-contained HTML file (inline SVG, inline CSS, no scripts, no
//! network) comparing runs side by side — one column per policy, every chart of a row on the
//! same axes — with a summary table on top.
//!
//! Charts per node over time: cache hit ratio, cache misses/s, local reads/s, remote reads/s,
//! replica reads/s; and the cluster's p50/p99 latency over time. These are the seeds' graphs.

#![warn(missing_docs)]

pub mod chart;
pub mod html;
pub mod leaderboard;

pub use html::{render, ReportInput};
pub use leaderboard::{Entry, Leaderboard};
