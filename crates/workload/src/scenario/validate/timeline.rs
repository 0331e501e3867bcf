//! The phases and the fault timeline of a scenario.

use super::*;
use replica_lb_metrics::warm_gate::{WarmRule, DEFAULT_WINDOW_S, DEFAULT_WITHIN};

pub(super) fn phases(cx: &Ctx, raw: &RawScenario, duration_s: u32) -> Res<Vec<PhaseSpec>> {
    let mut out: Vec<PhaseSpec> = Vec::new();
    for p in &raw.phase {
        let r = p.get_ref();
        if r.start_s < 0 || r.end_s <= r.start_s || r.end_s > duration_s as i64 {
            return cx.err(
                p.span(),
                format!(
                    "phase '{}' [{}, {}) s: need 0 <= start_s < end_s <= run.duration_s ({duration_s})",
                    r.name, r.start_s, r.end_s
                ),
            );
        }
        if r.name.is_empty() || out.iter().any(|q| q.name == r.name) {
            return cx.err(p.span(), format!("phase name '{}' is empty or used twice", r.name));
        }
        out.push(PhaseSpec {
            name: r.name.clone(),
            start_s: r.start_s as u32,
            end_s: r.end_s as u32,
        });
    }
    Ok(out)
}

pub(super) fn faults(cx: &Ctx, raw: &RawScenario, cluster: &Cluster, run: &RunModel) -> Res<Vec<Fault>> {
    raw.fault.iter().map(|f| fault(cx, f, cluster, run)).collect()
}

/// An error at `line`.
fn bad(line: usize, message: String) -> ScenarioError {
    ScenarioError { line: Some(line), message }
}

/// One `[[fault]]` entry, checked.
fn fault(cx: &Ctx, f: &Spanned<RawFault>, cluster: &Cluster, run: &RunModel) -> Res<Fault> {
    let earliest_s = -(run.warmup_ns as f64) / S;
    let r = f.get_ref();
    let line = cx.line(f.span().start);
    let kind_name = r.kind.get_ref().as_str();
    let positive = |v: Option<f64>, name: &str| -> Res<Option<f64>> {
        match v {
            Some(x) if !(x.is_finite() && x > 0.0) => Err(bad(line, format!("fault {kind_name}: {name} = {x} must be positive"))),
            other => Ok(other),
        }
    };
    let duration_s = positive(r.duration_s, "duration_s")?;
    let every_s = positive(r.every_s, "every_s")?;
    let stagger_s = positive(r.stagger_s, "stagger_s")?;
    if stagger_s.is_some() && kind_name == "fluctuate" {
        return Err(bad(
            line,
            "fault fluctuate: stagger_s is for the other kinds (a fluctuation steps every node at once)".into(),
        ));
    }
    let at_s = r.at_s.unwrap_or(if kind_name == "fluctuate" { earliest_s } else { 0.0 });
    if !at_s.is_finite() || at_s < earliest_s || at_s > run.duration_s as f64 {
        return Err(bad(
            line,
            format!("fault {kind_name}: at_s = {at_s} must be within [-warmup_s, duration_s]"),
        ));
    }
    let nodes = fault_nodes(r, cluster, line)?;
    let kind = fault_kind(cx, r, duration_s, line)?;
    let gate = gate(r, nodes.len(), at_s, (stagger_s, every_s), line)?;
    if let (Some(every), Some(dur)) = (every_s, duration_s) {
        if dur >= every {
            return Err(bad(
                line,
                format!("fault {kind_name}: duration_s ({dur}) must be shorter than every_s ({every})"),
            ));
        }
    }
    if let Some(every) = every_s {
        let count = (run.duration_s as f64 - at_s) / every;
        if count * nodes.len() as f64 > MAX_FAULT_ACTIONS as f64 / 2.0 {
            return Err(bad(
                line,
                format!("fault {kind_name} repeats too often (more than {MAX_FAULT_ACTIONS} actions)"),
            ));
        }
    }
    Ok(Fault {
        kind,
        nodes,
        at_ns: (at_s * S) as i64,
        duration_ns: duration_s.map(|d| (d * S) as u64),
        every_ns: every_s.map(|d| (d * S) as u64),
        stagger_ns: stagger_s.map_or(0, |d| (d * S) as u64),
        until_ns: r.until_s.map(|u| (u * S) as i64),
        gate,
        line,
    })
}

/// The nodes a fault hits: `node`, `nodes` or a `zone` (every node for a fluctuation given
/// none), each an existing node.
fn fault_nodes(r: &RawFault, cluster: &Cluster, line: usize) -> Res<Vec<u16>> {
    let kind_name = r.kind.get_ref().as_str();
    match (r.node, &r.nodes, &r.zone) {
        (Some(n), None, None) => vec![n],
        (None, Some(ns), None) => ns.clone(),
        (None, None, Some(zone)) => match cluster.zone_names.iter().position(|z| z == zone) {
            Some(z) => (0..cluster.nodes)
                .filter(|&n| cluster.node_zone[n] as usize == z)
                .map(|n| n as i64)
                .collect(),
            None => {
                return Err(bad(
                    line,
                    format!(
                        "fault {kind_name}: zone '{zone}' is not one of the cluster's: {}",
                        cluster.zone_names.join(", ")
                    ),
                ))
            }
        },
        (None, None, None) if kind_name == "fluctuate" => (0..cluster.nodes as i64).collect(),
        (None, None, None) => {
            return Err(bad(
                line,
                format!("fault {kind_name} needs node = <id>, nodes = [..] or zone = \"<name>\""),
            ))
        }
        _ => return Err(bad(line, format!("fault {kind_name}: give one of node, nodes or zone"))),
    }
    .into_iter()
    .map(|n| {
        if n < 0 || n as usize >= cluster.nodes {
            Err(bad(line, format!("node {n} does not exist: nodes are 0..{}", cluster.nodes - 1)))
        } else {
            Ok(n as u16)
        }
    })
    .collect()
}

/// A restart fault's gate (`gate`, `gate_within`, `gate_window_s`, `gate_timeout_s`),
/// checked against its `nodes` count, `at_s` and `(stagger_s, every_s)`; `None` without one.
fn gate(r: &RawFault, nodes: usize, at_s: f64, (stagger_s, every_s): (Option<f64>, Option<f64>), line: usize) -> Res<Option<Gate>> {
    let kind_name = r.kind.get_ref().as_str();
    let err = |m: String| bad(line, format!("fault {kind_name}: {m}"));
    let Some(name) = r.gate.as_deref() else {
        let given = [
            ("gate_within", r.gate_within.is_some()),
            ("gate_window_s", r.gate_window_s.is_some()),
            ("gate_timeout_s", r.gate_timeout_s.is_some()),
        ];
        return match given.iter().find(|(_, set)| *set) {
            Some((field, _)) => Err(err(format!("{field} needs gate = \"warm\" or \"watch\""))),
            None => Ok(None),
        };
    };
    let mode = match name {
        "warm" => GateMode::Warm,
        "watch" => GateMode::Watch,
        other => return Err(err(format!("gate = \"{other}\" is not one of: warm, watch"))),
    };
    if kind_name != "restart" {
        return Err(err(format!("gate = \"{name}\" is for a rolling restart (kind = \"restart\") only")));
    }
    if nodes < 2 {
        return Err(err(format!(
            "gate = \"{name}\" needs 2 nodes or more to restart one after another, got {nodes}"
        )));
    }
    match (mode, stagger_s) {
        (GateMode::Warm, Some(s)) => {
            return Err(err(format!(
                "gate = \"warm\" paces the restarts itself: drop stagger_s = {s} (or gate = \"watch\" to keep the fixed interval and record the warmth)"
            )))
        }
        (GateMode::Watch, None) => return Err(err("gate = \"watch\" needs stagger_s (the fixed interval it watches)".into())),
        _ => {}
    }
    if let Some(e) = every_s {
        return Err(err(format!("gate = \"{name}\" cannot repeat: drop every_s = {e}")));
    }
    if at_s < 0.0 {
        return Err(err(format!(
            "gate = \"{name}\" needs at_s >= 0 (it judges the measured cache counters), got {at_s}"
        )));
    }
    let within = r.gate_within.unwrap_or(DEFAULT_WITHIN);
    let rule = WarmRule::new(within).map_err(|e| err(format!("gate_{e}")))?;
    let window_s = r.gate_window_s.unwrap_or(DEFAULT_WINDOW_S as i64);
    if !(1..=MAX_GATE_WINDOW_S).contains(&window_s) {
        return Err(err(format!(
            "gate_window_s = {window_s} must be a whole number of seconds from 1 to {MAX_GATE_WINDOW_S}"
        )));
    }
    let timeout_s = r.gate_timeout_s.unwrap_or(DEFAULT_GATE_TIMEOUT_S);
    if !(timeout_s.is_finite() && timeout_s > 0.0 && timeout_s <= MAX_GATE_WINDOW_S as f64 * 10.0) {
        return Err(err(format!(
            "gate_timeout_s = {timeout_s} must be a number of seconds above 0, at most {}",
            MAX_GATE_WINDOW_S * 10
        )));
    }
    Ok(Some(Gate {
        mode,
        rule,
        window_s: window_s as u32,
        timeout_ns: (timeout_s * S) as u64,
    }))
}

/// What a fault does, with the settings its kind needs.
fn fault_kind(cx: &Ctx, r: &RawFault, duration_s: Option<f64>, line: usize) -> Res<FaultKind> {
    let kind_name = r.kind.get_ref().as_str();
    if r.cache.is_some() && kind_name != "restart" {
        return Err(bad(
            line,
            format!("fault {kind_name}: cache is a restart's (what the node comes back with)"),
        ));
    }
    Ok(match kind_name {
        "restart" | "pause" => {
            if duration_s.is_none() {
                return Err(bad(
                    line,
                    format!("fault {kind_name} needs duration_s (how long the node is down/frozen)"),
                ));
            }
            if kind_name == "restart" {
                let cache = match r.cache.as_deref() {
                    None | Some("empty") => RestartCache::Empty,
                    Some("kept") => RestartCache::Kept,
                    Some(o) => return Err(bad(line, format!("fault restart: cache = \"{o}\" is not one of: empty, kept"))),
                };
                FaultKind::Restart { cache }
            } else {
                FaultKind::Pause
            }
        }
        "delay" => match r.added_delay_us {
            Some(d) if d.is_finite() && d > 0.0 && d < 1e9 => FaultKind::Delay { added_ns: (d * US) as u64 },
            _ => return Err(bad(line, "fault delay needs added_delay_us > 0".into())),
        },
        "slow" => {
            let factor = match r.factor {
                Some(f) if f.is_finite() && f > 0.0 && f <= 1e4 => f,
                _ => return Err(bad(line, "fault slow needs factor in (0, 10000]".into())),
            };
            let stage = match r.stage.as_deref() {
                None | Some("all") => StageSel::All,
                Some("cpu") => StageSel::Cpu,
                Some("disk") => StageSel::Disk,
                Some(o) => return Err(bad(line, format!("stage '{o}' is not one of: cpu, disk, all"))),
            };
            FaultKind::Slow { factor, stage }
        }
        "fluctuate" => fluctuate(r, line)?,
        other => {
            return Err(cx.at(
                &r.kind,
                format!("fault kind '{other}' is not one of: restart, pause, delay, slow, fluctuate"),
            ));
        }
    })
}

/// A fluctuation with its settings (`interval_ms`, `probability`, `factor`), checked.
fn fluctuate(r: &RawFault, line: usize) -> Res<FaultKind> {
    let (Some(interval_ms), Some(probability), Some(factor)) = (r.interval_ms, r.probability, r.factor) else {
        return Err(bad(line, "fault fluctuate needs interval_ms, probability and factor".into()));
    };
    let valid = interval_ms >= 1.0 && interval_ms.is_finite() && (0.0..=1.0).contains(&probability) && factor > 0.0 && factor <= 1e4;
    if !valid {
        return Err(bad(
            line,
            "fault fluctuate: interval_ms >= 1, probability in [0, 1], factor in (0, 10000]".into(),
        ));
    }
    Ok(FaultKind::Fluctuate {
        interval_ns: (interval_ms * MS) as u64,
        probability,
        factor,
    })
}
