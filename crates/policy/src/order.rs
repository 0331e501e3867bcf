//! Small allocation-free helpers shared by policies that build an order of candidates.

use crate::rng::Rng;
use crate::types::{NodeId, Plan, Request, MAX_REPLICAS};
use std::mem::MaybeUninit;

/// Room for a score per candidate on the stack, of which only the ones a plan fills are
/// written: a plan ranks a few candidates of at most [`MAX_REPLICAS`], and zeroing a whole
/// `[f64; MAX_REPLICAS]` (512 bytes) cost a simple policy's plan about a third of its time.
pub struct ScoreBuf([MaybeUninit<f64>; MAX_REPLICAS]);

impl ScoreBuf {
    /// Nothing written yet.
    #[inline]
    pub const fn new() -> Self {
        ScoreBuf([const { MaybeUninit::uninit() }; MAX_REPLICAS])
    }

    /// The first `n` scores, the `i`-th being `score(i)`.
    #[inline]
    pub fn fill(&mut self, n: usize, mut score: impl FnMut(usize) -> f64) -> &mut [f64] {
        assert!(n <= MAX_REPLICAS, "{n} scores, at most {MAX_REPLICAS} supported");
        for i in 0..n {
            self.0[i] = MaybeUninit::new(score(i));
        }
        // SAFETY: the first `n` slots were just written (an `f64` has no invalid bit
        // pattern and no drop), and `MaybeUninit<f64>` has the layout of `f64`.
        unsafe { std::slice::from_raw_parts_mut(self.0.as_mut_ptr().cast::<f64>(), n) }
    }
}

impl Default for ScoreBuf {
    fn default() -> Self {
        ScoreBuf::new()
    }
}

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

/// Sorts `order` ascending by the parallel `scores` (stable insertion sort: equal scores keep
/// their relative order, so a caller that randomised the order first gets random tie-breaks).
/// Allocation-free and fast for the small slices plans are made of.
#[inline]
pub fn sort_by_score(order: &mut [NodeId], scores: &mut [f64]) {
    assert_eq!(order.len(), scores.len(), "one score per node");
    for i in 1..order.len() {
        let (node, score) = (order[i], scores[i]);
        let mut j = i;
        while j > 0 && scores[j - 1] > score {
            order[j] = order[j - 1];
            scores[j] = scores[j - 1];
            j -= 1;
        }
        order[j] = node;
        scores[j] = score;
    }
}

/// Moves the `k` lowest-scored nodes to the front of `order`, lowest first (partial selection
/// sort on the parallel `scores`, O(n k)); the rest stay behind in no particular order. Among
/// equal scores the earliest wins, so a randomised order gives random tie-breaks. Cheaper than
/// a full sort when only the targets and the first fallback matter.
#[inline]
pub fn select_best(order: &mut [NodeId], scores: &mut [f64], k: usize) {
    assert_eq!(order.len(), scores.len(), "one score per node");
    let n = order.len();
    for j in 0..k.min(n) {
        let mut best = j;
        for i in j + 1..n {
            if scores[i] < scores[best] {
                best = i;
            }
        }
        order.swap(j, best);
        scores.swap(j, best);
    }
}

/// Rotates `order` left by a uniform random amount: one random number, and a fair tie-break
/// for the stable sorts that follow.
#[inline]
pub fn rotate_random(order: &mut [NodeId], rng: &mut Rng) {
    if order.len() > 1 {
        let k = rng.below(order.len());
        order.rotate_left(k);
    }
}

/// Moves the nodes for which `to_back` holds behind the others, keeping the relative order
/// within both parts. Returns how many stayed in front.
#[inline]
pub fn partition_stable(order: &mut [NodeId], mut to_back: impl FnMut(NodeId) -> bool) -> usize {
    let n = order.len();
    assert!(n <= MAX_REPLICAS);
    let mut back = [NodeId(0); MAX_REPLICAS];
    let (mut front, mut nb) = (0, 0);
    for i in 0..n {
        let node = order[i];
        if to_back(node) {
            back[nb] = node;
            nb += 1;
        } else {
            order[front] = node;
            front += 1;
        }
    }
    order[front..].copy_from_slice(&back[..nb]);
    front
}

/// Puts the request's replicas first (in their candidate order) and the other candidates
/// after them. Returns the number of replicas among the candidates.
#[inline]
pub fn replicas_first(req: &Request<'_>, order: &mut [NodeId]) -> usize {
    match req.replicas {
        None => order.len(),
        Some(_) => partition_stable(order, |n| !req.is_replica(n)),
    }
}

/// Moves `order[from]` to position `to` (>= `from`), shifting the ones between forward by one
/// (the driver's "bubble down").
#[inline]
pub fn move_back(order: &mut [NodeId], from: usize, to: usize) {
    debug_assert!(from <= to && to < order.len());
    order[from..=to].rotate_left(1);
}

/// The candidates in a uniformly random rotation (a fair tie-break for the stable sorts that
/// follow) into `order`, with `score(node)` beside each in the returned scores (as many as
/// candidates, in `scores`): the common start of every policy that ranks all its candidates.
/// The same order and the same random draw as [`scratch`] then [`rotate_random`], written in
/// place (no array copied out of a helper, no second pass for the rotation).
#[inline]
pub fn scored_rotation<'s>(
    candidates: &[NodeId],
    rng: &mut Rng,
    order: &mut [NodeId; MAX_REPLICAS],
    scores: &'s mut ScoreBuf,
    mut score: impl FnMut(NodeId) -> f64,
) -> &'s mut [f64] {
    let n = candidates.len();
    assert!(n <= MAX_REPLICAS, "{n} candidates, at most {MAX_REPLICAS} supported");
    let k = if n > 1 { rng.below(n) } else { 0 };
    let (head, tail) = candidates.split_at(k);
    for (i, &node) in tail.iter().chain(head).enumerate() {
        order[i] = node;
    }
    scores.fill(n, |i| score(order[i]))
}

/// Ranks every candidate by `score` (lowest first, ties broken at random) and plans the best
/// `req.count` as targets and the others as fallbacks in rank order.
#[inline]
pub fn rank_all(req: &Request<'_>, rng: &mut Rng, out: &mut Plan, score: impl FnMut(NodeId) -> f64) {
    let (mut order, mut buf) = ([NodeId(0); MAX_REPLICAS], ScoreBuf::new());
    let scores = scored_rotation(req.candidates, rng, &mut order, &mut buf, score);
    let n = scores.len();
    sort_by_score(&mut order[..n], scores);
    out.set_order(&order[..n], req.count);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scored_rotation_is_scratch_then_rotate_random() {
        for n in 0..=MAX_REPLICAS {
            let nodes: Vec<NodeId> = (0..n as u16).map(|i| NodeId(i * 3)).collect();
            let (mut a, mut b) = (Rng::seed_from_u64(n as u64), Rng::seed_from_u64(n as u64));
            for _ in 0..20 {
                let (mut expected, m) = scratch(&nodes);
                rotate_random(&mut expected[..m], &mut a);
                let (mut order, mut buf) = ([NodeId(0); MAX_REPLICAS], ScoreBuf::new());
                let scores = scored_rotation(&nodes, &mut b, &mut order, &mut buf, |x| f64::from(x.0) + 0.5);
                let k = scores.len();
                assert_eq!((k, &order[..k]), (m, &expected[..m]));
                assert!(order[..k].iter().zip(scores.iter()).all(|(x, &s)| s == f64::from(x.0) + 0.5));
            }
            assert_eq!(a.below(1000), b.below(1000), "the same draws");
        }
    }

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
