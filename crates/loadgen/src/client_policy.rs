//! The load generator's client-side policy: any registered client policy in the shared
//! [`replica_lb_runtime::Runtime`], fed what a real client can give it.
//!
//! The load generator provides the coordinator's feedback record on every read reply, probes
//! over gRPC off the request path, and the nodes' zones; it cannot provide ground truth, so
//! `oracle` is refused with a one-line error naming the need.

use replica_lb_policy::{Need, Needs, NodeId, ParamTable, PolicyChoice, Side};
use replica_lb_runtime::{Caller, Runtime, RuntimeConfig, RuntimeStats};
use std::time::Instant;

/// What the load generator provides to a client policy.
pub const LOADGEN: Caller = Caller {
    name: "the load generator (a real client)",
    provides: Needs::of(&[Need::Feedback, Need::Probes, Need::Topology]),
};

/// The policy used when none is named: the coordinator uniformly among the key's replicas
/// (token-aware random, as the seeds' drivers).
pub const TOKEN_AWARE_RANDOM: &str = replica_lb_policy::baselines::random::NAME;

/// Token-aware random with the published parameters.
pub fn token_aware_random() -> Result<PolicyChoice, String> {
    PolicyChoice::new(TOKEN_AWARE_RANDOM, Side::Client, ParamTable::new()).map_err(|e| e.to_string())
}

/// A request the dispatcher keeps while rate control holds it back.
#[derive(Clone, Copy, Debug)]
pub struct Pending {
    /// Its key number.
    pub key: u64,
    /// Its intended send time (latency is measured from it).
    pub intended: Instant,
    /// A read (else a write).
    pub read: bool,
    /// The multi-key request it is part of (an index of the dispatcher's), `None` for a
    /// request of its own.
    pub multi: Option<u32>,
}

/// A client-side policy with its runtime.
pub struct ClientPolicy {
    pub(crate) rt: Runtime<Pending>,
}

impl ClientPolicy {
    /// A new instance of the client policy `choice` names; `seed` fixes its random stream.
    pub fn new(choice: &PolicyChoice, seed: u64) -> Result<ClientPolicy, String> {
        let config = RuntimeConfig {
            local: None,
            seed,
            max_waiting: replica_lb_runtime::DEFAULT_MAX_WAITING,
        };
        Ok(ClientPolicy {
            rt: Runtime::of(choice, LOADGEN, config)?,
        })
    }

    /// The policy's registered name.
    pub fn name(&self) -> &'static str {
        self.rt.name()
    }

    /// What went through its runtime so far.
    pub fn stats(&self) -> RuntimeStats {
        self.rt.stats()
    }

    /// Checks its runtime ended every send and holds no request (after a run).
    pub fn check_quiescent(&self) -> Result<(), String> {
        self.rt.check_quiescent()
    }

    /// Tells the policy the nodes' zones and the client's own (`None`: unknown).
    pub fn set_topology(&mut self, zones: &[(NodeId, u32)], local_zone: Option<u32>) {
        self.rt.set_topology(zones, local_zone);
    }
}
