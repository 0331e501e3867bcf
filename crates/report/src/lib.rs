//! replica-lb's report: one self-contained HTML file (inline SVG, inline CSS, no scripts, no
//! network) comparing runs, with summary tables on top. Then the policies compared on shared
//! axes (p99 and p50 latency over time, time-outs per second: one line per policy), and each
//! node measure that has data (reads served, cache hit ratio, misses, local, remote and replica
//! reads per second: the seeds' graphs) as one small chart per policy, wrapped across the page.
//! The tournament's leaderboard is rendered here too ([`leaderboard`]), and a run directory
//! written ([`run_dir`]: `summary.json`, `timeseries.csv`, the report).

#![warn(missing_docs)]

pub mod chart;
pub mod html;
mod input;
pub mod leaderboard;
mod panels;
pub mod run_dir;

pub use html::{chart_files, render, ReportInput};
pub use leaderboard::{Entry, Leaderboard};
