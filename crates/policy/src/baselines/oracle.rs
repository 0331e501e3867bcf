//! `oracle` (simulation only): told each node's true queue length, mean service time and
//! concurrency by the simulator ([`Event::Truth`]), it sends to the node that scores lowest
//! on that truth — the bound C3 and the others are compared against.
//!
//! With `q` requests queued or in service at a node, `s` its current mean service time and `c`
//! the requests it serves at once, the score is, by `model`:
//! - `queue-x-service` (default): `(1 + q) * s`, the design's "true queue length x true mean
//!   service time" and the C3 authors' simulator's clairvoyant strategy (absim: `(1 +
//!   len(activeQ + waitQ)) * serviceTime`). It ignores the concurrency, so on a multi-slot
//!   server it overstates the wait of a short queue.
//! - `expected-response`: `s * (1 + max(0, q + 1 - c) / c)`, the expected response time of a
//!   new request, which waits only for the requests ahead of it beyond the free slots, served
//!   `c` at a time. A stronger bound than the spec's; with `c = 1` it equals `queue-x-service`.
//!
//! Requests this policy sends are added to its copy of `q` until the next truth arrives, so a
//! caller that reports the truth less often than it plans does not see a burst of plans herd
//! onto one node. (The simulator reports every candidate's truth right before each plan, so
//! there the copy is always the live queue and the adjustment never shows.) A node without
//! truth scores 0 (tried first, as in C3).

use crate::nodes::NodeTable;
use crate::order::rank_all;
use crate::params::{ParamDefault, ParamSpec, ParamTable, Params, PolicyError};
use crate::policy::{Event, Policy};
use crate::rng::Rng;
use crate::types::{Decision, Plan, Request};

/// The name it is registered under.
pub const NAME: &str = "oracle";
/// Its parameters: the scoring model.
pub static PARAMS: [ParamSpec; 1] = [ParamSpec {
    name: "model",
    default: ParamDefault::Choice {
        value: QUEUE_X_SERVICE,
        allowed: &[QUEUE_X_SERVICE, EXPECTED_RESPONSE],
    },
    description: "queue-x-service: (1 + true queue) x true mean service time (the spec's and C3's clairvoyant); expected-response: mean service time x (1 + queue beyond the free slots / slots)",
}];

const QUEUE_X_SERVICE: &str = "queue-x-service";
const EXPECTED_RESPONSE: &str = "expected-response";

/// How a node's truth is scored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Model {
    /// `(1 + q) * s`.
    QueueXService,
    /// `s * (1 + max(0, q + 1 - c) / c)`.
    ExpectedResponse,
}

#[derive(Clone, Copy, Debug, Default)]
struct Truth {
    known: bool,
    queue_len: f64,
    service_time_mean_ns: f64,
    concurrency: f64,
}

impl Truth {
    fn score_ns(&self, model: Model) -> f64 {
        if !self.known {
            return 0.0;
        }
        match model {
            Model::QueueXService => (1.0 + self.queue_len) * self.service_time_mean_ns,
            Model::ExpectedResponse => {
                let c = self.concurrency.max(1.0);
                self.service_time_mean_ns * (1.0 + (self.queue_len + 1.0 - c).max(0.0) / c)
            }
        }
    }
}

/// The clairvoyant policy.
#[derive(Debug)]
pub struct Oracle {
    model: Model,
    truth: NodeTable<Truth>,
}

impl Oracle {
    /// Builds it from parameter overrides (`model`).
    pub fn new(overrides: &ParamTable) -> Result<Self, PolicyError> {
        let params = Params::resolve(NAME, &PARAMS, overrides)?;
        let model = match params.text("model") {
            EXPECTED_RESPONSE => Model::ExpectedResponse,
            _ => Model::QueueXService,
        };
        Ok(Oracle {
            model,
            truth: NodeTable::new(),
        })
    }
}

impl Policy for Oracle {
    fn plan(&mut self, req: &Request<'_>, _now_ns: u64, rng: &mut Rng, out: &mut Plan) -> Decision {
        if !req.plannable() {
            return Decision::Unavailable;
        }
        rank_all(req, rng, out, |node| self.truth.value(node).score_ns(self.model));
        Decision::Send
    }

    fn observe(&mut self, event: &Event<'_>, _now_ns: u64) {
        match *event {
            Event::Sent { node } => {
                if let Some(t) = self.truth.get_mut(node) {
                    t.queue_len += 1.0;
                }
            }
            Event::Truth(truth) => {
                *self.truth.entry(truth.node) = Truth {
                    known: true,
                    queue_len: truth.queue_len as f64,
                    service_time_mean_ns: truth.service_time_mean_ns.max(0.0),
                    concurrency: truth.concurrency.max(1) as f64,
                };
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ParamValue;
    use crate::testkit::*;

    fn truth(node: u16, queue_len: u32, service_ms: f64, concurrency: u32) -> NodeTruth {
        NodeTruth {
            node: NodeId(node),
            queue_len,
            service_time_mean_ns: service_ms * 1e6,
            concurrency,
        }
    }

    fn oracle(model: Option<&str>) -> Oracle {
        let mut o = ParamTable::new();
        if let Some(m) = model {
            o.insert("model".into(), ParamValue::Text(m.into()));
        }
        Oracle::new(&o).unwrap()
    }

    #[test]
    fn default_model_is_queue_times_service_time() {
        let mut p = oracle(None);
        assert_eq!(p.model, Model::QueueXService);
        let nodes = ids(3);
        // 0: (1 + 4) x 2 ms = 10 ms; 1: (1 + 1) x 6 ms = 12 ms; 2: (1 + 3) x 2 ms = 8 ms over
        // 8 slots (the slots do not count: 3 would be served at once, yet it scores 8 ms).
        p.on_truth(&truth(0, 4, 2.0, 1), 0);
        p.on_truth(&truth(1, 1, 6.0, 1), 0);
        p.on_truth(&truth(2, 3, 2.0, 8), 0);
        let mut rng = Rng::seed_from_u64(1);
        let mut plan = Plan::new();
        p.plan(&req(&nodes, 1), 0, &mut rng, &mut plan);
        assert_eq!(plan.all(), &[NodeId(2), NodeId(0), NodeId(1)]);
        // Sending raises its own copy of the queue until the next truth: two more on node 2
        // make it (1 + 5) x 2 = 12 ms, behind node 0.
        p.on_send(NodeId(2), 0);
        p.on_send(NodeId(2), 0);
        p.plan(&req(&nodes, 1), 0, &mut rng, &mut plan);
        assert_eq!(plan.targets(), &[NodeId(0)]);
        // The next truth replaces the copy.
        p.on_truth(&truth(2, 0, 2.0, 8), 0);
        p.plan(&req(&nodes, 1), 0, &mut rng, &mut plan);
        assert_eq!(plan.targets(), &[NodeId(2)]);
    }

    #[test]
    fn expected_response_model_counts_the_free_slots() {
        let mut p = oracle(Some("expected-response"));
        let nodes = ids(3);
        // 0: 4 queued x 2 ms, 1 slot -> 10 ms; 1: 1 queued x 6 ms -> 12 ms; 2: 8 queued over 8
        // slots x 3 ms -> 3 * (1 + 1/8) = 3.375 ms (queue-x-service would score it 27 ms).
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

    #[test]
    fn models_agree_on_single_slot_servers() {
        for (q, s) in [(0u32, 4.0), (3, 1.5), (17, 12.0)] {
            let t = Truth {
                known: true,
                queue_len: q as f64,
                service_time_mean_ns: s * 1e6,
                concurrency: 1.0,
            };
            assert_eq!(t.score_ns(Model::QueueXService), t.score_ns(Model::ExpectedResponse));
        }
    }

    #[test]
    fn an_unknown_model_is_refused() {
        let mut o = ParamTable::new();
        o.insert("model".into(), ParamValue::Text("psychic".into()));
        assert!(Oracle::new(&o).is_err());
    }
}
