//! `c3` as a policy: rank the candidates by C3's score ([`super::ranking`]), then, with rate
//! control on, send to the best-ranked ones that have a token ([`super::rate_control`]); when
//! fewer than `count` have one, answer [`Decision::Wait`] with the time the next tokens refill
//! (the caller's per-group backlog, see the [module docs](super)).
//!
//! For CL > 1 the `count` best-ranked replicas that have a token are the targets; the next best
//! candidate (with a token, if any has one) follows as the first fallback (the speculative-retry target), then the others in
//! no particular order (ranking all of them would cost O(n^2) per request for nothing). Ties (every server before any feedback scores 0) are broken
//! by a random rotation, so a fresh client does not send everything to the first replica.
//! A reply without a service time (a client choosing coordinators: a coordinator reports none)
//! scores with the response time standing in for `1/mu` (and no `R - 1/mu` part): the node's
//! whole answer time is what the client pays per request, and the queue and our outstanding
//! requests still weigh on it cubically. (Ignoring such replies would leave every node
//! unscored, and the policy a random choice.) A missing queue length counts as 0.

use super::ranking::{Ranking, ServerEstimate};
use super::rate_control::{RateConfig, RateLimiter};
use crate::nodes::NodeTable;
use crate::order::{scored_rotation, select_best, ScoreBuf};
use crate::params::{ParamDefault as D, ParamSpec, ParamTable, Params, PolicyError};
use crate::policy::{Event, Policy};
use crate::rng::Rng;
use crate::types::{Decision, NodeId, Plan, Reply, Request, MAX_REPLICAS};

/// The name it is registered under.
pub const NAME: &str = "c3";

/// Its parameters with the paper's defaults.
pub static PARAMS: [ParamSpec; 14] = [
    ParamSpec::float(
        "concurrency_weight",
        1.0,
        0.0,
        1e6,
        "n in q^ = 1 + os*n + q: the number of clients sharing the servers (set it to the client count)",
    ),
    ParamSpec::float("queue_exponent", 3.0, 0.0, 16.0, "b: the estimated queue is raised to this power"),
    ParamSpec::float(
        "ewma_new_weight",
        0.9,
        0.0,
        1.0,
        "weight of a new sample in the q, 1/mu and R - 1/mu EWMAs",
    ),
    ParamSpec {
        name: "rate_control",
        default: D::Bool(true),
        description: "false = ranking only (no token buckets, never waits)",
    },
    ParamSpec::float("rate_interval_ms", 20.0, 0.001, 3_600_000.0, "delta: the rate-control interval"),
    ParamSpec::float(
        "initial_rate",
        10.0,
        0.001,
        1e9,
        "sending rate of a server never seen, requests per interval",
    ),
    ParamSpec::float(
        "max_tokens",
        10.0,
        1.0,
        1e9,
        "token bucket capacity: the largest burst to one server",
    ),
    ParamSpec::float("cubic_c_per_ms3", 4e-6, 1e-15, 1e6, "C: the cubic growth constant"),
    ParamSpec::float(
        "max_step",
        10.0,
        0.001,
        1e9,
        "Smax: the largest rate increase per reply, requests per interval",
    ),
    ParamSpec::float(
        "beta",
        0.2,
        0.001,
        1.0,
        "multiplicative decrease when sending faster than receiving",
    ),
    ParamSpec::float("hysteresis", 2.0, 0.0, 1e6, "no decrease within this many intervals of an increase"),
    ParamSpec::float("min_rate", 0.01, 1e-9, 1e9, "the lowest sending rate, requests per interval"),
    ParamSpec::float(
        "receive_rate_weight",
        0.1,
        0.0,
        1.0,
        "EWMA weight of the last interval's count in the smoothed send and receive rates",
    ),
    ParamSpec::float(
        "congestion_margin",
        1.0,
        0.0,
        1e9,
        "a server is not keeping up when our smoothed send rate exceeds its receive rate by more, requests per interval",
    ),
];

/// Added to the score of a server without a send token, so it ranks after all that have one.
const WAITING: f64 = 1e300;

/// Everything C3 keeps per server.
#[derive(Clone, Copy, Debug, Default)]
struct Server {
    estimate: ServerEstimate,
    outstanding: u32,
    limiter: Option<RateLimiter>,
    /// Whether its replies carry a service time (a replica does; a coordinator answering a
    /// client does not), which picks the ranking it is scored with.
    timed: bool,
}

impl Server {
    /// Its score: with `timed` ranking when its replies carry a service time, else `untimed`.
    #[inline]
    fn score(&self, timed: &Ranking, untimed: &Ranking) -> f64 {
        let ranking = if self.timed { timed } else { untimed };
        self.estimate.score(self.outstanding, ranking)
    }
}

/// C3: replica ranking and rate control.
#[derive(Debug)]
pub struct C3 {
    ranking: Ranking,
    /// The ranking of servers whose replies carry no service time (the published C3: the same).
    untimed_ranking: Ranking,
    rate_control: bool,
    rates: RateConfig,
    servers: NodeTable<Server>,
}

impl C3 {
    /// Builds it from parameter overrides.
    pub fn new(overrides: &ParamTable) -> Result<Self, PolicyError> {
        let params = Params::resolve(NAME, &PARAMS, overrides)?;
        let rates = RateConfig {
            interval_ns: ((params.f64("rate_interval_ms") * 1e6) as u64).max(1),
            initial_rate: params.f64("initial_rate"),
            max_tokens: params.f64("max_tokens"),
            cubic_c_per_ms3: params.f64("cubic_c_per_ms3"),
            max_step: params.f64("max_step"),
            beta: params.f64("beta"),
            hysteresis: params.f64("hysteresis"),
            min_rate: params.f64("min_rate"),
            receive_rate_weight: params.f64("receive_rate_weight"),
            congestion_margin: params.f64("congestion_margin"),
        };
        let ranking = Ranking {
            concurrency_weight: params.f64("concurrency_weight"),
            queue_exponent: params.f64("queue_exponent"),
            ewma_new_weight: params.f64("ewma_new_weight"),
        };
        Ok(C3 {
            ranking,
            untimed_ranking: ranking,
            rate_control: params.bool("rate_control"),
            rates,
            servers: NodeTable::new(),
        })
    }

    /// Scores the servers whose replies carry no service time (coordinators answering a
    /// client, or a driver that sees only latencies) with `ranking` instead of the published
    /// one. `unified` uses it; `c3` itself scores every server alike.
    pub fn with_untimed_ranking(mut self, ranking: Ranking) -> Self {
        self.untimed_ranking = ranking;
        self
    }

    /// The current score of `node` (lower is better; 0 without feedback).
    pub fn score(&self, node: NodeId) -> f64 {
        self.servers.value(node).score(&self.ranking, &self.untimed_ranking)
    }

    /// The sending rate to `node`, requests per interval (`None`: never sent to).
    pub fn send_rate(&self, node: NodeId) -> Option<f64> {
        self.servers.get(node).and_then(|s| s.limiter).map(|l| l.send_rate())
    }

    /// Whether `node`'s replies carry a service time (a replica reporting its load, C3's
    /// piggyback); `false` before its first reply.
    pub fn reports_load(&self, node: NodeId) -> bool {
        self.servers.get(node).is_some_and(|s| s.timed)
    }

    /// A request went to `node`: one more outstanding, one rate token taken.
    fn sent(&mut self, node: NodeId, now_ns: u64) {
        let rates = self.rates;
        let s = self.servers.entry(node);
        s.outstanding = s.outstanding.saturating_add(1);
        if self.rate_control {
            s.limiter
                .get_or_insert_with(|| RateLimiter::new(&rates, now_ns))
                .take(now_ns, &rates);
        }
    }

    /// A reply: one less outstanding, the estimates and the send rate updated.
    fn replied(&mut self, reply: &Reply, now_ns: u64) {
        let (rates, weight) = (self.rates, self.ranking.ewma_new_weight);
        let s = self.servers.entry(reply.node);
        s.outstanding = s.outstanding.saturating_sub(1);
        s.timed = reply.feedback.service_time_ns.is_some();
        let service_ns = reply.feedback.service_time_ns.unwrap_or(reply.latency_ns);
        let queue = reply.feedback.queue_len.unwrap_or(0) as f64;
        s.estimate.observe(reply.latency_ns as f64, service_ns as f64, queue, weight);
        if self.rate_control {
            s.limiter
                .get_or_insert_with(|| RateLimiter::new(&rates, now_ns))
                .on_reply(now_ns, &rates);
        }
    }

    /// The ranking of the servers that report a service time (C3's `n`, `b` and EWMA weight).
    pub fn ranking(&self) -> Ranking {
        self.ranking
    }

    /// The weight of a new sample in its moving averages (`ewma_new_weight`).
    pub fn ewma_new_weight(&self) -> f64 {
        self.ranking.ewma_new_weight
    }

    /// How long until `node` has a send token at `now_ns`, ns (not rounded).
    #[inline]
    fn wait(&self, node: NodeId, now_ns: u64) -> f64 {
        match self.servers.get(node).and_then(|s| s.limiter.as_ref()) {
            Some(l) => l.wait(now_ns, &self.rates),
            None => 0.0, // a server never sent to starts with a full bucket
        }
    }

    /// [`Policy::plan`] with the servers that report a service time scored by `timed` instead
    /// of this policy's own ranking (`unified` at a coordinator ranks with its own `n`).
    pub fn plan_ranked(&mut self, req: &Request<'_>, timed: &Ranking, now_ns: u64, rng: &mut Rng, out: &mut Plan) -> Decision {
        if !req.plannable() {
            return Decision::Unavailable;
        }
        let untimed = &self.untimed_ranking;
        let (mut order, mut buf) = ([NodeId(0); MAX_REPLICAS], ScoreBuf::new());
        let scores = scored_rotation(req.candidates, rng, &mut order, &mut buf, |node| match self.servers.get(node) {
            Some(server) => server.score(timed, untimed),
            None => 0.0,
        });
        let n = scores.len();
        let order = &mut order[..n];
        if !self.rate_control {
            select_best(order, scores, req.count + 1);
            out.set_order(order, req.count);
            return Decision::Send;
        }
        // Servers without a token rank after every server with one; among each, by score.
        let mut waits = [0.0f64; MAX_REPLICAS];
        let mut ready = 0;
        for i in 0..n {
            waits[i] = self.wait(order[i], now_ns);
            if waits[i] == 0.0 {
                ready += 1;
            } else {
                scores[i] += WAITING;
            }
        }
        if ready < req.count {
            // Enough tokens for `count` servers at the count-th smallest wait.
            let waits = &mut waits[..n];
            let (_, wait, _) = waits.select_nth_unstable_by(req.count - 1, f64::total_cmp);
            let wait_ns = wait.ceil().clamp(1.0, u64::MAX as f64) as u64;
            return Decision::Wait {
                retry_at_ns: now_ns.saturating_add(wait_ns),
            };
        }
        // The best-ranked `count` with a token, then the best remaining one as first fallback.
        select_best(order, scores, req.count + 1);
        out.set_order(order, req.count);
        Decision::Send
    }
}

impl Policy for C3 {
    fn plan(&mut self, req: &Request<'_>, now_ns: u64, rng: &mut Rng, out: &mut Plan) -> Decision {
        let ranking = self.ranking;
        self.plan_ranked(req, &ranking, now_ns, rng, out)
    }

    fn observe(&mut self, event: &Event<'_>, now_ns: u64) {
        match *event {
            Event::Sent { node } => self.sent(node, now_ns),
            Event::Reply(reply) => self.replied(reply, now_ns),
            Event::Failure { node, .. } => {
                if let Some(s) = self.servers.get_mut(node) {
                    s.outstanding = s.outstanding.saturating_sub(1);
                }
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
    use crate::types::Feedback;

    fn c3_reply(node: u16, latency_ms: f64, service_ms: f64, queue: u32) -> Reply {
        Reply {
            node: NodeId(node),
            latency_ns: (latency_ms * 1e6) as u64,
            feedback: Feedback {
                queue_len: Some(queue),
                service_time_ns: Some((service_ms * 1e6) as u64),
                ..Feedback::default()
            },
        }
    }

    #[test]
    fn moves_load_off_a_replica_reporting_a_long_queue() {
        let mut p = C3::new(&table(&[("rate_control", ParamValue::Bool(false))])).unwrap();
        let nodes = ids(3);
        let mut rng = Rng::seed_from_u64(1);
        let mut plan = Plan::new();
        // Before feedback every server scores 0: the choice is spread.
        let mut hits = [0u32; 3];
        for _ in 0..3_000 {
            p.plan(&req(&nodes, 1), 0, &mut rng, &mut plan);
            hits[plan.targets()[0].index()] += 1;
        }
        assert!(hits.iter().all(|&h| h > 900), "{hits:?}");
        // Same service time everywhere; node 1 reports a queue of 30.
        for (node, queue) in [(0, 1), (1, 30), (2, 2)] {
            p.on_send(NodeId(node), 0);
            p.on_reply(&c3_reply(node, 3.0, 2.0, queue), MS);
        }
        assert!(p.score(NodeId(1)) > 100.0 * p.score(NodeId(0)));
        // A closed loop where each server keeps reporting its queue: node 1 gets nothing.
        let queues = [1, 30, 2];
        let mut hits = [0u32; 3];
        for i in 0..1_000 {
            let now = 2 * MS + i * MS;
            p.plan(&req(&nodes, 1), now, &mut rng, &mut plan);
            let t = plan.targets()[0];
            hits[t.index()] += 1;
            p.on_send(t, now);
            p.on_reply(&c3_reply(t.0, 3.0, 2.0, queues[t.index()]), now);
        }
        assert_eq!(hits[1], 0, "{hits:?}");
        // Our own outstanding requests count too: with 30 of ours in flight to node 0 and 29
        // to node 2, both have q^ = 32, worse than node 1's 1 + 0 + 30 = 31.
        for _ in 0..30 {
            p.on_send(NodeId(0), MS);
        }
        for _ in 0..29 {
            p.on_send(NodeId(2), MS);
        }
        p.plan(&req(&nodes, 1), 2_000 * MS, &mut rng, &mut plan);
        assert_eq!(plan.targets(), &[NodeId(1)]);
    }

    #[test]
    fn concurrency_compensation_weighs_our_outstanding_requests() {
        let nodes = ids(2);
        let mut rng = Rng::seed_from_u64(2);
        let mut plan = Plan::new();
        for (n, expected) in [(1.0, NodeId(0)), (10.0, NodeId(1))] {
            let mut p = C3::new(&table(&[
                ("rate_control", ParamValue::Bool(false)),
                ("concurrency_weight", ParamValue::Float(n)),
            ]))
            .unwrap();
            // Node 0: empty queue but 2 of ours outstanding; node 1: queue 4, none of ours.
            p.on_send(NodeId(0), 0);
            p.on_send(NodeId(0), 0);
            p.on_send(NodeId(0), 0);
            p.on_reply(&c3_reply(0, 2.0, 1.0, 0), MS);
            p.on_send(NodeId(1), 0);
            p.on_reply(&c3_reply(1, 2.0, 1.0, 4), MS);
            // q^ = 1 + 2n vs 5: n = 1 -> 3 < 5 (node 0); n = 10 -> 21 > 5 (node 1).
            p.plan(&req(&nodes, 1), 2 * MS, &mut rng, &mut plan);
            assert_eq!(plan.targets(), &[expected], "n = {n}");
        }
    }

    #[test]
    fn rate_limiter_cuts_the_send_rate_by_beta() {
        let mut p = C3::new(&ParamTable::new()).unwrap();
        let a = NodeId(0);
        // We send 10 requests per 20 ms interval (the limit); the server answers one per
        // interval: once the smoothed rates show it (sent 1.9 vs received 0.19 per interval
        // after three intervals), the limit is cut by beta.
        for i in 0..3u64 {
            let start = i * 20 * MS;
            for k in 0..10 {
                p.on_send(a, start + k * 2 * MS);
            }
            p.on_reply(&c3_reply(0, 20.0, 1.0, 0), start + 20 * MS - 1);
        }
        assert_eq!(p.send_rate(a), Some(10.0 * 0.2));
    }

    #[test]
    fn an_unsaturated_sender_is_not_throttled() {
        // 100 requests/s over three replicas (about 0.7 per replica per interval, far below
        // the 10 allowed), each answered 3 ms later: 60 s without a single wait, and no
        // replica's limit ever goes down.
        let mut p = C3::new(&ParamTable::new()).unwrap();
        let nodes = ids(3);
        let mut rng = Rng::seed_from_u64(5);
        let mut plan = Plan::new();
        for i in 0..6_000u64 {
            let now = i * 10 * MS;
            assert_eq!(p.plan(&req(&nodes, 1), now, &mut rng, &mut plan), Decision::Send, "request {i}");
            let t = plan.targets()[0];
            p.on_send(t, now);
            p.on_reply(&c3_reply(t.0, 3.0, 2.0, 0), now + 3 * MS);
        }
        for n in 0..3 {
            assert!(p.send_rate(NodeId(n)).unwrap() >= 10.0, "{:?}", p.send_rate(NodeId(n)));
        }
    }

    #[test]
    fn backlogs_when_no_replica_has_a_token() {
        let mut p = C3::new(&table(&[("max_tokens", ParamValue::Float(2.0))])).unwrap();
        let nodes = ids(2);
        let mut rng = Rng::seed_from_u64(3);
        let mut plan = Plan::new();
        let now = 5 * MS;
        // Two tokens per server: four requests go out, the fifth waits.
        for _ in 0..4 {
            assert_eq!(p.plan(&req(&nodes, 1), now, &mut rng, &mut plan), Decision::Send);
            p.on_send(plan.targets()[0], now);
        }
        // 10 tokens per 20 ms: the next token comes 2 ms after the last send.
        assert_eq!(
            p.plan(&req(&nodes, 1), now, &mut rng, &mut plan),
            Decision::Wait { retry_at_ns: now + 2 * MS }
        );
        // At retry time it is sent to the replica that got the token.
        assert_eq!(p.plan(&req(&nodes, 1), now + 2 * MS, &mut rng, &mut plan), Decision::Send);
        // CL = 2 needs a token on both.
        p.on_send(plan.targets()[0], now + 2 * MS);
        match p.plan(&req(&nodes, 2), now + 2 * MS, &mut rng, &mut plan) {
            Decision::Wait { retry_at_ns } => assert_eq!(retry_at_ns, now + 4 * MS),
            d => panic!("{d:?}"),
        }
    }

    #[test]
    fn sends_to_the_best_ranked_replica_with_a_token() {
        let mut p = C3::new(&table(&[("max_tokens", ParamValue::Float(1.0))])).unwrap();
        let nodes = ids(3);
        let mut rng = Rng::seed_from_u64(4);
        let mut plan = Plan::new();
        for (node, queue) in [(0, 0), (1, 5), (2, 10)] {
            p.on_send(NodeId(node), 0);
            p.on_reply(&c3_reply(node, 3.0, 2.0, queue), 0);
        }
        // Node 0 is best but has just spent its only token.
        p.on_send(NodeId(0), 100 * MS);
        p.on_reply(&c3_reply(0, 3.0, 2.0, 0), 100 * MS);
        p.on_send(NodeId(0), 100 * MS);
        p.plan(&req(&nodes, 1), 100 * MS, &mut rng, &mut plan);
        assert_eq!(plan.targets(), &[NodeId(1)]);
        assert_eq!(plan.fallbacks()[0], NodeId(2), "a server with a token is the better fallback");
    }
}
