//! [`ReplicaLbPolicyBuilder`]: a policy by name, its parameters, and what the driver can give
//! it, checked once, before any request.

use crate::core::Core;
use crate::inflight::Tickets;
use crate::nodes::NodeTable;
use crate::policy::ReplicaLbPolicy;
use replica_lb_policy::{Need, Needs, ParamTable, ParamValue, Side};
use replica_lb_runtime::{Caller, Runtime, RuntimeConfig};
use std::sync::Arc;
use std::time::Duration;

/// What the scylla Rust driver gives a policy beyond the plain contract: the measured
/// latency of every attempt as its feedback (Cassandra and ScyllaDB send no per-reply load
/// record, so the record's fields stay empty; `c3` then ranks on response time, as its module
/// documents for a client choosing coordinators), and topology (every node's datacenter and
/// rack from the driver's metadata). Not probes (no probe request in CQL) and not ground
/// truth.
pub const DRIVER: Caller = Caller {
    name: "the scylla Rust driver (replica-lb-driver)",
    provides: Needs::of(&[Need::Feedback, Need::Topology]),
};

/// The parameter of a rate-controlling policy (`c3`) that lets it hold requests back.
pub(crate) const RATE_CONTROL: &str = "rate_control";

/// Default [`ReplicaLbPolicyBuilder::ticket_ttl`].
pub const DEFAULT_TICKET_TTL: Duration = Duration::from_secs(12);
/// Default [`ReplicaLbPolicyBuilder::match_window`].
pub const DEFAULT_MATCH_WINDOW: Duration = Duration::from_millis(50);
/// Default [`ReplicaLbPolicyBuilder::max_open_per_node`].
pub const DEFAULT_MAX_OPEN_PER_NODE: usize = 4_096;

/// Why a policy could not be built: one line that names the policy, parameter or option.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Error(String);

/// A parameter value: numbers, switches and words convert into it.
pub trait IntoParam {
    /// The value.
    fn into_param(self) -> ParamValue;
}

impl IntoParam for ParamValue {
    fn into_param(self) -> ParamValue {
        self
    }
}
impl IntoParam for f64 {
    fn into_param(self) -> ParamValue {
        ParamValue::Float(self)
    }
}
impl IntoParam for i64 {
    fn into_param(self) -> ParamValue {
        ParamValue::Int(self)
    }
}
impl IntoParam for i32 {
    fn into_param(self) -> ParamValue {
        ParamValue::Int(self as i64)
    }
}
impl IntoParam for u32 {
    fn into_param(self) -> ParamValue {
        ParamValue::Int(self as i64)
    }
}
impl IntoParam for bool {
    fn into_param(self) -> ParamValue {
        ParamValue::Bool(self)
    }
}
impl IntoParam for &str {
    /// Parsed as on a command line: an integer, a number, a switch, else a word.
    fn into_param(self) -> ParamValue {
        ParamValue::parse_text(self)
    }
}

/// Builds a [`ReplicaLbPolicy`]; start with [`ReplicaLbPolicy::builder`].
#[derive(Clone, Debug)]
pub struct ReplicaLbPolicyBuilder {
    name: String,
    params: ParamTable,
    seed: u64,
    local_dc: Option<String>,
    local_rack: Option<String>,
    permit_dc_failover: bool,
    ticket_ttl: Duration,
    match_window: Duration,
    max_open_per_node: usize,
    shards: Option<usize>,
}

/// Shards at most ([`ReplicaLbPolicyBuilder::shards`]).
pub const MAX_SHARDS: usize = 256;

impl ReplicaLbPolicy {
    /// Starts building the registered policy `name` (`replica-lb policies` lists them; the
    /// client-side ones whose needs the driver meets work here). Defined beside the builder,
    /// so the policy's module does not depend on its builder's.
    pub fn builder(name: &str) -> ReplicaLbPolicyBuilder {
        ReplicaLbPolicyBuilder::new(name)
    }

    /// Starts building from a choice the registry already checked (its name and parameters,
    /// e.g. a run item of the load generator): nothing is parsed again.
    pub fn builder_for(choice: &replica_lb_policy::PolicyChoice) -> ReplicaLbPolicyBuilder {
        let mut b = ReplicaLbPolicyBuilder::new(choice.name());
        b.params = choice.params().clone();
        b
    }
}

impl ReplicaLbPolicyBuilder {
    pub(crate) fn new(name: &str) -> Self {
        ReplicaLbPolicyBuilder {
            name: name.to_string(),
            params: ParamTable::new(),
            seed: 0,
            local_dc: None,
            local_rack: None,
            permit_dc_failover: false,
            ticket_ttl: DEFAULT_TICKET_TTL,
            match_window: DEFAULT_MATCH_WINDOW,
            max_open_per_node: DEFAULT_MAX_OPEN_PER_NODE,
            shards: None,
        }
    }

    /// Independent copies of the policy, one per core by default (see [`crate::policy`]):
    /// threads pick without contending. `1` gives every request one shared view (exact
    /// in-flight counts over the whole client) at the cost of a contended lock.
    pub fn shards(mut self, shards: usize) -> Self {
        self.shards = Some(shards);
        self
    }

    /// Overrides one of the policy's parameters (`replica-lb policies` lists them with their
    /// published defaults); checked by [`Self::build`].
    pub fn param(mut self, name: &str, value: impl IntoParam) -> Self {
        self.params.insert(name.to_string(), value.into_param());
        self
    }

    /// Seeds the policy's random stream (default 0): the same seed and the same inputs give
    /// the same choices.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// The client's datacenter: replicas there are the candidates, as with the driver's
    /// `DefaultPolicy::prefer_datacenter`. Without it the session's node location preference
    /// (if any) applies, else every datacenter counts as local.
    pub fn local_datacenter(mut self, dc: &str) -> Self {
        self.local_dc = Some(dc.to_string());
        self
    }

    /// The client's rack in its datacenter: the policies' local zone (weighted-least-loaded
    /// weighs other racks down). Needs [`Self::local_datacenter`].
    pub fn local_rack(mut self, rack: &str) -> Self {
        self.local_rack = Some(rack.to_string());
        self
    }

    /// Whether a request may go to another datacenter when no node of the local one is live
    /// (default false, as the driver's `DefaultPolicy`).
    pub fn permit_dc_failover(mut self, permit: bool) -> Self {
        self.permit_dc_failover = permit;
        self
    }

    /// How long a pick counts as in flight at most when its end is never observed (no
    /// connection, a lost speculative attempt, a client-side time-out); default 12 s. Set it a
    /// little above the session's request time-out if requests may legitimately take longer.
    pub fn ticket_ttl(mut self, ttl: Duration) -> Self {
        self.ticket_ttl = ttl;
        self
    }

    /// How long before an attempt's start its pick may have happened to be matched to it
    /// (default 50 ms); ends outside it count as untracked attempts.
    pub fn match_window(mut self, window: Duration) -> Self {
        self.match_window = window;
        self
    }

    /// Open picks per node and shard at most (default 4,096; ended picks behind an open older
    /// one count too, so this bounds memory); beyond it the oldest counts as timed out.
    pub fn max_open_per_node(mut self, max: usize) -> Self {
        self.max_open_per_node = max;
        self
    }

    /// Checks everything and builds the policy: the name must be a registered client-side
    /// policy, its parameters valid, its needs within what the driver provides ([`DRIVER`]).
    /// A policy with rate control (`c3`) runs without it unless asked (`pick` must answer at
    /// once, the driver cannot hold a request back); asking for it is an error.
    pub fn build(self) -> Result<Arc<ReplicaLbPolicy>, Error> {
        let info = replica_lb_policy::registry::find(&self.name).map_err(|e| Error(e.to_string()))?;
        let mut params = self.params;
        if info.params.iter().any(|p| p.name == RATE_CONTROL) {
            match params.get(RATE_CONTROL) {
                Some(ParamValue::Bool(true)) => {
                    return Err(Error(format!(
                        "policy '{}': {RATE_CONTROL}=true cannot work in the driver (pick must answer at once; it cannot hold a request back): leave it false",
                        info.name
                    )))
                }
                Some(_) => {}
                None => {
                    params.insert(RATE_CONTROL.to_string(), ParamValue::Bool(false));
                }
            }
        }
        let check = |ok: bool, what: &str| if ok { Ok(()) } else { Err(Error(what.to_string())) };
        check(
            !self.ticket_ttl.is_zero() && self.ticket_ttl <= Duration::from_secs(3600),
            "ticket_ttl must be within (0, 1 h]",
        )?;
        check(self.match_window <= self.ticket_ttl, "match_window must not exceed ticket_ttl")?;
        check(self.max_open_per_node >= 1, "max_open_per_node must be at least 1")?;
        let shards = self
            .shards
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()).min(64));
        check((1..=MAX_SHARDS).contains(&shards), "shards must be within 1..=256")?;
        check(
            self.local_dc.as_deref().is_none_or(|d| !d.is_empty()),
            "local_datacenter must not be empty",
        )?;
        check(
            self.local_rack.is_none() || self.local_dc.is_some(),
            "local_rack needs local_datacenter",
        )?;
        let mut cores = Vec::with_capacity(shards);
        for shard in 0..shards as u64 {
            let config = RuntimeConfig {
                local: None,
                seed: self.seed.wrapping_add(shard.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
                max_waiting: replica_lb_runtime::DEFAULT_MAX_WAITING,
            };
            let rt = Runtime::build(&self.name, Side::Client, &params, DRIVER, config).map_err(Error)?;
            let tickets = Tickets::new(
                self.ticket_ttl.as_nanos() as u64,
                self.match_window.as_nanos() as u64,
                self.max_open_per_node,
            );
            cores.push(Core::new(
                rt,
                NodeTable::new(self.local_dc.clone(), self.local_rack.clone()),
                tickets,
            ));
        }
        Ok(Arc::new(ReplicaLbPolicy::new(cores, self.local_dc, self.permit_dc_failover)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use replica_lb_policy::{ParamValue, PolicyChoice, Side};

    #[test]
    fn a_checked_choice_builds_with_its_name_and_parameters() {
        let mut params = ParamTable::new();
        params.insert("concurrency_weight".into(), ParamValue::Int(5));
        let choice = PolicyChoice::new("c3", Side::Client, params.clone()).unwrap();
        let b = ReplicaLbPolicy::builder_for(&choice);
        assert_eq!((b.name.as_str(), &b.params), ("c3", &params));
        assert_eq!(b.build().unwrap().policy_name(), "c3");
    }
}
