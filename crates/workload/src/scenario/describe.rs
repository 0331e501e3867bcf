//! What a scenario is, in one line generated from its values: what a report shows when
//! `--set` overrides changed the scenario, so that the page never describes the file's values
//! after the run used others.

use super::{Arrival, FaultKind, Placement, RestartCache, Scenario, StageSel};
use replica_lb_metrics::format::{thousands, trimmed as trim};
use std::fmt::Write as _;

impl Scenario {
    /// One line of the values that shape a run: cluster, consistency, load, caches, disks,
    /// NICs, time-out, length and faults (`3 nodes, RF=3, CL=QUORUM, 1,000 requests/s from 4
    /// clients (Poisson) over 1,000,000 keys, ...`).
    pub fn as_run(&self) -> String {
        let mut d = String::new();
        let c = &self.cluster;
        let _ = write!(d, "{} nodes", thousands(c.nodes as f64));
        if c.zone_names.len() > 1 {
            let _ = write!(d, " in {} zones", c.zone_names.len());
        }
        let _ = write!(d, ", RF={}", c.replication_factor);
        if c.placement == Placement::OnePerZone {
            d.push_str(" one per zone");
        }
        let _ = write!(d, ", CL={}", self.requests.consistency.as_str().to_uppercase());
        let clients = thousands(self.clients.count as f64);
        let _ = match self.clients.arrival {
            Arrival::Poisson { rate_per_s } => write!(d, ", {} requests/s from {clients} clients (Poisson)", thousands(rate_per_s)),
            Arrival::Fixed { rate_per_s } => write!(d, ", {} requests/s from {clients} clients (fixed gaps)", thousands(rate_per_s)),
            Arrival::Closed { outstanding, .. } => write!(d, ", {clients} clients with {outstanding} requests outstanding each"),
        };
        let _ = write!(d, " over {} keys", thousands(self.clients.keys.count as f64));
        if self.clients.write_fraction > 0.0 {
            let _ = write!(d, ", {:.0}% writes", self.clients.write_fraction * 100.0);
        }
        let n = &self.node;
        let _ = write!(d, "; {} CPU slots of {} per node", n.cpu_concurrency, ms(n.cpu_service.mean_ns()));
        if let Some((slots, service)) = &n.disk {
            let _ = write!(d, ", {slots} disk slots of {}", ms(service.mean_ns()));
        }
        if let Some(rows) = n.cache_rows {
            let _ = write!(d, ", a row cache of {} rows", thousands(rows as f64));
        }
        if let Some(bps) = self.network.nic_bits_per_s {
            let _ = write!(d, ", {} Gbps NICs", trim(bps / 1e9));
        }
        if let Some(z) = self.network.compression {
            let _ = write!(d, ", compression to {}", trim(z.ratio));
        }
        let _ = write!(
            d,
            "; read time-out {}; {} s measured after {} s of warm-up",
            ms(self.requests.read_timeout_ns as f64),
            thousands(self.run.duration_s as f64),
            trim(self.run.warmup_ns as f64 / 1e9)
        );
        if !self.faults.is_empty() {
            let kinds: Vec<String> = self.faults.iter().map(fault_words).collect();
            let _ = write!(d, "; faults: {}", kinds.join(", "));
        }
        d.push('.');
        d
    }

    /// What a report says the scenario is: its own description, or, when `--set` overrides
    /// edited it, the edits (with the file's values), the scenario as run ([`Self::as_run`])
    /// and then the file's description, marked as describing the unedited file. One paragraph
    /// per line.
    pub fn run_description(&self) -> String {
        if self.edits.is_empty() {
            return self.description.clone();
        }
        let edits: Vec<String> = self
            .edits
            .iter()
            .map(|e| match &e.was {
                Some(was) => format!("{} (the file: {was})", e.set),
                None => format!("{} (the file: its default)", e.set),
            })
            .collect();
        let mut d = format!("Edited for this run with --set: {}.\nAs run: {}", edits.join(", "), self.as_run());
        if !self.description.is_empty() {
            let _ = write!(
                d,
                "\nThe file's description, of the scenario before these edits: {}",
                self.description
            );
        }
        d
    }
}

/// A fault in a few words: `restart of 100 nodes from 30 s, 3 s apart`.
fn fault_words(f: &super::Fault) -> String {
    let what = match f.kind {
        FaultKind::Restart {
            cache: RestartCache::Empty,
        } => "restart".to_string(),
        FaultKind::Restart { cache: RestartCache::Kept } => "restart (cache kept)".to_string(),
        FaultKind::Pause => "pause".to_string(),
        FaultKind::Delay { added_ns } => format!("+{} delay", ms(added_ns as f64)),
        FaultKind::Slow { factor, stage } => {
            let stage = match stage {
                StageSel::Cpu => "CPU",
                StageSel::Disk => "disk",
                StageSel::All => "CPU and disk",
            };
            format!("{}x slower {stage}", trim(factor))
        }
        FaultKind::Fluctuate { factor, .. } => format!("{}x fluctuation", trim(factor)),
    };
    let nodes = match f.nodes.as_slice() {
        [one] => format!("node {one}"),
        many => format!("{} nodes", many.len()),
    };
    let mut w = format!("{what} of {nodes} at {} s", trim(f.at_ns as f64 / 1e9));
    if let Some(d) = f.duration_ns {
        let _ = write!(w, " for {} s", trim(d as f64 / 1e9));
    }
    if f.stagger_ns > 0 {
        let _ = write!(w, ", {} s apart", trim(f.stagger_ns as f64 / 1e9));
    }
    if let Some(every) = f.every_ns {
        let _ = write!(w, ", every {} s", trim(every as f64 / 1e9));
    }
    if let Some(g) = f.gate {
        let _ = write!(
            w,
            ", gate {} (within {}, window {} s, time-out {} s)",
            g.mode.name(),
            trim(g.rule.within()),
            g.window_s,
            trim(g.timeout_ns as f64 / 1e9)
        );
    }
    w
}

/// `ns` as milliseconds, without needless decimals (`10 ms`, `0.15 ms`).
fn ms(ns: f64) -> String {
    format!("{} ms", trim(ns / 1e6))
}

#[cfg(test)]
mod tests {
    use crate::scenario::{apply_overrides_noting, parse};

    const TEXT: &str = r#"
name = "t"
description = "3 nodes with 1 Gbps NICs."
[cluster]
nodes = 3
replication_factor = 3
[node]
cpu_concurrency = 4
cpu_service = { dist = "exponential", mean_us = 150 }
cache_rows = 100000
[network]
nic_gbps = 1.0
[clients]
count = 4
arrival = "poisson"
rate_per_s = 1000
keys = { pattern = "uniform", count = 1000000 }
[requests]
consistency = "quorum"
[run]
duration_s = 780
[policy]
coordinator = "naive"
[[fault]]
kind = "restart"
node = 2
at_s = 120
duration_s = 30
"#;

    #[test]
    fn a_scenario_in_one_line() {
        let s = parse(TEXT, "x").unwrap();
        assert_eq!(
            s.as_run(),
            "3 nodes, RF=3, CL=QUORUM, 1,000 requests/s from 4 clients (Poisson) over 1,000,000 keys; 4 CPU slots of 0.15 ms per node, a row cache of 100,000 rows, 1 Gbps NICs; read time-out 5000 ms; 780 s measured after 0 s of warm-up; faults: restart of node 2 at 120 s for 30 s."
        );
        assert_eq!(s.run_description(), "3 nodes with 1 Gbps NICs.");
    }

    /// Edited, the description leads with the edits and the scenario as run; the file's own
    /// words come last, marked as the unedited file's.
    #[test]
    fn an_edited_scenario_says_so() {
        let (text, edits) = apply_overrides_noting(TEXT, &["network.nic_gbps=0.65".to_string()]).unwrap();
        let mut s = parse(&text, "x").unwrap();
        s.edits = edits;
        let d = s.run_description();
        let lines: Vec<&str> = d.lines().collect();
        assert_eq!(lines[0], "Edited for this run with --set: network.nic_gbps=0.65 (the file: 1.0).");
        assert!(
            lines[1].starts_with("As run: ") && lines[1].contains("0.65 Gbps NICs") && !lines[1].contains(" 1 Gbps"),
            "{d}"
        );
        assert!(
            lines[2].starts_with("The file's description, of the scenario before these edits:"),
            "{d}"
        );
    }
}
