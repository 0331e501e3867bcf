//! `naive`: the coordinator behaviour before HWLB. The coordinator reads locally when it is a
//! replica and picks the other CL-1 replicas uniformly at random; a coordinator that is not a
//! replica picks all CL uniformly. Every replica does the same number of reads whatever its
//! cache holds, which is what makes a restarted node's misses spike (the seeds' baseline).

use crate::order::local_first_then_random;
use crate::params::{ParamSpec, ParamTable, Params, PolicyError};
use crate::policy::Policy;
use crate::rng::Rng;
use crate::types::{Decision, Plan, Request};

/// The name it is registered under.
pub const NAME: &str = "naive";
/// Its parameters: none.
pub static PARAMS: [ParamSpec; 0] = [];

/// The naive coordinator policy.
#[derive(Debug)]
pub struct Naive {}

impl Naive {
    /// Builds it from parameter overrides (it has none).
    pub fn new(overrides: &ParamTable) -> Result<Self, PolicyError> {
        Params::resolve(NAME, &PARAMS, overrides)?;
        Ok(Naive {})
    }
}

impl Policy for Naive {
    fn plan(&mut self, req: &Request<'_>, _now_ns: u64, rng: &mut Rng, out: &mut Plan) -> Decision {
        if !req.plannable() {
            return Decision::Unavailable;
        }
        local_first_then_random(req, rng, out);
        Decision::Send
    }
}
