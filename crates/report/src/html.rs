//! The HTML page: header, summary tables, then the charts ([`crate::panels`]): the policies
//! compared on shared axes, then each node measure with data as small multiples.

use metrics::RunMetrics;
use std::fmt::Write as _;

/// What the report shows.
pub struct ReportInput<'a> {
    /// Scenario name.
    pub scenario: &'a str,
    /// Scenario description (free text).
    pub description: &'a str,
    /// The seed.
    pub seed: u64,
    /// The runs, in the order drawn.
    pub runs: &'a [&'a RunMetrics],
}

/// `s` escaped for HTML text.
pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
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
    network_table(&mut h, input);
    phase_table(&mut h, input);
    crate::panels::compared(&mut h, input);
    crate::panels::per_node(&mut h, input);
    h.push_str("</body></html>\n");
    h
}

/// The report's charts as SVG files of their own, with the names to write them under:
/// `compared-<measure>.svg` for the policies compared, `<measure>-<policy>.svg` for each
/// policy's per-node chart (`sim run --charts`).
pub fn chart_files(input: &ReportInput<'_>) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = crate::panels::compared_charts(input)
        .iter()
        .map(|c| (format!("compared-{}.svg", crate::panels::slug(&c.title)), c.standalone_svg()))
        .collect();
    for (title, charts) in crate::panels::per_node_charts(input) {
        for mut c in charts {
            let stem = format!("{}-{}", crate::panels::slug(title), crate::panels::label_slug(&c.title));
            // On its own the chart names its measure too ("NIC utilisation: random").
            c.title = format!("{}: {}", crate::panels::short_title(title), c.title);
            // Two runs under one label (the same policy twice) get -2, -3, ...
            let mut name = format!("{stem}.svg");
            let mut n = 1;
            while files.iter().any(|(f, _)| *f == name) {
                n += 1;
                name = format!("{stem}-{n}.svg");
            }
            files.push((name, c.standalone_svg()));
        }
    }
    files
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

/// Multi-key requests and bytes on the network, when some run has NICs modelled or multi-key
/// requests.
fn network_table(h: &mut String, input: &ReportInput<'_>) {
    let shown = input
        .runs
        .iter()
        .any(|r| r.summary.multi.is_some() || r.series.nic_bits_per_s.is_some());
    if !shown {
        return;
    }
    h.push_str("<h2>Network and multi-key requests</h2>\n<table><tr><th>policy</th><th>multi requests</th><th>multi completed</th><th>multi p50 ms</th><th>multi p99 ms</th><th>multi p99.9 ms</th><th>client GB</th><th>internode GB</th><th>busiest NIC second</th></tr>\n");
    for run in input.runs {
        let s = &run.summary;
        let _ = write!(h, "<tr><td>{}</td>", esc(&s.policy));
        match &s.multi {
            Some(m) => {
                let l = &m.latency_ms;
                let _ = write!(
                    h,
                    "<td>{}</td><td>{}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td>",
                    m.requests, m.completed, l.p50, l.p99, l.p999
                );
            }
            None => h.push_str("<td>-</td><td>-</td><td>-</td><td>-</td><td>-</td>"),
        }
        match &s.network {
            Some(n) => {
                let _ = writeln!(
                    h,
                    "<td>{:.2}</td><td>{:.2}</td><td>{:.0}%</td></tr>",
                    n.client_bytes as f64 / 1e9,
                    n.internode_bytes as f64 / 1e9,
                    n.nic_peak_utilization * 100.0
                );
            }
            None => h.push_str("<td>-</td><td>-</td><td>-</td></tr>\n"),
        }
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

const CSS: &str = "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}h1{margin-bottom:0.2em}.desc{max-width:70em;color:#444}\
table{border-collapse:collapse;margin:0.5em 0 1em}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right;font-size:13px}\
th{background:#f3f3f3}td:first-child{text-align:left}.grid td,.grid th{border:none;padding:2px;text-align:center}\
.multiples{display:flex;flex-wrap:wrap;gap:6px 10px;align-items:flex-start}h3{font-size:14px;margin:1em 0 0.3em}.chart .title{font-size:11px;fill:#333}.chart .tick{font-size:9px;fill:#666}.chart .grid{stroke:#eee}\
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
        // Compared: p99 and p50 (no time-outs); per node, for each of the 2 runs: reads served,
        // hit ratio and local reads (no misses, remote or replica reads: no panels).
        assert_eq!(page.matches("<svg").count(), 2 + 2 * 3);
        assert!(!page.contains("time-outs/s") && !page.contains("cache misses/s") && !page.contains("remote reads/s"));
        assert!(page.contains("d &lt;x&gt;") && page.contains("(restarted)"));
        // The same charts as files of their own, each under a name of its own.
        let files = chart_files(&ReportInput {
            scenario: "s",
            description: "d",
            seed: 1,
            runs: &[&m, &m],
        });
        let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(files.len(), 2 + 2 * 3, "{names:?}");
        assert!(
            names.contains(&"compared-p99-read-latency.svg") && names.contains(&"cache-hit-ratio-naive-2.svg"),
            "{names:?}"
        );
        let unique: std::collections::BTreeSet<&str> = names.iter().copied().collect();
        assert_eq!(unique.len(), names.len());
        let hit_ratio = &files.iter().find(|(n, _)| n == "cache-hit-ratio-naive.svg").unwrap().1;
        assert!(hit_ratio.contains(">cache hit ratio: naive</text>"), "{hit_ratio}");
    }

    #[test]
    fn time_outs_draw_their_panel() {
        let mut r = Recorder::new(RecorderConfig {
            nodes: 1,
            duration_s: 2,
            phases: vec![],
        })
        .unwrap();
        r.completed(10, 1_000_000);
        r.timeout(1_500_000_000);
        let m = r.finish("c3".into(), None, 0, 0.0);
        let page = render(&ReportInput {
            scenario: "s",
            description: "",
            seed: 1,
            runs: &[&m],
        });
        assert!(page.contains("time-outs/s"));
    }

    /// A 300-node cluster is drawn by zone: each chart has a line per zone and the worst few
    /// nodes (and the restarted one), not 300 lines.
    #[test]
    fn a_large_cluster_is_drawn_by_zone() {
        let mut r = Recorder::new(RecorderConfig {
            nodes: 300,
            duration_s: 3,
            phases: vec![],
        })
        .unwrap();
        r.set_zones((0..300).map(|n| (n % 3) as u16).collect(), vec!["a".into(), "b".into(), "c".into()]);
        for n in 0..300 {
            for k in 0..=(n % 7) {
                r.read(k as u64 * 1_000_000, n, ReadKind::Replica, CacheOutcome::Hit);
            }
        }
        r.read(0, 5, ReadKind::Replica, CacheOutcome::Miss);
        r.completed(10, 1_000_000);
        let m = r.finish("naive".into(), Some((7, 1.0)), 0, 0.0);
        let page = render(&ReportInput {
            scenario: "s",
            description: "",
            seed: 1,
            runs: &[&m],
        });
        assert!(page.contains("zone a: mean of 100 nodes") && page.contains("zone c (mean of 100 nodes)"));
        // Per-node panels with data: reads served, hit ratio, misses, replica reads: each
        // draws 3 zones, 3 worst nodes and the restarted node 7 when it is not among them.
        let node_lines = page.matches("<title>node ").count();
        assert!((4 * 3..=4 * 4).contains(&node_lines), "{node_lines} node lines");
        assert_eq!(page.matches("<title>zone ").count(), 4 * 3);
        // Node 5's one miss makes it the worst on the hit ratio.
        assert!(page.contains("<title>node 5 (zone c)</title>"), "node 5 missing");
        assert!(page.contains("node 7 (zone b, restarted)"));
    }
}
