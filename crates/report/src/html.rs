//! The HTML page: header, summary tables, then the chart grid (rows = measures, columns =
//! runs, shared y axis per row).

use crate::chart::{nice_max, Chart, Line};
use metrics::{NodeSecond, RunMetrics};
use std::fmt::Write as _;

/// What the report shows.
pub struct ReportInput<'a> {
    /// Scenario name.
    pub scenario: &'a str,
    /// Scenario description (free text).
    pub description: &'a str,
    /// The seed.
    pub seed: u64,
    /// The runs, in column order.
    pub runs: &'a [&'a RunMetrics],
}

const PALETTE: [&str; 10] = [
    "#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#17becf", "#7f7f7f", "#d62728", "#bcbd22", "#e377c2", "#ff7f0e",
];
const HIGHLIGHT: &str = "#e6a700";

/// `s` escaped for HTML text.
pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

fn node_color(run: &RunMetrics, n: usize) -> (&'static str, bool) {
    if run.series.highlight == Some(n) {
        (HIGHLIGHT, true)
    } else {
        (PALETTE[n % PALETTE.len()], false)
    }
}

type Measure = fn(&NodeSecond) -> Option<f64>;

const NODE_ROWS: [(&str, Measure, bool); 5] = [
    (
        "cache hit ratio",
        |r| (r.cache_hits + r.cache_misses > 0).then(|| r.hit_ratio()),
        true,
    ),
    ("cache misses/s", |r| Some(r.cache_misses as f64), false),
    ("local reads/s (coordinator reads on itself)", |r| Some(r.local_reads as f64), false),
    ("remote reads/s (sent to other replicas)", |r| Some(r.remote_reads as f64), false),
    (
        "replica reads/s (done for other coordinators)",
        |r| Some(r.replica_reads as f64),
        false,
    ),
];

fn markers(run: &RunMetrics) -> Vec<(f64, String)> {
    run.series.markers.iter().map(|m| (m.t_s, m.label.clone())).collect()
}

fn spans(run: &RunMetrics) -> Vec<(f64, f64, String)> {
    run.series
        .phases
        .iter()
        .map(|p| (p.start_s as f64, p.end_s as f64, p.name.clone()))
        .collect()
}

fn fmt_opt(v: Option<f64>) -> String {
    v.map_or("-".to_string(), |v| format!("{v:.0}"))
}

/// The whole page.
pub fn render(input: &ReportInput<'_>) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>replica-lb: {}</title>\n<style>{}</style></head><body>\n",
        esc(input.scenario),
        CSS
    );
    let _ = write!(
        h,
        "<h1>{}</h1>\n<p class=\"desc\">{}</p>\n<p>seed {}</p>\n",
        esc(input.scenario),
        esc(input.description),
        input.seed
    );
    summary_table(&mut h, input);
    phase_table(&mut h, input);
    legend(&mut h, input);
    grid(&mut h, input);
    h.push_str("</body></html>\n");
    h
}

fn summary_table(h: &mut String, input: &ReportInput<'_>) {
    h.push_str("<h2>Summary</h2>\n<table><tr><th>policy</th><th>requests</th><th>completed</th><th>timeouts</th><th>errors</th><th>mean ms</th><th>p50 ms</th><th>p95 ms</th><th>p99 ms</th><th>p99.9 ms</th><th>warm-up s</th></tr>\n");
    for run in input.runs {
        let s = &run.summary;
        let l = &s.latency_ms;
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{}</td></tr>",
            esc(&s.policy),
            s.requests,
            s.completed,
            s.timeouts,
            s.errors,
            l.mean,
            l.p50,
            l.p95,
            l.p99,
            l.p999,
            fmt_opt(s.warmup_s)
        );
    }
    h.push_str("</table>\n");
}

fn phase_table(h: &mut String, input: &ReportInput<'_>) {
    let Some(first) = input.runs.first() else {
        return;
    };
    if first.summary.phases.is_empty() {
        return;
    }
    h.push_str("<h2>Phases</h2>\n<table><tr><th>policy</th>");
    for p in &first.summary.phases {
        let _ = write!(
            h,
            "<th colspan=\"3\">{} [{:.0}, {:.0}) s: mean / p99 / p99.9 ms</th>",
            esc(&p.name),
            p.start_s,
            p.end_s
        );
    }
    h.push_str("</tr>\n");
    for run in input.runs {
        let _ = write!(h, "<tr><td>{}</td>", esc(&run.summary.policy));
        for p in &run.summary.phases {
            let l = &p.latency_ms;
            let _ = write!(h, "<td>{:.3}</td><td>{:.3}</td><td>{:.3}</td>", l.mean, l.p99, l.p999);
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
}

fn legend(h: &mut String, input: &ReportInput<'_>) {
    let Some(first) = input.runs.first() else {
        return;
    };
    h.push_str("<h2>Over time</h2>\n<p class=\"legend\">");
    for n in 0..first.series.nodes.min(64) {
        let (c, bold) = node_color(first, n);
        let _ = write!(
            h,
            "<span style=\"color:{c}\">&#9632; node {n}{}</span> ",
            if bold { " (restarted)" } else { "" }
        );
    }
    h.push_str("&nbsp; latency: <span style=\"color:#1f77b4\">&#9632; p50</span> <span style=\"color:#d62728\">&#9632; p99</span>; dashed lines: faults; shaded: named phases.</p>\n");
}

fn grid(h: &mut String, input: &ReportInput<'_>) {
    h.push_str("<div class=\"scroll\"><table class=\"grid\"><tr>");
    for run in input.runs {
        let _ = write!(h, "<th>{}</th>", esc(&run.summary.policy));
    }
    h.push_str("</tr>\n");
    for (title, measure, ratio) in NODE_ROWS {
        let mut y_max: f64 = 0.0;
        for run in input.runs {
            for r in &run.series.node_rows {
                if let Some(v) = measure(r) {
                    y_max = y_max.max(v);
                }
            }
        }
        let y_max = if ratio { 1.0 } else { nice_max(y_max) };
        h.push_str("<tr>");
        for run in input.runs {
            let s = &run.series;
            let lines = (0..s.nodes)
                .map(|n| {
                    let (color, bold) = node_color(run, n);
                    Line {
                        label: format!("node {n}"),
                        color: color.to_string(),
                        bold,
                        values: (0..s.seconds).map(|t| measure(s.node(t, n))).collect(),
                    }
                })
                .collect();
            let chart = Chart {
                title: title.to_string(),
                x_max: s.seconds as f64,
                y_max,
                log_y: false,
                lines,
                markers: markers(run),
                spans: spans(run),
            };
            let _ = write!(h, "<td>{}</td>", chart.svg());
        }
        h.push_str("</tr>\n");
    }
    let mut y_max: f64 = 0.0;
    for run in input.runs {
        for c in &run.series.cluster {
            y_max = y_max.max(c.p99_ms);
        }
    }
    h.push_str("<tr>");
    for run in input.runs {
        let s = &run.series;
        let pick = |f: fn(&metrics::ClusterSecond) -> f64| -> Vec<Option<f64>> {
            s.cluster.iter().map(|c| (c.completed > 0).then(|| f(c))).collect()
        };
        let chart = Chart {
            title: "cluster read latency, ms (log)".into(),
            x_max: s.seconds as f64,
            y_max: nice_max(y_max),
            log_y: true,
            lines: vec![
                Line {
                    label: "p50".into(),
                    color: "#1f77b4".into(),
                    bold: false,
                    values: pick(|c| c.p50_ms),
                },
                Line {
                    label: "p99".into(),
                    color: "#d62728".into(),
                    bold: false,
                    values: pick(|c| c.p99_ms),
                },
            ],
            markers: markers(run),
            spans: spans(run),
        };
        let _ = write!(h, "<td>{}</td>", chart.svg());
    }
    h.push_str("</tr>\n</table></div>\n");
}

const CSS: &str = "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}h1{margin-bottom:0.2em}.desc{max-width:70em;color:#444}\
table{border-collapse:collapse;margin:0.5em 0 1em}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right;font-size:13px}\
th{background:#f3f3f3}td:first-child{text-align:left}.grid td,.grid th{border:none;padding:2px;text-align:center}\
.scroll{overflow-x:auto}.chart .title{font-size:11px;fill:#333}.chart .tick{font-size:9px;fill:#666}.chart .grid{stroke:#eee}\
.chart .frame{fill:none;stroke:#999}.chart .marker{stroke:#555;stroke-dasharray:3,3}.chart .span{fill:#f4f0ff}.legend span{margin-right:0.8em}";

#[cfg(test)]
mod tests {
    use super::*;
    use metrics::{CacheOutcome, ReadKind, Recorder, RecorderConfig};

    #[test]
    fn renders_a_self_contained_page() {
        let mut r = Recorder::new(RecorderConfig {
            nodes: 2,
            duration_s: 3,
            phases: vec![],
        })
        .unwrap();
        r.read(0, 0, ReadKind::Local, CacheOutcome::Hit);
        r.completed(10, 1_000_000);
        r.marker(1.0, "node 1 down");
        let m = r.finish("naive".into(), Some((1, 2.0)), 0, 0.0);
        let page = render(&ReportInput {
            scenario: "s",
            description: "d <x>",
            seed: 1,
            runs: &[&m, &m],
        });
        assert!(page.starts_with("<!DOCTYPE html>"));
        assert!(
            !page.contains("http://") || page.matches("http://").count() == page.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
        );
        assert!(!page.contains("<script"));
        assert_eq!(page.matches("<svg").count(), 2 * 6);
        assert!(page.contains("d &lt;x&gt;") && page.contains("(restarted)"));
    }
}
