//! A scenario as a real run: the plan [`super::run_real`] carries out, built from the same
//! scenario model the simulator runs ([`replica_lb_workload::scenario`]), with the same fault timeline
//! ([`replica_lb_workload::faults`]). What a real cluster cannot do is refused with one line naming the
//! setting; what only the simulator models is listed as a note.

use super::{FaultAction, FaultStep, PolicyRun, RealPlan};
use replica_lb_loadgen::Arrivals;
use replica_lb_node::NodeConfig;
use replica_lb_workload::faults::{Action, FaultPlan};
use replica_lb_workload::scenario::{Arrival, FaultKind, Routing, Speculative, StageSel};
use replica_lb_workload::{RunSpec, Scenario};

/// Turns a scenario into a real run's plan, refusing what a real cluster cannot do (one line,
/// naming the setting). Settings that only the simulator models are listed in `notes`.
pub fn real_plan(sc: &Scenario, notes: &mut Vec<String>) -> Result<RealPlan, String> {
    if sc.cluster.routing != Routing::Coordinator {
        return Err("cluster.routing = \"direct\" cannot run on the real cluster (its clients always go through a coordinator)".into());
    }
    if !sc.clients.token_aware {
        return Err("clients.token_aware = false cannot run on the real cluster (its client is token-aware)".into());
    }
    if sc.requests.speculative != Speculative::None {
        return Err("requests.speculative_retry cannot run on the real cluster (its coordinators do not retry)".into());
    }
    // The load generator writes every value at the scenario's mean size (`requests.value_bytes`).
    let value_bytes = sc.requests.value_bytes.0.mean_ns().round().max(1.0) as usize;
    if !matches!(sc.requests.value_bytes.0, replica_lb_workload::Dist::Constant { .. }) {
        notes.push(format!(
            "requests.value_bytes varies in the simulator; the real run writes every value at its mean, {value_bytes} bytes"
        ));
    }
    let mut base = NodeConfig {
        replication_factor: sc.cluster.replication_factor as u32,
        // The same ring as the simulator's: the same key has the same replicas on both.
        vnodes: sc.cluster.vnodes,
        placement: sc.cluster.placement.name().into(),
        cache_rows: sc.node.cache_rows.unwrap_or(0) as u64,
        hit_rate_tick_ms: (sc.feedback.tick_ns / 1_000_000).max(1),
        hit_rate_window_ms: (sc.feedback.window_ns / 1_000_000).max(1),
        ..NodeConfig::default()
    };
    let timeout_ms = u32::try_from((sc.requests.read_timeout_ns / 1_000_000).max(1)).unwrap_or(u32::MAX);
    base.read_timeout_ms = timeout_ms;
    base.write_timeout_ms = timeout_ms;
    match &sc.node.disk {
        None => base.slow_disk.enabled = false,
        Some((concurrency, dist)) => {
            use replica_lb_workload::dist::Dist;
            let (name, mean_ns, sigma) = match *dist {
                Dist::Constant { mean_ns } => ("constant", mean_ns, None),
                Dist::Exponential { mean_ns } => ("exponential", mean_ns, None),
                Dist::LogNormal { mean_ns, sigma, .. } => ("lognormal", mean_ns, Some(sigma)),
                Dist::Pareto { .. } => {
                    return Err(
                        "node.disk_service dist = \"pareto\" cannot run on the real cluster (constant, exponential or lognormal)".into(),
                    )
                }
            };
            base.slow_disk.enabled = true;
            base.slow_disk.concurrency = *concurrency;
            base.slow_disk.service_time_mean_us = (mean_ns / 1000.0).round().max(1.0) as u64;
            base.slow_disk.distribution = name.into();
            if let Some(s) = sigma {
                base.slow_disk.lognormal_sigma = s;
            }
        }
    }
    notes
        .push("node CPU (cpu_concurrency, cpu_service, coordinator_service) and the network are real on this machine, not modelled".into());
    if sc.cluster.zone_names.len() > 1 {
        notes.push(format!(
            "the {} zones are gossiped to the policies and place the replicas, but every node is on loopback: network.one_way_us between zones is not applied",
            sc.cluster.zone_names.len()
        ));
    }
    if sc.node.extra_delay.is_some() {
        notes.push("node.extra_delay is not applied on the real cluster".into());
    }
    if sc.requests.multi.is_some() {
        notes.push(
            "requests.multi is the simulator's: the real run sends single-key reads (bench --multi K --multi-mode in|parallel sends multi-key requests)"
                .into(),
        );
    }
    if sc.clients.count > 1 {
        notes.push(format!(
            "the {} clients are one load generator at the same total rate",
            sc.clients.count
        ));
    }
    let (rate_per_s, arrivals) = match sc.clients.arrival {
        Arrival::Poisson { rate_per_s } => (rate_per_s, Arrivals::Poisson),
        Arrival::Fixed { rate_per_s } => (rate_per_s, Arrivals::Uniform),
        Arrival::Closed { .. } => return Err("clients.arrival = \"closed\" cannot run on the real cluster (its load is open-loop)".into()),
    };
    // The load generator chooses keys with the simulator's own key model.
    let keys = sc.clients.keys;
    // Refuse what real processes cannot do, naming the fault's line; then expand the timeline
    // with the simulator's own expansion and map each primitive to a process-level step.
    for f in &sc.faults {
        let line = f.line;
        if f.at_ns < 0 {
            return Err(format!(
                "fault at line {line}: the real cluster applies faults from t = 0 (at_s >= 0)"
            ));
        }
        match f.kind {
            FaultKind::Slow { stage, .. } if stage != StageSel::Disk => {
                return Err(format!(
                    "fault at line {line}: kind = \"slow\" runs on the real cluster only with stage = \"disk\" (its CPU is real)"
                ));
            }
            FaultKind::Slow { .. } if sc.node.disk.is_none() => {
                return Err(format!(
                    "fault at line {line}: a slow disk needs node.disk_concurrency and node.disk_service"
                ));
            }
            FaultKind::Fluctuate { .. } => {
                return Err(format!("fault at line {line}: kind = \"fluctuate\" cannot run on the real cluster"));
            }
            _ => {}
        }
    }
    let end_ns = sc.run.duration_s as u64 * 1_000_000_000;
    let faults: Vec<FaultStep> = FaultPlan::new(sc, 0, end_ns)
        .actions
        .iter()
        .filter(|a| a.t_ns < end_ns)
        .map(|a| FaultStep {
            at_s: a.t_ns as f64 / 1e9,
            node: a.node as u32,
            action: match a.action {
                Action::Down => FaultAction::Kill,
                Action::Up => FaultAction::Start,
                Action::Pause => FaultAction::Stop,
                Action::Resume => FaultAction::Cont,
                Action::SetDelay(ns) => FaultAction::DelayMs(u32::try_from((ns as f64 / 1e6).round() as u64).unwrap_or(u32::MAX)),
                // Only disk slow-downs pass the checks above.
                Action::SetSlow { disk, .. } => FaultAction::DiskFactor(disk),
            },
        })
        .collect();
    Ok(RealPlan {
        name: sc.name.clone(),
        nodes: sc.cluster.nodes as u32,
        node_zones: sc.cluster.node_zone.iter().map(|&z| u32::from(z)).collect(),
        base,
        key_count: keys.count,
        keys,
        value_bytes,
        rate_per_s,
        arrivals,
        read_fraction: 1.0 - sc.clients.write_fraction,
        cl: sc.requests.consistency,
        warmup_cl: sc.requests.warmup_consistency,
        warmup_s: sc.run.warmup_ns as f64 / 1e9,
        duration_s: sc.run.duration_s,
        phases: sc.phases.clone(),
        faults,
        timeout_ms,
        seed: sc.seed,
        nic_bits_per_s: sc.network.nic_bits_per_s,
    })
}

/// The policies of one `--policy` item on the real cluster (the load generator's client is
/// the item's, token-aware random unless it names another).
pub fn policy_run(spec: &RunSpec) -> Result<PolicyRun, String> {
    if spec.ideal {
        return Err("--policy: 'ideal' is a simulator bound, not a policy a real cluster can run".into());
    }
    Ok(PolicyRun {
        label: spec.label.clone(),
        coordinator: spec.coordinator.clone(),
        client: spec.client.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCENARIO: &str = include_str!("../../../scenarios/cold-restart-real.toml");

    #[test]
    fn the_real_scenario_becomes_a_plan() {
        let sc = replica_lb_workload::parse(SCENARIO, "cold-restart-real").unwrap();
        let mut notes = Vec::new();
        let plan = real_plan(&sc, &mut notes).unwrap();
        assert_eq!(plan.nodes, 3);
        assert_eq!(plan.base.replication_factor, 3);
        assert!(plan.base.slow_disk.enabled);
        assert_eq!(plan.cl, replica_lb_policy::ConsistencyLevel::Quorum);
        assert_eq!(plan.warmup_cl, replica_lb_policy::ConsistencyLevel::All);
        let actions: Vec<FaultAction> = plan.faults.iter().map(|f| f.action).collect();
        assert_eq!(actions, vec![FaultAction::Kill, FaultAction::Start]);
        assert!(plan.faults[0].at_s < plan.faults[1].at_s);
    }

    #[test]
    fn what_a_real_cluster_cannot_do_is_refused() {
        let base = SCENARIO.to_string();
        let bad = [
            ("routing = \"coordinator\"", "routing = \"direct\"", "routing"),
            ("arrival = \"poisson\"", "arrival = \"closed\"\noutstanding = 4", "closed"),
        ];
        for (from, to, word) in bad {
            assert!(base.contains(from), "{from}");
            let text = base.replace(from, to);
            let Ok(sc) = replica_lb_workload::parse(&text, "x") else { continue };
            let err = real_plan(&sc, &mut Vec::new()).unwrap_err();
            assert!(err.contains(word), "{err}");
        }
    }

    /// The nodes of a real run place keys with the simulator's ring: same zones, tokens and
    /// placement, so every key has the same replicas on both.
    #[test]
    fn the_real_nodes_place_keys_as_the_simulator_does() {
        use replica_lb_workload::placement::{Member, Ring};
        let text = include_str!("../../../scenarios/zones-gc-pause.toml");
        let mut sc = replica_lb_workload::parse(text, "zones-gc-pause").unwrap();
        sc.faults.clear(); // its CPU slow-down is the simulator's only
        let plan = real_plan(&sc, &mut Vec::new()).unwrap();
        let ring_of = |zones: &[u32], vnodes: u32, rf: usize, placement| {
            let members: Vec<Member> = zones
                .iter()
                .enumerate()
                .map(|(i, &zone)| Member {
                    id: replica_lb_policy::NodeId(i as u16),
                    zone,
                })
                .collect();
            Ring::new(&members, vnodes, rf, placement)
        };
        let sim_zones: Vec<u32> = sc.cluster.node_zone.iter().map(|&z| u32::from(z)).collect();
        let sim = ring_of(&sim_zones, sc.cluster.vnodes, sc.cluster.replication_factor, sc.cluster.placement);
        let real = ring_of(
            &plan.node_zones,
            plan.base.vnodes,
            plan.base.replication_factor as usize,
            plan.base.placement(),
        );
        assert_eq!(sim.groups(), 12);
        for k in 0..10_000u64 {
            let (set, group) = real.replicas_of_key(k.to_string().as_bytes());
            assert_eq!(set.as_slice(), sim.replicas(sim.group_of_index(k)).as_slice(), "key {k}");
            assert_eq!(group, sim.group_of_index(k));
        }
    }
}
