//! The HTML page: header (the scenario, what the run was asked), summary tables leading with
//! the latency of every request (a failed one at the read time-out) with the completed
//! requests' beside it, then the charts ([`crate::panels`]): the policies compared on shared
//! axes, then each node measure with data as small multiples.

use crate::input::esc;
pub use crate::input::ReportInput;
use replica_lb_metrics::LatencyStats;
use std::fmt::Write as _;

fn fmt_opt(v: Option<f64>) -> String {
    v.map_or("-".to_string(), |v| format!("{v:.0}"))
}

/// The whole page.
pub fn render(input: &ReportInput<'_>) -> String {
    assert!(!input.runs.is_empty(), "a report of no run");
    assert!(
        input.timeout_ms.is_finite() && input.timeout_ms > 0.0,
        "read time-out {} ms",
        input.timeout_ms
    );
    let nodes = input.runs[0].series.nodes;
    assert!(
        input.runs.iter().all(|r| r.series.nodes == nodes),
        "the runs of one report share one cluster ({nodes} nodes in the first)"
    );
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>replica-lb: {}</title>\n<style>{}</style></head><body>\n",
        esc(input.scenario),
        format_args!("{PAGE_CSS}{}", crate::chart::CHART_CSS)
    );
    let _ = writeln!(h, "<h1>{}</h1>", esc(input.scenario));
    for para in input.description.lines().filter(|l| !l.trim().is_empty()) {
        // The line that says the scenario was edited (Scenario::run_description) stands out.
        let edited = !input.asked.overrides.is_empty() && para.starts_with("Edited ");
        let class = if edited { "desc edited" } else { "desc" };
        let _ = writeln!(h, "<p class=\"{class}\">{}</p>", esc(para));
    }
    run_record(&mut h, input);
    summary_table(&mut h, input);
    network_table(&mut h, input);
    phase_table(&mut h, input);
    rolling_table(&mut h, input);
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

/// The line that says what produced the page: seed, policies, overrides, version.
fn run_record(h: &mut String, input: &ReportInput<'_>) {
    let a = input.asked;
    let overrides = if a.overrides.is_empty() {
        "none (the scenario file as it is)".to_string()
    } else {
        a.overrides
            .iter()
            .map(|o| format!("<code>{}</code>", esc(o)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let _ = writeln!(
        h,
        "<p class=\"record\">seed {} &middot; policies {} &middot; --set overrides: {} &middot; replica-lb {}</p>",
        input.seed,
        esc(&a.policies.join(", ")),
        overrides,
        esc(&a.version)
    );
}

/// Mean, p50, p95, p99, p99.9 as table cells.
fn latency_cells(h: &mut String, l: &LatencyStats) {
    for v in [l.mean, l.p50, l.p95, l.p99, l.p999] {
        let _ = write!(h, "<td>{v:.3}</td>");
    }
}

fn summary_table(h: &mut String, input: &ReportInput<'_>) {
    let _ = write!(
        h,
        "<h2>Summary</h2>\n<p class=\"note\">Latency of <b>every request</b>: a timed-out or failed request counts at the read time-out ({} ms), so a tail never hides its failures. Completed only: the answered requests, beside it.</p>\n<table><tr><th rowspan=\"2\" class=\"name\">policy</th><th rowspan=\"2\">requests</th><th rowspan=\"2\">completed</th><th rowspan=\"2\">time-outs</th><th rowspan=\"2\">errors</th><th colspan=\"5\" class=\"all\">every request, ms</th><th colspan=\"5\">completed only, ms</th><th rowspan=\"2\">warm-up s</th></tr>\n<tr>{LATENCY_HEADS}{LATENCY_HEADS}</tr>\n",
        replica_lb_metrics::format::thousands(input.timeout_ms)
    );
    for run in input.runs {
        let s = &run.summary;
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
            esc(&s.policy),
            s.requests,
            s.completed,
            s.timeouts,
            s.errors
        );
        latency_cells(h, &s.latency_all_ms);
        latency_cells(h, &s.latency_ms);
        let _ = writeln!(h, "<td>{}</td></tr>", fmt_opt(s.warmup_s));
    }
    h.push_str("</table>\n");
}

/// The sub-headers of a latency group.
const LATENCY_HEADS: &str = "<th>mean</th><th>p50</th><th>p95</th><th>p99</th><th>p99.9</th>";

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
    h.push_str("<h2>Network and multi-key requests</h2>\n<table><tr><th>policy</th><th>multi requests</th><th>multi completed</th><th>multi p50 ms, every request</th><th>multi p99 ms, every request</th><th>multi p99.9 ms, every request</th><th>multi p99 ms, completed only</th><th>client GB</th><th>internode GB</th><th>busiest NIC second</th></tr>\n");
    for run in input.runs {
        let s = &run.summary;
        let _ = write!(h, "<tr><td>{}</td>", esc(&s.policy));
        match &s.multi {
            Some(m) => {
                let a = &m.latency_all_ms;
                let _ = write!(
                    h,
                    "<td>{}</td><td>{}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td>",
                    m.requests, m.completed, a.p50, a.p99, a.p999, m.latency_ms.p99
                );
            }
            None => h.push_str("<td>-</td><td>-</td><td>-</td><td>-</td><td>-</td><td>-</td>"),
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
    h.push_str("<h2>Phases</h2>\n<table><tr><th rowspan=\"2\" class=\"name\">policy</th>");
    for p in &first.summary.phases {
        let _ = write!(
            h,
            "<th colspan=\"4\">{} [{:.0}, {:.0}) s, ms</th>",
            esc(&p.name),
            p.start_s,
            p.end_s
        );
    }
    h.push_str("</tr>\n<tr>");
    for _ in &first.summary.phases {
        h.push_str("<th class=\"all\">mean, every request</th><th class=\"all\">p99, every request</th><th class=\"all\">p99.9, every request</th><th>p99, completed only</th>");
    }
    h.push_str("</tr>\n");
    for run in input.runs {
        let _ = write!(h, "<tr><td>{}</td>", esc(&run.summary.policy));
        for p in &run.summary.phases {
            let a = &p.latency_all_ms;
            let _ = write!(
                h,
                "<td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td>",
                a.mean, a.p99, a.p999, p.latency_ms.p99
            );
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
}

/// Each gated rolling restart (summary's `rolling_restarts`): per policy a line with the
/// gate, the duration and the gate's time-outs, then per node when it went down, came back and
/// was warm, and its misses per read against its peers' when the next went down. A restart of
/// more than [`ROLLING_ROWS_OPEN`] nodes is folded (a 300-node cluster restarts 100).
fn rolling_table(h: &mut String, input: &ReportInput<'_>) {
    if input.runs.iter().all(|r| r.summary.rolling_restarts.is_empty()) {
        return;
    }
    h.push_str("<h2>Rolling restarts</h2>\n<p class=\"note\">Each node of a rolling restart: when it went down, came back and was first warm by the gate's rule (misses per read at most (1 + within) x the other nodes' median over the window), and its misses per read against its peers' median when the next node went down (the last node: when it was judged). docs/rolling-restart.md explains the rule.</p>\n");
    for run in input.runs {
        for roll in &run.summary.rolling_restarts {
            let _ = writeln!(h, "<h3>{}: {}</h3>", esc(&run.summary.policy), esc(&roll.line()));
            let folded = roll.nodes.len() > ROLLING_ROWS_OPEN;
            if folded {
                let _ = writeln!(h, "<details><summary>{} nodes</summary>", roll.nodes.len());
            }
            h.push_str("<table><tr><th class=\"name\">node</th><th>down at s</th><th>up at s</th><th>warm at s</th><th>verdict when the next went down</th><th>misses per read</th><th>peers' median</th><th>x peers'</th></tr>\n");
            for n in &roll.nodes {
                let warm_at = match (n.warm_at_s, n.timed_out) {
                    (Some(w), _) => format!("{w:.0}"),
                    (None, true) => "time-out".to_string(),
                    (None, false) => "-".to_string(),
                };
                let _ = writeln!(
                    h,
                    "<tr><td>{}</td><td>{:.0}</td><td>{}</td><td>{warm_at}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    n.node,
                    n.down_at_s,
                    fmt_opt(n.up_at_s),
                    n.warmth.map_or("-", |w| w.as_str()),
                    n.misses_per_read.map_or("-".to_string(), |v| format!("{v:.3}")),
                    n.peers_median.map_or("-".to_string(), |v| format!("{v:.3}")),
                    n.misses_vs_peers().map_or("-".to_string(), |v| format!("x{v:.2}")),
                );
            }
            h.push_str("</table>\n");
            if folded {
                h.push_str("</details>\n");
            }
        }
    }
}

/// The most nodes of a rolling restart shown unfolded.
const ROLLING_ROWS_OPEN: usize = 12;

/// The page's style, then the charts' ([`crate::chart::CHART_CSS`]).
const PAGE_CSS: &str = "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}h1{margin-bottom:0.2em}.desc{max-width:70em;color:#444;margin:0.3em 0}\
.desc.edited{color:#8a4b00;font-weight:600}.record{color:#555;font-size:13px}.note{max-width:70em;color:#444;font-size:13px}\
table{border-collapse:collapse;margin:0.5em 0 1em}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right;font-size:13px}\
th{background:#f3f3f3}th.all{background:#e4ecf7}th.name{text-align:left}td:first-child{text-align:left}.grid td,.grid th{border:none;padding:2px;text-align:center}\
.multiples{display:flex;flex-wrap:wrap;gap:6px 10px;align-items:flex-start}h3{font-size:14px;margin:1em 0 0.3em}.legend span{margin-right:0.8em}";

#[cfg(test)]
mod tests {
    use super::*;
    use replica_lb_metrics::{Asked, CacheOutcome, ReadKind, Recorder, RecorderConfig, RunMetrics};

    fn asked() -> Asked {
        Asked {
            version: "0.1.0".into(),
            policies: vec!["naive".into()],
            overrides: vec![],
        }
    }

    fn input<'a>(description: &'a str, asked: &'a Asked, runs: &'a [&'a RunMetrics]) -> ReportInput<'a> {
        ReportInput {
            scenario: "s",
            description,
            seed: 1,
            asked,
            timeout_ms: 5000.0,
            runs,
        }
    }

    fn recorder(nodes: usize, duration_s: u32) -> Recorder {
        Recorder::new(RecorderConfig {
            nodes,
            duration_s,
            phases: vec![],
            timeout_ns: 5_000_000_000,
        })
        .unwrap()
    }

    #[test]
    fn renders_a_self_contained_page() {
        let mut r = recorder(2, 3);
        r.read(0, 0, ReadKind::Local, CacheOutcome::Hit);
        r.completed(10, 1_000_000);
        r.marker(1.0, "node 1 down");
        let m = r.finish("naive".into(), Some((1, 2.0)), 0, 0.0);
        let a = asked();
        let page = render(&input("d <x>", &a, &[&m, &m]));
        assert!(page.starts_with("<!DOCTYPE html>"));
        assert!(
            !page.contains("http://") || page.matches("http://").count() == page.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
        );
        assert!(!page.contains("<script"));
        // Compared: p99 and p50 (no failures); per node, for each of the 2 runs: reads served,
        // hit ratio and local reads (no misses, remote or replica reads: no panels).
        assert_eq!(page.matches("<svg").count(), 2 + 2 * 3);
        assert!(!page.contains(crate::panels::FAILED_TITLE) && !page.contains("cache misses/s") && !page.contains("remote reads/s"));
        assert!(page.contains("d &lt;x&gt;") && page.contains("node 1 (restarted)"));
        // The fault is a line named by its kind; the record of what was asked is there.
        assert!(page.contains("class=\"mark\" text-anchor=\"start\">down</text>"));
        assert!(
            page.contains("seed 1 &middot; policies naive &middot; --set overrides: none"),
            "{page}"
        );
        // The summary leads with every request, completed only beside it.
        let every = page.find(">every request, ms</th>").unwrap();
        assert!(every < page.find(">completed only, ms</th>").unwrap());
        // The same charts as files of their own, each under a name of its own.
        let files = chart_files(&input("d", &a, &[&m, &m]));
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

    /// A rolling restart is a table per policy: each node's times, verdict and misses against
    /// its peers'; a page without one has no such section.
    #[test]
    fn a_rolling_restart_is_tabled_per_node() {
        use replica_lb_metrics::rolling::{NodeRestart, RollingRestart};
        use replica_lb_metrics::warm_gate::Warmth;
        let mut r = recorder(3, 3);
        r.read(0, 0, ReadKind::Local, CacheOutcome::Hit);
        r.completed(10, 1_000_000);
        let mut m = r.finish("unified".into(), None, 0, 0.0);
        let a = asked();
        assert!(!render(&input("d", &a, &[&m])).contains("Rolling restarts"));
        let mut roll = RollingRestart::new("warm", 0.2, 20, 150.0, 2);
        let warm = NodeRestart {
            up_at_s: Some(40.0),
            warm_at_s: Some(125.0),
            warmth: Some(Warmth::Warm),
            misses_per_read: Some(0.24),
            peers_median: Some(0.2),
            ..NodeRestart::down(0, 2.0)
        };
        let cold = NodeRestart {
            up_at_s: Some(160.0),
            timed_out: true,
            warmth: Some(Warmth::Unread),
            ..NodeRestart::down(1, 125.0)
        };
        roll.nodes = vec![warm, cold];
        roll.tally();
        m.summary.rolling_restarts.push(roll);
        let page = render(&input("d", &a, &[&m]));
        assert!(page.contains("<h2>Rolling restarts</h2>"), "{page}");
        assert!(
            page.contains("unified: gate warm (within 0.2, window 20 s): 2/2 nodes in 158 s, 1 time-out"),
            "{page}"
        );
        assert!(
            page.contains("<tr><td>0</td><td>2</td><td>40</td><td>125</td><td>warm</td><td>0.240</td><td>0.200</td><td>x1.20</td></tr>"),
            "{page}"
        );
        assert!(
            page.contains("<tr><td>1</td><td>125</td><td>160</td><td>time-out</td><td>unread</td><td>-</td><td>-</td><td>-</td></tr>"),
            "{page}"
        );
        assert!(!page.contains("<details>"), "two nodes are not folded");
        // A restart of more nodes than a screen holds is folded under its count.
        let many = &mut m.summary.rolling_restarts[0];
        many.nodes = (0..ROLLING_ROWS_OPEN + 1).map(|k| NodeRestart::down(k, k as f64)).collect();
        let page = render(&input("d", &a, &[&m]));
        assert!(
            page.contains(&format!("<details><summary>{} nodes</summary>", ROLLING_ROWS_OPEN + 1)),
            "{page}"
        );
    }

    /// Failures draw their panel, and a second whose p99 is the time-out is drawn on the top
    /// edge of a scale set by the others.
    #[test]
    fn failures_draw_their_panel_and_stay_off_the_scale() {
        let mut r = recorder(1, 3);
        r.completed(10, 40_000_000);
        r.completed(2_000_000_010, 47_000_000);
        r.timeout(1_500_000_000);
        let m = r.finish("c3".into(), None, 0, 0.0);
        let a = asked();
        let page = render(&input("", &a, &[&m]));
        assert!(page.contains(crate::panels::FAILED_TITLE));
        assert!(page.contains("on the top edge: the read time-out, 5,000 ms"), "{page}");
        // The p99 axis is linear to 50 ms (40 and 47 ms), not log up to 5 s.
        let p99 = &crate::panels::compared_charts(&input("", &a, &[&m]))[0];
        assert_eq!((p99.y.max, p99.y.log), (50.0, false));
    }

    /// An edited scenario says so first, and the record lists the overrides.
    #[test]
    fn an_edited_scenario_says_so() {
        let m = recorder(1, 1).finish("naive".into(), None, 0, 0.0);
        let a = Asked {
            overrides: vec!["network.nic_gbps=0.65".into()],
            ..asked()
        };
        let page = render(&input(
            "An experiment.\nEdited for this run with --set: network.nic_gbps=0.65 (the file: 1.0).\nAs run: 0.65 Gbps NICs.",
            &a,
            &[&m],
        ));
        assert!(page.contains("<p class=\"desc edited\">Edited for this run"), "{page}");
        assert!(page.contains("<p class=\"desc\">As run: 0.65 Gbps NICs.</p>"));
        assert!(page.contains("<code>network.nic_gbps=0.65</code>"));
    }

    /// A 300-node cluster draws its restarted nodes as one line against the others' mean and
    /// band, and its worst nodes named in the chart, not 300 lines.
    #[test]
    fn a_large_cluster_is_drawn_as_faulted_against_the_others() {
        let mut r = recorder(300, 3);
        r.set_zones((0..300).map(|n| (n % 3) as u16).collect(), vec!["a".into(), "b".into(), "c".into()]);
        for n in 0..300 {
            for k in 0..=(n % 7) {
                r.read(k as u64 * 1_000_000, n, ReadKind::Replica, CacheOutcome::Hit);
            }
        }
        r.read(0, 5, ReadKind::Replica, CacheOutcome::Miss);
        r.completed(10, 1_000_000);
        for (t, node) in [(0.5, 7), (0.7, 10)] {
            r.marker(t, format!("node {node} down"));
            r.marker(t + 0.5, format!("node {node} up"));
        }
        let m = r.finish("naive".into(), Some((7, 1.0)), 0, 0.0);
        let a = asked();
        let page = render(&input("", &a, &[&m]));
        // Per-node panels with data: reads served, hit ratio, misses, replica reads: each
        // draws the others' band and mean, the 2 restarted nodes' mean and 3 worst nodes.
        assert_eq!(page.matches("<title>the other 298 nodes: mean</title>").count(), 4);
        // (The hit ratio has one second of data: no band to draw.)
        assert_eq!(
            page.matches("<title>the other 298 nodes: 5th to 95th percentile</title>").count(),
            3
        );
        assert_eq!(page.matches("<title>the 2 restarted nodes: mean</title>").count(), 4);
        assert_eq!(page.matches("class=\"tag\"").count(), 4 * 3);
        // Node 5's one miss makes it the worst on the hit ratio, named in the chart.
        assert!(page.contains("<title>node 5 (zone c)</title>node 5</text>"), "node 5 missing");
        // Four marks are lines; the legend says what the gold line is.
        assert!(page.contains("&#9632; the 2 restarted nodes: mean</span>"));
    }
}
