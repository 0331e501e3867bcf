//! The tournament's leaderboard: every policy in every scenario, each tail figure divided by
//! the best one in its scenario, and the geometric mean of those ratios over the scenarios a
//! policy ran in. Written as JSON (the contract), Markdown and a self-contained HTML table
//! coloured by ratio to the best.
//!
//! Two rules keep the ranking honest:
//! - a time-out is a request too: when more than 1% (0.1%) of a policy's requests time out,
//!   its p99 (p99.9) is the read time-out itself, however fast the requests that completed;
//! - a policy that reads ground truth (the oracle) is listed, but never counts as the best:
//!   ratios are to the best policy a real system could run.

use crate::html::esc;
use metrics::RunSummary;
use serde::Serialize;
use std::fmt::Write as _;

/// One policy's result in one scenario, as the leaderboard takes it.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The policy item (`c3`, `random/hwlb`, ...).
    pub policy: String,
    /// Mean latency of completed requests, ms.
    pub mean_ms: f64,
    /// p99 over all requests (time-outs at the time-out), ms.
    pub p99_ms: f64,
    /// p99.9 over all requests (time-outs at the time-out), ms.
    pub p999_ms: f64,
    /// Requests that timed out.
    pub timeouts: u64,
    /// Whether the policy reads ground truth (never the best).
    pub oracle: bool,
}

impl Entry {
    /// The entry of a run: `timeout_ms` is the scenario's read time-out, `oracle` whether the
    /// policy reads ground truth.
    pub fn from_summary(s: &RunSummary, timeout_ms: f64, oracle: bool) -> Entry {
        let tail = |q: f64, completed_ms: f64| tail_ms(q, completed_ms, s.completed, s.timeouts, timeout_ms);
        Entry {
            policy: s.policy.clone(),
            mean_ms: s.latency_ms.mean,
            p99_ms: tail(0.99, s.latency_ms.p99),
            p999_ms: tail(0.999, s.latency_ms.p999),
            timeouts: s.timeouts,
            oracle,
        }
    }
}

/// The `q` quantile over all ended requests, given the completed requests' quantile: time-outs
/// are slower than every completed request, so past a share of `1 - q` they own it.
fn tail_ms(q: f64, completed_ms: f64, completed: u64, timeouts: u64, timeout_ms: f64) -> f64 {
    let timed_out = timeouts as f64 / (completed + timeouts).max(1) as f64;
    if timed_out > 1.0 - q {
        timeout_ms
    } else {
        completed_ms
    }
}

/// One row of a scenario's table.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ResultRow {
    /// The policy item.
    pub policy: String,
    /// Mean latency of completed requests, ms.
    pub mean_ms: f64,
    /// p99, ms (time-outs counted).
    pub p99_ms: f64,
    /// p99.9, ms (time-outs counted).
    pub p999_ms: f64,
    /// Requests that timed out.
    pub timeouts: u64,
    /// `p99_ms` over the best non-oracle p99 of the scenario.
    pub p99_ratio_to_best: f64,
    /// `p999_ms` over the best non-oracle p99.9 of the scenario.
    pub p999_ratio_to_best: f64,
}

/// One scenario's results.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ScenarioBoard {
    /// Scenario name.
    pub scenario: String,
    /// One row per policy, in the order given.
    pub results: Vec<ResultRow>,
}

/// A policy over every scenario it ran in.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Overall {
    /// The policy item.
    pub policy: String,
    /// Geometric mean of its p99 ratios to the best.
    pub p99_geomean_ratio: f64,
    /// Geometric mean of its p99.9 ratios to the best.
    pub p999_geomean_ratio: f64,
    /// Scenarios it ran in (a policy for one side only skips the others).
    pub scenarios: usize,
    /// Whether it reads ground truth (listed, never the best).
    pub oracle: bool,
}

/// `leaderboard.json`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Leaderboard {
    /// Per scenario, in the order given.
    pub scenarios: Vec<ScenarioBoard>,
    /// Per policy, best p99 geometric mean first (ties: p99.9, then name).
    pub overall: Vec<Overall>,
}

/// The best (lowest) value among non-oracle entries; all entries when every one is an oracle.
fn best(entries: &[Entry], figure: impl Fn(&Entry) -> f64) -> f64 {
    let pick = |oracle_ok: bool| {
        entries
            .iter()
            .filter(|e| oracle_ok || !e.oracle)
            .map(&figure)
            .fold(f64::INFINITY, f64::min)
    };
    let b = pick(false);
    let b = if b.is_finite() { b } else { pick(true) };
    // A figure of 0 ms (nothing measured) must not divide by zero.
    b.max(1e-9)
}

impl Leaderboard {
    /// Builds the board from each scenario's entries (scenario name, entries).
    pub fn build(input: &[(String, Vec<Entry>)]) -> Leaderboard {
        let mut scenarios = Vec::with_capacity(input.len());
        // policy -> (log-sum p99, log-sum p99.9, count, oracle), in first-seen order.
        let mut sums: Vec<(String, f64, f64, usize, bool)> = Vec::new();
        for (name, entries) in input {
            let (b99, b999) = (best(entries, |e| e.p99_ms), best(entries, |e| e.p999_ms));
            let mut results = Vec::with_capacity(entries.len());
            for e in entries {
                let row = ResultRow {
                    policy: e.policy.clone(),
                    mean_ms: e.mean_ms,
                    p99_ms: e.p99_ms,
                    p999_ms: e.p999_ms,
                    timeouts: e.timeouts,
                    p99_ratio_to_best: e.p99_ms.max(1e-9) / b99,
                    p999_ratio_to_best: e.p999_ms.max(1e-9) / b999,
                };
                let i = match sums.iter().position(|s| s.0 == e.policy) {
                    Some(i) => i,
                    None => {
                        sums.push((e.policy.clone(), 0.0, 0.0, 0, e.oracle));
                        sums.len() - 1
                    }
                };
                sums[i].1 += row.p99_ratio_to_best.ln();
                sums[i].2 += row.p999_ratio_to_best.ln();
                sums[i].3 += 1;
                results.push(row);
            }
            scenarios.push(ScenarioBoard {
                scenario: name.clone(),
                results,
            });
        }
        let mut overall: Vec<Overall> = sums
            .into_iter()
            .map(|(policy, l99, l999, n, oracle)| Overall {
                policy,
                p99_geomean_ratio: (l99 / n as f64).exp(),
                p999_geomean_ratio: (l999 / n as f64).exp(),
                scenarios: n,
                oracle,
            })
            .collect();
        overall.sort_by(|a, b| {
            a.p99_geomean_ratio
                .total_cmp(&b.p99_geomean_ratio)
                .then(a.p999_geomean_ratio.total_cmp(&b.p999_geomean_ratio))
                .then(a.policy.cmp(&b.policy))
        });
        Leaderboard { scenarios, overall }
    }

    /// `leaderboard.json`, pretty-printed.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("the leaderboard is plain data") + "\n"
    }

    /// The row of `policy` in scenario `s`, if it ran there.
    fn row<'a>(&self, s: &'a ScenarioBoard, policy: &str) -> Option<&'a ResultRow> {
        s.results.iter().find(|r| r.policy == policy)
    }

    /// `leaderboard.md`: one table per tail figure, one row per policy (best overall first),
    /// one column per scenario; a cell is `ms (xratio)`.
    pub fn to_markdown(&self) -> String {
        let mut m = String::from("# Leaderboard\n\nEach cell: the figure in ms and its ratio to the best non-oracle policy of the scenario (time-outs count as requests at the read time-out). `-`: the policy does not apply to the scenario.\n");
        for (title, pick, overall) in Self::figures() {
            let _ = write!(m, "\n## {title}\n\n| policy | overall |");
            for s in &self.scenarios {
                let _ = write!(m, " {} |", s.scenario);
            }
            m.push_str("\n|---|---:|");
            m.push_str(&"---:|".repeat(self.scenarios.len()));
            m.push('\n');
            for o in &self.overall {
                let mark = if o.oracle { " (oracle)" } else { "" };
                let _ = write!(m, "| {}{mark} | x{:.2} |", o.policy, overall(o));
                for s in &self.scenarios {
                    match self.row(s, &o.policy) {
                        Some(r) => {
                            let (ms, ratio) = pick(r);
                            let _ = write!(m, " {ms:.2} (x{ratio:.2}) |");
                        }
                        None => m.push_str(" - |"),
                    }
                }
                m.push('\n');
            }
        }
        m
    }

    /// The tail figures the tables show: title, (ms, ratio) of a row, overall geomean.
    #[allow(clippy::type_complexity)]
    fn figures() -> [(&'static str, fn(&ResultRow) -> (f64, f64), fn(&Overall) -> f64); 2] {
        [
            ("p99", |r| (r.p99_ms, r.p99_ratio_to_best), |o| o.p99_geomean_ratio),
            ("p99.9", |r| (r.p999_ms, r.p999_ratio_to_best), |o| o.p999_geomean_ratio),
        ]
    }

    /// `leaderboard.html`: the Markdown's tables, each cell coloured from green (the best) to
    /// red (4x the best or worse), self-contained (inline CSS, no scripts).
    pub fn to_html(&self, title: &str) -> String {
        let mut h = String::new();
        let _ = write!(
            h,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title>\n<style>{CSS}</style></head><body>\n<h1>{t}</h1>\n<p>Each cell: the figure in ms and its ratio to the best non-oracle policy of the scenario; time-outs count as requests at the read time-out; rows ordered by the overall geometric mean of the p99 ratios. A dash: the policy does not apply to that scenario.</p>\n",
            t = esc(title)
        );
        for (name, pick, overall) in Self::figures() {
            let _ = write!(h, "<h2>{name}</h2>\n<table><tr><th>policy</th><th>overall</th>");
            for s in &self.scenarios {
                let _ = write!(h, "<th>{}</th>", esc(&s.scenario));
            }
            h.push_str("</tr>\n");
            for o in &self.overall {
                let mark = if o.oracle { " <span class=\"oracle\">oracle</span>" } else { "" };
                let g = overall(o);
                let _ = write!(
                    h,
                    "<tr><td class=\"p\">{}{mark}</td><td style=\"background:{}\">x{g:.2}</td>",
                    esc(&o.policy),
                    ratio_colour(g)
                );
                for s in &self.scenarios {
                    match self.row(s, &o.policy) {
                        Some(r) => {
                            let (ms, ratio) = pick(r);
                            let timeouts = if r.timeouts > 0 {
                                format!("<br><small>{} time-outs</small>", r.timeouts)
                            } else {
                                String::new()
                            };
                            let _ = write!(
                                h,
                                "<td style=\"background:{}\">{ms:.2} ms<br><small>x{ratio:.2}</small>{timeouts}</td>",
                                ratio_colour(ratio)
                            );
                        }
                        None => h.push_str("<td class=\"na\">-</td>"),
                    }
                }
                h.push_str("</tr>\n");
            }
            h.push_str("</table>\n");
        }
        h.push_str("</body></html>\n");
        h
    }
}

/// A cell colour for a ratio to the best: hue 120 (green) at 1 down to 0 (red) at 4 and beyond,
/// on a log scale; below 1 (the oracle) stays green.
fn ratio_colour(ratio: f64) -> String {
    let x = (ratio.max(1.0).ln() / 4f64.ln()).clamp(0.0, 1.0);
    format!("hsl({:.0},70%,85%)", 120.0 * (1.0 - x))
}

const CSS: &str = "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;margin-bottom:2em}th,td{border:1px solid #ccc;padding:4px 8px;text-align:right;font-variant-numeric:tabular-nums}th{background:#f4f4f4}td.p{text-align:left;font-weight:600}td.na{color:#999;text-align:center}.oracle{font-weight:400;font-size:.8em;color:#666}small{color:#444}";

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(policy: &str, p99: f64, p999: f64, oracle: bool) -> Entry {
        Entry {
            policy: policy.into(),
            mean_ms: 1.0,
            p99_ms: p99,
            p999_ms: p999,
            timeouts: 0,
            oracle,
        }
    }

    #[test]
    fn ratios_are_to_the_best_real_policy_and_geomeans_rank() {
        let board = Leaderboard::build(&[
            (
                "a".into(),
                vec![
                    entry("x", 10.0, 20.0, false),
                    entry("y", 20.0, 20.0, false),
                    entry("oracle", 5.0, 5.0, true),
                ],
            ),
            ("b".into(), vec![entry("x", 40.0, 40.0, false), entry("y", 10.0, 10.0, false)]),
        ]);
        let a = &board.scenarios[0].results;
        assert_eq!(
            (a[0].p99_ratio_to_best, a[1].p99_ratio_to_best, a[2].p99_ratio_to_best),
            (1.0, 2.0, 0.5)
        );
        // x: ratios 1 and 4 -> geomean 2; y: 2 and 1 -> sqrt 2; the oracle ran once at 0.5.
        let names: Vec<&str> = board.overall.iter().map(|o| o.policy.as_str()).collect();
        assert_eq!(names, ["oracle", "y", "x"]);
        assert!((board.overall[1].p99_geomean_ratio - 2f64.sqrt()).abs() < 1e-12);
        assert!((board.overall[2].p99_geomean_ratio - 2.0).abs() < 1e-12);
        assert_eq!((board.overall[2].scenarios, board.overall[0].oracle), (2, true));
        let json: serde_json::Value = serde_json::from_str(&board.to_json()).unwrap();
        for key in [
            "policy",
            "mean_ms",
            "p99_ms",
            "p999_ms",
            "timeouts",
            "p99_ratio_to_best",
            "p999_ratio_to_best",
        ] {
            assert!(json["scenarios"][0]["results"][0].get(key).is_some(), "{key}");
        }
        for key in ["policy", "p99_geomean_ratio", "p999_geomean_ratio"] {
            assert!(json["overall"][0].get(key).is_some(), "{key}");
        }
        let md = board.to_markdown();
        assert!(md.contains("| y | x1.41 | 20.00 (x2.00) | 10.00 (x1.00) |"), "{md}");
        assert!(md.contains("| oracle (oracle) | x0.50 | 5.00 (x0.50) | - |"), "{md}");
        let html = board.to_html("t");
        assert_eq!(html.matches("<tr><td class=\"p\">").count(), 6);
    }

    #[test]
    fn time_outs_own_the_tail_past_their_share() {
        // 0.5% time-outs: more than p99.9 can hide, fewer than p99 can.
        assert_eq!(tail_ms(0.99, 3.0, 9_950, 50, 5000.0), 3.0);
        assert_eq!(tail_ms(0.999, 8.0, 9_950, 50, 5000.0), 5000.0);
        assert_eq!(tail_ms(0.99, 3.0, 9_800, 200, 5000.0), 5000.0);
        assert_eq!(tail_ms(0.999, 8.0, 10_000, 0, 5000.0), 8.0);
        assert_eq!(tail_ms(0.999, 0.0, 0, 0, 5000.0), 0.0);
    }
}
