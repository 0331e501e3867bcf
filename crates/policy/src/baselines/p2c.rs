//! `p2c`: power of d choices on outstanding requests (d = 2 by default, Mitzenmacher): draw d
//! distinct candidates uniformly at random and take the one with the fewest requests in flight
//! from this sender. For CL > 1 the `count` best of max(d, count) random candidates are taken.
//! Cheap (d random numbers), and it avoids the herd that a full least-outstanding scan causes
//! when many senders see the same stale counts.

use crate::nodes::InFlight;
use crate::order::{scratch, shuffle_prefix, sort_by_score, ScoreBuf};
use crate::params::{ParamDefault as D, ParamSpec, ParamTable, Params, PolicyError};
use crate::policy::{Event, Policy};
use crate::rng::Rng;
use crate::types::{Decision, Plan, Request};

/// The name it is registered under.
pub const NAME: &str = "p2c";
/// Its parameters with the published defaults.
pub static PARAMS: [ParamSpec; 1] = [ParamSpec {
    name: "choices",
    default: D::Int { value: 2, min: 1, max: 64 },
    description: "d: how many random candidates are compared (2 = power of two choices)",
}];

/// Power of d choices on outstanding requests.
#[derive(Debug)]
pub struct P2c {
    choices: usize,
    in_flight: InFlight,
}

impl P2c {
    /// Builds it from parameter overrides.
    pub fn new(overrides: &ParamTable) -> Result<Self, PolicyError> {
        let params = Params::resolve(NAME, &PARAMS, overrides)?;
        Ok(P2c {
            choices: params.i64("choices") as usize,
            in_flight: InFlight::new(),
        })
    }
}

impl Policy for P2c {
    fn plan(&mut self, req: &Request<'_>, _now_ns: u64, rng: &mut Rng, out: &mut Plan) -> Decision {
        if !req.plannable() {
            return Decision::Unavailable;
        }
        let (mut order, n) = scratch(req.candidates);
        let order = &mut order[..n];
        let d = self.choices.max(req.count).min(n);
        shuffle_prefix(order, 0, d, rng);
        let mut buf = ScoreBuf::new();
        let scores = buf.fill(d, |i| self.in_flight.get(order[i]) as f64);
        sort_by_score(&mut order[..d], scores);
        out.set_order(order, req.count);
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
    fn the_most_loaded_node_is_never_chosen_of_three() {
        // With d = 2 of 3, the busiest node loses every comparison it takes part in.
        let mut p = P2c::new(&ParamTable::new()).unwrap();
        let nodes = ids(3);
        for _ in 0..5 {
            p.on_send(NodeId(2), 0);
        }
        p.on_send(NodeId(1), 0);
        let mut rng = Rng::seed_from_u64(3);
        let mut plan = Plan::new();
        let mut hits = [0u32; 3];
        for _ in 0..3_000 {
            p.plan(&req(&nodes, 1), 0, &mut rng, &mut plan);
            hits[plan.targets()[0].index()] += 1;
            assert_eq!(plan.all().len(), 3);
        }
        assert_eq!(hits[2], 0);
        // Node 0 wins both comparisons it is in (2/3), node 1 only the one against node 2 (1/3).
        assert!((1_850..2_150).contains(&hits[0]), "{hits:?}");
    }

    #[test]
    fn d_equal_to_n_is_least_outstanding() {
        let mut p = P2c::new(&table(&[("choices", crate::ParamValue::Int(4))])).unwrap();
        let nodes = ids(4);
        for (node, k) in [(0, 2), (1, 3), (2, 1), (3, 4)] {
            for _ in 0..k {
                p.on_send(NodeId(node), 0);
            }
        }
        let mut rng = Rng::seed_from_u64(4);
        let mut plan = Plan::new();
        for _ in 0..100 {
            p.plan(&req(&nodes, 2), 0, &mut rng, &mut plan);
            assert_eq!(plan.targets(), &[NodeId(2), NodeId(0)]);
        }
    }
}
