//! Which policy orders a Cassandra cluster's replicas at the coordinator: Cassandra's own
//! dynamic snitch or one of the replica-lb plug-in's modes, typed from the flag or the run
//! item to the cluster file (`cluster.json` keeps it by the registered name).

use replica_lb_policy::registry::PolicyInfo;
use serde::{Deserialize, Serialize};

/// The coordinator policies a Cassandra cluster runs: Cassandra's own dynamic snitch (as
/// shipped, no plug-in needed), or one of the plug-in's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CoordinatorPolicy {
    /// Cassandra as shipped: GossipingPropertyFileSnitch wrapped in Cassandra's
    /// DynamicEndpointSnitch with its default settings. Without the plug-in this is the
    /// cluster's configuration; with it, the plug-in hands the read path to a fresh
    /// DynamicEndpointSnitch of Cassandra's own and stays out of it.
    DynamicSnitch,
    /// The inner snitch's order (the coordinator first), dynamic snitch off.
    Naive,
    /// Heat-weighted load balancing.
    Hwlb,
    /// HWLB's draw, passing over replicas that are slow or silent (the coordinator side of
    /// the Rust `unified`).
    Unified,
}

impl CoordinatorPolicy {
    /// Every policy, in the order the docs list them.
    pub const ALL: [CoordinatorPolicy; 4] = [
        CoordinatorPolicy::DynamicSnitch,
        CoordinatorPolicy::Naive,
        CoordinatorPolicy::Hwlb,
        CoordinatorPolicy::Unified,
    ];

    /// The plug-in's mode that runs the registered policy `info` (`None`: it does not run
    /// inside Cassandra).
    pub fn of(info: &PolicyInfo) -> Option<CoordinatorPolicy> {
        Self::ALL.into_iter().find(|p| p.as_str() == info.name)
    }

    /// [`Self::of`], or the one-line refusal naming `info`.
    pub fn require(info: &PolicyInfo) -> Result<CoordinatorPolicy, String> {
        Self::of(info).ok_or_else(|| Self::refusal(info.name))
    }

    /// Why `name` cannot order replicas inside Cassandra, and what can.
    pub fn refusal(name: impl std::fmt::Display) -> String {
        format!(
            "coordinator policy '{name}' does not run inside Cassandra: use one of {}",
            Self::names()
        )
    }

    /// Parses a `--coordinator-policy` value: a registered policy that runs inside Cassandra.
    pub fn parse(text: &str) -> Result<CoordinatorPolicy, String> {
        Self::require(replica_lb_policy::registry::find(text.trim()).map_err(|e| e.to_string())?)
    }

    /// The names, comma-separated.
    pub fn names() -> String {
        Self::ALL.map(|p| p.as_str()).join(", ")
    }

    /// Its name (the simulator's policy of the same name is its model).
    pub fn as_str(self) -> &'static str {
        match self {
            CoordinatorPolicy::DynamicSnitch => replica_lb_policy::dynamic_snitch::policy::NAME,
            CoordinatorPolicy::Naive => replica_lb_policy::naive::NAME,
            CoordinatorPolicy::Hwlb => replica_lb_policy::hwlb::policy::NAME,
            CoordinatorPolicy::Unified => replica_lb_policy::unified::NAME,
        }
    }

    /// The simulator's coordinator policy that models it (the registered policy of the same
    /// name) with `params_of` its name.
    pub fn sim_model(self, params_of: impl Fn(&str) -> replica_lb_policy::ParamTable) -> Result<replica_lb_policy::PolicyChoice, String> {
        let name = self.as_str();
        replica_lb_policy::PolicyChoice::new(name, replica_lb_policy::Side::Coordinator, params_of(name)).map_err(|e| e.to_string())
    }

    /// Whether it needs the replica-lb plug-in (every policy but Cassandra's own).
    pub fn needs_plugin(self) -> bool {
        self != CoordinatorPolicy::DynamicSnitch
    }
}
