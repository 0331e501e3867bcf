//! `least-outstanding`: the candidates with the fewest requests this sender has in flight, by a
//! full scan. Ties are broken by a random rotation of the candidates (one random number), so
//! equal nodes share the load instead of the first one taking it all.

use crate::nodes::InFlight;
use crate::order::rank_all;
use crate::params::{ParamSpec, ParamTable, Params, PolicyError};
use crate::policy::{Event, Policy};
use crate::rng::Rng;
use crate::types::{Decision, Plan, Request};

/// The name it is registered under.
pub const NAME: &str = "least-outstanding";
/// Its parameters: none.
pub static PARAMS: [ParamSpec; 0] = [];

/// Least outstanding requests.
#[derive(Debug)]
pub struct LeastOutstanding {
    in_flight: InFlight,
}

impl LeastOutstanding {
    /// Builds it from parameter overrides (it has none).
    pub fn new(overrides: &ParamTable) -> Result<Self, PolicyError> {
        Params::resolve(NAME, &PARAMS, overrides)?;
        Ok(LeastOutstanding {
            in_flight: InFlight::new(),
        })
    }
}

impl Policy for LeastOutstanding {
    fn plan(&mut self, req: &Request<'_>, _now_ns: u64, rng: &mut Rng, out: &mut Plan) -> Decision {
        if !req.plannable() {
            return Decision::Unavailable;
        }
        rank_all(req, rng, out, |node| self.in_flight.get(node) as f64);
        Decision::Send
    }

    fn observe(&mut self, event: &Event<'_>, _now_ns: u64) {
        self.in_flight.observe(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;

    #[test]
    fn picks_the_least_loaded_and_orders_the_rest() {
        let mut p = LeastOutstanding::new(&ParamTable::new()).unwrap();
        let nodes = ids(4);
        for (node, k) in [(0, 3), (1, 1), (2, 0), (3, 2)] {
            for _ in 0..k {
                p.on_send(NodeId(node), 0);
            }
        }
        let mut rng = Rng::seed_from_u64(1);
        let mut plan = Plan::new();
        p.plan(&req(&nodes, 2), 0, &mut rng, &mut plan);
        assert_eq!(plan.targets(), &[NodeId(2), NodeId(1)]);
        assert_eq!(plan.fallbacks(), &[NodeId(3), NodeId(0)]);
        // Replies and failures bring the counts back down.
        p.on_reply(&reply(0, 1), 0);
        p.on_failure(NodeId(0), Failure::Timeout, 0);
        p.on_reply(&reply(0, 1), 0);
        p.on_reply(&reply(0, 1), 0); // stray: saturates at 0
        p.plan(&req(&nodes, 1), 0, &mut rng, &mut plan);
        assert!(plan.targets() == [NodeId(0)] || plan.targets() == [NodeId(2)]);
    }

    #[test]
    fn ties_are_shared() {
        let mut p = LeastOutstanding::new(&ParamTable::new()).unwrap();
        let nodes = ids(3);
        let mut rng = Rng::seed_from_u64(2);
        let mut plan = Plan::new();
        let mut hits = [0u32; 3];
        for _ in 0..3_000 {
            p.plan(&req(&nodes, 1), 0, &mut rng, &mut plan);
            hits[plan.targets()[0].index()] += 1;
        }
        assert!(hits.iter().all(|&h| h > 900), "{hits:?}");
    }
}
