//! `latency-aware` (client side): the Scylla Rust driver's default policy with latency
//! awareness switched on (it is off by default, and this module shows why one might leave it
//! off: it can prefer a fast non-replica over a lagging replica).
//!
//! Base order, as the driver's token-aware default: the replicas shuffled, then the other
//! candidates in a random rotation. Latency awareness then moves penalised nodes to the back,
//! keeping the order within both parts.
//!
//! Per node, an average latency with time-based weighting: on a reply of latency `l` after `dt`
//! since the previous one, with `x = dt / scale` (`scale_ms`, 100 ms by default),
//! `avg = w * avg + (1 - w) * l` with `w = ln(1 + x) / x` (`w = 1` when no time passed): the
//! longer the gap, the more the new sample counts. Every `update_rate_ms` (100 ms; lazily, when a
//! plan sees the boundary passed) the minimum average over the nodes with at least
//! `minimum_measurements` (50) samples is recomputed. A node is penalised when it has at least
//! that many samples, its average exceeds `exclusion_threshold` (2) times the minimum, and its
//! average was updated within `retry_period_ms` (10 s): a penalised node receives little traffic,
//! so its average stops being refreshed and after the retry period it gets a second chance.

use crate::nodes::NodeTable;
use crate::order::{partition_stable, replicas_first, rotate_random, scratch, shuffle_prefix};
use crate::params::{ParamDefault as D, ParamSpec, ParamTable, Params, PolicyError};
use crate::policy::{Event, Policy};
use crate::rng::Rng;
use crate::types::{Decision, NodeId, Plan, Request};

/// The name it is registered under.
pub const NAME: &str = "latency-aware";

/// Its parameters with the driver's defaults.
pub static PARAMS: [ParamSpec; 5] = [
    ParamSpec {
        name: "exclusion_threshold",
        default: D::Float {
            value: 2.0,
            min: 1.0,
            max: 1e6,
        },
        description: "a node averaging more than this times the best average is penalised",
    },
    ParamSpec {
        name: "scale_ms",
        default: D::Float {
            value: 100.0,
            min: 0.001,
            max: 3_600_000.0,
        },
        description: "time unit of the averaging weight ln(1 + dt/scale) / (dt/scale); larger keeps more history",
    },
    ParamSpec {
        name: "retry_period_ms",
        default: D::Float {
            value: 10_000.0,
            min: 0.0,
            max: 86_400_000.0,
        },
        description: "a penalised node whose average was not updated for this long gets a second chance",
    },
    ParamSpec {
        name: "update_rate_ms",
        default: D::Float {
            value: 100.0,
            min: 0.001,
            max: 3_600_000.0,
        },
        description: "how often the best (minimum) average is recomputed",
    },
    ParamSpec {
        name: "minimum_measurements",
        default: D::Int {
            value: 50,
            min: 1,
            max: 1_000_000_000,
        },
        description: "replies a node needs before it can set the minimum or be penalised",
    },
];

/// One node's time-weighted average latency.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TimedAverage {
    /// The average, ns.
    pub average_ns: f64,
    /// When it was last updated, ns.
    pub updated_ns: u64,
    /// How many samples went in.
    pub samples: u64,
}

impl TimedAverage {
    /// Folds in a latency sample at `now_ns` (a zero latency is ignored, as in the driver).
    pub fn add(&mut self, latency_ns: u64, now_ns: u64, scale_ns: f64) {
        if latency_ns == 0 {
            return;
        }
        if self.samples == 0 {
            self.average_ns = latency_ns as f64;
        } else {
            let x = now_ns.saturating_sub(self.updated_ns) as f64 / scale_ns;
            let w = if x <= 0.0 { 1.0 } else { (1.0 + x).ln() / x };
            self.average_ns = w * self.average_ns + (1.0 - w) * latency_ns as f64;
        }
        self.samples += 1;
        self.updated_ns = self.updated_ns.max(now_ns);
    }
}

/// The Scylla Rust driver's latency-aware default policy.
#[derive(Debug)]
pub struct LatencyAware {
    exclusion_threshold: f64,
    scale_ns: f64,
    retry_period_ns: u64,
    update_rate_ns: u64,
    minimum_measurements: u64,
    averages: NodeTable<TimedAverage>,
    /// The best average over nodes with enough samples, as of the last update.
    min_average_ns: Option<f64>,
    next_update_ns: u64,
}

impl LatencyAware {
    /// Builds it from parameter overrides.
    pub fn new(overrides: &ParamTable) -> Result<Self, PolicyError> {
        let params = Params::resolve(NAME, &PARAMS, overrides)?;
        Ok(LatencyAware {
            exclusion_threshold: params.f64("exclusion_threshold"),
            scale_ns: params.f64("scale_ms") * 1e6,
            retry_period_ns: (params.f64("retry_period_ms") * 1e6) as u64,
            update_rate_ns: ((params.f64("update_rate_ms") * 1e6) as u64).max(1),
            minimum_measurements: params.i64("minimum_measurements") as u64,
            averages: NodeTable::new(),
            min_average_ns: None,
            next_update_ns: 0,
        })
    }

    /// Recomputes the minimum average when `now_ns` has crossed the next update time.
    fn maybe_update(&mut self, now_ns: u64) {
        if now_ns < self.next_update_ns {
            return;
        }
        let min_samples = self.minimum_measurements;
        self.min_average_ns = self
            .averages
            .iter()
            .filter(|(_, a)| a.samples >= min_samples)
            .map(|(_, a)| a.average_ns)
            .min_by(f64::total_cmp);
        self.next_update_ns = now_ns - now_ns % self.update_rate_ns + self.update_rate_ns;
    }

    /// Whether `node` is penalised at `now_ns` (as of the last minimum update).
    pub fn is_penalised(&self, node: NodeId, now_ns: u64) -> bool {
        let (Some(min), Some(a)) = (self.min_average_ns, self.averages.get(node)) else {
            return false;
        };
        a.samples >= self.minimum_measurements
            && now_ns.saturating_sub(a.updated_ns) <= self.retry_period_ns
            && a.average_ns > self.exclusion_threshold * min
    }

    /// The average of `node`, if it has one.
    pub fn average(&self, node: NodeId) -> Option<TimedAverage> {
        self.averages.get(node).copied().filter(|a| a.samples > 0)
    }
}

impl Policy for LatencyAware {
    fn plan(&mut self, req: &Request<'_>, now_ns: u64, rng: &mut Rng, out: &mut Plan) -> Decision {
        if !req.plannable() {
            return Decision::Unavailable;
        }
        self.maybe_update(now_ns);
        let (mut order, n) = scratch(req.candidates);
        let order = &mut order[..n];
        let rc = replicas_first(req, order);
        shuffle_prefix(&mut order[..rc], 0, rc, rng);
        rotate_random(&mut order[rc..], rng);
        if self.min_average_ns.is_some() {
            partition_stable(order, |node| self.is_penalised(node, now_ns));
        }
        out.set_order(order, req.count);
        Decision::Send
    }

    fn observe(&mut self, event: &Event<'_>, now_ns: u64) {
        if let Event::Reply(reply) = event {
            self.averages.entry(reply.node).add(reply.latency_ns, now_ns, self.scale_ns);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;

    #[test]
    fn average_weights_by_elapsed_time() {
        let mut a = TimedAverage::default();
        a.add(10 * MS, 0, 100e6);
        assert_eq!(a.average_ns, 10e6);
        // Same instant: w = 1, the new sample is ignored.
        a.add(90 * MS, 0, 100e6);
        assert_eq!(a.average_ns, 10e6);
        // One scale later: w = ln 2.
        a.add(90 * MS, 100 * MS, 100e6);
        let w = 2f64.ln();
        assert!((a.average_ns - (w * 10e6 + (1.0 - w) * 90e6)).abs() < 1.0);
        assert_eq!(a.samples, 3);
    }

    /// Feeds `k` replies of `ms` to `node`, one per 10 ms ending at `end_ns`.
    fn feed(p: &mut LatencyAware, node: u16, ms: u64, k: u64, end_ns: u64) {
        for i in 0..k {
            p.on_reply(&reply(node, ms * MS), end_ns - (k - 1 - i) * 10 * MS);
        }
    }

    #[test]
    fn penalises_only_after_the_minimum_measurements_and_retries_after_the_period() {
        let mut p = LatencyAware::new(&ParamTable::new()).unwrap();
        let nodes = ids(3);
        let mut rng = Rng::seed_from_u64(1);
        let mut plan = Plan::new();
        let t = 10 * S;
        feed(&mut p, 0, 1, 60, t);
        feed(&mut p, 1, 1, 60, t);
        // Node 2 is 10x slower but has only 49 samples: not yet penalised.
        feed(&mut p, 2, 10, 49, t);
        p.plan(&req(&nodes, 1), t, &mut rng, &mut plan);
        assert!(!p.is_penalised(NodeId(2), t));
        // The 50th sample makes it eligible; the minimum is recomputed at the next update.
        feed(&mut p, 2, 10, 1, t + 10 * MS);
        p.plan(&req(&nodes, 1), t + 50 * MS, &mut rng, &mut plan);
        assert!(p.is_penalised(NodeId(2), t + 50 * MS), "as of the update before, node 2 counts");
        for _ in 0..100 {
            p.plan(&req(&nodes, 1), t + 150 * MS, &mut rng, &mut plan);
            assert_eq!(plan.all()[2], NodeId(2), "penalised nodes go to the back");
        }
        // No fresh samples for more than the retry period: a second chance.
        let later = t + 10 * MS + 10 * S + MS;
        p.plan(&req(&nodes, 1), later, &mut rng, &mut plan);
        assert!(!p.is_penalised(NodeId(2), later));
        let mut last = 0;
        for _ in 0..300 {
            p.plan(&req(&nodes, 1), later, &mut rng, &mut plan);
            last += (plan.all()[2] == NodeId(2)) as u32;
        }
        assert!((60..140).contains(&last), "back to a shuffled position: {last}");
        // A slow sample refreshes its average: penalised again.
        feed(&mut p, 2, 10, 1, later + MS);
        assert!(p.is_penalised(NodeId(2), later + MS));
    }

    #[test]
    fn nodes_below_threshold_are_not_penalised() {
        let mut p = LatencyAware::new(&ParamTable::new()).unwrap();
        let nodes = ids(2);
        feed(&mut p, 0, 10, 60, S);
        feed(&mut p, 1, 19, 60, S);
        let mut rng = Rng::seed_from_u64(2);
        let mut plan = Plan::new();
        p.plan(&req(&nodes, 1), S, &mut rng, &mut plan);
        assert!(!p.is_penalised(NodeId(1), S));
        feed(&mut p, 1, 40, 30, 2 * S);
        p.plan(&req(&nodes, 1), 2 * S, &mut rng, &mut plan);
        assert!(p.is_penalised(NodeId(1), 2 * S), "{:?}", p.average(NodeId(1)));
    }
}
