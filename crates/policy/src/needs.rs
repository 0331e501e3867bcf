//! What a policy needs from its caller beyond the plain contract (requests sent, replies with
//! the caller's measured latency, failures, nodes up and down), and what a caller provides.
//!
//! Every caller gives every policy the plain contract. Some policies read more: `prequal` works
//! only when its probes are sent and answered, `c3` and `hwlb` read the server's feedback record,
//! `oracle` reads ground truth only a simulator has, `weighted-least-loaded` weighs zones. A
//! caller that cannot provide a need refuses the policy up front ([`Needs::check`]) instead of
//! running it blind, which would give silently wrong results.

use std::fmt;

/// One thing a policy may need from its caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// Probes sent off the request path and their answers fed back (Prequal).
    Probes,
    /// The server's feedback record on replies or by gossip: hit rate, queue length, service
    /// time, requests in flight (HWLB, C3).
    Feedback,
    /// The true state of every node, which only a simulator knows (the oracle).
    Truth,
    /// The zones (racks, availability zones) of the nodes and of the decider.
    Topology,
}

impl Need {
    /// Every need, in listing order.
    pub const ALL: [Need; 4] = [Need::Probes, Need::Feedback, Need::Truth, Need::Topology];

    /// The name used in listings (`replica-lb policies --json`'s `needs`).
    pub fn as_str(self) -> &'static str {
        match self {
            Need::Probes => "probes",
            Need::Feedback => "feedback",
            Need::Truth => "truth",
            Need::Topology => "topology",
        }
    }

    /// What it is, for error messages.
    pub fn describe(self) -> &'static str {
        match self {
            Need::Probes => "probes answered off the request path",
            Need::Feedback => "the server's feedback record",
            Need::Truth => "the ground truth of every node",
            Need::Topology => "the nodes' zones",
        }
    }

    const fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// A set of [`Need`]s: what a policy needs, or what a caller provides.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct Needs(u8);

impl Needs {
    /// Nothing beyond the plain contract.
    pub const NONE: Needs = Needs(0);
    /// Everything (a simulator provides it all).
    pub const ALL: Needs = Needs(0b1111);

    /// The set of the given needs.
    pub const fn of(needs: &[Need]) -> Needs {
        let mut bits = 0u8;
        let mut i = 0;
        while i < needs.len() {
            bits |= needs[i].bit();
            i += 1;
        }
        Needs(bits)
    }

    /// Whether `need` is in the set.
    pub const fn has(self, need: Need) -> bool {
        self.0 & need.bit() != 0
    }

    /// The needs in listing order.
    pub fn iter(self) -> impl Iterator<Item = Need> {
        Need::ALL.into_iter().filter(move |n| self.has(*n))
    }

    /// The names, in listing order.
    pub fn names(self) -> Vec<&'static str> {
        self.iter().map(Need::as_str).collect()
    }

    /// Checks that `provided` covers these needs of `policy`, which `caller` (for example "the
    /// real cluster") would run; the error is one line naming the first missing need.
    pub fn check(self, provided: Needs, policy: &str, caller: &str) -> Result<(), String> {
        match self.iter().find(|n| !provided.has(*n)) {
            None => Ok(()),
            Some(missing) => {
                let offered = provided.names();
                let offered = if offered.is_empty() {
                    "none".to_string()
                } else {
                    offered.join(", ")
                };
                Err(format!(
                    "policy '{policy}' needs {} ('{}'), which {caller} cannot provide (it provides: {offered})",
                    missing.describe(),
                    missing.as_str()
                ))
            }
        }
    }
}

impl fmt::Debug for Needs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.names()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_hold_what_they_are_built_of() {
        let n = Needs::of(&[Need::Truth, Need::Probes]);
        assert!(n.has(Need::Truth) && n.has(Need::Probes) && !n.has(Need::Feedback));
        assert_eq!(n.names(), ["probes", "truth"]);
        assert_eq!(Needs::ALL.names(), ["probes", "feedback", "truth", "topology"]);
        assert!(Needs::NONE.names().is_empty());
    }

    #[test]
    fn check_names_the_missing_need_and_the_caller() {
        let provided = Needs::of(&[Need::Feedback, Need::Topology]);
        assert!(Needs::of(&[Need::Feedback]).check(provided, "c3", "the real cluster").is_ok());
        let e = Needs::of(&[Need::Truth]).check(provided, "oracle", "the real cluster").unwrap_err();
        assert_eq!(
            e,
            "policy 'oracle' needs the ground truth of every node ('truth'), which the real cluster cannot provide (it provides: feedback, topology)"
        );
        let e = Needs::of(&[Need::Probes]).check(Needs::NONE, "prequal", "X").unwrap_err();
        assert!(e.contains("'probes'") && e.ends_with("(it provides: none)"), "{e}");
    }
}
