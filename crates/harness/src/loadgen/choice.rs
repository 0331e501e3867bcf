//! Who chooses a driver session's coordinators, parsed and checked once at the edge: the
//! driver's own token-aware `DefaultPolicy` ([`DRIVER_DEFAULT`]), a registered client
//! policy with its parameters, or a policy of the Apache Cassandra Java driver (`java:NAME`,
//! [`JavaPolicy`]). Past [`ClientChoice::parse`] nothing compares policy names.

pub use super::java::{JavaPolicy, JAVA_PREFIX};
use policy::hwlb::policy::CLIENT_NAME as HWLB_CLIENT;
use policy::{registry, ParamTable, Side};

/// The `--client-policy` name of the driver's own token-aware `DefaultPolicy`.
pub const DRIVER_DEFAULT: &str = "driver-default";

/// The client side of a driver session.
#[derive(Clone, Debug, PartialEq)]
pub enum ClientChoice {
    /// The driver's own token-aware `DefaultPolicy` (what applications run; the simulator
    /// models it as token-aware `random`).
    DriverDefault,
    /// A registered client policy through the driver adapter.
    Policy {
        /// Its registered name.
        name: &'static str,
        /// Its parameter overrides.
        params: ParamTable,
        /// It learns the nodes' hit rates off the request path (`hwlb-client`).
        polls_hit_rates: bool,
    },
    /// A policy of the Apache Cassandra Java driver, requests through that driver
    /// (`java:NAME`, [`super::java`]).
    Java(JavaPolicy),
}

impl ClientChoice {
    /// `name` with `params`: [`DRIVER_DEFAULT`] (which takes no parameters), `java:NAME` (a
    /// policy of the Java driver) or a registered policy that serves the client side. The
    /// error is one line naming the value.
    pub fn parse(name: &str, params: ParamTable) -> Result<ClientChoice, String> {
        if let Some(java) = name.strip_prefix(JAVA_PREFIX) {
            let p = JavaPolicy::parse(java)?;
            if !params.is_empty() {
                return Err(format!("--client-param: {} takes no parameters", p.name()));
            }
            return Ok(ClientChoice::Java(p));
        }
        if name == DRIVER_DEFAULT {
            if !params.is_empty() {
                return Err(format!("--client-param: {DRIVER_DEFAULT} takes no parameters"));
            }
            return Ok(ClientChoice::DriverDefault);
        }
        let info = registry::find(name).map_err(|e| e.to_string())?;
        if !info.side.serves(Side::Client) {
            return Err(format!(
                "{name} is not a client policy (the client is {DRIVER_DEFAULT}, or a policy that chooses coordinators)"
            ));
        }
        Ok(ClientChoice::Policy {
            name: info.name,
            params,
            polls_hit_rates: info.name == HWLB_CLIENT,
        })
    }

    /// Its name, as reports show it.
    pub fn name(&self) -> &'static str {
        match self {
            ClientChoice::DriverDefault => DRIVER_DEFAULT,
            ClientChoice::Policy { name, .. } => name,
            ClientChoice::Java(p) => p.name(),
        }
    }

    /// The simulator's client policy that models it.
    pub fn sim_name(&self) -> &'static str {
        match self {
            ClientChoice::DriverDefault => super::client_policy::TOKEN_AWARE_RANDOM,
            ClientChoice::Policy { name, .. } => name,
            ClientChoice::Java(p) => p.sim_name(),
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
        p.insert("x".into(), policy::ParamValue::Int(1));
        assert!(ClientChoice::parse(DRIVER_DEFAULT, p).unwrap_err().contains("takes no parameters"));
        let c = ClientChoice::parse("c3", ParamTable::new()).unwrap();
        assert_eq!((c.name(), c.sim_name()), ("c3", "c3"));
        assert_eq!(ClientChoice::DriverDefault.sim_name(), "random");
        let hw = ClientChoice::parse(HWLB_CLIENT, ParamTable::new()).unwrap();
        assert!(matches!(hw, ClientChoice::Policy { polls_hit_rates: true, .. }));
        assert!(ClientChoice::parse("no-such-policy", ParamTable::new())
            .unwrap_err()
            .contains("no-such-policy"));
    }

    #[test]
    fn a_java_driver_choice_is_typed_once() {
        let j = ClientChoice::parse("java:default", ParamTable::new()).unwrap();
        assert_eq!(j, ClientChoice::Java(JavaPolicy::Default));
        // Modelled as the Rust driver's default is: token-aware random.
        assert_eq!((j.name(), j.sim_name()), ("java:default", "random"));
        let mut p = ParamTable::new();
        p.insert("x".into(), policy::ParamValue::Int(1));
        assert!(ClientChoice::parse("java:default", p)
            .unwrap_err()
            .contains("java:default takes no parameters"));
        for name in ["java:unified", "java:", "java:Default"] {
            let e = ClientChoice::parse(name, ParamTable::new()).unwrap_err();
            assert!(e.contains("allowed: java:default") && !e.contains('\n'), "{name}: {e}");
        }
    }
}
