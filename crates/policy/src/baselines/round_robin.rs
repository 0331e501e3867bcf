//! `round-robin`: the candidates in topology order, rotated by one more position per request.
//!
//! One counter per policy instance, shared by every replica group (as the Java driver rotates
//! its non-replica nodes): a group then sees consecutive counter values only when its requests
//! are consecutive, and otherwise a near-uniform rotation. A per-group counter would need a map
//! lookup per request for no observable benefit in a token-aware workload.

use crate::order::scratch;
use crate::params::{ParamSpec, ParamTable, Params, PolicyError};
use crate::policy::Policy;
use crate::rng::Rng;
use crate::types::{Decision, Plan, Request};

/// The name it is registered under.
pub const NAME: &str = "round-robin";
/// Its parameters: none.
pub static PARAMS: [ParamSpec; 0] = [];

/// Rotation through the candidates.
#[derive(Debug)]
pub struct RoundRobin {
    next: u64,
}

impl RoundRobin {
    /// Builds it from parameter overrides (it has none).
    pub fn new(overrides: &ParamTable) -> Result<Self, PolicyError> {
        Params::resolve(NAME, &PARAMS, overrides)?;
        Ok(RoundRobin { next: 0 })
    }
}

impl Policy for RoundRobin {
    fn plan(&mut self, req: &Request<'_>, _now_ns: u64, _rng: &mut Rng, out: &mut Plan) -> Decision {
        if !req.plannable() {
            return Decision::Unavailable;
        }
        let (mut order, n) = scratch(req.candidates);
        order[..n].rotate_left((self.next % n as u64) as usize);
        self.next = self.next.wrapping_add(1);
        out.set_order(&order[..n], req.count);
        Decision::Send
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;
    use crate::types::NodeId;

    #[test]
    fn rotates_one_position_per_request() {
        let mut p = RoundRobin::new(&ParamTable::new()).unwrap();
        let nodes = ids(3);
        let mut rng = Rng::seed_from_u64(1);
        let mut plan = Plan::new();
        let mut firsts = Vec::new();
        for _ in 0..6 {
            p.plan(&req(&nodes, 1), 0, &mut rng, &mut plan);
            firsts.push(plan.targets()[0].0);
            assert_eq!(plan.all().len(), 3);
        }
        assert_eq!(firsts, [0, 1, 2, 0, 1, 2]);
        p.plan(&req(&nodes, 2), 0, &mut rng, &mut plan);
        assert_eq!(plan.targets(), &[NodeId(0), NodeId(1)]);
    }
}
