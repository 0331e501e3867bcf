//! What a report is made from ([`ReportInput`]) and the one HTML escape, shared by the page
//! (`html`) and its charts (`panels`).

use replica_lb_metrics::{Asked, RunMetrics};

/// What the report shows.
pub struct ReportInput<'a> {
    /// Scenario name.
    pub scenario: &'a str,
    /// Scenario description (free text; one paragraph per line).
    pub description: &'a str,
    /// The seed.
    pub seed: u64,
    /// What the run was asked (version, policies, `--set` overrides).
    pub asked: &'a Asked,
    /// The read time-out, ms: where a failed request counts in the all-requests figures.
    pub timeout_ms: f64,
    /// The runs, in the order drawn.
    pub runs: &'a [&'a RunMetrics],
}

/// `s` escaped for HTML text.
pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}
