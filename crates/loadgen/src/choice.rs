//! Who chooses a driver session's coordinators, checked once at the edge: the driver's own
//! token-aware `DefaultPolicy` ([`DRIVER_DEFAULT`]), a registered client policy with its
//! parameters, or a policy of the Apache Cassandra Java driver (`java:NAME`, [`JavaPolicy`]).
//! The names are the run item's grammar ([`replica_lb_workload::run_item`]); here a parsed
//! [`PolicyName`] becomes a choice with its parameters.

use replica_lb_policy::datastax::NAME as DATASTAX_DEFAULT;
use replica_lb_policy::registry::PolicyInfo;
use replica_lb_policy::{ParamTable, ParamValue, PolicyChoice, Side};
pub use replica_lb_workload::run_item::{PolicyName, DRIVER_DEFAULT, JAVA_DEFAULT, JAVA_PREFIX};

/// The client side of a driver session.
#[derive(Clone, Debug, PartialEq)]
pub enum ClientChoice {
    /// The driver's own token-aware `DefaultPolicy` (what applications run; the simulator
    /// models it as token-aware `random`).
    DriverDefault,
    /// A registered client policy with its parameters, through the driver adapter (on the
    /// node cluster, the load generator's own runtime).
    Policy(PolicyChoice),
    /// A policy of the Apache Cassandra Java driver, requests through that driver
    /// (`java:NAME`, [`super::java`]): its own default, or a client policy in it.
    Java(JavaPolicy),
}

impl ClientChoice {
    /// Parses `text` ([`PolicyName::parse`]) and checks it as a client with `params`
    /// ([`ClientChoice::new`]). The error is one line naming the value.
    pub fn parse(text: &str, params: ParamTable) -> Result<ClientChoice, String> {
        ClientChoice::new(PolicyName::parse(text)?, params)
    }

    /// `name` with `params`: [`DRIVER_DEFAULT`] and `java:default` (which take no parameters),
    /// a client policy through the Java driver, or a registered policy that serves the client
    /// side. The error is one line naming the value.
    pub fn new(name: PolicyName, params: ParamTable) -> Result<ClientChoice, String> {
        match name {
            PolicyName::DriverDefault | PolicyName::JavaDefault if !params.is_empty() => {
                Err(format!("--client-param: {name} takes no parameters"))
            }
            PolicyName::DriverDefault => Ok(ClientChoice::DriverDefault),
            PolicyName::JavaDefault => Ok(ClientChoice::Java(JavaPolicy::Default)),
            PolicyName::Java(info) => JavaPolicy::of(info, params).map(ClientChoice::Java),
            PolicyName::Registered(info) => {
                if !info.side.serves(Side::Client) {
                    return Err(format!(
                        "'{name}' is not a client policy (the client is {DRIVER_DEFAULT}, or a policy that chooses coordinators)"
                    ));
                }
                PolicyChoice::new(info.name, Side::Client, params)
                    .map(ClientChoice::Policy)
                    .map_err(|e| e.to_string())
            }
        }
    }

    /// Its name, as reports show it.
    pub fn name(&self) -> String {
        match self {
            ClientChoice::DriverDefault => DRIVER_DEFAULT.to_string(),
            ClientChoice::Policy(p) => p.name().to_string(),
            ClientChoice::Java(p) => p.name(),
        }
    }

    /// Whether it learns the nodes' hit rates off the request path (`hwlb-client`, through
    /// either driver).
    pub fn polls_hit_rates(&self) -> bool {
        match self {
            ClientChoice::Policy(p) => p.info().polls_hit_rates,
            ClientChoice::Java(p) => p.polls_hit_rates(),
            ClientChoice::DriverDefault => false,
        }
    }

    /// The simulator's client policy that models it: the policy itself, or for a driver's own
    /// policy its model (token-aware `random` for both drivers' default policies) with
    /// `params_of` its name.
    pub fn sim_model(&self, params_of: impl Fn(&str) -> ParamTable) -> Result<PolicyChoice, String> {
        let model = match self {
            ClientChoice::DriverDefault => crate::client_policy::TOKEN_AWARE_RANDOM,
            ClientChoice::Java(p) => return p.sim_model(params_of),
            ClientChoice::Policy(p) => return Ok(p.clone()),
        };
        PolicyChoice::new(model, Side::Client, params_of(model)).map_err(|e| e.to_string())
    }
}

/// A load-balancing policy of the Java driver (`java:NAME`).
#[derive(Clone, Debug, PartialEq)]
pub enum JavaPolicy {
    /// The driver's own `DefaultLoadBalancingPolicy` (token-aware, the local datacenter's
    /// replicas shuffled, slow-replica avoidance by in-flight counts and response times), the
    /// local datacenter the cluster's: what a Java application runs.
    Default,
    /// A registered client policy with its parameters, as the Java port in `java/core` runs it
    /// inside the driver through `ReplicaLbLoadBalancingPolicy` (`java/driver-policy`). The
    /// name and parameters are checked here against the Rust registry; the runner refuses a
    /// policy that has no Java port yet with replica-lb-core's one-line message.
    Policy(PolicyChoice),
}

impl JavaPolicy {
    /// The registered policy `info` run inside the Java driver with `params`; the error
    /// names the value and what is allowed.
    pub fn of(info: &PolicyInfo, params: ParamTable) -> Result<JavaPolicy, String> {
        let name = info.name;
        let choice = PolicyChoice::new(name, Side::Client, params)
            .map_err(|e| format!("{JAVA_PREFIX}{name}: {e} (allowed: {JAVA_PREFIX}{JAVA_DEFAULT} or {JAVA_PREFIX}CLIENT-POLICY)"))?;
        for (k, v) in choice.params() {
            if let ParamValue::Text(t) = v {
                if t.is_empty() || t.chars().any(|c| c.is_whitespace()) {
                    return Err(format!(
                        "{JAVA_PREFIX}{name}: parameter {k} '{t}' must be one word for the Java driver's runner"
                    ));
                }
            }
        }
        Ok(JavaPolicy::Policy(choice))
    }

    /// The runner's name for it: `default` or the client policy's.
    pub fn runner_name(&self) -> &'static str {
        match self {
            JavaPolicy::Default => JAVA_DEFAULT,
            JavaPolicy::Policy(p) => p.name(),
        }
    }

    /// `java:NAME`, as reports show it.
    pub fn name(&self) -> String {
        format!("{JAVA_PREFIX}{}", self.runner_name())
    }

    /// The parameters as the runner's `hello` gives them (`NAME`, value as text).
    pub fn params(&self) -> Vec<(String, String)> {
        match self {
            JavaPolicy::Default => Vec::new(),
            JavaPolicy::Policy(p) => p
                .params()
                .iter()
                .map(|(k, v)| {
                    let text = match v {
                        ParamValue::Text(t) => t.clone(),
                        other => other.to_string(),
                    };
                    (k.clone(), text)
                })
                .collect(),
        }
    }

    /// Whether it learns the nodes' hit rates off the request path (`hwlb-client`): the
    /// runner then polls every node's `replica_lb_hwlb.node`, the plug-in's table.
    pub fn polls_hit_rates(&self) -> bool {
        matches!(self, JavaPolicy::Policy(p) if p.info().polls_hit_rates)
    }

    /// The simulator's client policy that models it: the driver's `DefaultLoadBalancingPolicy`
    /// is `datastax-default` (its model: replicas shuffled, the newly-up one demoted, busy and
    /// silent ones behind, two choices by requests in flight); a client policy is itself. (It
    /// was token-aware `random`, the Rust driver's model, which has no unhealthy rule: through
    /// a real 20 s pause the Java driver timed out 4 reads where that model said 1,752.)
    pub fn sim_model(&self, params_of: impl Fn(&str) -> ParamTable) -> Result<PolicyChoice, String> {
        match self {
            JavaPolicy::Default => {
                PolicyChoice::new(DATASTAX_DEFAULT, Side::Client, params_of(DATASTAX_DEFAULT)).map_err(|e| e.to_string())
            }
            JavaPolicy::Policy(p) => Ok(p.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_choice_is_checked_once() {
        assert_eq!(
            ClientChoice::parse(DRIVER_DEFAULT, ParamTable::new()),
            Ok(ClientChoice::DriverDefault)
        );
        let mut p = ParamTable::new();
        p.insert("x".into(), replica_lb_policy::ParamValue::Int(1));
        assert!(ClientChoice::parse(DRIVER_DEFAULT, p).unwrap_err().contains("takes no parameters"));
        let none = |_: &str| ParamTable::new();
        let c = ClientChoice::parse("c3", ParamTable::new()).unwrap();
        assert_eq!((c.name().as_str(), c.sim_model(none).unwrap().name()), ("c3", "c3"));
        assert!(!c.polls_hit_rates());
        assert_eq!(ClientChoice::DriverDefault.sim_model(none).unwrap().name(), "random");
        let hw = ClientChoice::parse("hwlb-client", ParamTable::new()).unwrap();
        assert!(hw.polls_hit_rates());
        let mut bad = ParamTable::new();
        bad.insert("nope".into(), replica_lb_policy::ParamValue::Int(1));
        assert!(ClientChoice::parse("c3", bad).unwrap_err().contains("'nope'"));
        assert!(ClientChoice::parse("no-such-policy", ParamTable::new())
            .unwrap_err()
            .contains("no-such-policy"));
    }

    #[test]
    fn a_java_driver_choice_is_typed_once() {
        let none = |_: &str| ParamTable::new();
        let j = ClientChoice::parse("java:default", ParamTable::new()).unwrap();
        assert_eq!(j, ClientChoice::Java(JavaPolicy::Default));
        // Modelled by the project's model of the Java driver's DefaultLoadBalancingPolicy.
        assert_eq!(
            (j.name(), j.sim_model(none).unwrap().name()),
            ("java:default".to_string(), "datastax-default")
        );
        let mut p = ParamTable::new();
        p.insert("x".into(), replica_lb_policy::ParamValue::Int(1));
        assert!(ClientChoice::parse("java:default", p)
            .unwrap_err()
            .contains("java:default takes no parameters"));
        for name in ["java:", "java:Default", "java:hwlb", "java:nonesuch"] {
            let e = ClientChoice::parse(name, ParamTable::new()).unwrap_err();
            assert!(
                e.contains(&format!("{name}: ")) && e.contains("allowed: java:default or java:CLIENT-POLICY") && !e.contains('\n'),
                "{name}: {e}"
            );
        }
        // Any client policy through the Java driver, with its parameters, modelled as itself.
        let mut p = ParamTable::new();
        p.insert("concurrency_weight".into(), replica_lb_policy::ParamValue::Float(4.0));
        let c3 = ClientChoice::parse("java:c3", p).unwrap();
        assert_eq!((c3.name(), c3.sim_model(none).unwrap().name()), ("java:c3".to_string(), "c3"));
        let ClientChoice::Java(j) = &c3 else { panic!("{c3:?}") };
        assert_eq!(j.params(), vec![("concurrency_weight".to_string(), "4".to_string())]);
        assert!(!c3.polls_hit_rates());
        assert!(ClientChoice::parse("java:hwlb-client", ParamTable::new())
            .unwrap()
            .polls_hit_rates());
        let mut bad = ParamTable::new();
        bad.insert("nope".into(), replica_lb_policy::ParamValue::Int(1));
        let e = ClientChoice::parse("java:c3", bad).unwrap_err();
        assert!(e.starts_with("java:c3: ") && e.contains("'nope'"), "{e}");
    }
}
