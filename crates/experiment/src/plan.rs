//! A scenario as a real run: the plan [`super::run_real`] carries out, built from the same
//! scenario model the simulator runs ([`replica_lb_workload::scenario`]), with the same fault timeline
//! ([`replica_lb_workload::faults`]). What a real cluster cannot do is refused with one line naming the
//! setting; what only the simulator models is listed as a note.

use replica_lb_loadgen::Arrivals;
use replica_lb_metrics::PhaseSpec;
use replica_lb_node::NodeConfig;
use replica_lb_policy::{ConsistencyLevel, PolicyChoice};
use replica_lb_workload::faults::{Action, FaultPlan};
use replica_lb_workload::scenario::{Arrival, FaultKind, RestartCache, Routing, Speculative, StageSel};
use replica_lb_workload::{RunSpec, Scenario};

/// What a fault step does to one node.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FaultAction {
    /// kill -9 (a crash: the cache is lost, the data stays).
    Kill,
    /// Start the node again from its recorded config (an empty cache).
    Start,
    /// SIGSTOP (a pause begins).
    Stop,
    /// SIGCONT (the pause ends).
    Cont,
    /// Delay every replica read reply by this many ms (0 clears).
    DelayMs(u32),
    /// Multiply the emulated disk's service times by this factor (1 = as configured).
    DiskFactor(f64),
}

/// One step of the fault timeline.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultStep {
    /// When, seconds since the start of measurement.
    pub at_s: f64,
    /// Which node.
    pub node: u32,
    /// What.
    pub action: FaultAction,
}

impl FaultStep {
    /// The step as a chart marker's label, in the simulator's words: `node 2 down`, `node 2
    /// up`, `node 1 paused`, `node 1 resumed`, `node 1 delay 10 ms`, `node 1 disk x5`.
    pub fn marker_label(&self) -> String {
        let id = self.node;
        match self.action {
            FaultAction::Kill => format!("node {id} down"),
            FaultAction::Start => format!("node {id} up"),
            FaultAction::Stop => format!("node {id} paused"),
            FaultAction::Cont => format!("node {id} resumed"),
            FaultAction::DelayMs(ms) => format!("node {id} delay {ms} ms"),
            FaultAction::DiskFactor(f) => format!("node {id} disk x{f}"),
        }
    }
}

/// What a real run does (the CLI builds it from a scenario file).
#[derive(Clone, Debug)]
pub struct RealPlan {
    /// Scenario name.
    pub name: String,
    /// Nodes in the cluster.
    pub nodes: u32,
    /// Each node's zone (the scenario's `cluster.zones`).
    pub node_zones: Vec<u32>,
    /// Settings every node shares (RF, cache, slow disk, tracker, time-outs); the policy is set
    /// per run.
    pub base: NodeConfig,
    /// Keys `0..key_count` are written before the run.
    pub key_count: u64,
    /// Which keys requests go to.
    pub keys: replica_lb_workload::KeySpec,
    /// Size of each value, bytes.
    pub value_bytes: usize,
    /// Requests per second (open loop).
    pub rate_per_s: f64,
    /// Arrival process.
    pub arrivals: Arrivals,
    /// Share of reads (the rest are writes).
    pub read_fraction: f64,
    /// Consistency level of measured requests.
    pub cl: ConsistencyLevel,
    /// Consistency level during warm-up.
    pub warmup_cl: ConsistencyLevel,
    /// Warm-up length, seconds (0 = none).
    pub warmup_s: f64,
    /// Measured seconds.
    pub duration_s: u32,
    /// Named phases.
    pub phases: Vec<PhaseSpec>,
    /// The fault timeline, sorted by time (gated rolling restarts apart).
    pub faults: Vec<FaultStep>,
    /// The gated rolling restarts (a restart fault with a `gate`), paced by the run itself.
    pub rolls: Vec<RealRoll>,
    /// Per-request time-out, ms.
    pub timeout_ms: u32,
    /// Seed of the load generator.
    pub seed: u64,
    /// Each node's NIC speed, bits per second in each direction (`network.nic_gbps`), for the
    /// busiest second's utilisation; `None`: not given (utilisation is then 0).
    pub nic_bits_per_s: Option<f64>,
}

pub use crate::rolling::RealRoll;

/// The scenario's gated rolling restarts as real ones: `warm` waits for warmth (the time-out
/// a ceiling), `watch` keeps the fixed stagger between kills and only records warmth.
fn rolls(sc: &Scenario) -> Vec<RealRoll> {
    use crate::rolling::{Pace, RollingPlan};
    use replica_lb_workload::scenario::GateMode;
    sc.faults
        .iter()
        .filter_map(|f| {
            let gate = f.gate?;
            let pace = match gate.mode {
                GateMode::Warm => Pace::Warm {
                    timeout: std::time::Duration::from_nanos(gate.timeout_ns),
                },
                GateMode::Watch => Pace::Stagger {
                    every: std::time::Duration::from_nanos(f.stagger_ns),
                },
            };
            Some(RealRoll {
                nodes: f.nodes.iter().map(|&n| u32::from(n)).collect(),
                at_s: f.at_ns as f64 / 1e9,
                plan: RollingPlan {
                    pace,
                    rule: gate.rule,
                    window: std::time::Duration::from_secs(u64::from(gate.window_s)),
                    down_s: f.duration_ns.unwrap_or(0) as f64 / 1e9,
                },
            })
        })
        .collect()
}

/// The seed of a run's unmeasured warm-up: not the measured run's, whose keys would otherwise
/// repeat the warm-up's in the same order (every one of them freshly cached).
pub fn warmup_seed(seed: u64) -> u64 {
    seed ^ 0x5eed
}

/// The policies of one run, chosen and checked once.
#[derive(Clone, Debug)]
pub struct PolicyRun {
    /// The `--policy` item (summary's `policy`).
    pub label: String,
    /// The coordinator policy every node runs.
    pub coordinator: PolicyChoice,
    /// The load generator's client policy (token-aware `random`, as the seeds' driver,
    /// unless the item names another).
    pub client: PolicyChoice,
}

/// Turns a scenario into a real run's plan, refusing what a real cluster cannot do (one line,
/// naming the setting). Settings that only the simulator models are listed in `notes`.
pub fn real_plan(sc: &Scenario, notes: &mut Vec<String>) -> Result<RealPlan, String> {
    check_runnable(sc)?;
    let value_bytes = value_bytes(sc, notes);
    let timeout_ms = u32::try_from((sc.requests.read_timeout_ns / 1_000_000).max(1)).unwrap_or(u32::MAX);
    let base = node_config(sc, timeout_ms)?;
    note_unmodelled(sc, notes);
    let (rate_per_s, arrivals) = arrivals(sc)?;
    // The load generator chooses keys with the simulator's own key model.
    let keys = sc.clients.keys;
    // Refuse what real processes cannot do, naming the fault's line; then expand the timeline
    // with the simulator's own expansion and map each primitive to a process-level step.
    check_faults(sc)?;
    let faults = fault_steps(sc);
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
        rolls: rolls(sc),
        timeout_ms,
        seed: sc.seed,
        nic_bits_per_s: sc.network.nic_bits_per_s,
    })
}

/// Refuses what the real cluster's clients and coordinators cannot do: direct routing, a
/// client that is not token-aware, speculative retries.
fn check_runnable(sc: &Scenario) -> Result<(), String> {
    if sc.cluster.routing != Routing::Coordinator {
        return Err("cluster.routing = \"direct\" cannot run on the real cluster (its clients always go through a coordinator)".into());
    }
    if !sc.clients.token_aware {
        return Err("clients.token_aware = false cannot run on the real cluster (its client is token-aware)".into());
    }
    if sc.requests.speculative != Speculative::None {
        return Err("requests.speculative_retry cannot run on the real cluster (its coordinators do not retry)".into());
    }
    Ok(())
}

/// The value size the load generator writes: the scenario's mean (`requests.value_bytes`),
/// with a note when the simulator's varies.
fn value_bytes(sc: &Scenario, notes: &mut Vec<String>) -> usize {
    // The load generator writes every value at the scenario's mean size (`requests.value_bytes`).
    let value_bytes = sc.requests.value_bytes.0.mean_ns().round().max(1.0) as usize;
    if !matches!(sc.requests.value_bytes.0, replica_lb_workload::Dist::Constant { .. }) {
        notes.push(format!(
            "requests.value_bytes varies in the simulator; the real run writes every value at its mean, {value_bytes} bytes"
        ));
    }
    value_bytes
}

/// Every node's configuration: the simulator's ring, cache, feedback, time-outs
/// (`timeout_ms`) and emulated disk.
fn node_config(sc: &Scenario, timeout_ms: u32) -> Result<NodeConfig, String> {
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
    Ok(base)
}

/// Notes what the real run does not model as the simulator does (CPU, zones' delays, extra
/// delay, multi-key requests, several clients).
fn note_unmodelled(sc: &Scenario, notes: &mut Vec<String>) {
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
}

/// The open loop's rate and arrivals; a closed loop is refused.
fn arrivals(sc: &Scenario) -> Result<(f64, Arrivals), String> {
    Ok(match sc.clients.arrival {
        Arrival::Poisson { rate_per_s } => (rate_per_s, Arrivals::Poisson),
        Arrival::Fixed { rate_per_s } => (rate_per_s, Arrivals::Uniform),
        Arrival::Closed { .. } => return Err("clients.arrival = \"closed\" cannot run on the real cluster (its load is open-loop)".into()),
    })
}

/// Refuses a restart with a kept cache (`cache = "kept"`) on the node cluster, whose nodes
/// keep their cache in memory only and come back empty.
pub fn refuse_kept_caches(sc: &Scenario) -> Result<(), String> {
    match sc.faults.iter().find(|f| matches!(f.kind, FaultKind::Restart { cache: RestartCache::Kept })) {
        Some(f) => Err(format!(
            "fault at line {}: cache = \"kept\" cannot run on the node cluster (its nodes come back with an empty cache); on Cassandra it is [cassandra] row_cache_save_period_s",
            f.line
        )),
        None => Ok(()),
    }
}

/// Refuses a fault real processes cannot apply, naming its line.
fn check_faults(sc: &Scenario) -> Result<(), String> {
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
    Ok(())
}

/// The scenario's fault timeline, expanded by the simulator's own expansion, as process-level
/// steps within the run.
fn fault_steps(sc: &Scenario) -> Vec<FaultStep> {
    let end_ns = sc.run.duration_s as u64 * 1_000_000_000;
    // A gated rolling restart is paced by the run (`rolls`), not laid out in advance.
    let mut ungated = sc.clone();
    ungated.faults.retain(|f| f.gate.is_none());
    FaultPlan::new(&ungated, 0, end_ns)
        .actions
        .iter()
        .filter(|a| a.t_ns < end_ns)
        .map(|a| FaultStep {
            at_s: a.t_ns as f64 / 1e9,
            node: a.node as u32,
            action: match a.action {
                Action::Down { .. } => FaultAction::Kill,
                Action::Up => FaultAction::Start,
                Action::Pause => FaultAction::Stop,
                Action::Resume => FaultAction::Cont,
                Action::SetDelay(ns) => FaultAction::DelayMs(u32::try_from((ns as f64 / 1e6).round() as u64).unwrap_or(u32::MAX)),
                // Only disk slow-downs pass the checks above.
                Action::SetSlow { disk, .. } => FaultAction::DiskFactor(disk),
            },
        })
        .collect()
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
