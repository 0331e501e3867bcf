//! `oracle` (simulation only): told each node's true queue length, mean service time and
//! concurrency by the simulator ([`Policy::on_truth`]), it sends to the node with the lowest
//! expected response time — the lower bound C3 and the others are compared against.
//!
//! Expected response time of a new request on a node serving `c` at once with `q` queued or in
//! service and mean service time `s`: `s * (1 + max(0, q + 1 - c) / c)` — it waits for the
//! requests ahead of it beyond the free slots, served `c` at a time. With `c = 1` this is
//! C3's clairvoyant `(q + 1) * s`. Requests this policy sends are added to its copy of `q`
//! until the next truth arrives, so a burst of plans between two truths does not herd. A node
//! without truth scores 0 (tried first, as in C3).

use crate::nodes::NodeTable;
use crate::order::{rotate_random, scratch, sort_by_score};
use crate::params::{ParamSpec, ParamTable, Params, PolicyError};
use crate::policy::Policy;
use crate::rng::Rng;
use crate::types::{Decision, NodeId, NodeTruth, Plan, Request, Side, MAX_REPLICAS};

/// The name it is registered under.
pub const NAME: &str = "oracle";
/// Its parameters: none.
pub static PARAMS: [ParamSpec; 0] = [];

#[derive(Clone, Copy, Debug, Default)]
struct Truth {
    known: bool,
    queue_len: f64,
    service_time_mean_ns: f64,
    concurrency: f64,
}

impl Truth {
    fn expected_response_ns(&self) -> f64 {
        if !self.known {
            return 0.0;
        }
        let c = self.concurrency.max(1.0);
        self.service_time_mean_ns * (1.0 + (self.queue_len + 1.0 - c).max(0.0) / c)
    }
}

/// The clairvoyant policy.
#[derive(Debug)]
pub struct Oracle {
    params: Params,
    truth: NodeTable<Truth>,
}

impl Oracle {
    /// Builds it from parameter overrides (it has none).
    pub fn new(overrides: &ParamTable) -> Result<Self, PolicyError> {
        Ok(Oracle {
            params: Params::resolve(NAME, &PARAMS, overrides)?,
            truth: NodeTable::new(),
        })
    }
}

impl Policy for Oracle {
    fn name(&self) -> &'static str {
        NAME
    }

    fn side(&self) -> Side {
        Side::Both
    }

    fn params(&self) -> &Params {
        &self.params
    }

    fn plan(&mut self, req: &Request<'_>, _now_ns: u64, rng: &mut Rng, out: &mut Plan) -> Decision {
        let n = req.candidates.len();
        if req.count == 0 || n < req.count {
            return Decision::Unavailable;
        }
        let (mut order, n) = scratch(req.candidates);
        let order = &mut order[..n];
        rotate_random(order, rng);
        let mut scores = [0.0; MAX_REPLICAS];
        for (s, &node) in scores.iter_mut().zip(order.iter()) {
            *s = self.truth.value(node).expected_response_ns();
        }
        sort_by_score(order, &mut scores[..n]);
        out.set_order(order, req.count);
        Decision::Send
    }

    fn on_send(&mut self, node: NodeId, _now_ns: u64) {
        if let Some(t) = self.truth.get_mut(node) {
            t.queue_len += 1.0;
        }
    }

    fn on_truth(&mut self, truth: &NodeTruth, _now_ns: u64) {
        *self.truth.entry(truth.node) = Truth {
            known: true,
            queue_len: truth.queue_len as f64,
            service_time_mean_ns: truth.service_time_mean_ns.max(0.0),
            concurrency: truth.concurrency.max(1) as f64,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;

    fn truth(node: u16, queue_len: u32, service_ms: f64, concurrency: u32) -> NodeTruth {
        NodeTruth {
            node: NodeId(node),
            queue_len,
            service_time_mean_ns: service_ms * 1e6,
            concurrency,
        }
    }

    #[test]
    fn picks_the_lowest_expected_response_time() {
        let mut p = Oracle::new(&ParamTable::new()).unwrap();
        let nodes = ids(3);
        // 0: 4 queued x 2 ms, 1 slot -> 10 ms; 1: 1 queued x 6 ms -> 12 ms; 2: 8 queued over 8
        // slots x 3 ms -> 3 * (1 + 1/8) = 3.375 ms.
        p.on_truth(&truth(0, 4, 2.0, 1), 0);
        p.on_truth(&truth(1, 1, 6.0, 1), 0);
        p.on_truth(&truth(2, 8, 3.0, 8), 0);
        let mut rng = Rng::seed_from_u64(1);
        let mut plan = Plan::new();
        p.plan(&req(&nodes, 1), 0, &mut rng, &mut plan);
        assert_eq!(plan.all(), &[NodeId(2), NodeId(0), NodeId(1)]);
        // Sending raises its own copy of the queue until the next truth.
        for _ in 0..30 {
            p.on_send(NodeId(2), 0);
        }
        p.plan(&req(&nodes, 1), 0, &mut rng, &mut plan);
        assert_eq!(plan.targets(), &[NodeId(0)]);
    }
}
