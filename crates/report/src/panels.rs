//! The report's charts, drawn for what the scenario exercises and readable from 3 to 2,000
//! nodes:
//!
//! - **Policies compared**: one wide chart per measure with one line per policy on the same
//!   axes, each policy in its colour ([`policy_color`], the same on every chart) — p99 and p50
//!   latency per second over every request (a failed one at the read time-out; a second whose
//!   figure is the time-out is drawn on the top edge, so that it does not flatten the rest),
//!   and the failed requests so far when any run had one (cumulative: five policies' lines
//!   stay apart, each named at its end);
//! - **Per node**: for each node measure with data in some run (reads served, cache hit ratio,
//!   misses, local, remote and replica reads), one small chart per policy, wrapped across the
//!   page, all on the same y axis. Up to [`MAX_NODE_LINES`] nodes, a line per node (the
//!   faulted ones in gold, the others in greys: never a policy's colour); above, the faulted
//!   nodes as one line (their mean) against the others (their mean and their 5th to 95th
//!   percentile as a band), and the [`WORST_NODES`] worst nodes of the chart named by id in it.
//!
//! Faults are dashed lines labelled with their kind when there are a few (a restart's "down"
//! and "up", as in the HWLB blog's panels), a rug of ticks per kind under each chart when there
//! are many. A measure no run recorded (no cache, no remote reads, no failures) draws no panel.

use crate::chart::{Band, Chart, Line, Mark, YAxis, SMALL, WIDE};
use crate::input::{esc, ReportInput};
use replica_lb_metrics::format::thousands;
use replica_lb_metrics::{ClusterSecond, NodeSecond, RunMetrics, Series};
use std::fmt::Write as _;

/// Up to this many nodes, a per-node chart draws one line per node; a larger cluster is drawn
/// as its faulted nodes against the others.
pub(crate) const MAX_NODE_LINES: usize = 8;
/// The worst nodes a chart of a large cluster names beside the aggregates.
pub(crate) const WORST_NODES: usize = 3;

/// The faulted (restarted, paused, slowed) nodes: gold, the HWLB blog's colour for the
/// restarted node, then darker golds.
const FAULTED_PALETTE: [&str; 3] = ["#e6a700", "#a67c00", "#f2cc5a"];
/// The other nodes of a small cluster: greys, told apart by shade and dash (never a policy's
/// colour).
const NODE_STYLES: [(&str, Option<&str>); 6] = [
    ("#2b2b2b", None),
    ("#9a9a9a", None),
    ("#2b2b2b", Some("5,3")),
    ("#9a9a9a", Some("5,3")),
    ("#2b2b2b", Some("1,2")),
    ("#9a9a9a", Some("1,2")),
];
/// A large cluster's other nodes: their band and their mean.
const OTHERS_BAND: &str = "#dcdcdc";
const OTHERS_MEAN: &str = "#4d4d4d";
/// A large cluster's worst nodes: black, told apart by dash, each named in the chart.
const WORST_DASH: [Option<&str>; WORST_NODES] = [None, Some("5,3"), Some("1,2")];

/// Policy colours: 14 well-separated hues, none grey or gold (the nodes' colours), so that a
/// policy keeps its colour on every chart and is never mistaken for a node.
const POLICY_PALETTE: [&str; 14] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#393b79", "#637939", "#843c39", "#7b4173",
    "#3182bd", "#e6550d",
];

/// The colour of the `i`-th policy of a report, the same on every chart of it.
pub(crate) fn policy_color(i: usize) -> &'static str {
    POLICY_PALETTE[i % POLICY_PALETTE.len()]
}

fn marks(run: &RunMetrics) -> Vec<Mark> {
    run.series
        .markers
        .iter()
        .map(|m| Mark {
            x: m.t_s,
            kind: m.kind().to_string(),
            label: m.label.clone(),
        })
        .collect()
}

fn spans(run: &RunMetrics) -> Vec<(f64, f64, String)> {
    run.series
        .phases
        .iter()
        .map(|p| (p.start_s as f64, p.end_s as f64, p.name.clone()))
        .collect()
}

/// The nodes a fault touched (named by a marker, or the restarted node), in id order.
fn faulted(s: &Series) -> Vec<usize> {
    let mut nodes: Vec<usize> = s
        .markers
        .iter()
        .filter_map(|m| m.node())
        .chain(s.highlight)
        .filter(|&n| n < s.nodes)
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    nodes
}

/// What the faulted nodes went through, in words (`restarted`, `paused`, ...).
fn fault_words(s: &Series) -> String {
    let mut kinds: Vec<&str> = Vec::new();
    for m in &s.markers {
        let word = match m.kind() {
            "down" | "up" => "restarted",
            "paused" | "resumed" => "paused",
            "delay" => "delayed",
            "disk" => "slowed",
            _ => "faulted",
        };
        if !kinds.contains(&word) {
            kinds.push(word);
        }
    }
    if kinds.is_empty() {
        kinds.push("restarted");
    }
    kinds.join(" or ")
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

/// The latency measures compared: title, value (over every request that ended in the second).
const LATENCY_MEASURES: [(&str, ClusterMeasure); 2] = [
    (
        "p99 read latency, ms, per second: every request (a failed one at the read time-out)",
        |c| (c.ended() > 0).then_some(c.p99_all_ms),
    ),
    (
        "p50 read latency, ms, per second: every request (a failed one at the read time-out)",
        |c| (c.ended() > 0).then_some(c.p50_all_ms),
    ),
];

/// The title of the failures chart.
pub(crate) const FAILED_TITLE: &str = "failed requests so far (time-outs and errors)";

/// Whether some run has a non-zero value of `measure`.
fn any_node_data(input: &ReportInput<'_>, measure: NodeMeasure) -> bool {
    input.runs.iter().any(|r| {
        r.series
            .node_rows
            .iter()
            .any(|row| measure(&r.series, row).is_some_and(|v| v > 0.0))
    })
}

/// Policies compared: the latency charts, then the failures so far when any run had some; a
/// line per policy.
pub(crate) fn compared_charts(input: &ReportInput<'_>) -> Vec<Chart> {
    let Some(first) = input.runs.first() else {
        return Vec::new();
    };
    let wide = |title: &str, y: YAxis, lines: Vec<Line>| Chart {
        title: title.to_string(),
        title_color: None,
        x_max: first.series.seconds as f64,
        y,
        lines,
        bands: Vec::new(),
        marks: marks(first),
        spans: spans(first),
        size: WIDE,
    };
    let mut charts = Vec::new();
    let ceiling = format!(
        "the read time-out, {} ms (1% or more of that second's requests failed)",
        thousands(input.timeout_ms)
    );
    for (title, measure) in LATENCY_MEASURES {
        let lines: Vec<Line> = input
            .runs
            .iter()
            .enumerate()
            .map(|(i, run)| {
                Line::plain(
                    run.summary.policy.clone(),
                    policy_color(i),
                    run.series.cluster.iter().map(measure).collect(),
                )
            })
            .collect();
        if !lines.iter().any(|l| l.values.iter().any(|v| v.is_some_and(|v| v > 0.0))) {
            continue;
        }
        let values = lines.iter().flat_map(|l| l.values.iter().flatten().copied());
        // The p50's ceiling is named the same way (half the second's requests failed).
        let y = YAxis::for_values(
            values,
            Some(input.timeout_ms),
            &ceiling.replace("1% or more", if title.starts_with("p50") { "half or more" } else { "1% or more" }),
        );
        charts.push(wide(title, y, lines));
    }
    if input.runs.iter().any(|r| r.summary.timeouts + r.summary.errors > 0) {
        let lines: Vec<Line> = input
            .runs
            .iter()
            .enumerate()
            .map(|(i, run)| {
                let mut sum = 0u64;
                let values = run
                    .series
                    .cluster
                    .iter()
                    .map(|c| {
                        sum += (c.timeouts + c.errors) as u64;
                        Some(sum as f64)
                    })
                    .collect();
                Line {
                    tag: Some(run.summary.policy.clone()),
                    ..Line::plain(run.summary.policy.clone(), policy_color(i), values)
                }
            })
            .collect();
        let top = lines.iter().flat_map(|l| l.values.iter().flatten().copied()).fold(0.0, f64::max);
        charts.push(wide(FAILED_TITLE, YAxis::linear(top), lines));
    }
    charts
}

/// Per node: for each measure with data, its title and one small chart per policy, all on the
/// same y axis.
pub(crate) fn per_node_charts(input: &ReportInput<'_>) -> Vec<(&'static str, Vec<Chart>)> {
    let mut out = Vec::new();
    for (title, measure, ratio) in NODE_MEASURES {
        if !any_node_data(input, measure) {
            continue;
        }
        let y = if ratio {
            YAxis::linear(1.0)
        } else {
            YAxis::linear(
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
            .enumerate()
            .map(|(i, run)| {
                let s = &run.series;
                let (lines, bands) = if s.nodes <= MAX_NODE_LINES {
                    (node_lines(s, measure), Vec::new())
                } else {
                    aggregate_lines(s, measure, low_is_worse)
                };
                Chart {
                    title: run.summary.policy.clone(),
                    title_color: Some(policy_color(i).to_string()),
                    x_max: s.seconds as f64,
                    y: y.clone(),
                    lines,
                    bands,
                    marks: marks(run),
                    spans: spans(run),
                    size: SMALL,
                }
            })
            .collect();
        out.push((title, charts));
    }
    out
}

/// The colour, dash and width of node `n` of a small cluster whose faulted nodes are
/// `faulted`: gold for a faulted one; greys for the others, the first drawn widest so that a
/// node whose line another covers still shows around it.
fn node_style(n: usize, faulted: &[usize]) -> (&'static str, Option<&'static str>, f64) {
    match faulted.iter().position(|&f| f == n) {
        Some(k) => (FAULTED_PALETTE[k % FAULTED_PALETTE.len()], None, 2.2),
        None => {
            let k = n - faulted.iter().filter(|&&f| f < n).count();
            let (color, dash) = NODE_STYLES[k % NODE_STYLES.len()];
            (color, dash, if k == 0 { 2.6 } else { 1.2 })
        }
    }
}

/// A small cluster's lines: one per node, the faulted ones drawn last (on top).
fn node_lines(s: &Series, measure: NodeMeasure) -> Vec<Line> {
    let faulted = faulted(s);
    let mut order: Vec<usize> = (0..s.nodes).filter(|n| !faulted.contains(n)).collect();
    order.extend(&faulted);
    order
        .into_iter()
        .map(|n| {
            let (color, dash, width) = node_style(n, &faulted);
            Line {
                label: node_label(s, n, &faulted),
                color: color.to_string(),
                width,
                dash,
                tag: None,
                values: (0..s.seconds).map(|t| measure(s, s.node(t, n))).collect(),
            }
        })
        .collect()
}

/// `node 2 (restarted)`, `node 5 (zone b)`.
fn node_label(s: &Series, n: usize, faulted: &[usize]) -> String {
    let zone = s.node_zone.get(n).and_then(|&z| s.zone_names.get(z as usize));
    let mut notes: Vec<String> = Vec::new();
    if let Some(z) = zone.filter(|_| s.zone_names.len() > 1) {
        notes.push(format!("zone {z}"));
    }
    if faulted.contains(&n) {
        notes.push(fault_words(s));
    }
    if notes.is_empty() {
        format!("node {n}")
    } else {
        format!("node {n} ({})", notes.join(", "))
    }
}

/// The faulted nodes' line of a large cluster: `the 100 restarted nodes: mean`, or the one
/// node's own label.
fn faulted_name(s: &Series, faulted: &[usize]) -> String {
    match faulted {
        [one] => node_label(s, *one, faulted),
        many => format!("the {} {} nodes: mean", many.len(), fault_words(s)),
    }
}

/// The mean of `measure` over `nodes` in second `t` (over those with a value), and with
/// `spread` the 5th and 95th percentiles.
fn across(s: &Series, measure: NodeMeasure, nodes: &[usize], t: u32, values: &mut Vec<f64>) -> Option<(f64, f64, f64)> {
    values.clear();
    values.extend(nodes.iter().filter_map(|&n| measure(s, s.node(t, n))));
    if values.is_empty() {
        return None;
    }
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    let len = values.len();
    let at = |values: &mut Vec<f64>, q: f64| {
        let k = ((q * (len - 1) as f64).round() as usize).min(len - 1);
        *values.select_nth_unstable_by(k, f64::total_cmp).1
    };
    let lo = at(values, 0.05);
    let hi = at(values, 0.95);
    Some((mean, lo, hi))
}

/// A large cluster's lines for one measure: the other nodes' band (5th to 95th percentile) and
/// mean, the faulted nodes' mean, then the [`WORST_NODES`] worst nodes by their mean over the
/// run (lowest when `low_is_worse`, else highest; ties to the lower id), each named in the
/// chart.
fn aggregate_lines(s: &Series, measure: NodeMeasure, low_is_worse: bool) -> (Vec<Line>, Vec<Band>) {
    let faulted = faulted(s);
    let others: Vec<usize> = (0..s.nodes).filter(|n| !faulted.contains(n)).collect();
    let mut scratch = Vec::with_capacity(s.nodes);
    let per_second = |nodes: &[usize], scratch: &mut Vec<f64>| -> Vec<Option<(f64, f64, f64)>> {
        (0..s.seconds).map(|t| across(s, measure, nodes, t, scratch)).collect()
    };
    let mut lines = Vec::with_capacity(WORST_NODES + 2);
    let mut bands = Vec::new();
    if !others.is_empty() {
        let o = per_second(&others, &mut scratch);
        bands.push(Band {
            label: format!("the other {} nodes: 5th to 95th percentile", others.len()),
            color: OTHERS_BAND.to_string(),
            lower: o.iter().map(|v| v.map(|v| v.1)).collect(),
            upper: o.iter().map(|v| v.map(|v| v.2)).collect(),
        });
        lines.push(Line {
            width: 1.4,
            ..Line::plain(
                format!("the other {} nodes: mean", others.len()),
                OTHERS_MEAN,
                o.iter().map(|v| v.map(|v| v.0)).collect(),
            )
        });
    }
    if !faulted.is_empty() {
        let f = per_second(&faulted, &mut scratch);
        lines.push(Line {
            width: 2.2,
            ..Line::plain(
                faulted_name(s, &faulted),
                FAULTED_PALETTE[0],
                f.iter().map(|v| v.map(|v| v.0)).collect(),
            )
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
    for (rank, &(_, n)) in ranked.iter().take(WORST_NODES).enumerate() {
        lines.push(Line {
            label: node_label(s, n, &faulted),
            color: "#000000".to_string(),
            width: 1.0,
            dash: WORST_DASH[rank],
            tag: Some(format!("node {n}")),
            values: (0..s.seconds).map(|t| measure(s, s.node(t, n))).collect(),
        });
    }
    (lines, bands)
}

/// Policies compared, as HTML: the policies' colours, then the charts.
pub(crate) fn compared(h: &mut String, input: &ReportInput<'_>) {
    if input.runs.is_empty() {
        return;
    }
    h.push_str("<h2>Policies compared</h2>\n<p class=\"legend\">");
    policy_legend(h, input);
    h.push_str("&nbsp; Faults: a few are dashed lines named by kind (down, up, ...), many a row of ticks per kind under each chart; shaded: named phases.</p>\n<div class=\"multiples\">");
    for chart in compared_charts(input) {
        h.push_str(&chart.svg());
    }
    h.push_str("</div>\n");
}

/// Each policy's name in its colour.
pub(crate) fn policy_legend(h: &mut String, input: &ReportInput<'_>) {
    for (i, run) in input.runs.iter().enumerate() {
        let _ = write!(
            h,
            "<span style=\"color:{}\">&#9632; {}</span> ",
            policy_color(i),
            esc(&run.summary.policy)
        );
    }
}

/// Per node, as HTML: what the lines are, then each measure's small multiples (a chart per
/// policy, titled in the policy's colour).
pub(crate) fn per_node(h: &mut String, input: &ReportInput<'_>) {
    let Some(first) = input.runs.first() else {
        return;
    };
    h.push_str("<h2>Per node</h2>\n<p class=\"legend\">");
    let s = &first.series;
    let faulted = faulted(s);
    if s.nodes <= MAX_NODE_LINES {
        for n in 0..s.nodes {
            let (c, dash, _) = node_style(n, &faulted);
            let dashed = if dash.is_some() { ", dashed" } else { "" };
            let _ = write!(
                h,
                "<span style=\"color:{c}\">&#9632; {}{dashed}</span> ",
                esc(&node_label(s, n, &faulted))
            );
        }
    } else {
        if !faulted.is_empty() {
            let _ = write!(
                h,
                "<span style=\"color:{}\">&#9632; {}</span> ",
                FAULTED_PALETTE[0],
                faulted_name(s, &faulted)
            );
        }
        let _ = write!(
            h,
            "<span style=\"color:{OTHERS_MEAN}\">&#9632; the other {} nodes: their mean, and in light grey their 5th to 95th percentile</span> <span>&#9632; black, named in the chart: the {WORST_NODES} worst nodes of each chart (lowest hit ratio, else most load)</span>",
            s.nodes - faulted.len()
        );
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
