//! The grammar of a run item, in one place: an entry of a `--policy` list (the simulator, the
//! tournament, an experiment on either engine), a `--client-policy` or a `--coordinator-policy`.
//!
//! ```text
//! item   := "ideal" | policy | policy "/" policy      (CLIENT/COORDINATOR)
//! policy := NAME                                      (a registered policy)
//!         | "driver-default"                          (the scylla Rust driver's own DefaultPolicy)
//!         | "java:default"                            (the Java driver's own DefaultLoadBalancingPolicy)
//!         | "java:" NAME                              (a registered client policy in the Java driver)
//! ```
//!
//! Parsing checks the syntax and that every NAME is registered; which side a policy may take,
//! its parameters and whether an engine can run it are checked by whoever is given the item
//! (the simulator's [`crate::runs`], an experiment on Cassandra, the load generator). Past
//! [`RunItem::parse`] and [`PolicyName::parse`] no code compares policy names as strings.

use replica_lb_policy::registry::{self, PolicyInfo};
use std::fmt;

/// The item that selects the ideal shared queue (direct routing only; not a policy).
pub const IDEAL: &str = "ideal";
/// The name of the scylla Rust driver's own token-aware `DefaultPolicy`.
pub const DRIVER_DEFAULT: &str = "driver-default";
/// The prefix of a policy run inside the Apache Cassandra Java driver.
pub const JAVA_PREFIX: &str = "java:";
/// After [`JAVA_PREFIX`]: the Java driver's own `DefaultLoadBalancingPolicy`.
pub const JAVA_DEFAULT: &str = "default";
/// Other names of token-aware `random` (a coordinator uniform among the key's replicas).
pub const TOKEN_AWARE_ALIASES: [&str; 2] = ["token-aware", "token_aware"];

/// A policy as an item names it.
#[derive(Clone, Copy)]
pub enum PolicyName {
    /// A registered policy (either side).
    Registered(&'static PolicyInfo),
    /// The scylla Rust driver's own token-aware `DefaultPolicy` (what applications run).
    DriverDefault,
    /// The Apache Cassandra Java driver's own `DefaultLoadBalancingPolicy` (`java:default`).
    JavaDefault,
    /// A registered policy run inside the Java driver (`java:NAME`).
    Java(&'static PolicyInfo),
}

impl PartialEq for PolicyName {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (PolicyName::Registered(a), PolicyName::Registered(b)) | (PolicyName::Java(a), PolicyName::Java(b)) => a.name == b.name,
            (PolicyName::DriverDefault, PolicyName::DriverDefault) | (PolicyName::JavaDefault, PolicyName::JavaDefault) => true,
            _ => false,
        }
    }
}

impl Eq for PolicyName {}

impl fmt::Debug for PolicyName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PolicyName({self})")
    }
}

impl PolicyName {
    /// Parses one policy name; the error is one line naming the value and what is allowed.
    pub fn parse(text: &str) -> Result<PolicyName, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("empty policy name".into());
        }
        if text == DRIVER_DEFAULT {
            return Ok(PolicyName::DriverDefault);
        }
        if TOKEN_AWARE_ALIASES.contains(&text) {
            return registry::find(replica_lb_policy::baselines::random::NAME)
                .map(PolicyName::Registered)
                .map_err(|e| e.to_string());
        }
        if let Some(java) = text.strip_prefix(JAVA_PREFIX) {
            if java == JAVA_DEFAULT {
                return Ok(PolicyName::JavaDefault);
            }
            return registry::find(java)
                .map(PolicyName::Java)
                .map_err(|e| format!("{text}: {e} (allowed: {JAVA_PREFIX}{JAVA_DEFAULT} or {JAVA_PREFIX}CLIENT-POLICY)"));
        }
        registry::find(text).map(PolicyName::Registered).map_err(|e| e.to_string())
    }

    /// Parses a name given where the Java driver is already chosen (`bench --driver java
    /// --client-policy NAME`): `default` is its own policy, a registered name runs inside it,
    /// and the `java:` prefix may be given or left out.
    pub fn parse_in_java_driver(text: &str) -> Result<PolicyName, String> {
        let text = text.trim();
        if text == JAVA_DEFAULT {
            return Ok(PolicyName::JavaDefault);
        }
        match PolicyName::parse(text)? {
            PolicyName::Registered(info) => Ok(PolicyName::Java(info)),
            PolicyName::DriverDefault => Err(format!("{text} is the Rust driver's own policy, not one of the Java driver's")),
            java => Ok(java),
        }
    }

    /// The registered policy it names, or runs inside the Java driver (`None`: a driver's own).
    pub fn info(&self) -> Option<&'static PolicyInfo> {
        match self {
            PolicyName::Registered(info) | PolicyName::Java(info) => Some(info),
            PolicyName::DriverDefault | PolicyName::JavaDefault => None,
        }
    }

    /// Whether it runs only in a driver session against a real cluster (a driver's own
    /// policy, or anything inside the Java driver).
    pub fn driver_only(&self) -> bool {
        !matches!(self, PolicyName::Registered(_))
    }
}

impl fmt::Display for PolicyName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicyName::Registered(info) => f.write_str(info.name),
            PolicyName::DriverDefault => f.write_str(DRIVER_DEFAULT),
            PolicyName::JavaDefault => write!(f, "{JAVA_PREFIX}{JAVA_DEFAULT}"),
            PolicyName::Java(info) => write!(f, "{JAVA_PREFIX}{}", info.name),
        }
    }
}

/// One run item, parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunItem {
    /// The ideal shared queue (an M/G/k system; direct routing only).
    Ideal,
    /// One policy, for the side its engine gives it.
    One(PolicyName),
    /// `CLIENT/COORDINATOR`: both sides named.
    Pair {
        /// Who chooses the coordinator.
        client: PolicyName,
        /// Who orders the replicas at the coordinator.
        coordinator: PolicyName,
    },
}

impl RunItem {
    /// Parses one item; the error is one line naming the value.
    pub fn parse(text: &str) -> Result<RunItem, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("empty policy item".into());
        }
        if text == IDEAL {
            return Ok(RunItem::Ideal);
        }
        match text.split_once('/') {
            Some((client, coordinator)) => {
                if coordinator.contains('/') {
                    return Err(format!("'{text}': at most one '/' (CLIENT/COORDINATOR)"));
                }
                Ok(RunItem::Pair {
                    client: PolicyName::parse(client).map_err(|e| format!("'{text}': {e}"))?,
                    coordinator: PolicyName::parse(coordinator).map_err(|e| format!("'{text}': {e}"))?,
                })
            }
            None => PolicyName::parse(text).map(RunItem::One),
        }
    }
}

impl fmt::Display for RunItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunItem::Ideal => f.write_str(IDEAL),
            RunItem::One(p) => p.fmt(f),
            RunItem::Pair { client, coordinator } => write!(f, "{client}/{coordinator}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_parses_and_prints_back() {
        for text in [
            "ideal",
            "c3",
            "unified",
            "driver-default",
            "java:default",
            "java:c3",
            "c3/unified",
            "driver-default/dynamic-snitch",
            "java:unified/hwlb",
        ] {
            let item = RunItem::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(item.to_string(), text);
        }
        assert_eq!(RunItem::parse(" c3 "), Ok(RunItem::One(PolicyName::parse("c3").unwrap())));
        assert_eq!(PolicyName::parse("token-aware"), PolicyName::parse("random"));
    }

    #[test]
    fn bad_items_are_refused_in_one_line_naming_the_value() {
        for (text, needle) in [
            ("", "empty"),
            ("nonesuch", "nonesuch"),
            ("c3/", "'c3/'"),
            ("/c3", "'/c3'"),
            ("a/b/c", "at most one '/'"),
            ("java:", "java:"),
            ("java:Default", "java:Default"),
            ("java:nonesuch", "allowed: java:default or java:CLIENT-POLICY"),
        ] {
            let e = RunItem::parse(text).unwrap_err();
            assert!(e.contains(needle) && !e.contains('\n'), "{text}: {e}");
        }
    }

    #[test]
    fn a_name_knows_whether_only_a_driver_runs_it() {
        assert!(PolicyName::parse("driver-default").unwrap().driver_only());
        assert!(PolicyName::parse("java:c3").unwrap().driver_only());
        assert!(!PolicyName::parse("c3").unwrap().driver_only());
        assert_eq!(PolicyName::parse("java:c3").unwrap().info().map(|i| i.name), Some("c3"));
        assert_ne!(PolicyName::parse("java:c3").unwrap(), PolicyName::parse("c3").unwrap());
        let java = |t| PolicyName::parse_in_java_driver(t).map(|p| p.to_string());
        assert_eq!(java("default"), Ok("java:default".to_string()));
        assert_eq!(java("c3"), Ok("java:c3".to_string()));
        assert_eq!(java("java:c3"), Ok("java:c3".to_string()));
        assert!(java("driver-default").unwrap_err().contains("Rust driver"));
    }
}
