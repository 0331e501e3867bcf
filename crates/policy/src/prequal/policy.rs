//! `prequal` as a policy (client side). Per request: drop expired pool entries; among the
//! entries for this request's candidates, if there are at least 2, apply the hot-cold
//! lexicographic rule — a node is hot when its RIF exceeds the `rif_quantile` (0.84) of recent
//! probe RIFs; the cold ones are ranked by latency, then the hot ones by RIF — and take the
//! best `count`; with fewer than 2 entries pick uniformly at random. Every entry used is
//! charged one use (and one RIF). Probes are requested through [`Policy::probes`]: about
//! `probes_per_query` (3) per query, distinct candidates sampled uniformly without
//! replacement (a fractional rate sends the extra probe with that probability).

use super::pool::{ProbePool, RifQuantile};
use crate::order::{scratch, shuffle_prefix};
use crate::params::{ParamDefault as D, ParamSpec, ParamTable, Params, PolicyError};
use crate::policy::{Event, Policy};
use crate::rng::Rng;
use crate::types::{Decision, NodeId, Plan, Probe, Request, MAX_REPLICAS};

/// The name it is registered under.
pub const NAME: &str = "prequal";

/// Its parameters with the paper's defaults.
pub static PARAMS: [ParamSpec; 6] = [
    ParamSpec {
        name: "pool_size",
        default: D::Int {
            value: 16,
            min: 1,
            max: MAX_REPLICAS as i64,
        },
        description: "most probe answers kept",
    },
    ParamSpec {
        name: "probes_per_query",
        default: D::Float {
            value: 3.0,
            min: 0.0,
            max: MAX_REPLICAS as f64,
        },
        description: "probes requested per query (fractional part sent with that probability)",
    },
    ParamSpec {
        name: "probe_max_age_ms",
        default: D::Float {
            value: 1_000.0,
            min: 0.001,
            max: 3_600_000.0,
        },
        description: "a probe answer older than this is dropped",
    },
    ParamSpec {
        name: "max_reuse",
        default: D::Int {
            value: 2,
            min: 1,
            max: 1_000_000,
        },
        description: "selections one probe answer may serve before it is dropped",
    },
    ParamSpec {
        name: "rif_quantile",
        default: D::Float {
            value: 0.84,
            min: 0.0,
            max: 1.0,
        },
        description: "Q_RIF: a node whose RIF exceeds this quantile of recent RIFs is hot",
    },
    ParamSpec {
        name: "rif_history",
        default: D::Int {
            value: 64,
            min: 1,
            max: 100_000,
        },
        description: "how many recent probe RIFs the quantile is taken over",
    },
];

/// Prequal.
#[derive(Debug)]
pub struct Prequal {
    probes_per_query: f64,
    pool: ProbePool,
    rifs: RifQuantile,
}

impl Prequal {
    /// Builds it from parameter overrides.
    pub fn new(overrides: &ParamTable) -> Result<Self, PolicyError> {
        let params = Params::resolve(NAME, &PARAMS, overrides)?;
        Ok(Prequal {
            probes_per_query: params.f64("probes_per_query"),
            pool: ProbePool::new(
                params.i64("pool_size") as usize,
                (params.f64("probe_max_age_ms") * 1e6) as u64,
                params.i64("max_reuse").min(u32::MAX as i64) as u32,
            ),
            rifs: RifQuantile::new(params.i64("rif_history") as usize, params.f64("rif_quantile")),
        })
    }

    /// The probe pool (for tests and reports).
    pub fn pool(&self) -> &ProbePool {
        &self.pool
    }
}

impl Policy for Prequal {
    fn plan(&mut self, req: &Request<'_>, now_ns: u64, rng: &mut Rng, out: &mut Plan) -> Decision {
        if !req.plannable() {
            return Decision::Unavailable;
        }
        self.pool.expire(now_ns);
        // The usable entries, keyed (hot, latency or RIF): cold by latency, then hot by RIF.
        let mut keys = [(false, 0u64, NodeId(0)); MAX_REPLICAS];
        let mut k = 0;
        let threshold = self.rifs.threshold();
        for e in self.pool.entries() {
            if req.candidates.contains(&e.node) {
                let hot = threshold.is_some_and(|t| e.rif > t);
                keys[k] = (hot, if hot { e.rif as u64 } else { e.latency_ns }, e.node);
                k += 1;
            }
        }
        let (mut order, n) = scratch(req.candidates);
        let order = &mut order[..n];
        if k < 2 {
            shuffle_prefix(order, 0, req.count + 1, rng);
            out.set_order(order, req.count);
            return Decision::Send;
        }
        let keys = &mut keys[..k];
        keys.sort_unstable_by_key(|&(hot, value, node)| (hot, value, node));
        // Chosen nodes first, in rule order; then random others for any targets still missing.
        let chosen = k.min(req.count);
        for (i, &(_, _, node)) in keys[..chosen].iter().enumerate() {
            if let Some(pos) = order[i..].iter().position(|&x| x == node) {
                order.swap(i, i + pos);
            }
            self.pool.use_entry(node);
        }
        shuffle_prefix(&mut order[chosen..], 0, req.count - chosen + 1, rng);
        out.set_order(order, req.count);
        Decision::Send
    }

    fn probes(&mut self, req: &Request<'_>, _now_ns: u64, rng: &mut Rng, out: &mut Vec<Probe>) {
        let whole = self.probes_per_query.floor();
        let mut count = whole as usize + rng.chance(self.probes_per_query - whole) as usize;
        count = count.min(req.candidates.len());
        if count == 0 {
            return;
        }
        let (mut order, n) = scratch(req.candidates);
        shuffle_prefix(&mut order[..n], 0, count, rng);
        out.extend(order[..count].iter().map(|&node| Probe { node }));
    }

    fn observe(&mut self, event: &Event<'_>, now_ns: u64) {
        if let Event::ProbeReply(reply) = event {
            self.pool.insert(reply.node, reply.in_flight, reply.latency_ns, now_ns);
            self.rifs.record(reply.in_flight);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ParamValue;
    use crate::testkit::*;

    fn answer(p: &mut Prequal, node: u16, rif: u32, latency_ms: u64, now: u64) {
        p.on_probe_reply(
            &ProbeReply {
                node: NodeId(node),
                in_flight: rif,
                latency_ns: latency_ms * MS,
            },
            now,
        );
    }

    /// A RIF history of 0..=9.
    fn history(p: &mut Prequal) {
        for rif in 0..10 {
            p.rifs.record(rif);
        }
    }

    #[test]
    fn follows_the_hot_cold_rule() {
        let mut p = Prequal::new(&table(&[("max_reuse", ParamValue::Int(100))])).unwrap();
        let nodes = ids(4);
        let mut rng = Rng::seed_from_u64(1);
        let mut plan = Plan::new();
        history(&mut p);
        // Node 0: hot (RIF 20) but fastest; node 1: cold, 8 ms; node 2: cold, 5 ms; node 3: hot, RIF 12.
        answer(&mut p, 0, 20, 1, 0);
        answer(&mut p, 1, 2, 8, 0);
        answer(&mut p, 2, 3, 5, 0);
        answer(&mut p, 3, 12, 2, 0);
        // The answers' RIFs join the history: 14 RIFs, the 0.84 quantile is 8.
        assert_eq!(p.rifs.threshold(), Some(8));
        p.plan(&req(&nodes, 1), MS, &mut rng, &mut plan);
        assert_eq!(plan.targets(), &[NodeId(2)], "the cold one with the lowest latency");
        // CL 3: cold by latency, then hot by RIF.
        p.plan(&req(&nodes, 3), MS, &mut rng, &mut plan);
        assert_eq!(plan.targets(), &[NodeId(2), NodeId(1), NodeId(3)]);
    }

    #[test]
    fn all_hot_picks_the_lowest_rif() {
        let mut p = Prequal::new(&ParamTable::new()).unwrap();
        let nodes = ids(3);
        let mut rng = Rng::seed_from_u64(2);
        let mut plan = Plan::new();
        for _ in 0..64 {
            p.rifs.record(1);
        }
        answer(&mut p, 0, 30, 1, 0);
        answer(&mut p, 1, 10, 50, 0);
        answer(&mut p, 2, 20, 2, 0);
        // The three answers shift the history only slightly: the threshold stays at 1.
        p.plan(&req(&nodes, 1), MS, &mut rng, &mut plan);
        assert_eq!(plan.targets(), &[NodeId(1)]);
    }

    #[test]
    fn expires_its_pool_and_falls_back_to_random() {
        let mut p = Prequal::new(&ParamTable::new()).unwrap();
        let nodes = ids(3);
        let mut rng = Rng::seed_from_u64(3);
        let mut plan = Plan::new();
        history(&mut p);
        answer(&mut p, 0, 1, 1, 0);
        answer(&mut p, 1, 1, 9, 0);
        p.plan(&req(&nodes, 1), 500 * MS, &mut rng, &mut plan);
        assert_eq!(plan.targets(), &[NodeId(0)]);
        // Past the 1 s age every answer is gone: fewer than 2 entries, uniform choice.
        let mut hits = [0u32; 3];
        for _ in 0..3_000 {
            p.plan(&req(&nodes, 1), 1_001 * MS, &mut rng, &mut plan);
            hits[plan.targets()[0].index()] += 1;
        }
        assert!(p.pool().is_empty());
        assert!(hits.iter().all(|&h| (900..1_100).contains(&h)), "{hits:?}");
    }

    #[test]
    fn reuse_is_bounded() {
        let mut p = Prequal::new(&ParamTable::new()).unwrap();
        let nodes = ids(3);
        let mut rng = Rng::seed_from_u64(4);
        let mut plan = Plan::new();
        history(&mut p);
        answer(&mut p, 0, 1, 1, 0);
        answer(&mut p, 1, 1, 9, 0);
        answer(&mut p, 2, 1, 5, 0);
        let mut firsts = Vec::new();
        for _ in 0..4 {
            p.plan(&req(&nodes, 1), MS, &mut rng, &mut plan);
            firsts.push(plan.targets()[0].0);
        }
        // Node 0 serves twice (its budget), then node 2 twice; then fewer than 2 entries.
        assert_eq!(firsts, [0, 0, 2, 2]);
        assert_eq!(p.pool().len(), 1);
    }

    #[test]
    fn asks_for_about_three_distinct_probes_per_query() {
        let mut p = Prequal::new(&ParamTable::new()).unwrap();
        let nodes = ids(8);
        let mut rng = Rng::seed_from_u64(5);
        let mut probes = Vec::new();
        p.probes(&req(&nodes, 1), 0, &mut rng, &mut probes);
        assert_eq!(probes.len(), 3);
        let mut seen: Vec<u16> = probes.iter().map(|x| x.node.0).collect();
        seen.dedup();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 3);
        let mut frac = Prequal::new(&table(&[("probes_per_query", ParamValue::Float(0.5))])).unwrap();
        probes.clear();
        for _ in 0..10_000 {
            frac.probes(&req(&nodes, 1), 0, &mut rng, &mut probes);
        }
        assert!((4_800..5_200).contains(&probes.len()), "{}", probes.len());
    }
}
