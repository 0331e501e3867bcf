//! `dynamic-snitch`: Cassandra's `DynamicEndpointSnitch` ordering (coordinator side in
//! Cassandra; it works equally for a client choosing among replicas).
//!
//! - Every reply's latency goes into the host's [`DecayingReservoir`] (100 samples, alpha
//!   0.75 per second) in whole milliseconds, truncated, as Cassandra stores it; a request that
//!   expired or whose node died adds `timeout_sample_ms` (5,000: Cassandra adds an expired
//!   callback's time-out), so a node that stopped answering scores as slow as the time-out
//!   until fresher samples outweigh those.
//! - Every `update_interval_ms` (100 ms) the scores are recomputed: `score = median /
//!   max(1 ms, largest median) + severity`. Recomputation is lazy: the first plan after the
//!   boundary does it, for the hosts whose samples changed since the last one only (a host's
//!   median depends on its samples alone); the largest median is kept in a tournament tree
//!   over the hosts, and a score divided out when read. So a coordinator of a 300-node cluster
//!   does work per reply, not per host every 100 ms, with the same scores bit for bit.
//! - Every `reset_interval_ms` (600 s) all samples are dropped, so a host that was slow long
//!   ago is not held against forever; hosts without samples have no score and count as 0.
//! - Ordering: the topology order (the local node first when it is a candidate, then the
//!   request's candidate order) is kept unless at some position its score exceeds the sorted
//!   score at that position times `1 + badness_threshold` (1.0, Cassandra 4.0+'s default); then the candidates are sorted
//!   by score, ties keeping topology order. A threshold of 0 always sorts.
//!
//! Severity, in Cassandra a gossiped I/O-load indicator, has no source in the feedback record,
//! so it is 0 (as in C3's simulator model). The reservoir's random draws are hashed from (node, sample number,
//! latency) because replies carry no RNG; the policy stays a pure function of its inputs.

use super::reservoir::{unit_from_hash, DecayingReservoir};
use crate::nodes::NodeTable;
use crate::order::{scratch, sort_by_score, ScoreBuf};
use crate::params::{ParamDefault as D, ParamSpec, ParamTable, Params, PolicyError};
use crate::policy::{Event, Policy};
use crate::rng::Rng;
use crate::types::{Decision, Failure, NodeId, Plan, Request};

/// The name it is registered under.
pub const NAME: &str = "dynamic-snitch";

/// Its parameters with Cassandra's defaults.
pub static PARAMS: [ParamSpec; 6] = [
    ParamSpec {
        name: "badness_threshold",
        default: D::Float {
            value: 1.0,
            min: 0.0,
            max: 1e6,
        },
        description: "keep topology order unless a score exceeds the sorted one by this fraction (Cassandra 4.0+'s default; 0.1 in older cassandra.yaml files)",
    },
    ParamSpec {
        name: "timeout_sample_ms",
        default: D::Float {
            value: 5000.0,
            min: 0.0,
            max: 86_400_000.0,
        },
        description: "the sample an expired or lost request adds (Cassandra counts an expired callback at its time-out, read_request_timeout)",
    },
    ParamSpec {
        name: "update_interval_ms",
        default: D::Float {
            value: 100.0,
            min: 0.001,
            max: 86_400_000.0,
        },
        description: "how often scores are recomputed from the latency samples",
    },
    ParamSpec {
        name: "reset_interval_ms",
        default: D::Float {
            value: 600_000.0,
            min: 0.001,
            max: 86_400_000_000.0,
        },
        description: "how often every latency sample is dropped",
    },
    ParamSpec {
        name: "reservoir_size",
        default: D::Int {
            value: 100,
            min: 1,
            max: 100_000,
        },
        description: "latency samples kept per host",
    },
    ParamSpec {
        name: "reservoir_alpha_per_s",
        default: D::Float {
            value: 0.75,
            min: 0.0,
            max: 100.0,
        },
        description: "forward-decay rate of the reservoir (higher favours recent samples more)",
    },
];

/// A host's samples.
#[derive(Clone, Debug, Default)]
struct Host {
    samples: DecayingReservoir,
    seen: u64,
    /// Its samples changed since the last update (it is in `changed`).
    changed: bool,
    /// The median of its samples as they are now, computed when the first reply since the
    /// last update changed them (while they are in cache); `None` once they changed again.
    current: Option<Option<f64>>,
}

/// The largest of a value per host slot: a tournament tree (leaves at `cap..2 cap`), so a
/// change costs log(hosts) and the largest is the root.
#[derive(Clone, Debug, Default)]
struct MaxTree {
    cap: usize,
    nodes: Vec<f64>,
}

impl MaxTree {
    /// Makes room for slot `i` (allocates when it is past the capacity).
    fn reserve(&mut self, i: usize) {
        if i < self.cap {
            return;
        }
        let cap = (i + 1).next_power_of_two();
        let mut nodes = vec![f64::NEG_INFINITY; 2 * cap];
        nodes[cap..cap + self.cap].copy_from_slice(&self.nodes[self.cap..]);
        for p in (1..cap).rev() {
            nodes[p] = nodes[2 * p].max(nodes[2 * p + 1]);
        }
        (self.cap, self.nodes) = (cap, nodes);
    }

    fn set(&mut self, i: usize, value: f64) {
        self.reserve(i);
        let mut p = self.cap + i;
        self.nodes[p] = value;
        while p > 1 {
            p /= 2;
            self.nodes[p] = self.nodes[2 * p].max(self.nodes[2 * p + 1]);
        }
    }

    /// Slot `i`'s value (`-inf` when never set).
    #[inline]
    fn get(&self, i: usize) -> f64 {
        if i < self.cap {
            self.nodes[self.cap + i]
        } else {
            f64::NEG_INFINITY
        }
    }

    fn max(&self) -> f64 {
        self.nodes.get(1).copied().unwrap_or(f64::NEG_INFINITY)
    }
}

/// Cassandra's dynamic snitch.
#[derive(Debug)]
pub struct DynamicSnitch {
    badness_threshold: f64,
    /// The sample (whole ms) a request that expired or was lost adds.
    timeout_sample_ms: f64,
    update_interval_ns: u64,
    reset_interval_ns: u64,
    reservoir_size: usize,
    alpha_per_s: f64,
    hosts: NodeTable<Host>,
    /// The slots of the hosts whose samples changed since the last update.
    changed: Vec<u32>,
    /// Every host's median at the last update (`-inf`: it had no samples), by slot: the
    /// scores' numerators, in a few cache lines a plan reads.
    medians: MaxTree,
    /// The divisor of the last update: the largest median, at least 1 ms.
    largest: f64,
    next_update_ns: u64,
    next_reset_ns: u64,
    scratch: Vec<(f64, f64)>,
}

impl DynamicSnitch {
    /// Builds it from parameter overrides.
    pub fn new(overrides: &ParamTable) -> Result<Self, PolicyError> {
        let params = Params::resolve(NAME, &PARAMS, overrides)?;
        let reset_interval_ns = ((params.f64("reset_interval_ms") * 1e6) as u64).max(1);
        let reservoir_size = params.i64("reservoir_size") as usize;
        Ok(DynamicSnitch {
            badness_threshold: params.f64("badness_threshold"),
            timeout_sample_ms: params.f64("timeout_sample_ms").trunc(),
            update_interval_ns: ((params.f64("update_interval_ms") * 1e6) as u64).max(1),
            reset_interval_ns,
            reservoir_size,
            alpha_per_s: params.f64("reservoir_alpha_per_s"),
            hosts: NodeTable::new(),
            changed: Vec::new(),
            medians: MaxTree::default(),
            largest: 1.0,
            next_update_ns: 0,
            next_reset_ns: reset_interval_ns,
            scratch: Vec::with_capacity(reservoir_size),
        })
    }

    /// The current score of `node` (`None`: no samples at the last update; counts as 0).
    pub fn score(&self, node: NodeId) -> Option<f64> {
        let median = self.medians.get(self.hosts.slot_of(node)?);
        (median != f64::NEG_INFINITY).then(|| median / self.largest)
    }

    /// Drops samples and recomputes scores when `now_ns` crossed their boundaries.
    fn maybe_update(&mut self, now_ns: u64) {
        if now_ns >= self.next_reset_ns {
            for s in 0..self.hosts.len() {
                let h = self.hosts.at_mut(s);
                if !h.samples.is_empty() {
                    h.samples.clear();
                    h.current = None;
                    if !std::mem::replace(&mut h.changed, true) {
                        self.changed.push(s as u32);
                    }
                }
            }
            self.next_reset_ns = now_ns - now_ns % self.reset_interval_ns + self.reset_interval_ns;
        }
        if now_ns < self.next_update_ns {
            return;
        }
        self.next_update_ns = now_ns - now_ns % self.update_interval_ns + self.update_interval_ns;
        let alpha = self.alpha_per_s;
        // A host whose samples did not change keeps its median: the same samples give the same.
        for s in self.changed.drain(..) {
            let h = self.hosts.at_mut(s as usize);
            h.changed = false;
            let median = match h.current.take() {
                Some(median) => median,
                None => h.samples.quantile(0.5, alpha, &mut self.scratch),
            };
            self.medians.set(s as usize, median.unwrap_or(f64::NEG_INFINITY));
        }
        // ms: Cassandra's floor on the divisor. (+ severity, which is 0: nothing reports it.)
        self.largest = 1.0f64.max(self.medians.max());
    }

    /// Adds one latency sample (ms) for `node`; `salt` varies the reservoir's hashed draw.
    fn add_sample(&mut self, node: NodeId, ms: f64, salt: u64, now_ns: u64) {
        let (size, alpha) = (self.reservoir_size, self.alpha_per_s);
        let slot = self.hosts.entry_slot(node);
        let h = self.hosts.at_mut(slot);
        if h.samples.is_empty() && h.seen == 0 {
            h.samples = DecayingReservoir::new(size);
        }
        h.seen += 1;
        let u = unit_from_hash((node.0 as u64) << 48 ^ h.seen << 20 ^ salt);
        let kept = h.samples.update(ms, now_ns as f64 / 1e9, alpha, u, size);
        if kept {
            if std::mem::replace(&mut h.changed, true) {
                h.current = None;
            } else {
                // The first change since the last update: at 300 nodes usually the only one
                // before the next, so the median is taken now, while the samples are in cache.
                h.current = Some(h.samples.quantile(0.5, alpha, &mut self.scratch));
                self.changed.push(slot as u32);
            }
        }
        // Room for its median at the next update, and in the changed list (allocating here,
        // when a host is first heard from, not in a plan).
        self.medians.reserve(slot);
        if self.changed.capacity() < self.hosts.len() {
            self.changed.reserve_exact(self.hosts.len() - self.changed.len());
        }
    }
}

impl Policy for DynamicSnitch {
    fn plan(&mut self, req: &Request<'_>, now_ns: u64, _rng: &mut Rng, out: &mut Plan) -> Decision {
        if !req.plannable() {
            return Decision::Unavailable;
        }
        self.maybe_update(now_ns);
        let (mut order, n) = scratch(req.candidates);
        let order = &mut order[..n];
        if let Some(pos) = req.local.and_then(|l| order.iter().position(|&x| x == l)) {
            order[..=pos].rotate_right(1);
        }
        let (mut buf, mut sorted_buf) = (ScoreBuf::new(), ScoreBuf::new());
        let scores = buf.fill(n, |i| self.score(order[i]).unwrap_or(0.0));
        let sorted = sorted_buf.fill(n, |i| scores[i]);
        sorted.sort_unstable_by(f64::total_cmp);
        let factor = 1.0 + self.badness_threshold;
        let bad = self.badness_threshold == 0.0 || (0..n).any(|i| scores[i] > sorted[i] * factor);
        if bad {
            sort_by_score(order, scores);
        }
        out.set_order(order, req.count);
        Decision::Send
    }

    fn observe(&mut self, event: &Event<'_>, now_ns: u64) {
        match *event {
            Event::Reply(reply) => {
                // Whole milliseconds, truncated, as Cassandra stores them (`TimeUnit.toMillis`):
                // on a fast cluster most samples are 0 or 1 and the scores move in steps.
                let ms = (reply.latency_ns / 1_000_000) as f64;
                self.add_sample(reply.node, ms, reply.latency_ns, now_ns);
            }
            // Cassandra adds an expired request's time-out to the host's samples; a request to
            // a node that died expires the same way. An error is an answer: no sample here.
            Event::Failure { node, failure } if failure != Failure::Error => {
                self.add_sample(node, self.timeout_sample_ms, failure as u64, now_ns);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;

    fn feed(p: &mut DynamicSnitch, node: u16, ms: f64, k: u64, at_ns: u64) {
        for _ in 0..k {
            p.on_reply(&reply(node, (ms * 1e6) as u64), at_ns);
        }
    }

    #[test]
    fn keeps_topology_order_until_the_badness_threshold_is_crossed() {
        let mut p = DynamicSnitch::new(&ParamTable::new()).unwrap();
        let nodes = ids(3);
        let mut rng = Rng::seed_from_u64(1);
        let mut plan = Plan::new();
        // Node 0 is 80% slower than the others: within the threshold (1.0), topology order stays.
        feed(&mut p, 0, 18.0, 50, 0);
        feed(&mut p, 1, 10.0, 50, 0);
        feed(&mut p, 2, 10.0, 50, 0);
        p.plan(&req(&nodes, 1), 0, &mut rng, &mut plan);
        assert_eq!(plan.all(), &[NodeId(0), NodeId(1), NodeId(2)]);
        assert!((p.score(NodeId(0)).unwrap() - 1.0).abs() < 1e-12);
        // Node 0 becomes 2.5x as slow: sorted by score at the next update (100 ms later).
        feed(&mut p, 0, 25.0, 300, 50 * MS);
        p.plan(&req(&nodes, 1), 60 * MS, &mut rng, &mut plan);
        assert_eq!(plan.targets(), &[NodeId(0)], "scores are only recomputed every 100 ms");
        p.plan(&req(&nodes, 1), 100 * MS, &mut rng, &mut plan);
        assert_eq!(plan.all(), &[NodeId(1), NodeId(2), NodeId(0)]);
        // Threshold 0: always sorted (ties keep topology order).
        let mut always = DynamicSnitch::new(&table(&[("badness_threshold", crate::ParamValue::Float(0.0))])).unwrap();
        feed(&mut always, 0, 11.0, 50, 0);
        feed(&mut always, 1, 10.0, 50, 0);
        always.plan(&req(&nodes, 1), 0, &mut rng, &mut plan);
        assert_eq!(plan.all(), &[NodeId(2), NodeId(1), NodeId(0)], "no samples = score 0 = best");
    }

    #[test]
    fn samples_are_whole_milliseconds_as_cassandra_keeps_them() {
        let mut p = DynamicSnitch::new(&ParamTable::new()).unwrap();
        let (nodes, mut rng, mut plan) = (ids(2), Rng::seed_from_u64(4), Plan::new());
        // 0.4 ms and 0.9 ms both truncate to 0: equal scores, topology order, however many.
        feed(&mut p, 0, 0.9, 100, 0);
        feed(&mut p, 1, 0.4, 100, 0);
        p.plan(&req(&nodes, 1), 0, &mut rng, &mut plan);
        assert_eq!((p.score(NodeId(0)), p.score(NodeId(1))), (Some(0.0), Some(0.0)));
        assert_eq!(plan.targets(), &[NodeId(0)]);
        // 2.7 ms counts as 2, and any score above 0 is more than twice 0: sorted.
        feed(&mut p, 0, 2.7, 300, 10 * MS);
        p.plan(&req(&nodes, 1), 100 * MS, &mut rng, &mut plan);
        assert_eq!(p.score(NodeId(0)), Some(1.0), "the median 2 over the largest median 2");
        assert_eq!(plan.targets(), &[NodeId(1)]);
    }

    #[test]
    fn an_expired_request_counts_at_the_time_out() {
        let mut p = DynamicSnitch::new(&ParamTable::new()).unwrap();
        let (nodes, mut rng, mut plan) = (ids(2), Rng::seed_from_u64(5), Plan::new());
        feed(&mut p, 0, 3.0, 20, 0);
        feed(&mut p, 1, 3.0, 20, 0);
        // Node 0 dies: the requests sent to it expire a little later; they outnumber its
        // fast samples and, being newer, outweigh them.
        for i in 0..30 {
            p.on_failure(NodeId(0), Failure::Timeout, 500 * MS + i * MS);
        }
        p.on_failure(NodeId(1), Failure::Error, 500 * MS);
        p.plan(&req(&nodes, 1), 600 * MS, &mut rng, &mut plan);
        assert_eq!(p.score(NodeId(0)), Some(1.0), "its median is the 5,000 ms time-out");
        assert!(p.score(NodeId(1)).unwrap() < 0.001, "an error is an answer, not a sample");
        assert_eq!(plan.targets(), &[NodeId(1)]);
    }

    #[test]
    fn forgets_after_the_reset_interval() {
        let mut p = DynamicSnitch::new(&ParamTable::new()).unwrap();
        let nodes = ids(2);
        let mut rng = Rng::seed_from_u64(2);
        let mut plan = Plan::new();
        feed(&mut p, 0, 50.0, 100, 0);
        feed(&mut p, 1, 5.0, 100, 0);
        p.plan(&req(&nodes, 1), 0, &mut rng, &mut plan);
        assert_eq!(plan.targets(), &[NodeId(1)]);
        p.plan(&req(&nodes, 1), 599 * S, &mut rng, &mut plan);
        assert_eq!(plan.targets(), &[NodeId(1)]);
        // At 600 s every sample goes; both score "none" (0): topology order again.
        p.plan(&req(&nodes, 1), 600 * S, &mut rng, &mut plan);
        assert_eq!(p.score(NodeId(0)), None);
        assert_eq!(plan.all(), &[NodeId(0), NodeId(1)]);
    }

    #[test]
    fn local_node_leads_the_topology_order() {
        let mut p = DynamicSnitch::new(&ParamTable::new()).unwrap();
        let nodes = ids(3);
        let r = Request {
            local: Some(NodeId(2)),
            ..req(&nodes, 2)
        };
        let mut rng = Rng::seed_from_u64(3);
        let mut plan = Plan::new();
        p.plan(&r, 0, &mut rng, &mut plan);
        assert_eq!(plan.all(), &[NodeId(2), NodeId(0), NodeId(1)]);
        assert_eq!(plan.targets().len(), 2);
    }
}
