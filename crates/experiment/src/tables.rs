//! The tables that sum an experiment up, real next to simulated, as Markdown: hit ratios and
//! latency per phase with the restarted node's misses ([`Tables::Cache`]), each restarted
//! node's misses in a rolling restart, or tail latency and time-outs ([`Tables::Tail`]).

use replica_lb_metrics::RunMetrics;
use replica_lb_workload::scenario::FaultKind;
use replica_lb_workload::Scenario;
use std::fmt::Write as _;

/// Which tables sum an experiment up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tables {
    /// Hit ratios and latency per phase, the restarted node's misses (per-node cache counters).
    Cache,
    /// [`Tables::Cache`] and, with several restarts, each restarted node's misses.
    CacheAndRolling,
    /// Tail latency and time-outs (no per-node cache counters).
    Tail,
}

/// The `kind` tables of `scenario`'s runs: `real`, each with its simulated run at the same
/// index in `sims` (empty without `--compare-sim`).
pub fn render(kind: Tables, scenario: &Scenario, real: &[RunMetrics], sims: &[&RunMetrics]) -> String {
    match kind {
        Tables::Cache => compare_table(real, sims),
        Tables::CacheAndRolling => compare_table(real, sims) + &rolling_table(scenario, real, sims),
        Tables::Tail => tail_table(real, sims),
    }
}

/// One run's line of [`compare_table`] (`source`: real or sim).
fn row(m: &RunMetrics, source: &str) -> String {
    let s = &m.summary;
    let mut cells = vec![s.policy.clone(), source.to_string()];
    for p in &s.phases {
        cells.push(format!("{:.3}", m.series.hit_ratio(p.start_s as u32, p.end_s as u32)));
        cells.push(format!("{:.2}", p.latency_all_ms.mean));
        cells.push(format!("{:.2}", p.latency_all_ms.p99));
    }
    let ph = |name: &str| s.phases.iter().find(|p| p.name == name).map(|p| p.latency_all_ms);
    match (ph("steady"), ph("after-restart")) {
        (Some(a), Some(b)) if a.mean > 0.0 && a.p99 > 0.0 => {
            cells.push(format!("{:.2}", b.mean / a.mean));
            cells.push(format!("{:.2}", b.p99 / a.p99));
        }
        _ => cells.extend(["-".to_string(), "-".to_string()]),
    }
    cells.push(m.series.restart_misses().map_or("-".into(), |(o, p)| {
        format!("{o:.0} / {p:.0} (x{:.2})", if p > 0.0 { o / p } else { 0.0 })
    }));
    cells.push(s.warmup_s.map_or("-".into(), |w| format!("{w:.0}")));
    cells.push(format!("{} / {}", s.timeouts, s.errors));
    format!("| {} |\n", cells.join(" | "))
}

/// The key numbers, real next to simulated, as a Markdown table.
fn compare_table(real: &[RunMetrics], sims: &[&RunMetrics]) -> String {
    let mut t = String::new();
    let Some(first) = real.first() else {
        return t;
    };
    let mut head = vec!["policy".to_string(), "run".to_string()];
    for p in &first.summary.phases {
        head.push(format!("{} hit ratio", p.name));
        head.push(format!("{} mean ms (every request)", p.name));
        head.push(format!("{} p99 ms (every request)", p.name));
    }
    head.extend(
        [
            "after/steady mean",
            "after/steady p99",
            "misses/s restarted / peers (after-restart)",
            "warmup s",
            "timeouts / errors",
        ]
        .map(String::from),
    );
    let _ = writeln!(t, "| {} |", head.join(" | "));
    let _ = writeln!(t, "|{}", "---|".repeat(head.len()));
    for (i, m) in real.iter().enumerate() {
        t.push_str(&row(m, "real"));
        if let Some(s) = sims.get(i) {
            t.push_str(&row(s, "sim"));
        }
    }
    t
}

/// The phases named `after-restart*` and, for each, the node restarted last before it starts
/// (the scenario's restart faults): a rolling restart's per-node windows.
fn restart_windows(scenario: &Scenario) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for phase in scenario.phases.iter().filter(|p| p.name.starts_with("after-restart")) {
        let start_ns = i64::from(phase.start_s) * 1_000_000_000;
        let node = scenario
            .faults
            .iter()
            .filter(|f| matches!(f.kind, FaultKind::Restart { .. }) && f.at_ns < start_ns)
            .max_by_key(|f| f.at_ns)
            .and_then(|f| f.nodes.first());
        if let Some(&node) = node {
            out.push((phase.name.clone(), node as usize));
        }
    }
    out
}

/// With more than one restart window, each restarted node's misses per second against its
/// peers' in the minute after its return, real next to simulated, as a Markdown table.
fn rolling_table(scenario: &Scenario, real: &[RunMetrics], sims: &[&RunMetrics]) -> String {
    let windows = restart_windows(scenario);
    let mut t = String::new();
    if windows.len() < 2 {
        return t;
    }
    let mut head = vec!["policy".to_string(), "run".to_string()];
    head.extend(
        windows
            .iter()
            .map(|(phase, node)| format!("node {node}: misses/s / peers ({phase})")),
    );
    let _ = writeln!(t, "\n| {} |", head.join(" | "));
    let _ = writeln!(t, "|{}", "---|".repeat(head.len()));
    let line = |t: &mut String, m: &RunMetrics, source: &str| {
        let mut cells = vec![m.summary.policy.clone(), source.to_string()];
        for (phase, node) in &windows {
            cells.push(m.series.misses_against_peers(*node, phase).map_or("-".into(), |(o, p)| {
                format!("{o:.0} / {p:.0} (x{:.2})", if p > 0.0 { o / p } else { 0.0 })
            }));
        }
        let _ = writeln!(t, "| {} |", cells.join(" | "));
    };
    for (i, m) in real.iter().enumerate() {
        line(&mut t, m, "real");
        if let Some(s) = sims.get(i) {
            line(&mut t, s, "sim");
        }
    }
    t
}

/// Tail latency and time-outs per policy, real next to simulated, as a Markdown table.
fn tail_table(real: &[RunMetrics], sims: &[&RunMetrics]) -> String {
    let mut t = String::new();
    let Some(first) = real.first() else {
        return t;
    };
    let mut head = [
        "policy",
        "run",
        "p50 ms (every request)",
        "p99 ms (every request)",
        "p99.9 ms (every request)",
        "p99 ms (completed only)",
        "time-outs",
        "completed",
    ]
    .join(" | ");
    for p in &first.summary.phases {
        let _ = write!(head, " | {} p99 ms (every request)", p.name);
    }
    let cols = 8 + first.summary.phases.len();
    let _ = writeln!(t, "| {head} |");
    let _ = writeln!(t, "|{}", "---|".repeat(cols));
    let line = |t: &mut String, m: &RunMetrics, source: &str| {
        let s = &m.summary;
        let l = &s.latency_all_ms;
        let _ = write!(
            t,
            "| {} | {source} | {:.2} | {:.2} | {:.2} | {:.2} | {} | {}",
            s.policy, l.p50, l.p99, l.p999, s.latency_ms.p99, s.timeouts, s.completed
        );
        for p in &s.phases {
            let _ = write!(t, " | {:.2}", p.latency_all_ms.p99);
        }
        t.push_str(" |\n");
    };
    for (i, m) in real.iter().enumerate() {
        line(&mut t, m, "real");
        if let Some(s) = sims.get(i) {
            line(&mut t, s, "sim");
        }
    }
    t
}
