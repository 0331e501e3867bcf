//! The ranking of nodes whose replies carry no service time: a client choosing coordinators,
//! or a driver that sees only latencies. It scores a node by the expected time of one more
//! request, split into a part that load does not change and a part that it does:
//!
//! `score = floor + (1 + n x outstanding)^b x excess`
//!
//! - `floor`: the lowest response time seen, rising by `floor_drift` (1%) per sample so that it
//!   follows a node that moved. It is the network round trip plus the quickest service: the
//!   zone latency a read pays whatever the load.
//! - `excess`: a pessimistic response time above the floor, `R + k x D - floor`, with `R` the
//!   average response time and `D` the average deviation from it (both EWMAs, weight
//!   `ewma_weight` 0.02 on a new sample, `k` = `deviation_weight` 2: TCP's retransmission
//!   estimate, smoothed far more). Our own requests in flight multiply only this part.
//! - **Equal within**: excesses within `equal_within` (60%) of the lowest among the candidates
//!   count as equal (the lower ones are raised to that line), so nodes that answer alike are
//!   chosen by requests in flight, as `least-outstanding` does, instead of by noise.
//! - **A node that changed**: `outlier_count` (3) samples in a row above `outlier_factor` (3)
//!   times `R + k x D` replace `R` with the last one. A slow average would otherwise take tens
//!   of samples to notice a node that became ten times slower; an isolated outlier (a rare
//!   slow read) still moves it by 2% only.
//! - **A node that stopped answering**: while requests of ours are in flight to a node, the
//!   time since it last answered anything (or since the first of them went out, if later) is a
//!   lower bound on its response time, so its excess is at least that wait minus its floor.
//!   The averages learn only from replies; without this a paused node keeps the score of its
//!   last answers while the others' scores rise with the load the pause moves onto them (or a
//!   few slow replies reset their averages), and the paused node ranks first for as long as
//!   it takes its requests in flight to outweigh that. With it, a node that stops answering
//!   falls behind the others within about their response time. When its last request in
//!   flight times out the bound goes, and its next request is a trial: a node back from its
//!   pause answers it and is ranked as before, one still paused is left again at once.
//!
//! Why the averages are slow: with 0.9 on the newest sample (C3's EWMA) the ranking follows the
//! last reply, many clients move together to whichever node answered fast a moment ago, and
//! its network card queues (`poc-network`, docs/unified.md).
//!
//! Nodes never heard from score 0 (tried first), unless requests of ours are in flight there:
//! then `(1 + n x outstanding)^b x max(wait, line)`, the wait for an answer counting as for a
//! node that stopped answering (a client of a large cluster meets many nodes it has not heard
//! from; one that is down must not keep scoring 0). Ties are broken uniformly at random. Allocation-free: per
//! node a few numbers in a [`NodeTable`], per plan arrays on the stack.

use crate::nodes::NodeTable;
use crate::order::{scored_rotation, select_best, ScoreBuf};
use crate::rng::Rng;
use crate::types::{NodeId, Plan, Request, MAX_REPLICAS};

/// The ranking's parameters.
#[derive(Clone, Copy, Debug)]
pub struct UntimedRanking {
    /// `n`: how much each of our requests in flight counts.
    pub concurrency_weight: f64,
    /// `b`: the exponent on `1 + n x outstanding`.
    pub queue_exponent: f64,
    /// The weight of a new sample in the response-time and deviation EWMAs.
    pub ewma_weight: f64,
    /// `k`: how many average deviations are added to the average response time.
    pub deviation_weight: f64,
    /// How much the floor rises per sample above it (a fraction).
    pub floor_drift: f64,
    /// Excesses within this fraction of the lowest count as equal.
    pub equal_within: f64,
    /// A sample above this many times `R + k x D` is an outlier.
    pub outlier_factor: f64,
    /// After this many outliers in a row the average restarts from the last sample (0: never).
    pub outlier_count: u32,
}

/// What is known of one node.
#[derive(Clone, Copy, Debug, Default)]
struct Node {
    /// A reply without a service time was seen (the estimates below are set).
    known: bool,
    /// Its last reply carried a service time (C3's ranking decides for it).
    timed: bool,
    /// Our requests in flight there.
    outstanding: u32,
    /// EWMA of the response time, ns.
    response_ns: f64,
    /// EWMA of |sample - response_ns|, ns.
    deviation_ns: f64,
    /// The lowest response time, drifting up, ns.
    floor_ns: f64,
    /// Outliers in a row.
    outliers: u32,
    /// Since when we have been waiting for an answer: set by a send with none of ours in
    /// flight, moved to each answer while requests stay in flight, cleared with the last one.
    waiting_since_ns: Option<u64>,
}

impl Node {
    /// `R + k x D`.
    #[inline]
    fn pessimistic_ns(&self, r: &UntimedRanking) -> f64 {
        self.response_ns + r.deviation_weight * self.deviation_ns
    }

    /// How long we have waited for an answer at `now_ns`, ns (0 with nothing in flight).
    #[inline]
    fn waited_ns(&self, now_ns: u64) -> f64 {
        self.waiting_since_ns.map_or(0.0, |since| now_ns.saturating_sub(since) as f64)
    }

    /// The excess over the floor: the pessimistic estimate's, at least the wait for an
    /// answer at `now_ns` (see the [module docs](self)).
    #[inline]
    fn excess_ns(&self, r: &UntimedRanking, now_ns: u64) -> f64 {
        (self.pessimistic_ns(r).max(self.waited_ns(now_ns)) - self.floor_ns).max(0.0)
    }
}

/// Response times and requests in flight per node, and the ranking over them.
#[derive(Debug)]
pub struct Untimed {
    ranking: UntimedRanking,
    nodes: NodeTable<Node>,
}

impl Untimed {
    /// Nothing known yet.
    pub fn new(ranking: UntimedRanking) -> Self {
        Untimed {
            ranking,
            nodes: NodeTable::new(),
        }
    }

    /// Whether this ranking decides for `candidates`: at least one of them answered without a
    /// service time and none with one (otherwise C3's ranking decides, as before any reply).
    #[inline]
    pub fn applies(&self, candidates: &[NodeId]) -> bool {
        let mut untimed = false;
        for &c in candidates {
            match self.nodes.get(c) {
                Some(n) if n.timed => return false,
                Some(n) if n.known => untimed = true,
                _ => {}
            }
        }
        untimed
    }

    /// Plans `req`: the `count` best-scored candidates (ties at random), then the next best as
    /// the first fallback, then the others.
    pub fn plan(&self, req: &Request<'_>, now_ns: u64, rng: &mut Rng, out: &mut Plan) {
        let r = &self.ranking;
        let mut lowest = f64::INFINITY;
        for &c in req.candidates {
            if let Some(n) = self.nodes.get(c).filter(|n| n.known) {
                lowest = lowest.min(n.excess_ns(r, now_ns));
            }
        }
        let line = lowest * (1.0 + r.equal_within);
        let (mut order, mut buf) = ([NodeId(0); MAX_REPLICAS], ScoreBuf::new());
        let penalty = |outstanding: u32| {
            let q = 1.0 + r.concurrency_weight * f64::from(outstanding);
            if r.queue_exponent == 1.0 {
                q
            } else {
                q.powf(r.queue_exponent)
            }
        };
        let scores = scored_rotation(req.candidates, rng, &mut order, &mut buf, |node| match self.nodes.get(node) {
            Some(x) if x.known => x.floor_ns + penalty(x.outstanding) * x.excess_ns(r, now_ns).max(line),
            // Never answered but waited for: the wait counts from the first request, as for
            // a node that stopped answering (a client of a large cluster meets many nodes it
            // has not heard from; one that is down must not keep scoring 0).
            Some(x) if x.outstanding > 0 => penalty(x.outstanding) * x.waited_ns(now_ns).max(line),
            _ => 0.0,
        });
        let n = scores.len();
        let order = &mut order[..n];
        let count = req.count.min(n);
        for slot in 0..count {
            pick_lowest(&mut order[slot..], &mut scores[slot..], rng);
        }
        select_best(&mut order[count..], &mut scores[count..], 1);
        out.set_order(order, req.count);
    }

    /// A request was sent to `node` at `now_ns`.
    #[inline]
    pub fn sent(&mut self, node: NodeId, now_ns: u64) {
        let n = self.nodes.entry(node);
        if n.outstanding == 0 {
            n.waiting_since_ns = Some(now_ns);
        }
        n.outstanding = n.outstanding.saturating_add(1);
    }

    /// One of our requests to `node` ended at `now_ns`, `answered` or not: the wait for an
    /// answer restarts from an answer, and ends with the last request in flight.
    #[inline]
    fn ended(n: &mut Node, answered: bool, now_ns: u64) {
        n.outstanding = n.outstanding.saturating_sub(1);
        if n.outstanding == 0 {
            n.waiting_since_ns = None;
        } else if answered {
            n.waiting_since_ns = Some(now_ns);
        }
    }

    /// `node` answered after `latency_ns`, at `now_ns`; `timed`: the reply carried a service
    /// time.
    pub fn replied(&mut self, node: NodeId, latency_ns: u64, timed: bool, now_ns: u64) {
        let r = self.ranking;
        let n = self.nodes.entry(node);
        Self::ended(n, true, now_ns);
        n.timed = timed;
        if timed {
            return;
        }
        let sample = latency_ns as f64;
        if !n.known {
            *n = Node {
                known: true,
                response_ns: sample,
                floor_ns: sample,
                ..*n
            };
            return;
        }
        n.floor_ns = sample.min(n.floor_ns * (1.0 + r.floor_drift));
        if sample > r.outlier_factor * n.pessimistic_ns(&r) {
            n.outliers += 1;
        } else {
            n.outliers = 0;
        }
        if r.outlier_count > 0 && n.outliers >= r.outlier_count {
            n.outliers = 0;
            n.response_ns = sample;
            return;
        }
        let w = r.ewma_weight;
        n.deviation_ns = w * (sample - n.response_ns).abs() + (1.0 - w) * n.deviation_ns;
        n.response_ns = w * sample + (1.0 - w) * n.response_ns;
    }

    /// A request to `node` ended without a reply at `now_ns`: `answered` when the node
    /// answered with an error, not when it timed out or the connection was lost.
    #[inline]
    pub fn failed(&mut self, node: NodeId, answered: bool, now_ns: u64) {
        if let Some(n) = self.nodes.get_mut(node) {
            Self::ended(n, answered, now_ns);
        }
    }
}

/// Moves the lowest-scored node to the front, drawn uniformly among equal lowest scores.
#[inline]
fn pick_lowest(order: &mut [NodeId], scores: &mut [f64], rng: &mut Rng) {
    debug_assert!(order.len() <= MAX_REPLICAS);
    let best = scores.iter().copied().fold(f64::INFINITY, f64::min);
    let ties = scores.iter().filter(|&&s| s <= best).count();
    let mut skip = if ties > 1 { rng.below(ties) } else { 0 };
    for i in 0..scores.len() {
        if scores[i] <= best {
            if skip == 0 {
                order.swap(0, i);
                scores.swap(0, i);
                return;
            }
            skip -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;

    const RANKING: UntimedRanking = UntimedRanking {
        concurrency_weight: 1.0,
        queue_exponent: 1.0,
        ewma_weight: 0.02,
        deviation_weight: 2.0,
        floor_drift: 0.01,
        equal_within: 0.6,
        outlier_factor: 3.0,
        outlier_count: 3,
    };

    fn answer(u: &mut Untimed, node: u16, ms: f64) {
        u.sent(NodeId(node), 0);
        u.replied(NodeId(node), (ms * 1e6) as u64, false, 0);
    }

    fn first(u: &Untimed, nodes: &[NodeId], rng: &mut Rng) -> NodeId {
        let mut plan = Plan::new();
        u.plan(&req(nodes, 1), 0, rng, &mut plan);
        plan.targets()[0]
    }

    #[test]
    fn a_node_never_heard_from_with_a_request_in_flight_falls_behind_by_its_wait() {
        // Nodes 0 and 1 answer in ~0.5 ms; node 2 was never heard from: tried first, but once a
        // request of ours is out there its wait counts as a response time.
        let mut u = Untimed::new(RANKING);
        let nodes = ids(3);
        let mut rng = Rng::seed_from_u64(4);
        for _ in 0..50 {
            answer(&mut u, 0, 0.5);
            answer(&mut u, 1, 0.5);
        }
        assert_eq!(first(&u, &nodes, &mut rng), NodeId(2), "never heard from: tried first");
        u.sent(NodeId(2), 0);
        let mut plan = Plan::new();
        u.plan(&req(&nodes, 1), 2_000_000, &mut rng, &mut plan);
        assert_ne!(plan.targets(), &[NodeId(2)], "2 ms without an answer: behind the others");
    }

    #[test]
    fn nodes_that_answer_alike_are_chosen_by_requests_in_flight() {
        // Three nodes with the same floor whose averages differ by less than 60%: one of ours
        // in flight at the fastest sends the read to one of the two others, at random.
        let mut u = Untimed::new(RANKING);
        let nodes = ids(3);
        let mut rng = Rng::seed_from_u64(1);
        for _ in 0..200 {
            for (node, ms) in [(0, 0.30), (0, 0.70), (1, 0.30), (1, 0.90), (2, 0.30), (2, 0.80)] {
                answer(&mut u, node, ms);
            }
        }
        u.sent(NodeId(0), 0);
        let mut hits = [0u32; 3];
        for _ in 0..1_000 {
            hits[first(&u, &nodes, &mut rng).index()] += 1;
        }
        assert_eq!(hits[0], 0, "{hits:?}");
        assert!(hits[1] > 400 && hits[2] > 400, "{hits:?}");
    }

    #[test]
    fn the_near_zone_keeps_the_read_with_one_in_flight() {
        // Near node: 0.30 ms floor, answers 0.30-0.40 ms; far node: 0.65 ms floor, 0.65-0.75.
        // One of ours in flight at the near node doubles only the part above the floor:
        // 0.30 + 2 x 0.24 < 0.65 + 0.24, the read stays near. With two in flight it goes far.
        // (C3's (1 + 1) x 0.35 > 0.70 would send it far at once.)
        let mut u = Untimed::new(RANKING);
        let nodes = ids(2);
        let mut rng = Rng::seed_from_u64(2);
        for _ in 0..300 {
            for (node, ms) in [(0, 0.30), (0, 0.40), (1, 0.65), (1, 0.75)] {
                answer(&mut u, node, ms);
            }
        }
        u.sent(NodeId(0), 0);
        assert_eq!(first(&u, &nodes, &mut rng), NodeId(0));
        u.sent(NodeId(0), 0);
        assert_eq!(first(&u, &nodes, &mut rng), NodeId(1));
    }

    #[test]
    fn a_rare_outlier_moves_little_and_a_node_that_slowed_down_is_left_at_once() {
        let warm = |outlier_count| {
            let mut u = Untimed::new(UntimedRanking { outlier_count, ..RANKING });
            for _ in 0..300 {
                for node in [0, 1] {
                    answer(&mut u, node, 0.5);
                    answer(&mut u, node, 0.7);
                }
            }
            u
        };
        let nodes = ids(2);
        let mut rng = Rng::seed_from_u64(3);
        for outlier_count in [3, 0] {
            let mut u = warm(outlier_count);
            // One 5 ms read at node 0: one in flight at node 1 still sends the read to 0.
            answer(&mut u, 0, 5.0);
            u.sent(NodeId(1), 0);
            assert_eq!(first(&u, &nodes, &mut rng), NodeId(0));
            // Node 0 answers 10 ms slower from now on. After three such answers its average
            // restarts at 10.6 ms and six in flight at node 1 do not bring the read back;
            // without the restart the average has moved by less than 2 ms and they do.
            for _ in 0..3 {
                answer(&mut u, 0, 10.6);
            }
            for _ in 0..5 {
                u.sent(NodeId(1), 0);
            }
            let expected = if outlier_count > 0 { NodeId(1) } else { NodeId(0) };
            assert_eq!(first(&u, &nodes, &mut rng), expected, "outlier_count {outlier_count}");
        }
    }

    /// Three coordinators answering in ~2 ms; at t = 1 s node 1 stops answering and the two
    /// others' next three replies take 450 ms (the load the pause moves onto them), which
    /// restarts their averages there. Then a read every 3.3 ms (300/s) for a second, sent to
    /// the first of its plan: how many go to the stopped node.
    fn reads_sent_to_a_stopped_node(ranking: UntimedRanking) -> (Untimed, u32) {
        let mut u = Untimed::new(ranking);
        let nodes = ids(3);
        let mut rng = Rng::seed_from_u64(4);
        for _ in 0..300 {
            for (node, ms) in [(0, 1.8), (0, 2.4), (1, 1.8), (1, 2.4), (2, 1.8), (2, 2.4)] {
                answer(&mut u, node, ms);
            }
        }
        let pause_ns = 1_000_000_000u64;
        for node in [0u16, 2] {
            for _ in 0..3 {
                u.sent(NodeId(node), pause_ns);
                u.replied(NodeId(node), 450_000_000, false, pause_ns);
            }
        }
        let mut to_stopped = 0;
        for i in 0..300u64 {
            let now = pause_ns + i * 3_333_333;
            let mut plan = Plan::new();
            u.plan(&req(&nodes, 1), now, &mut rng, &mut plan);
            let target = plan.targets()[0];
            u.sent(target, now);
            if target == NodeId(1) {
                to_stopped += 1;
            } else {
                u.replied(target, 450_000_000, false, now);
            }
        }
        (u, to_stopped)
    }

    #[test]
    fn a_node_that_stopped_answering_is_left_within_the_others_response_time() {
        // The stopped node keeps the 2 ms averages of its last answers; only the wait for an
        // answer shows it stopped. It is left once (1 + in flight) x wait passes the others'
        // 450 ms: about a dozen reads (~40 ms). On its averages alone it would take about 200.
        let (_, to_stopped) = reads_sent_to_a_stopped_node(RANKING);
        assert!((5..=20).contains(&to_stopped), "{to_stopped} reads went to the stopped node");
    }

    #[test]
    fn when_its_requests_time_out_the_next_read_tries_it_and_an_answer_brings_it_back() {
        let (mut u, to_stopped) = reads_sent_to_a_stopped_node(RANKING);
        let nodes = ids(3);
        let mut rng = Rng::seed_from_u64(5);
        let now = 3_000_000_000u64;
        // Still waiting: the stopped node ranks last.
        let mut plan = Plan::new();
        u.plan(&req(&nodes, 1), now, &mut rng, &mut plan);
        assert_eq!(plan.all()[2], NodeId(1), "{:?}", plan.all());
        // Its requests time out: no request of ours is waiting any more, and its averages
        // (2 ms) rank it first again: the next read is the trial.
        for _ in 0..to_stopped {
            u.failed(NodeId(1), false, now);
        }
        assert_eq!(first(&u, &nodes, &mut rng), NodeId(1));
        // Still stopped: the trial waits, and within ~0.5 s it is left again.
        u.sent(NodeId(1), now);
        let mut plan = Plan::new();
        u.plan(&req(&nodes, 1), now + 500_000_000, &mut rng, &mut plan);
        assert_ne!(plan.targets()[0], NodeId(1));
        // Back: it answers the trial in 2 ms and keeps its place.
        u.replied(NodeId(1), 2_000_000, false, now + 2_000_000);
        let mut plan = Plan::new();
        u.plan(&req(&nodes, 1), now + 2_000_000, &mut rng, &mut plan);
        assert_eq!(plan.targets()[0], NodeId(1));
    }

    #[test]
    fn it_decides_only_where_no_candidate_reports_a_service_time() {
        let mut u = Untimed::new(RANKING);
        let nodes = ids(3);
        assert!(!u.applies(&nodes), "nothing heard yet: C3's ranking decides");
        answer(&mut u, 0, 0.4);
        assert!(u.applies(&nodes));
        u.sent(NodeId(1), 0);
        u.replied(NodeId(1), 400_000, true, 0);
        assert!(!u.applies(&nodes), "node 1 reports a service time");
        assert!(u.applies(&[NodeId(0), NodeId(2)]));
        // Its next reply without one hands it back.
        answer(&mut u, 1, 0.4);
        assert!(u.applies(&nodes));
    }

    #[test]
    fn the_floor_follows_a_node_that_moved_and_a_new_node_is_tried_first() {
        let mut u = Untimed::new(RANKING);
        for _ in 0..100 {
            answer(&mut u, 0, 0.30);
        }
        let floor_ms = |u: &Untimed| u.nodes.get(NodeId(0)).unwrap().floor_ns / 1e6;
        assert!((floor_ms(&u) - 0.30).abs() < 1e-9);
        // Moved 0.30 ms further away: the floor rises 1% a sample, 1.01^70 = 2.007.
        for _ in 0..69 {
            answer(&mut u, 0, 0.60);
        }
        assert!(floor_ms(&u) < 0.60 && floor_ms(&u) > 0.59, "{}", floor_ms(&u));
        answer(&mut u, 0, 0.60);
        assert!((floor_ms(&u) - 0.60).abs() < 1e-9, "{}", floor_ms(&u));
        // Node 1 never answered: it scores 0 and gets the next read.
        let mut rng = Rng::seed_from_u64(4);
        assert_eq!(first(&u, &ids(2), &mut rng), NodeId(1));
    }
}
