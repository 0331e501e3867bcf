//! The tournament's leaderboard: every policy in every scenario, each tail figure divided by
//! the best one in its scenario, and the geometric mean of those ratios over the scenarios a
//! policy ran in. Written as JSON (the contract), Markdown and a self-contained HTML table
//! coloured by ratio to the best, readable at 1,400 px with fourteen scenarios.
//!
//! Three rules keep the ranking honest:
//! - a failure is a request too: the figures are the run's own over every request
//!   (`latency_all_ms` of summary.json: a timed-out or failed request counted at the read
//!   time-out, [`replica_lb_metrics::LatencyHistogram::with_failures`]), the same numbers `sim run` gives;
//! - at the time-out the ranking goes on: where more than 1% (0.1%) of a policy's requests
//!   failed, its p99 (p99.9) is the time-out itself, and the figure it is ranked by
//!   ([`rank_ms`]) is the time-out times its failed share over 1% (0.1%): of policies whose
//!   p99 all equal the time-out, the one that failed fewer requests ranks better;
//! - a policy that reads ground truth (the oracle) is listed, but never counts as the best:
//!   ratios are to the best policy a real system could run.

use crate::input::esc;
use replica_lb_metrics::latency::round_us;
use replica_lb_metrics::RunSummary;
use serde::Serialize;
use std::fmt::Write as _;

/// One policy's result in one scenario, as the leaderboard takes it.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The policy item (`c3`, `random/hwlb`, ...).
    pub policy: String,
    /// Mean latency of every request (failures at the time-out), ms.
    pub mean_ms: f64,
    /// p99 of every request (failures at the time-out), ms.
    pub p99_ms: f64,
    /// p99.9 of every request (failures at the time-out), ms.
    pub p999_ms: f64,
    /// Requests that timed out.
    pub timeouts: u64,
    /// Requests that failed otherwise.
    pub errors: u64,
    /// Of the requests that ended, the share that timed out or failed.
    pub failed_fraction: f64,
    /// The read time-out, ms.
    pub timeout_ms: f64,
    /// Whether the policy reads ground truth (never the best).
    pub oracle: bool,
}

impl Entry {
    /// The entry of a run: its all-requests figures; `timeout_ms` is the scenario's read
    /// time-out, `oracle` whether the policy reads ground truth.
    pub fn from_summary(s: &RunSummary, timeout_ms: f64, oracle: bool) -> Entry {
        let failed = s.timeouts + s.errors;
        Entry {
            policy: s.policy.clone(),
            mean_ms: s.latency_all_ms.mean,
            p99_ms: s.latency_all_ms.p99,
            p999_ms: s.latency_all_ms.p999,
            timeouts: s.timeouts,
            errors: s.errors,
            failed_fraction: failed as f64 / (s.completed + failed).max(1) as f64,
            timeout_ms,
            oracle,
        }
    }
}

/// The figure a scenario ranks the `q` quantile by: the quantile itself (`quantile_ms`, over
/// every request), except where more than `1 - q` of the requests failed, which puts the
/// quantile at the time-out: there it is the time-out times the failed share over `1 - q`, so
/// that among policies at the time-out the one with fewer failures ranks better (2% failed at
/// p99: twice the time-out).
pub fn rank_ms(q: f64, quantile_ms: f64, failed_fraction: f64, timeout_ms: f64) -> f64 {
    // The share past the quantile, exact in decimal (1 - 0.99 is not 0.01 in binary).
    let tail = ((1.0 - q) * 1e6).round() / 1e6;
    if failed_fraction > tail {
        round_us(quantile_ms.max(timeout_ms * failed_fraction / tail))
    } else {
        quantile_ms
    }
}

/// One row of a scenario's table.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ResultRow {
    /// The policy item.
    pub policy: String,
    /// Mean latency of every request (failures at the time-out), ms.
    pub mean_ms: f64,
    /// p99 of every request (failures at the time-out), ms.
    pub p99_ms: f64,
    /// p99.9 of every request (failures at the time-out), ms.
    pub p999_ms: f64,
    /// Requests that timed out.
    pub timeouts: u64,
    /// Requests that failed otherwise.
    pub errors: u64,
    /// Of the requests that ended, the share that timed out or failed.
    pub failed_fraction: f64,
    /// The figure the p99 is ranked by ([`rank_ms`]): `p99_ms`, or past 1% failed the
    /// time-out times the failed share over 1%.
    pub p99_rank_ms: f64,
    /// The figure the p99.9 is ranked by: `p999_ms`, or past 0.1% failed the time-out times
    /// the failed share over 0.1%.
    pub p999_rank_ms: f64,
    /// `p99_rank_ms` over the best non-oracle one of the scenario.
    pub p99_ratio_to_best: f64,
    /// `p999_rank_ms` over the best non-oracle one of the scenario.
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
        let rank = |q: f64, e: &Entry| {
            let quantile = if q == 0.99 { e.p99_ms } else { e.p999_ms };
            rank_ms(q, quantile, e.failed_fraction, e.timeout_ms)
        };
        for (name, entries) in input {
            let (b99, b999) = (best(entries, |e| rank(0.99, e)), best(entries, |e| rank(0.999, e)));
            let mut results = Vec::with_capacity(entries.len());
            for e in entries {
                let (p99_rank_ms, p999_rank_ms) = (rank(0.99, e), rank(0.999, e));
                let row = ResultRow {
                    policy: e.policy.clone(),
                    mean_ms: e.mean_ms,
                    p99_ms: e.p99_ms,
                    p999_ms: e.p999_ms,
                    timeouts: e.timeouts,
                    errors: e.errors,
                    failed_fraction: e.failed_fraction,
                    p99_rank_ms,
                    p999_rank_ms,
                    p99_ratio_to_best: p99_rank_ms.max(1e-9) / b99,
                    p999_ratio_to_best: p999_rank_ms.max(1e-9) / b999,
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
    /// one column per scenario; a cell is `ms (xratio)`, `*` marking a figure at the time-out
    /// (ranked by its failed share).
    pub fn to_markdown(&self) -> String {
        let mut m = format!("# Leaderboard\n\n{RULES} `-`: the policy does not apply to the scenario.\n");
        for f in Self::figures() {
            let _ = write!(m, "\n## {}\n\n| policy | overall |", f.title);
            for s in &self.scenarios {
                let _ = write!(m, " {} |", s.scenario);
            }
            m.push_str("\n|---|---:|");
            m.push_str(&"---:|".repeat(self.scenarios.len()));
            m.push('\n');
            for o in &self.overall {
                let mark = if o.oracle { " (oracle)" } else { "" };
                let _ = write!(m, "| {}{mark} | x{:.2} |", o.policy, (f.overall)(o));
                for s in &self.scenarios {
                    match self.row(s, &o.policy) {
                        Some(r) => {
                            let (ms, ratio) = ((f.ms)(r), (f.ratio)(r));
                            let star = if (f.at_time_out)(r) { "*" } else { "" };
                            let _ = write!(m, " {ms:.2}{star} (x{ratio:.2}) |");
                        }
                        None => m.push_str(" - |"),
                    }
                }
                m.push('\n');
            }
        }
        m
    }

    /// The tail figures the tables show.
    fn figures() -> [Figure; 2] {
        [
            Figure {
                title: "p99",
                tail: "1%",
                ms: |r| r.p99_ms,
                ratio: |r| r.p99_ratio_to_best,
                at_time_out: |r| r.p99_rank_ms > r.p99_ms,
                overall: |o| o.p99_geomean_ratio,
            },
            Figure {
                title: "p99.9",
                tail: "0.1%",
                ms: |r| r.p999_ms,
                ratio: |r| r.p999_ratio_to_best,
                at_time_out: |r| r.p999_rank_ms > r.p999_ms,
                overall: |o| o.p999_geomean_ratio,
            },
        ]
    }

    /// `leaderboard.html`: the Markdown's tables, each cell coloured from green (the best) to
    /// red (4x the best or worse), self-contained (inline CSS, no scripts), fitting a 1,400 px
    /// window with fourteen scenarios (fixed layout, scenario names wrapped at their hyphens).
    pub fn to_html(&self, title: &str) -> String {
        let mut h = String::new();
        let _ = write!(
            h,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title>\n<style>{CSS}</style></head><body>\n<h1>{t}</h1>\n<p>{rules} Rows ordered by the overall geometric mean of the p99 ratios. A dash: the policy does not apply to that scenario.</p>\n",
            t = esc(title),
            rules = code_spans(&esc(RULES))
        );
        for f in Self::figures() {
            let _ = write!(
                h,
                "<h2>{}</h2>\n<table><colgroup><col class=\"policy\"><col class=\"overall\"></colgroup><tr><th>policy</th><th>overall</th>",
                f.title
            );
            for s in &self.scenarios {
                // Long names wrap at their hyphens, so that every column fits.
                let _ = write!(h, "<th>{}</th>", esc(&s.scenario).replace('-', "-<wbr>"));
            }
            h.push_str("</tr>\n");
            for o in &self.overall {
                let mark = if o.oracle { " <span class=\"oracle\">oracle</span>" } else { "" };
                let g = (f.overall)(o);
                let _ = write!(
                    h,
                    "<tr><td class=\"p\">{}{mark}</td><td style=\"background:{}\">x{g:.2}</td>",
                    esc(&o.policy),
                    ratio_colour(g)
                );
                for s in &self.scenarios {
                    match self.row(s, &o.policy) {
                        Some(r) => {
                            let (ms, ratio) = ((f.ms)(r), (f.ratio)(r));
                            let failed = if (f.at_time_out)(r) {
                                format!("<br><small class=\"failed\">{} failed</small>", percent(r.failed_fraction))
                            } else if r.timeouts + r.errors > 0 {
                                format!("<br><small>{} failed</small>", r.timeouts + r.errors)
                            } else {
                                String::new()
                            };
                            let _ = write!(
                                h,
                                "<td style=\"background:{}\">{} ms<br><small>x{ratio:.2}</small>{failed}</td>",
                                ratio_colour(ratio),
                                short_ms(ms)
                            );
                        }
                        None => h.push_str("<td class=\"na\">-</td>"),
                    }
                }
                h.push_str("</tr>\n");
            }
            let _ = writeln!(
                h,
                "</table>\n<p class=\"key\">A cell at the read time-out (more than {} of the requests failed) shows the share that failed: it is ranked by the time-out times that share over {}.</p>",
                f.tail, f.tail
            );
        }
        h.push_str("</body></html>\n");
        h
    }
}

/// A tail figure of the tables: its title, the share of failures that puts it at the
/// time-out, and how to read it from a row and from a policy's overall.
struct Figure {
    title: &'static str,
    tail: &'static str,
    ms: fn(&ResultRow) -> f64,
    ratio: fn(&ResultRow) -> f64,
    at_time_out: fn(&ResultRow) -> bool,
    overall: fn(&Overall) -> f64,
}

/// The ranking's rules, as the tables state them.
const RULES: &str = "Each cell: the figure in ms over every request (a timed-out or failed request counts at the read time-out: the run's own `latency_all_ms`) and its ratio to the best non-oracle policy of the scenario. Where more than 1% (for p99; 0.1% for p99.9) of a policy's requests failed, the figure is the time-out itself (marked `*` in Markdown) and the policy is ranked by the time-out times its failed share over 1% (0.1%): of several policies at the time-out, fewer failures rank better.";

/// Markdown's `code` spans as HTML `<code>` elements.
fn code_spans(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    for (i, part) in text.split('`').enumerate() {
        if i % 2 == 1 {
            let _ = write!(out, "<code>{part}</code>");
        } else {
            out.push_str(part);
        }
    }
    out
}

/// Milliseconds in three significant figures at most (`5000`, `84.7`, `1.17`).
fn short_ms(ms: f64) -> String {
    if ms >= 100.0 {
        format!("{ms:.0}")
    } else if ms >= 10.0 {
        format!("{ms:.1}")
    } else {
        format!("{ms:.2}")
    }
}

/// A share as a percentage with two significant decimals (`1.52%`, `0.13%`).
fn percent(share: f64) -> String {
    let p = share * 100.0;
    if p >= 10.0 {
        format!("{p:.1}%")
    } else {
        format!("{p:.2}%")
    }
}

/// A cell colour for a ratio to the best: hue 120 (green) at 1 down to 0 (red) at 4 and beyond,
/// on a log scale; below 1 (the oracle) stays green.
fn ratio_colour(ratio: f64) -> String {
    let x = (ratio.max(1.0).ln() / 4f64.ln()).clamp(0.0, 1.0);
    format!("hsl({:.0},70%,85%)", 120.0 * (1.0 - x))
}

const CSS: &str = "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;max-width:1352px}table{border-collapse:collapse;margin-bottom:0.4em;width:100%;table-layout:fixed}\
col.policy{width:11em}col.overall{width:4.2em}th,td{border:1px solid #ccc;padding:3px 4px;text-align:right;font-variant-numeric:tabular-nums;font-size:12px;overflow-wrap:anywhere}\
th{background:#f4f4f4;font-weight:600;vertical-align:bottom}th:first-child{text-align:left}td.p{text-align:left;font-weight:600}td.na{color:#999;text-align:center}.oracle{font-weight:400;font-size:.8em;color:#666}small{color:#444}small.failed{color:#900}.key{font-size:12px;color:#444;margin-bottom:2em}";

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
            errors: 0,
            failed_fraction: 0.0,
            timeout_ms: 5000.0,
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
            "errors",
            "failed_fraction",
            "p99_rank_ms",
            "p999_rank_ms",
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

    /// Three policies whose p99 is the time-out are told apart by their failures: 1.5% ranks
    /// 1.5x the time-out, 3% 3x; under 1% failed, the p99 itself ranks.
    #[test]
    fn at_the_time_out_fewer_failures_rank_better() {
        let at = |policy: &str, failed_fraction: f64, p99: f64| Entry {
            failed_fraction,
            timeouts: (failed_fraction * 1e5) as u64,
            ..entry(policy, p99, 5000.0, false)
        };
        let board = Leaderboard::build(&[(
            "s".into(),
            vec![at("few", 0.015, 5000.0), at("many", 0.03, 5000.0), at("under", 0.005, 80.0)],
        )]);
        let r = &board.scenarios[0].results;
        assert_eq!((r[0].p99_rank_ms, r[1].p99_rank_ms, r[2].p99_rank_ms), (7500.0, 15000.0, 80.0));
        assert_eq!((r[0].p99_ratio_to_best, r[1].p99_ratio_to_best), (7500.0 / 80.0, 15000.0 / 80.0));
        let names: Vec<&str> = board.overall.iter().map(|o| o.policy.as_str()).collect();
        assert_eq!(names, ["under", "few", "many"]);
        // p99.9: every one is past 0.1%, so their failures alone order them.
        assert_eq!(r[2].p999_rank_ms, 5000.0 * 5.0);
        let md = board.to_markdown();
        assert!(md.contains("| few | x93.75 | 5000.00* (x93.75) |"), "{md}");
        let html = board.to_html("t");
        assert!(html.contains("1.50% failed") && html.contains("<code>latency_all_ms</code>") && !html.contains('`'));
        // At exactly the boundary the quantile ranks as it is.
        assert_eq!(rank_ms(0.99, 30.0, 0.01, 5000.0), 30.0);
    }
}
