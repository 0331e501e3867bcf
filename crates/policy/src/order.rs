//! Small allocation-free helpers shared by policies that build an order of candidates.

use crate::rng::Rng;
use crate::types::{NodeId, Plan, Request, MAX_REPLICAS};

/// Copies the candidates onto the stack: a scratch order a policy may permute freely.
#[inline]
pub fn scratch(candidates: &[NodeId]) -> ([NodeId; MAX_REPLICAS], usize) {
    let n = candidates.len();
    assert!(n <= MAX_REPLICAS, "{n} candidates, at most {MAX_REPLICAS} supported");
    let mut order = [NodeId(0); MAX_REPLICAS];
    order[..n].copy_from_slice(candidates);
    (order, n)
}

/// Makes `order[from..to]` a uniform random selection (in random order) of `order[from..]`
/// (partial Fisher-Yates).
#[inline]
pub fn shuffle_prefix(order: &mut [NodeId], from: usize, to: usize, rng: &mut Rng) {
    let n = order.len();
    for i in from..to.min(n) {
        let j = i + rng.below(n - i);
        order.swap(i, j);
    }
}

/// The pre-HWLB coordinator behaviour: the local node first when it is a candidate, then
/// `count - 1` others uniformly at random; the next entry (the speculative-retry fallback) is
/// uniform among the rest, and the remaining candidates follow.
#[inline]
pub fn local_first_then_random(req: &Request<'_>, rng: &mut Rng, out: &mut Plan) {
    let (mut order, n) = scratch(req.candidates);
    let order = &mut order[..n];
    let mut start = 0;
    if let Some(pos) = req.local.and_then(|l| order.iter().position(|&x| x == l)) {
        order.swap(0, pos);
        start = 1;
    }
    shuffle_prefix(order, start, req.count + 1, rng);
    out.set_order(order, req.count.min(n));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_first_then_uniform() {
        let nodes = [NodeId(0), NodeId(1), NodeId(2)];
        let req = Request {
            candidates: &nodes,
            replicas: None,
            count: 2,
            local: Some(NodeId(1)),
            group: 0,
        };
        let mut rng = Rng::seed_from_u64(5);
        let mut plan = Plan::new();
        let mut seconds = [0u32; 3];
        for _ in 0..10_000 {
            local_first_then_random(&req, &mut rng, &mut plan);
            assert_eq!(plan.targets()[0], NodeId(1));
            assert_eq!(plan.targets().len(), 2);
            assert_eq!(plan.fallbacks().len(), 1);
            seconds[plan.targets()[1].index()] += 1;
        }
        assert_eq!(seconds[1], 0);
        assert!((4_700..5_300).contains(&seconds[0]), "{seconds:?}");
    }
}
