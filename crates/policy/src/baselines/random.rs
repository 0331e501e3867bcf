//! `random`: targets uniformly at random among the candidates (Cassandra's SimpleSnitch with
//! uniform access; the token-aware driver's plain shuffle). One more random candidate follows
//! as the speculative-retry fallback, then the rest.

use crate::order::{scratch, shuffle_prefix};
use crate::params::{ParamSpec, ParamTable, Params, PolicyError};
use crate::policy::Policy;
use crate::rng::Rng;
use crate::types::{Decision, Plan, Request};

/// The name it is registered under.
pub const NAME: &str = "random";
/// Its parameters: none.
pub static PARAMS: [ParamSpec; 0] = [];

/// Uniform random selection.
#[derive(Debug)]
pub struct Random {}

impl Random {
    /// Builds it from parameter overrides (it has none).
    pub fn new(overrides: &ParamTable) -> Result<Self, PolicyError> {
        Params::resolve(NAME, &PARAMS, overrides)?;
        Ok(Random {})
    }
}

impl Policy for Random {
    fn plan(&mut self, req: &Request<'_>, _now_ns: u64, rng: &mut Rng, out: &mut Plan) -> Decision {
        if !req.plannable() {
            return Decision::Unavailable;
        }
        let (mut order, n) = scratch(req.candidates);
        shuffle_prefix(&mut order[..n], 0, req.count + 1, rng);
        out.set_order(&order[..n], req.count);
        Decision::Send
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;

    #[test]
    fn uniform_over_candidates_and_distinct() {
        let mut p = Random::new(&ParamTable::new()).unwrap();
        let nodes = ids(4);
        let mut rng = Rng::seed_from_u64(1);
        let mut plan = Plan::new();
        let mut hits = [0u32; 4];
        for _ in 0..40_000 {
            assert_eq!(p.plan(&req(&nodes, 2), 0, &mut rng, &mut plan), Decision::Send);
            assert_eq!(plan.all().len(), 4);
            assert_ne!(plan.targets()[0], plan.targets()[1]);
            for t in plan.targets() {
                hits[t.index()] += 1;
            }
        }
        for h in hits {
            assert!((19_000..21_000).contains(&h), "{hits:?}");
        }
        assert_eq!(p.plan(&req(&nodes, 5), 0, &mut rng, &mut plan), Decision::Unavailable);
    }
}
