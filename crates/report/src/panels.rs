//! The report's charts, drawn for what the scenario exercises:
//!
//! - **Policies compared**: one wide chart per measure with one line per policy on the same
//!   axes — p99 and p50 latency over time, and time-outs per second when any run had one;
//! - **Per node**: for each node measure with data in some run (reads served, cache hit ratio,
//!   misses, local, remote and replica reads), one small chart per policy with a line per node,
//!   wrapped across the page (readable with any number of policies), all on the same y axis.
//!   A cluster of more than [`MAX_NODE_LINES`] nodes draws instead a line per zone (the mean
//!   of its nodes) and the [`WORST_NODES`] worst nodes of the chart, so 300 nodes stay readable.
//!
//! A measure no run recorded (no cache, no remote reads, no time-outs) draws no panel.

use crate::chart::{nice_max, Chart, Line, SMALL, WIDE};
use crate::html::{esc, ReportInput};
use metrics::{ClusterSecond, NodeSecond, RunMetrics, Series};
use std::fmt::Write as _;

/// Node colours (the restarted node is drawn in [`HIGHLIGHT`], bold).
const NODE_PALETTE: [&str; 10] = [
    "#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#17becf", "#7f7f7f", "#d62728", "#bcbd22", "#e377c2", "#ff7f0e",
];
const HIGHLIGHT: &str = "#e6a700";

/// Up to this many nodes, a per-node chart draws one line per node (every cluster the
/// simulator ran before it grew past 64 nodes); a larger cluster is drawn by zone.
pub(crate) const MAX_NODE_LINES: usize = 64;
/// The worst nodes a chart of a large cluster draws beside its zones' means.
pub(crate) const WORST_NODES: usize = 3;
/// Zone colours (a large cluster's zone means).
const ZONE_PALETTE: [&str; 6] = ["#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#17becf", "#7f7f7f"];
/// The worst nodes' colours, worst first.
const WORST_PALETTE: [&str; WORST_NODES] = ["#d62728", "#ff7f0e", "#e377c2"];

/// Policy colours: 16 well-separated hues, so 14 policies stay apart.
const POLICY_PALETTE: [&str; 16] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", "#393b79", "#637939",
    "#843c39", "#7b4173", "#3182bd", "#e6550d",
];

fn node_color(run: &RunMetrics, n: usize) -> (&'static str, bool) {
    if run.series.highlight == Some(n) {
        (HIGHLIGHT, true)
    } else {
        (NODE_PALETTE[n % NODE_PALETTE.len()], false)
    }
}

fn policy_color(i: usize) -> &'static str {
    POLICY_PALETTE[i % POLICY_PALETTE.len()]
}

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

/// A per-node value for one second, given the run's series (for its NIC rate).
type NodeMeasure = fn(&Series, &NodeSecond) -> Option<f64>;

const MB: f64 = 1e6;

/// The per-node measures: title, value, whether it is a ratio (y axis 0..1).
const NODE_MEASURES: [(&str, NodeMeasure, bool); 10] = [
    (
        "reads/s served (every replica read this node did)",
        |_, r| Some(r.reads as f64),
        false,
    ),
    (
        "cache hit ratio",
        |_, r| (r.cache_hits + r.cache_misses > 0).then(|| r.hit_ratio()),
        true,
    ),
    ("cache misses/s", |_, r| Some(r.cache_misses as f64), false),
    (
        "local reads/s (coordinator reads on itself)",
        |_, r| Some(r.local_reads as f64),
        false,
    ),
    ("remote reads/s (sent to other replicas)", |_, r| Some(r.remote_reads as f64), false),
    (
        "replica reads/s (done for other coordinators)",
        |_, r| Some(r.replica_reads as f64),
        false,
    ),
    (
        "NIC utilisation (busier direction, share of its bits per second)",
        |s, r| {
            s.nic_bits_per_s
                .map(|bps| (r.nic_out_bytes.max(r.nic_in_bytes) as f64 * 8.0 / bps).min(1.0))
        },
        true,
    ),
    (
        "NIC sent, MB/s (to clients and nodes)",
        |_, r| Some(r.nic_out_bytes as f64 / MB),
        false,
    ),
    ("NIC received, MB/s", |_, r| Some(r.nic_in_bytes as f64 / MB), false),
    (
        "internode sent, MB/s (to other nodes)",
        |_, r| Some(r.internode_out_bytes as f64 / MB),
        false,
    ),
];

type ClusterMeasure = fn(&ClusterSecond) -> Option<f64>;

/// The compared measures: title, value, log axis.
const CLUSTER_MEASURES: [(&str, ClusterMeasure, bool); 3] = [
    ("p99 read latency, ms (log)", |c| (c.completed > 0).then_some(c.p99_ms), true),
    ("p50 read latency, ms (log)", |c| (c.completed > 0).then_some(c.p50_ms), true),
    ("time-outs/s", |c| Some(c.timeouts as f64), false),
];

/// Whether some run has a non-zero value of `measure`.
fn any_node_data(input: &ReportInput<'_>, measure: NodeMeasure) -> bool {
    input.runs.iter().any(|r| {
        r.series
            .node_rows
            .iter()
            .any(|row| measure(&r.series, row).is_some_and(|v| v > 0.0))
    })
}

/// Policies compared: one wide chart per cluster measure with data, a line per policy.
pub(crate) fn compared_charts(input: &ReportInput<'_>) -> Vec<Chart> {
    let Some(first) = input.runs.first() else {
        return Vec::new();
    };
    let mut charts = Vec::new();
    for (title, measure, log_y) in CLUSTER_MEASURES {
        let has_data = input
            .runs
            .iter()
            .any(|r| r.series.cluster.iter().any(|c| measure(c).is_some_and(|v| v > 0.0)));
        if !has_data {
            continue;
        }
        let y_max = input
            .runs
            .iter()
            .flat_map(|r| r.series.cluster.iter().filter_map(measure))
            .fold(0.0, f64::max);
        let lines = input
            .runs
            .iter()
            .enumerate()
            .map(|(i, run)| Line {
                label: run.summary.policy.clone(),
                color: policy_color(i).to_string(),
                bold: false,
                values: run.series.cluster.iter().map(measure).collect(),
            })
            .collect();
        charts.push(Chart {
            title: title.to_string(),
            x_max: first.series.seconds as f64,
            y_max: nice_max(y_max),
            log_y,
            lines,
            markers: markers(first),
            spans: spans(first),
            size: WIDE,
        });
    }
    charts
}

/// Per node: for each measure with data, its title and one small chart per policy (a line per
/// node), all on the same y axis.
pub(crate) fn per_node_charts(input: &ReportInput<'_>) -> Vec<(&'static str, Vec<Chart>)> {
    let mut out = Vec::new();
    for (title, measure, ratio) in NODE_MEASURES {
        if !any_node_data(input, measure) {
            continue;
        }
        let y_max = if ratio {
            1.0
        } else {
            nice_max(
                input
                    .runs
                    .iter()
                    .flat_map(|r| r.series.node_rows.iter().filter_map(|row| measure(&r.series, row)))
                    .fold(0.0, f64::max),
            )
        };
        // The hit ratio is the one measure where less is worse.
        let low_is_worse = title == NODE_MEASURES[1].0;
        let charts = input
            .runs
            .iter()
            .map(|run| {
                let s = &run.series;
                let lines = if s.nodes <= MAX_NODE_LINES {
                    (0..s.nodes)
                        .map(|n| {
                            let (color, bold) = node_color(run, n);
                            Line {
                                label: format!("node {n}"),
                                color: color.to_string(),
                                bold,
                                values: (0..s.seconds).map(|t| measure(s, s.node(t, n))).collect(),
                            }
                        })
                        .collect()
                } else {
                    zone_lines(run, measure, low_is_worse)
                };
                Chart {
                    title: run.summary.policy.clone(),
                    x_max: s.seconds as f64,
                    y_max,
                    log_y: false,
                    lines,
                    markers: markers(run),
                    spans: spans(run),
                    size: SMALL,
                }
            })
            .collect();
        out.push((title, charts));
    }
    out
}

/// A large cluster's lines for one measure: each zone's mean over its nodes (per second, over
/// the nodes with a value), then the [`WORST_NODES`] worst nodes by their mean over the run
/// (lowest when `low_is_worse`, else highest; ties to the lower id), then the restarted node
/// if it is not among them.
fn zone_lines(run: &RunMetrics, measure: NodeMeasure, low_is_worse: bool) -> Vec<Line> {
    let s = &run.series;
    let zone_of = |n: usize| s.node_zone.get(n).map_or(0, |&z| z as usize);
    let zones = s.zone_names.len().max(1);
    let mut lines = Vec::with_capacity(zones + WORST_NODES + 1);
    for z in 0..zones {
        let members: Vec<usize> = (0..s.nodes).filter(|&n| zone_of(n) == z).collect();
        if members.is_empty() {
            continue;
        }
        let values = (0..s.seconds)
            .map(|t| {
                let (sum, count) = members
                    .iter()
                    .filter_map(|&n| measure(s, s.node(t, n)))
                    .fold((0.0, 0usize), |(sum, count), v| (sum + v, count + 1));
                (count > 0).then(|| sum / count as f64)
            })
            .collect();
        let name = s.zone_names.get(z).map_or("all", String::as_str);
        lines.push(Line {
            label: format!("zone {name}: mean of {} nodes", members.len()),
            color: ZONE_PALETTE[z % ZONE_PALETTE.len()].to_string(),
            bold: false,
            values,
        });
    }
    let mut ranked: Vec<(f64, usize)> = (0..s.nodes)
        .filter_map(|n| {
            let (sum, count) = (0..s.seconds)
                .filter_map(|t| measure(s, s.node(t, n)))
                .fold((0.0, 0usize), |(sum, count), v| (sum + v, count + 1));
            let mean = sum / count.max(1) as f64;
            (count > 0).then_some((if low_is_worse { mean } else { -mean }, n))
        })
        .collect();
    ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut worst: Vec<usize> = ranked.iter().take(WORST_NODES).map(|&(_, n)| n).collect();
    if let Some(h) = s.highlight.filter(|h| !worst.contains(h)) {
        worst.push(h);
    }
    for (rank, n) in worst.into_iter().enumerate() {
        let (color, bold) = match node_color(run, n) {
            (_, false) => (WORST_PALETTE[rank.min(WORST_NODES - 1)], false),
            highlighted => highlighted,
        };
        let zone = s.zone_names.get(zone_of(n)).map_or("all", String::as_str);
        lines.push(Line {
            label: format!("node {n} (zone {zone}{})", if bold { ", restarted" } else { "" }),
            color: color.to_string(),
            bold,
            values: (0..s.seconds).map(|t| measure(s, s.node(t, n))).collect(),
        });
    }
    lines
}

/// Policies compared, as HTML: the policies' colours, then the charts.
pub(crate) fn compared(h: &mut String, input: &ReportInput<'_>) {
    if input.runs.is_empty() {
        return;
    }
    h.push_str("<h2>Policies compared</h2>\n<p class=\"legend\">");
    for (i, run) in input.runs.iter().enumerate() {
        let _ = write!(
            h,
            "<span style=\"color:{}\">&#9632; {}</span> ",
            policy_color(i),
            esc(&run.summary.policy)
        );
    }
    h.push_str("&nbsp; dashed lines: faults; shaded: named phases.</p>\n<div class=\"multiples\">");
    for chart in compared_charts(input) {
        h.push_str(&chart.svg());
    }
    h.push_str("</div>\n");
}

/// Per node, as HTML: the nodes' colours, then each measure's small multiples.
pub(crate) fn per_node(h: &mut String, input: &ReportInput<'_>) {
    let Some(first) = input.runs.first() else {
        return;
    };
    h.push_str("<h2>Per node</h2>\n<p class=\"legend\">");
    let s = &first.series;
    if s.nodes <= MAX_NODE_LINES {
        for n in 0..s.nodes {
            let (c, bold) = node_color(first, n);
            let _ = write!(
                h,
                "<span style=\"color:{c}\">&#9632; node {n}{}</span> ",
                if bold { " (restarted)" } else { "" }
            );
        }
    } else {
        if s.zone_names.is_empty() {
            let _ = write!(
                h,
                "<span style=\"color:{}\">&#9632; all {} nodes (mean)</span> ",
                ZONE_PALETTE[0], s.nodes
            );
        }
        for (z, name) in s.zone_names.iter().enumerate() {
            let members = s.node_zone.iter().filter(|&&nz| nz as usize == z).count();
            let _ = write!(
                h,
                "<span style=\"color:{}\">&#9632; zone {} (mean of {members} nodes)</span> ",
                ZONE_PALETTE[z % ZONE_PALETTE.len()],
                esc(name)
            );
        }
        let _ = write!(
            h,
            "<span style=\"color:{}\">&#9632; the {WORST_NODES} worst nodes of each chart (lowest hit ratio, else most load; hover a line for its node)</span>",
            WORST_PALETTE[0]
        );
        if let Some(n) = s.highlight {
            let _ = write!(h, " <span style=\"color:{HIGHLIGHT}\">&#9632; node {n} (restarted)</span>");
        }
    }
    h.push_str("</p>\n");
    for (title, charts) in per_node_charts(input) {
        let _ = write!(h, "<h3>{}</h3>\n<div class=\"multiples\">", esc(title));
        for chart in charts {
            h.push_str(&chart.svg());
        }
        h.push_str("</div>\n");
    }
}

/// A measure's title up to its first comma or parenthesis ("NIC sent, MB/s (...)" -> "NIC
/// sent").
pub(crate) fn short_title(title: &str) -> &str {
    title.split([',', '(']).next().unwrap_or(title).trim()
}

/// The file-name part of a measure's title: lower-case words of its short title joined by '-'
/// ("NIC sent, MB/s (...)" -> "nic-sent").
pub(crate) fn slug(title: &str) -> String {
    label_slug(short_title(title))
}

/// A whole label as a file-name part ("naive (sim)" -> "naive-sim", "random/hwlb" ->
/// "random-hwlb").
pub(crate) fn label_slug(label: &str) -> String {
    let words: Vec<String> = label
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| w.to_ascii_lowercase())
        .collect();
    words.join("-")
}
