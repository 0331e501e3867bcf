//! The replica-lb plug-in for Cassandra (`java/hwlb-snitch`): the coordinator policies, as a
//! snitch that wraps GossipingPropertyFileSnitch (docs/cassandra-hwlb.md). This module builds
//! its jar with Maven from the repository's sources on first use (cached by a hash of the
//! sources), makes the node settings that install it and switches it at run time. The
//! policies ([`CoordinatorPolicy`]):
//! - `dynamic-snitch`: Cassandra as shipped. A cluster started with it runs no plug-in at all;
//!   on a cluster with the plug-in, the plug-in hands the read path to a fresh
//!   DynamicEndpointSnitch of Cassandra's own (default settings) and stays out of it;
//! - `naive`: the inner snitch's order (the coordinator first), no dynamic snitch: the seeds'
//!   "naive" coordinator;
//! - `hwlb`: heat-weighted load balancing;
//! - `unified`: HWLB's draw, passing over slow or silent replicas.
//!
//! With the plug-in every node measures and gossips its hit rate (node-wide and per table: the
//! plug-in's query handler is installed too) whatever the policy, so every run reports the same
//! counters. The node's `dynamic_snitch` setting stays as shipped (on): the
//! plug-in takes Cassandra's dynamic snitch out of the path itself for its own policies.

use super::config::NodeSettings;
use super::dist;
use std::path::{Path, PathBuf};

/// The snitch class the plug-in provides.
pub const SNITCH_CLASS: &str = "io.replicalb.cassandra.hwlb.HwlbSnitch";

pub use super::config::POLICY_PROPERTY;
pub use super::coordinator::CoordinatorPolicy;

/// The plug-in's query handler: it tells the snitch which table each read reads, so reads are
/// planned with their own table's hit rates (without it, node-wide rates).
pub const QUERY_HANDLER_CLASS: &str = "io.replicalb.cassandra.hwlb.HwlbQueryHandler";

/// Cassandra's system property naming the query handler of native-protocol queries.
pub const QUERY_HANDLER_PROPERTY: &str = "cassandra.custom_query_handler_class";

/// The plug-in's knobs a cluster sets at start (the rest keep the published defaults).
#[derive(Clone, Debug, PartialEq)]
pub struct PluginSettings {
    /// Which policy the coordinators start with.
    pub policy: CoordinatorPolicy,
    /// The hit-rate tracker's tick, ms (published: 10,000).
    pub tick_ms: u64,
    /// Its moving-average window, ms (published: 60,000).
    pub window_ms: u64,
    /// The consistency level reads use (the snitch is not told it; see the plug-in's docs).
    pub read_cl: String,
    /// Parameters the plug-in shares with the Rust policies (`hwlb`'s [`PLUGIN_PARAMS`],
    /// `unified`'s [`UNIFIED_PLUGIN_PARAMS`]), as system properties.
    pub params: Vec<(String, String)>,
}

/// The `hwlb` parameters the plug-in takes (the rest are the Rust policy's only).
pub const PLUGIN_PARAMS: [&str; 4] = ["hit_rate_cap", "min_spread", "stale_after_ms", "stale_rate"];

/// The `unified` parameters the plug-in's `unified` takes, with the Rust coordinator's meaning
/// (the rest of `unified`'s are its client side's, which the plug-in has no use for).
pub const UNIFIED_PLUGIN_PARAMS: [&str; 4] = ["warmup_reads", "warmup_ramp_s", "overdue_factor", "heat_weight"];

impl PluginSettings {
    /// The published tracker, reads at QUORUM.
    pub fn new(policy: CoordinatorPolicy) -> Self {
        PluginSettings {
            policy,
            tick_ms: 10_000,
            window_ms: 60_000,
            read_cl: "QUORUM".into(),
            params: Vec::new(),
        }
    }

    /// Takes over `hwlb` parameter overrides (already checked against the Rust policy's
    /// declared parameters); one the plug-in does not implement is refused, naming it.
    pub fn with_params(mut self, overrides: &replica_lb_policy::ParamTable) -> Result<Self, String> {
        for (name, value) in overrides {
            if !PLUGIN_PARAMS.contains(&name.as_str()) {
                return Err(format!(
                    "hwlb parameter '{name}' is the simulator's and the node cluster's only; inside Cassandra the plug-in takes {}",
                    PLUGIN_PARAMS.join(", ")
                ));
            }
            self.params.push((name.clone(), param_text(value)));
        }
        Ok(self)
    }

    /// Takes over the `unified` overrides the plug-in's `unified` shares with the Rust
    /// coordinator ([`UNIFIED_PLUGIN_PARAMS`]), so that a scenario's
    /// `[policy.params.unified] warmup_reads` sets the simulator's and the plug-in's alike.
    pub fn with_unified_params(mut self, overrides: &replica_lb_policy::ParamTable) -> Self {
        for (name, value) in overrides.iter().filter(|(n, _)| UNIFIED_PLUGIN_PARAMS.contains(&n.as_str())) {
            self.params.push((name.clone(), param_text(value)));
        }
        self
    }

    /// Checks the values, naming a bad one and what is allowed.
    pub fn validate(&self) -> Result<(), String> {
        if !(100..=3_600_000).contains(&self.tick_ms) {
            return Err(format!("hit-rate tick {} ms: must be in [100, 3600000]", self.tick_ms));
        }
        if self.window_ms < self.tick_ms || self.window_ms > 86_400_000 {
            return Err(format!(
                "hit-rate window {} ms: must be at least the tick ({} ms) and at most 86400000",
                self.window_ms, self.tick_ms
            ));
        }
        const LEVELS: [&str; 7] = ["ONE", "TWO", "THREE", "QUORUM", "LOCAL_ONE", "LOCAL_QUORUM", "ALL"];
        if !LEVELS.contains(&self.read_cl.as_str()) {
            return Err(format!("read CL '{}': must be one of {}", self.read_cl, LEVELS.join(", ")));
        }
        Ok(())
    }

    /// `base` with the plug-in installed: its jar on the classpath, its snitch, its query
    /// handler (per-table hit rates) and its system properties.
    pub fn install(&self, mut base: NodeSettings, jar: PathBuf) -> Result<NodeSettings, String> {
        self.validate()?;
        base.snitch = SNITCH_CLASS.into();
        base.extra_classpath.push(jar);
        base.system_properties.extend([
            format!("{QUERY_HANDLER_PROPERTY}={QUERY_HANDLER_CLASS}"),
            format!("{POLICY_PROPERTY}={}", self.policy.as_str()),
            format!("replica_lb.hwlb.tick_ms={}", self.tick_ms),
            format!("replica_lb.hwlb.window_ms={}", self.window_ms),
            format!("replica_lb.hwlb.read_cl={}", self.read_cl),
        ]);
        base.system_properties
            .extend(self.params.iter().map(|(name, value)| format!("replica_lb.hwlb.{name}={value}")));
        Ok(base)
    }
}

/// A parameter's value as the plug-in parses it from a system property.
fn param_text(value: &replica_lb_policy::ParamValue) -> String {
    match value {
        replica_lb_policy::ParamValue::Int(v) => v.to_string(),
        replica_lb_policy::ParamValue::Float(v) => v.to_string(),
        replica_lb_policy::ParamValue::Bool(v) => v.to_string(),
        replica_lb_policy::ParamValue::Text(v) => v.clone(),
    }
}

/// Switches the plug-in of the cluster in `dir` to `policy` at run time: every running node
/// over CQL (the plug-in's writable settings table), and the cluster file, so that a node
/// started again comes back with it. Nodes that do not answer keep their setting until they
/// restart.
/// A cluster without the plug-in runs Cassandra as shipped: switching it to `dynamic-snitch`
/// changes nothing, any other policy is refused (the plug-in is installed at start).
pub fn switch(dir: &Path, policy: CoordinatorPolicy) -> Result<(), String> {
    let mut c = super::CassandraCluster::load(dir)?;
    if c.coordinator_policy.is_none() {
        return match policy {
            CoordinatorPolicy::DynamicSnitch => Ok(()),
            _ => Err(format!(
                "the cluster in {} runs Cassandra as shipped, without the replica-lb plug-in; to run {} start it with `cluster up --engine cassandra --coordinator-policy {}`",
                dir.display(),
                policy.as_str(),
                policy.as_str()
            )),
        };
    }
    c.record_coordinator_policy(dir, policy)?;
    let (rt, observer) = plugin_observer(&c)?;
    rt.block_on(observer.set_policy(policy.as_str()))
}

/// A runtime and an observer of every node's plug-in, for a command that runs once.
fn plugin_observer(c: &super::CassandraCluster) -> Result<(tokio::runtime::Runtime, super::observe::Observer), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let observer = rt.block_on(super::observe::Observer::connect(
        c.nodes.len() as u32,
        super::cql::KEYSPACE,
        super::cql::TABLE,
        super::observe::Source::Plugin,
    ))?;
    Ok((rt, observer))
}

/// What one node's plug-in reports, for `cluster status`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PluginState {
    /// The coordinator policy the node runs (`dynamic-snitch`, `naive`, `hwlb`, `unified`).
    pub policy: String,
    /// The hit rate it measures and gossips.
    pub hit_rate: f64,
    /// Reads it coordinated since it started.
    pub reads_coordinated: u64,
    /// Hits and misses of the cache it measures since it started.
    pub cache_hits: u64,
    /// See `cache_hits`.
    pub cache_misses: u64,
}

/// Each node of cluster `c`'s plug-in state, `None` for a node that does not answer (down,
/// paused, starting); an error if the cluster runs without the plug-in or no node answers.
pub fn states(c: &super::CassandraCluster) -> Result<Vec<Option<PluginState>>, String> {
    if c.coordinator_policy.is_none() {
        return Err("the cluster runs without the replica-lb plug-in".into());
    }
    let (rt, observer) = plugin_observer(c)?;
    rt.block_on(async {
        let mut out = Vec::with_capacity(c.nodes.len());
        for n in &c.nodes {
            let Ok(policy) = observer.setting(n.id, "policy").await else {
                out.push(None);
                continue;
            };
            out.push(observer.counters(n.id).await.ok().map(|k| PluginState {
                policy,
                hit_rate: k.hit_rate,
                reads_coordinated: k.coordinated,
                cache_hits: k.cache_hits,
                cache_misses: k.cache_misses,
            }));
        }
        Ok(out)
    })
}

/// The plug-in's Maven project.
pub fn project_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../java/hwlb-snitch")
}

/// The policies' Java core (`java/core`), which the plug-in is built with: its HWLB math is
/// bundled into the plug-in's one jar.
pub fn core_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../java/core")
}

/// The plug-in's jar, built with Maven on first use (and after its sources or the core's
/// change; the core is installed first), cached beside Cassandra's jars. It holds the core's
/// classes too, so it is the one jar Cassandra needs. `progress` hears what happens.
pub fn jar(progress: &mut dyn FnMut(&str)) -> Result<PathBuf, String> {
    let project = dist::MavenProject {
        what: "the replica-lb plug-in for Cassandra",
        dir: project_dir(),
        artifact: "hwlb-snitch",
        cache: dist::cache_dir(&dist::version()?).join("plugin"),
        dependencies: false,
    };
    Ok(dist::built_on_first_use_after(&project, &[core_dir().as_path()], progress)?.jar)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_and_settings_are_checked() {
        assert_eq!(CoordinatorPolicy::parse("hwlb"), Ok(CoordinatorPolicy::Hwlb));
        assert_eq!(CoordinatorPolicy::parse("naive"), Ok(CoordinatorPolicy::Naive));
        for p in CoordinatorPolicy::ALL {
            assert_eq!(p.sim_model(|_| replica_lb_policy::ParamTable::new()).unwrap().name(), p.as_str());
        }
        let e = CoordinatorPolicy::parse("c3").unwrap_err();
        assert!(e.contains("'c3'") && e.contains("dynamic-snitch, naive, hwlb, unified"), "{e}");
        let mut s = PluginSettings::new(CoordinatorPolicy::Hwlb);
        assert!(s.validate().is_ok());
        s.window_ms = 10;
        assert!(s.validate().unwrap_err().contains("window 10 ms"));
        s.window_ms = 60_000;
        s.read_cl = "EACH_QUORUM".into();
        assert!(s.validate().unwrap_err().contains("'EACH_QUORUM'"));
    }

    #[test]
    fn shared_parameters_become_system_properties_and_the_others_are_refused() {
        let mut t = replica_lb_policy::ParamTable::new();
        t.insert("stale_after_ms".into(), replica_lb_policy::ParamValue::Float(3000.0));
        let s = PluginSettings::new(CoordinatorPolicy::Hwlb).with_params(&t).unwrap();
        let installed = s.install(NodeSettings::default(), PathBuf::from("/j.jar")).unwrap();
        assert!(installed
            .system_properties
            .contains(&"replica_lb.hwlb.stale_after_ms=3000".to_string()));
        t.insert("warmup_reads".into(), replica_lb_policy::ParamValue::Float(1.0));
        let e = PluginSettings::new(CoordinatorPolicy::Hwlb).with_params(&t).unwrap_err();
        assert!(e.contains("'warmup_reads'") && e.contains("stale_rate"), "{e}");
    }

    #[test]
    fn unified_passes_its_warm_up_pace_and_nothing_of_its_client_side() {
        let mut t = replica_lb_policy::ParamTable::new();
        t.insert("warmup_reads".into(), replica_lb_policy::ParamValue::Float(0.25));
        t.insert("in_flight_threshold".into(), replica_lb_policy::ParamValue::Int(3));
        let s = PluginSettings::new(CoordinatorPolicy::Unified).with_unified_params(&t);
        assert_eq!(s.params, vec![("warmup_reads".to_string(), "0.25".to_string())]);
        let installed = s.install(NodeSettings::default(), PathBuf::from("/j.jar")).unwrap();
        assert!(installed
            .system_properties
            .contains(&"replica_lb.hwlb.warmup_reads=0.25".to_string()));
    }

    #[test]
    fn install_sets_the_snitch_the_jar_and_the_switch() {
        let s = PluginSettings::new(CoordinatorPolicy::Naive)
            .install(NodeSettings::default(), PathBuf::from("/x/hwlb-snitch.jar"))
            .unwrap();
        assert_eq!(s.snitch, SNITCH_CLASS);
        assert_eq!(s.extra_classpath, vec![PathBuf::from("/x/hwlb-snitch.jar")]);
        assert!(s.system_properties.contains(&format!("{POLICY_PROPERTY}=naive")));
        assert!(s.system_properties.contains(&"replica_lb.hwlb.read_cl=QUORUM".to_string()));
        assert!(s
            .system_properties
            .contains(&format!("cassandra.custom_query_handler_class={QUERY_HANDLER_CLASS}")));
    }
}
