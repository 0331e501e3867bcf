//! The coordinator side of `unified`: which replicas a coordinator passes over, and the order
//! it gives a read. The Cassandra plug-in (`java/hwlb-snitch`, `CoordinatorHealth` and
//! `UnifiedOrder`) implements the same rule; `testdata/unified-coordinator-traces.json`
//! (written and checked by `tests/unified_coordinator_traces.rs`) holds cases both must order
//! identically.
//!
//! **The rule.** Only what a Cassandra coordinator sees without a patch feeds it: a send (a
//! replica put among the first k), a reply with its latency, an expiry (a request that timed
//! out), the number of messages pending on the outbound connection, a node going down or
//! coming up (every signal of that node forgotten), and the hit rates HWLB plans with. The
//! coordinator's own reads are in the same feed (Cassandra 5.0's `LocalReadRunnable` adds their
//! latency, from the request's start, to the latency subscribers under the node's own address),
//! so the coordinator's own replica is judged slow by the same rule as the others: a
//! coordinator whose disk turned slow reads the other replicas, as the dynamic snitch does. It
//! is never judged silent or expired: those rules count sends against replies, and a local read
//! that Cassandra drops or that takes another path adds no sample. A live replica is *passed
//! over* when any of these holds (the coordinator's own only when slow):
//!
//! - **silent** (the Java driver's rule, [`crate::health`]): busy, that is
//!   `max(unanswered, pending) >= in_flight_threshold` (10), where `unanswered` counts the
//!   sends since its last reply (a reply sets it to 0, so it cannot drift when a send is not
//!   answered through this feed), and fewer than `min_responses` (2) replies within the last
//!   `response_window_ms` (200);
//! - **expired**: its latest reply-or-expiry is an expiry, less than `expiry_memory_ms` (2000)
//!   ago (a request that timed out is strong evidence; the first reply after it clears it);
//! - **slow**: its latency average (an EWMA of reply latencies, weight `latency_ewma_weight`
//!   0.05 on a new sample; restarted from the sample after `latency_memory_ms` without a reply;
//!   a reply slower than `stall_ms`, 1000, is a stall, judged by the rules above: it counts as an
//!   answer but stays out of the average, so the queued replies of a paused replica do not make
//!   it slow once it answers again)
//!   is measured (last sample less than `latency_memory_ms`, 2000, ago) and
//!   above `slow_factor` (3) times the lowest measured average among the other candidates that
//!   are not colder than it (hit rate not below its own by more than `cold_hit_rate_gap`) *and*
//!   above it by more than `slow_margin_ms` (5), unless it is **cold**: its hit rate is below
//!   the warmest candidate's by more than `cold_hit_rate_gap` (0.1). HWLB already shrinks a cold
//!   replica's share; passing it over for the slowness its cold cache causes would keep it from
//!   ever warming. And a warm replica is never slow next to a colder one alone: while a
//!   restarted replica warms, HWLB moves its reads onto the warm ones, whose disks then answer
//!   slower; measured against the cold replica (whose misses may even be quick) they would be
//!   passed over and their reads sent to the cold one, undoing HWLB (a real rolling restart
//!   did that: 1.20x the peers' misses at the restarted node, 5.29x in a cold restart).
//!   Nor is a warm replica passed over for slowness when the read could not be served without
//!   a colder one: fewer than k of the other candidates that can answer (not silent, not
//!   expired) are not colder than it. Passing it over would only force the cold replica into
//!   the read in its place: at a restarted coordinator, with RF 3 and QUORUM, the two warm
//!   replicas' latencies under the load HWLB moves onto them often differ threefold, and each
//!   such verdict made the coordinator read its own cold replica (real restarts: 1.29x to
//!   1.62x the peers' misses, where `hwlb` alone kept 0.93x to 1.07x);
//! - **overdue**: a read of ours has waited for more than `overdue_factor` (1) times the
//!   replica's usual time ([`CoordinatorHealth::usual_ns`]: its own average, at least the other
//!   replicas' pooled average plus four deviations, TCP's retransmission time-out) and for less
//!   than `latency_memory_ms`. One read is evidence, whatever the count: a coordinator of a
//!   300-node cluster rarely has two reads out to one replica, so the silent rule's ten never
//!   come and a node that just died kept its reads until the failure detector spoke;
//! - **on trial**: its average is no longer measured (no sample for `latency_memory_ms`), the
//!   last one it had would be slow by the rule above against the candidates measured now, and
//!   a read sent to it since its last reply is still unanswered (sent less than
//!   `latency_memory_ms` ago). A slow verdict does not fade by time alone: once its average
//!   ages out, the replica takes one read, and only that read's answer (a new sample) clears
//!   or renews the verdict. Letting every read back in the moment the average aged out sent a
//!   burst of reads to a replica still slow; and a probe's answer (an ECHO round trip in the
//!   plug-in, [`CoordinatorHealth::answered`]) proves a replica alive but says nothing of its
//!   disk, so it never feeds the average (on a real slow disk, probes' 1 ms round trips pulled
//!   the verdict down within seconds, and p99 spiked each time the replica came back).
//!
//! **The order** ([`coordinator_order`]). The healthy live replicas (those not passed over) are
//! the candidates of HWLB's draw, exactly as if the passed-over ones were down: when more than
//! k are healthy and HWLB is active over them (planned in the canonical order: the coordinator
//! first, then by node id), k distinct replicas are drawn from this
//! coordinator's row (the shares when it is not a replica) with the given uniform number, and
//! come first in the inner order; every other replica that is not passed over follows in the
//! inner order; the passed-over replicas come last, as a last resort, the one that replied most
//! recently first (one that has not replied since it was last reset after all; ties in the inner
//! order). With k or fewer healthy replicas, or HWLB stepping aside, the healthy ones keep the
//! inner order ahead of the passed-over ones. The last resorts' order matters when fewer than k
//! replicas are healthy (say a replica paused and another one briefly silent under load): the
//! first k must take the one still answering, not a paused one the inner order puts first.
//!
//! **Load** ([`super::give_way`]). The order's first k live replicas are the targets; each may
//! give way to a live replica not passed over (a cold one left out for warming included) whose
//! expected time ([`CoordinatorHealth::expected_ns`]), weighed by how much colder it is, is
//! lower; the coordinator's own replica keeps its place. When one gives way the order is
//! rewritten by rank (the targets in the inner order, then the other healthy, the cold and the
//! passed-over replicas as above). Where every live replica's rate is known only: a node
//! without the plug-in keeps the inner order.
//!
//! **Warm-up reads** ([`crate::hwlb::warmup`]). Among the healthy replicas, one that came up
//! recently (`warming`) and whose hit rate is below the warmest's by more than 0.05 is cold:
//! when at least k others are warm, it leaves the draw (which is then over the warm ones) and
//! comes after them, before the passed-over ones; and the read also reads the key from the
//! coldest in the background when `background_unit` is below the chance that gives it the warm
//! replicas' misses per second. The plug-in sends that read off the request path.

use super::give_way::{self, Costs};
use crate::health::{Health, HealthRule};
use crate::hwlb::warmup;
use crate::hwlb::{HwlbPlan, PlanConfig, SamplingRow};
use crate::nodes::NodeTable;
use crate::types::{NodeId, MAX_REPLICAS};

/// The rule's parameters (see the [module docs](self)).
#[derive(Clone, Copy, Debug)]
pub struct CoordinatorRule {
    /// The Java driver's part: busy threshold, answers needed, window.
    pub health: HealthRule,
    /// Weight of a new reply latency in the average.
    pub latency_ewma_weight: f64,
    /// Slow: average above this many times the fastest other candidate's.
    pub slow_factor: f64,
    /// Slow: and above it by more than this, ns.
    pub slow_margin_ns: f64,
    /// A latency average counts only while its last reply is younger than this, ns.
    pub latency_memory_ns: u64,
    /// A reply slower than this counts as an answer but not in the latency average, ns.
    pub stall_ns: u64,
    /// An expiry passes a replica over for this long unless it answered since, ns.
    pub expiry_memory_ns: u64,
    /// Cold: hit rate below the warmest candidate's by more than this.
    pub cold_hit_rate_gap: f64,
    /// Overdue: a read of ours unanswered for more than this many times the replica's usual
    /// response time passes it over (0 = off).
    pub overdue_factor: f64,
    /// How much heat weighs against load when a drawn replica gives way ([`super::give_way`]).
    pub heat_weight: u32,
}

impl Default for CoordinatorRule {
    fn default() -> Self {
        CoordinatorRule {
            health: HealthRule {
                in_flight_threshold: 10,
                min_responses: 2,
                response_window_ns: 200_000_000,
            },
            latency_ewma_weight: 0.05,
            slow_factor: 3.0,
            slow_margin_ns: 5e6,
            latency_memory_ns: 2_000_000_000,
            stall_ns: 1_000_000_000,
            expiry_memory_ns: 2_000_000_000,
            cold_hit_rate_gap: 0.1,
            overdue_factor: 1.0,
            heat_weight: 1,
        }
    }
}

/// What a coordinator knows of one replica's responsiveness.
#[derive(Clone, Copy, Debug, Default)]
struct Signals {
    /// Sends since the last reply.
    unanswered: u32,
    /// Messages pending on the outbound connection, as last sampled.
    pending: u32,
    /// Average reply latency, ns (meaningful once `last_sample_ns` is set).
    latency_ewma_ns: f64,
    /// The last reply that fed the average (not a stall).
    last_sample_ns: Option<u64>,
    /// The last reply of any latency, or a probe's answer.
    last_reply_ns: Option<u64>,
    last_expiry_ns: Option<u64>,
    /// The first read sent since the last read reply (renewed by a send once older than the
    /// latency memory): the trial of a replica whose slow average aged out. Cleared by a read
    /// reply, not by a probe's answer.
    first_unanswered_send_ns: Option<u64>,
}

/// The per-replica signals of the rule and the rule itself.
#[derive(Clone, Debug)]
pub struct CoordinatorHealth {
    rule: CoordinatorRule,
    signals: NodeTable<Signals>,
    replies: Health,
    /// Every other replica's read latencies pooled (the coordinator's own reads, which cross
    /// no network, would make a replica it never reads look as quick as a local read).
    pooled: Pooled,
    /// The coordinator's own node, once known.
    local: Option<NodeId>,
}

/// Every replica's read latencies pooled: what a read usually takes at this coordinator, the
/// reference for a replica of a large cluster that this coordinator reads too rarely to have an
/// average of its own.
#[derive(Clone, Copy, Debug, Default)]
struct Pooled {
    /// Average latency, ns (0 before the first sample).
    mean_ns: f64,
    /// Average absolute deviation from it, ns.
    deviation_ns: f64,
}

impl Pooled {
    /// Weight of a new sample in both averages.
    const EWMA_WEIGHT: f64 = 0.02;

    /// Folds in one read latency, ns.
    fn sample(&mut self, latency_ns: f64) {
        if self.mean_ns == 0.0 {
            self.mean_ns = latency_ns.max(1.0);
            return;
        }
        self.deviation_ns += Pooled::EWMA_WEIGHT * ((latency_ns - self.mean_ns).abs() - self.deviation_ns);
        self.mean_ns += Pooled::EWMA_WEIGHT * (latency_ns - self.mean_ns);
    }

    /// The pessimistic estimate: the average plus four deviations (TCP's retransmission
    /// time-out), ns; `None` before any sample.
    fn pessimistic_ns(&self) -> Option<f64> {
        (self.mean_ns > 0.0).then_some(self.mean_ns + 4.0 * self.deviation_ns)
    }
}

impl CoordinatorHealth {
    /// Nothing known yet.
    pub fn new(rule: CoordinatorRule) -> Self {
        assert!(
            rule.latency_ewma_weight > 0.0 && rule.latency_ewma_weight <= 1.0,
            "latency_ewma_weight in (0, 1]"
        );
        assert!(rule.slow_factor >= 1.0, "slow_factor at least 1");
        assert!(rule.overdue_factor >= 0.0, "overdue_factor at least 0");
        assert!(
            rule.heat_weight <= give_way::MAX_HEAT_WEIGHT,
            "heat_weight at most {}",
            give_way::MAX_HEAT_WEIGHT
        );
        CoordinatorHealth {
            rule,
            signals: NodeTable::new(),
            replies: Health::new(rule.health),
            pooled: Pooled::default(),
            local: None,
        }
    }

    /// Declares the coordinator's own node: its reads stay out of the pooled average.
    #[inline]
    pub fn set_local(&mut self, node: NodeId) {
        self.local = Some(node);
    }

    /// What a read at `node` usually takes: the larger of its own latency average (when
    /// measured) and the other replicas' pooled pessimistic estimate, ns; `None` before any
    /// reply from one of them.
    pub fn usual_ns(&self, node: NodeId, now_ns: u64) -> Option<f64> {
        let pooled = self.pooled.pessimistic_ns()?;
        Some(self.latency_ns(node, now_ns).map_or(pooled, |own| own.max(pooled)))
    }

    /// How long the oldest read of ours still unanswered at `node` has waited at `now_ns`, ns
    /// (0 when none is).
    pub fn waited_ns(&self, node: NodeId, now_ns: u64) -> u64 {
        let s = self.signals.value(node);
        match s.first_unanswered_send_ns {
            Some(sent) if s.unanswered > 0 => now_ns.saturating_sub(sent),
            _ => 0,
        }
    }

    /// Overdue: a read of ours at `node` has waited for more than `overdue_factor` times its
    /// usual time, and for less than `latency_memory_ns` (a read lost for longer no longer
    /// holds the verdict: the next send starts a new wait). One such read is evidence, at any
    /// cluster size: a coordinator of a large cluster rarely has two reads out to one replica.
    pub fn overdue(&self, node: NodeId, now_ns: u64) -> bool {
        let waited = self.waited_ns(node, now_ns) as f64;
        if self.rule.overdue_factor <= 0.0 || waited <= 0.0 || waited >= self.rule.latency_memory_ns as f64 {
            return false;
        }
        self.usual_ns(node, now_ns)
            .is_some_and(|usual| waited > self.rule.overdue_factor * usual)
    }

    /// The expected time of one more read at `node`, ns: its latency average (the other
    /// replicas' pooled one when it has none of its own; 0 before any), at least the wait of its oldest
    /// unanswered read, times one plus its unanswered reads (ours queue behind each other).
    pub fn expected_ns(&self, node: NodeId, now_ns: u64) -> f64 {
        let s = self.signals.value(node);
        let average = self.latency_ns(node, now_ns).unwrap_or(self.pooled.mean_ns);
        average.max(self.waited_ns(node, now_ns) as f64) * (1.0 + f64::from(s.unanswered))
    }

    /// The rule's parameters.
    pub fn rule(&self) -> &CoordinatorRule {
        &self.rule
    }

    /// `node` was put among the first k of a read, at `now_ns`.
    #[inline]
    pub fn sent(&mut self, node: NodeId, now_ns: u64) {
        let s = self.signals.entry(node);
        s.unanswered = s.unanswered.saturating_add(1);
        // A send unanswered for latency_memory no longer holds a trial: this one does.
        let memory = self.rule.latency_memory_ns;
        if s.first_unanswered_send_ns.is_none_or(|t| now_ns.saturating_sub(t) >= memory) {
            s.first_unanswered_send_ns = Some(now_ns);
        }
    }

    /// `node` answered a probe at `now_ns`: it is alive and answering (what a reply tells of
    /// that), but the round trip of a probe, which touches no disk, is no read latency.
    #[inline]
    pub fn answered(&mut self, node: NodeId, now_ns: u64) {
        self.replies.responded(node, now_ns);
        let s = self.signals.entry(node);
        s.unanswered = 0;
        s.last_reply_ns = Some(now_ns);
    }

    /// `node` replied to a read after `latency_ns`, at `now_ns`.
    #[inline]
    pub fn replied(&mut self, node: NodeId, latency_ns: u64, now_ns: u64) {
        let (w, memory_ns) = (self.rule.latency_ewma_weight, self.rule.latency_memory_ns);
        self.answered(node, now_ns);
        let s = self.signals.entry(node);
        s.first_unanswered_send_ns = None;
        if latency_ns > self.rule.stall_ns {
            // A stall: an answer, but not a measure of ordinary slowness.
            return;
        }
        let sample = latency_ns as f64;
        if self.local != Some(node) {
            self.pooled.sample(sample);
        }
        let s = self.signals.entry(node);
        // An average no longer measured (no reply for latency_memory) restarts from this one.
        s.latency_ewma_ns = match s.last_sample_ns {
            Some(last) if now_ns.saturating_sub(last) < memory_ns => s.latency_ewma_ns + w * (sample - s.latency_ewma_ns),
            _ => sample,
        };
        s.last_sample_ns = Some(now_ns);
    }

    /// A request to `node` expired (timed out) at `now_ns`.
    #[inline]
    pub fn expired(&mut self, node: NodeId, now_ns: u64) {
        self.signals.entry(node).last_expiry_ns = Some(now_ns);
    }

    /// `count` messages are pending on the outbound connection to `node`.
    #[inline]
    pub fn pending(&mut self, node: NodeId, count: u32) {
        self.signals.entry(node).pending = count;
    }

    /// `node` went down or came up: everything known of it is forgotten.
    pub fn reset(&mut self, node: NodeId) {
        *self.signals.entry(node) = Signals::default();
        self.replies.forget(node);
    }

    /// Silent: busy and fewer than `min_responses` replies in the window.
    pub fn silent(&self, node: NodeId, now_ns: u64) -> bool {
        let s = self.signals.value(node);
        self.replies.is_unhealthy(node, s.unanswered.max(s.pending), now_ns)
    }

    /// Expired: the latest reply-or-expiry is a recent expiry.
    pub fn expired_recently(&self, node: NodeId, now_ns: u64) -> bool {
        let s = self.signals.value(node);
        match s.last_expiry_ns {
            Some(e) => s.last_reply_ns.is_none_or(|r| e > r) && now_ns.saturating_sub(e) < self.rule.expiry_memory_ns,
            None => false,
        }
    }

    /// When `node` last replied (any latency), ns; `None` when it has not since its last reset.
    pub fn last_reply_ns(&self, node: NodeId) -> Option<u64> {
        self.signals.value(node).last_reply_ns
    }

    /// The latency average of `node` when measured recently, ns.
    pub fn latency_ns(&self, node: NodeId, now_ns: u64) -> Option<f64> {
        let s = self.signals.value(node);
        let last = s.last_sample_ns?;
        (now_ns.saturating_sub(last) < self.rule.latency_memory_ns).then_some(s.latency_ewma_ns)
    }

    /// The last latency average of `node` once it has aged out (no sample for
    /// `latency_memory_ns`) while a read sent to it since its last reply, less than
    /// `latency_memory_ns` ago, is unanswered: the average a trial read is judged by.
    fn on_trial_ns(&self, node: NodeId, now_ns: u64) -> Option<f64> {
        let s = self.signals.value(node);
        let memory = self.rule.latency_memory_ns;
        let aged = now_ns.saturating_sub(s.last_sample_ns?) >= memory;
        let trial = s.first_unanswered_send_ns.is_some_and(|t| now_ns.saturating_sub(t) < memory);
        (aged && trial).then_some(s.latency_ewma_ns)
    }

    /// Which of `live` (a read's live replicas, with their hit rates: `None` when unknown) are
    /// passed over at `now_ns` for a read of `k` replicas, as a bit mask over their positions.
    /// The coordinator `local` is judged slow like the others, never silent or expired.
    pub fn passed_over(&self, live: &[NodeId], rates: &[Option<f64>], local: Option<NodeId>, k: usize, now_ns: u64) -> u64 {
        let n = live.len();
        assert!(n <= MAX_REPLICAS && rates.len() == n);
        let mut latency = [None; MAX_REPLICAS];
        for (slot, &node) in latency.iter_mut().zip(live) {
            *slot = self.latency_ns(node, now_ns);
        }
        // First those that cannot answer: silent or expired.
        let mut unable = 0u64;
        for (j, &node) in live.iter().enumerate() {
            let unable_to_answer = self.silent(node, now_ns) || self.expired_recently(node, now_ns) || self.overdue(node, now_ns);
            if Some(node) != local && unable_to_answer {
                unable |= 1 << j;
            }
        }
        let warmest = rates.iter().flatten().copied().fold(f64::NEG_INFINITY, f64::max);
        let mut mask = unable;
        for (j, &node) in live.iter().enumerate() {
            if unable & (1 << j) != 0 {
                continue;
            }
            let cold = rates[j].is_some_and(|r| r < warmest - self.rule.cold_hit_rate_gap);
            // Measured now, or aged out with its trial read unanswered.
            let judged = latency[j].or_else(|| self.on_trial_ns(node, now_ns));
            if !cold && judged.is_some_and(|mine| self.slow(j, mine, &latency[..n], rates)) && self.servable_without(j, unable, rates, k) {
                mask |= 1 << j;
            }
        }
        mask
    }

    /// Whether replica `i` is not colder than replica `j` by more than the gap (a rate unknown
    /// on either side counts as not colder).
    fn not_colder(&self, rates: &[Option<f64>], i: usize, j: usize) -> bool {
        match (rates[i], rates[j]) {
            (Some(theirs), Some(own)) => theirs >= own - self.rule.cold_hit_rate_gap,
            _ => true,
        }
    }

    /// Slow: candidate `j`'s average `mine` well above the fastest other measured candidate's
    /// among those not colder than it.
    fn slow(&self, j: usize, mine: f64, latency: &[Option<f64>], rates: &[Option<f64>]) -> bool {
        let best = latency
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != j && self.not_colder(rates, i, j))
            .filter_map(|(_, l)| *l)
            .fold(f64::INFINITY, f64::min);
        best.is_finite() && mine > self.rule.slow_factor * best && mine - best > self.rule.slow_margin_ns
    }

    /// Whether a read of `k` replicas can do without replica `j` and still take none colder
    /// than it: at least `k` of the others can answer (not in `unable`) and are not colder.
    fn servable_without(&self, j: usize, unable: u64, rates: &[Option<f64>], k: usize) -> bool {
        let others = (0..rates.len())
            .filter(|&i| i != j && unable & (1 << i) == 0 && self.not_colder(rates, i, j))
            .count();
        others >= k
    }
}

/// One read to order at a coordinator.
#[derive(Clone, Copy, Debug)]
pub struct OrderRequest<'a> {
    /// Every replica, in the inner (topology) order.
    pub replicas: &'a [NodeId],
    /// Whether each replica is live (same positions).
    pub live: &'a [bool],
    /// Each replica's hit rate as HWLB plans with it (`None`: unknown; same positions).
    pub rates: &'a [Option<f64>],
    /// The coordinator.
    pub local: NodeId,
    /// Replicas the read contacts.
    pub k: usize,
    /// The draw's uniform number in [0, 1).
    pub unit: f64,
    /// Whether each replica came up recently enough to count as warming (same positions).
    pub warming: &'a [bool],
    /// Warm-up reads' share of the pace that levels misses per second (0 = off).
    pub warmup_share: f64,
    /// The uniform number in [0, 1) that decides whether this read warms the cold replica.
    pub background_unit: f64,
}

/// What [`coordinator_order`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrderOutcome {
    /// Whether HWLB drew the first k.
    pub drawn: bool,
    /// Replicas passed over.
    pub passed_over: usize,
    /// The cold replica this read also reads in the background, if any.
    pub background: Option<NodeId>,
    /// Drawn replicas that gave way to one that costs less ([`super::give_way`]).
    pub gave_way: usize,
}

/// The order of `req.replicas` for one read (see the [module docs](self)), written to `out`.
pub fn coordinator_order(
    req: &OrderRequest<'_>,
    health: &CoordinatorHealth,
    config: &PlanConfig,
    now_ns: u64,
    out: &mut [NodeId; MAX_REPLICAS],
) -> (usize, OrderOutcome) {
    let n = req.replicas.len();
    assert!(n <= MAX_REPLICAS && req.live.len() == n && req.rates.len() == n);
    assert!((0.0..1.0).contains(&req.unit), "the draw's unit must be in [0, 1)");
    assert!((0.0..1.0).contains(&req.background_unit), "the warm-up's unit must be in [0, 1)");
    assert_eq!(req.warming.len(), n, "one warming flag per replica");
    let live = Live::of(req);
    let passed = health.passed_over(live.nodes(), live.rates(), Some(req.local), req.k, now_ns);
    let mut back = [false; MAX_REPLICAS];
    for i in 0..live.m {
        if passed & (1 << i) != 0 {
            back[live.pos[i]] = true;
        }
    }
    let mut healthy = Healthy::of(&live, passed);
    // Warm-up reads: a cold warming replica leaves the draw, after the warm ones, and may warm
    // in the background.
    let mut cold = [false; MAX_REPLICAS];
    let warm_up = match healthy.known && req.warmup_share > 0.0 && req.k >= 1 {
        true => healthy.set_cold_aside(req, &mut cold),
        false => None,
    };
    let mut chosen = [false; MAX_REPLICAS];
    let (drawn, mut background) = match healthy.known && healthy.h >= req.k && req.k >= 1 {
        true => healthy.draw(req, config, warm_up, &mut chosen),
        false => (false, None),
    };
    let mut len = write_order(req, health, &chosen, &cold, &back, out);
    // Load: the first k may give way to a replica that costs less, where every live replica's
    // rate is known (a node without the plug-in, or a value not understood, keeps the inner
    // order: the plug-in's safety rule).
    let mut gave_way = 0;
    if req.k >= 1 && live.m > req.k && live.rates().iter().all(Option::is_some) {
        let mut targets = first_live_targets(req, &out[..len]);
        gave_way = give_way_to_cheaper(req, health, config, now_ns, &back, &mut targets[..req.k]);
        if gave_way > 0 {
            chosen = [false; MAX_REPLICAS];
            for &t in &targets[..req.k] {
                chosen[t] = true;
            }
            len = write_order(req, health, &chosen, &cold, &back, out);
            if background.is_some_and(|b| chosen[position(req, b)]) {
                background = None;
            }
        }
    }
    debug_assert_eq!(len, n);
    (
        len,
        OrderOutcome {
            drawn,
            passed_over: passed.count_ones() as usize,
            background,
            gave_way,
        },
    )
}

/// The live replicas of a read, in the inner order: each with its rate and its position in
/// `req.replicas`.
struct Live {
    nodes: [NodeId; MAX_REPLICAS],
    rates: [Option<f64>; MAX_REPLICAS],
    pos: [usize; MAX_REPLICAS],
    m: usize,
}

impl Live {
    /// The live ones of `req.replicas`.
    fn of(req: &OrderRequest<'_>) -> Live {
        let mut live = Live {
            nodes: [NodeId(0); MAX_REPLICAS],
            rates: [None; MAX_REPLICAS],
            pos: [0; MAX_REPLICAS],
            m: 0,
        };
        for j in 0..req.replicas.len() {
            if req.live[j] {
                let m = live.m;
                live.nodes[m] = req.replicas[j];
                live.rates[m] = req.rates[j];
                live.pos[m] = j;
                live.m += 1;
            }
        }
        live
    }

    fn nodes(&self) -> &[NodeId] {
        &self.nodes[..self.m]
    }

    fn rates(&self) -> &[Option<f64>] {
        &self.rates[..self.m]
    }
}

/// The healthy live replicas (not passed over) in the inner order: HWLB's candidates, with
/// their rates (0 where unknown) and their positions in `req.replicas`.
struct Healthy {
    nodes: [NodeId; MAX_REPLICAS],
    rates: [f64; MAX_REPLICAS],
    pos: [usize; MAX_REPLICAS],
    h: usize,
    /// Whether every one's rate is known.
    known: bool,
}

impl Healthy {
    /// The ones of `live` not in the mask `passed`.
    fn of(live: &Live, passed: u64) -> Healthy {
        let mut healthy = Healthy {
            nodes: [NodeId(0); MAX_REPLICAS],
            rates: [0.0; MAX_REPLICAS],
            pos: [0; MAX_REPLICAS],
            h: 0,
            known: true,
        };
        for i in 0..live.m {
            if passed & (1 << i) == 0 {
                let h = healthy.h;
                healthy.nodes[h] = live.nodes[i];
                healthy.pos[h] = live.pos[i];
                match live.rates[i] {
                    Some(r) => healthy.rates[h] = r,
                    None => healthy.known = false,
                }
                healthy.h += 1;
            }
        }
        healthy
    }

    /// Takes the cold warming replicas out of the draw, marking them in `cold` (by position in
    /// `req.replicas`); the coldest one and its rate, to warm in the background.
    fn set_cold_aside(&mut self, req: &OrderRequest<'_>, cold: &mut [bool; MAX_REPLICAS]) -> Option<(NodeId, f64)> {
        let h = self.h;
        let mut warming = [false; MAX_REPLICAS];
        for (w, &pos) in warming.iter_mut().zip(&self.pos[..h]) {
            *w = req.warming[pos];
        }
        let split = warmup::split_cold(&self.rates[..h], &warming[..h], req.k)?;
        let warm_up = (self.nodes[split.coldest], self.rates[split.coldest]);
        let mut w = 0;
        for i in 0..h {
            if split.cold_mask & (1 << i) != 0 {
                cold[self.pos[i]] = true;
            } else {
                self.nodes[w] = self.nodes[i];
                self.rates[w] = self.rates[i];
                w += 1;
            }
        }
        self.h = w;
        Some(warm_up)
    }

    /// HWLB's draw of the first k among these (at least k, every rate known), marking them in
    /// `chosen` (by position in `req.replicas`): whether it drew (a plan steps aside when
    /// there is no choice or it is inactive), and the replica `warm_up` names when this read
    /// also warms it in the background.
    fn draw(
        &self,
        req: &OrderRequest<'_>,
        config: &PlanConfig,
        warm_up: Option<(NodeId, f64)>,
        chosen: &mut [bool; MAX_REPLICAS],
    ) -> (bool, Option<NodeId>) {
        let h = self.h;
        let mut idx = [0usize; MAX_REPLICAS];
        for (i, slot) in idx[..h].iter_mut().enumerate() {
            *slot = i;
        }
        // Canonical order: the coordinator first, then by node id (the plug-in's directory ids).
        idx[..h].sort_by_key(|&i| (self.nodes[i] != req.local, self.nodes[i]));
        let (mut canon, mut canon_rates) = ([NodeId(0); MAX_REPLICAS], [0.0; MAX_REPLICAS]);
        for (c, &i) in idx[..h].iter().enumerate() {
            canon[c] = self.nodes[i];
            canon_rates[c] = self.rates[i];
        }
        let plan = HwlbPlan::compute(&canon_rates[..h], req.k, config);
        let mut drawn = false;
        if h > req.k && plan.active() {
            let row = match canon[..h].iter().position(|&x| x == req.local) {
                Some(c) => SamplingRow::new(plan.row(c)),
                None => SamplingRow::new(&plan.shares),
            };
            row.sample_each_unit(req.k, req.unit, |c| {
                let pos = req.replicas.iter().position(|&x| x == canon[c]).expect("a candidate is a replica");
                chosen[pos] = true;
            });
            drawn = true;
        }
        let mut background = None;
        if let Some((coldest, cold_rate)) = warm_up {
            let warm_misses = warmup::misses_per_read(&plan, &canon_rates[..h], config);
            if req.background_unit < warmup::background_chance(req.warmup_share, warm_misses, cold_rate, config) {
                background = Some(coldest);
            }
        }
        (drawn, background)
    }
}

/// The position of `node` in `req.replicas`.
fn position(req: &OrderRequest<'_>, node: NodeId) -> usize {
    req.replicas.iter().position(|&x| x == node).expect("the order holds the replicas")
}

/// The targets of `order`: its first k live replicas (the ones Cassandra contacts), by
/// position in `req.replicas`.
fn first_live_targets(req: &OrderRequest<'_>, order: &[NodeId]) -> [usize; MAX_REPLICAS] {
    let (mut targets, mut t) = ([0usize; MAX_REPLICAS], 0);
    for &node in order {
        let j = position(req, node);
        if t < req.k && req.live[j] {
            targets[t] = j;
            t += 1;
        }
    }
    debug_assert_eq!(t, req.k, "more than k replicas are live");
    targets
}

/// Lets the `targets` (positions in `req.replicas`) give way to live replicas not passed over
/// (`back`) that cost less ([`give_way::give_way`]), the coordinator kept; how many gave way.
fn give_way_to_cheaper(
    req: &OrderRequest<'_>,
    health: &CoordinatorHealth,
    config: &PlanConfig,
    now_ns: u64,
    back: &[bool; MAX_REPLICAS],
    targets: &mut [usize],
) -> usize {
    let n = req.replicas.len();
    let (mut expected, mut eligible) = ([0.0; MAX_REPLICAS], 0u64);
    for j in 0..n {
        expected[j] = health.expected_ns(req.replicas[j], now_ns);
        if req.live[j] && !back[j] {
            eligible |= 1 << j;
        }
    }
    let costs = Costs {
        expected_ns: &expected[..n],
        rates: req.rates,
        eligible,
        heat_weight: health.rule.heat_weight,
        hit_rate_cap: config.hit_rate_cap,
        keep: req.replicas.iter().position(|&x| x == req.local).map_or(0, |j| 1 << j),
    };
    let mut gave = [0usize; MAX_REPLICAS];
    give_way::give_way(&costs, targets, &mut gave)
}

/// Writes the order of `req.replicas` by rank: the `chosen` ones, the other healthy ones, the
/// `cold` ones, each in the inner order; the passed-over (`back`) ones last, the most recent
/// reply first (never replied last; ties in the inner order). Returns the length.
fn write_order(
    req: &OrderRequest<'_>,
    health: &CoordinatorHealth,
    chosen: &[bool; MAX_REPLICAS],
    cold: &[bool; MAX_REPLICAS],
    back: &[bool; MAX_REPLICAS],
    out: &mut [NodeId; MAX_REPLICAS],
) -> usize {
    let n = req.replicas.len();
    let mut len = 0;
    for pass in 0..3 {
        for j in 0..n {
            let here = match pass {
                0 => chosen[j],
                1 => !chosen[j] && !back[j] && !cold[j],
                _ => !chosen[j] && cold[j],
            };
            if here {
                out[len] = req.replicas[j];
                len += 1;
            }
        }
    }
    let start = len;
    for j in (0..n).filter(|&j| back[j] && !chosen[j]) {
        out[len] = req.replicas[j];
        len += 1;
    }
    out[start..len].sort_by_key(|&node| std::cmp::Reverse(health.last_reply_ns(node)));
    len
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn order(h: &CoordinatorHealth, live: &[bool], rates: &[Option<f64>], k: usize, unit: f64, now: u64) -> Vec<u16> {
        let replicas = [NodeId(0), NodeId(1), NodeId(2)];
        let req = OrderRequest {
            replicas: &replicas,
            live,
            rates,
            local: NodeId(0),
            k,
            unit,
            warming: &[false; MAX_REPLICAS][..live.len()],
            warmup_share: 1.0,
            background_unit: 0.5,
        };
        let mut out = [NodeId(0); MAX_REPLICAS];
        let (n, _) = coordinator_order(&req, h, &PlanConfig::default(), now, &mut out);
        out[..n].iter().map(|x| x.0).collect()
    }

    #[test]
    fn a_cold_warming_replica_is_read_in_the_background_not_by_the_request() {
        let h = CoordinatorHealth::new(CoordinatorRule::default());
        let replicas = [NodeId(0), NodeId(1), NodeId(2)];
        let rates = [Some(0.1), Some(0.8), Some(0.8)];
        let mut out = [NodeId(0); MAX_REPLICAS];
        let req = |warming: &'static [bool], background_unit: f64| OrderRequest {
            replicas: &replicas,
            live: &[true; 3],
            rates: &rates,
            local: NodeId(1),
            k: 2,
            unit: 0.5,
            warming,
            warmup_share: 1.0,
            background_unit,
        };
        // The warm replicas miss 0.2 per read each; the cold one (0.9 per read) warms in the
        // background on 0.2 / 0.9 of the reads.
        for (unit, background) in [(0.2, Some(NodeId(0))), (0.23, None)] {
            let (n, outcome) = coordinator_order(&req(&[true, false, false], unit), &h, &PlanConfig::default(), 0, &mut out);
            assert_eq!(&out[..n], &[NodeId(1), NodeId(2), NodeId(0)]);
            assert_eq!(outcome.background, background, "unit {unit}");
        }
        // Not warming (colder for good, or the window over): its HWLB share, no background.
        let (_, outcome) = coordinator_order(&req(&[false; 3], 0.0), &h, &PlanConfig::default(), 0, &mut out);
        assert!(outcome.drawn && outcome.background.is_none());
        // Warm-up off: the same.
        let off = OrderRequest {
            warmup_share: 0.0,
            ..req(&[true, false, false], 0.0)
        };
        assert!(coordinator_order(&off, &h, &PlanConfig::default(), 0, &mut out)
            .1
            .background
            .is_none());
    }

    #[test]
    fn a_silent_replica_is_excluded_from_the_draw_and_comes_last() {
        let mut h = CoordinatorHealth::new(CoordinatorRule::default());
        let warm = [Some(0.9), Some(0.9), Some(0.9)];
        for _ in 0..10 {
            h.sent(NodeId(1), 0);
        }
        assert!(h.silent(NodeId(1), 0));
        assert_eq!(order(&h, &[true; 3], &warm, 2, 0.5, 0), vec![0, 2, 1]);
        h.replied(NodeId(1), MS, 1);
        assert!(!h.silent(NodeId(1), 1), "a reply resets the unanswered count");
    }

    #[test]
    fn a_cold_replica_is_not_passed_over_for_being_slow() {
        let mut h = CoordinatorHealth::new(CoordinatorRule::default());
        for t in 1..5 {
            h.replied(NodeId(0), MS, t * MS);
            h.replied(NodeId(1), MS, t * MS);
            h.replied(NodeId(2), 50 * MS, t * MS);
        }
        let live = [NodeId(0), NodeId(1), NodeId(2)];
        assert_eq!(h.passed_over(&live, &[Some(0.9), Some(0.9), Some(0.9)], None, 1, 5 * MS), 0b100);
        assert_eq!(h.passed_over(&live, &[Some(0.9), Some(0.9), Some(0.2)], None, 1, 5 * MS), 0);
    }

    #[test]
    fn the_coordinators_own_replica_is_judged_like_the_others() {
        // Cassandra feeds the latency of a coordinator's own reads too: a coordinator whose
        // disk turned slow reads the other replicas.
        let mut h = CoordinatorHealth::new(CoordinatorRule::default());
        for t in 1..5 {
            h.replied(NodeId(0), 50 * MS, t * MS);
            h.replied(NodeId(1), MS, t * MS);
            h.replied(NodeId(2), MS, t * MS);
        }
        let warm = [Some(0.9), Some(0.9), Some(0.9)];
        assert_eq!(order(&h, &[true; 3], &warm, 1, 0.5, 5 * MS).last(), Some(&0));
        assert_eq!(order(&h, &[true; 3], &warm, 2, 0.5, 5 * MS), vec![1, 2, 0]);
        // Cold (restarted), it keeps its reads: HWLB shrinks its share instead.
        let live = [NodeId(0), NodeId(1), NodeId(2)];
        let cold_local = [Some(0.2), Some(0.9), Some(0.9)];
        assert_eq!(h.passed_over(&live, &cold_local, Some(NodeId(0)), 1, 5 * MS), 0);
        // Never silent: a local read Cassandra drops adds no sample, so its sends are not
        // weighed against replies.
        let mut h = CoordinatorHealth::new(CoordinatorRule::default());
        for _ in 0..20 {
            h.sent(NodeId(0), 400 * MS);
        }
        assert!(h.silent(NodeId(0), 400 * MS));
        assert_eq!(
            h.passed_over(&live, &warm, Some(NodeId(0)), 1, 400 * MS),
            0,
            "silent, but the coordinator"
        );
        assert_eq!(h.passed_over(&live, &warm, None, 1, 400 * MS), 0b001, "silent, as a peer");
    }

    #[test]
    fn the_usual_time_pools_the_other_replicas_and_one_overdue_read_passes_over() {
        let mut h = CoordinatorHealth::new(CoordinatorRule::default());
        h.set_local(NodeId(0));
        assert_eq!(h.usual_ns(NodeId(1), 0), None, "nothing known yet");
        // The coordinator's own reads (0.1 ms) stay out of the pool; the others answer in 2 ms.
        for t in 1..50 {
            h.replied(NodeId(0), MS / 10, t * MS);
            h.replied(NodeId(2), 2 * MS, t * MS);
        }
        let usual = h.usual_ns(NodeId(1), 50 * MS).expect("pooled");
        assert!((usual - 2e6).abs() < 1e3, "{usual}");
        assert_eq!(
            h.expected_ns(NodeId(1), 50 * MS),
            2e6 * 1.0,
            "no average of its own: the pooled one"
        );
        // One read out to replica 1: its expected time doubles at once, and once it has waited
        // longer than the usual time it is overdue, for at most the latency memory.
        h.sent(NodeId(1), 50 * MS);
        assert_eq!(h.expected_ns(NodeId(1), 51 * MS), 2e6 * 2.0);
        assert!(!h.overdue(NodeId(1), 51 * MS));
        assert!(h.overdue(NodeId(1), 53 * MS));
        let live = [NodeId(0), NodeId(1), NodeId(2)];
        let warm = [Some(0.9); 3];
        assert_eq!(h.passed_over(&live, &warm, Some(NodeId(0)), 1, 53 * MS), 0b010);
        assert!(!h.overdue(NodeId(1), 2_051 * MS), "past the latency memory the verdict ends");
        // The coordinator's own replica is never overdue.
        h.sent(NodeId(0), 60 * MS);
        assert_eq!(h.passed_over(&live, &warm, Some(NodeId(0)), 1, 100 * MS) & 0b001, 0);
    }

    #[test]
    fn an_expiry_passes_over_until_a_reply_or_the_memory_ends() {
        let mut h = CoordinatorHealth::new(CoordinatorRule::default());
        h.expired(NodeId(2), 10 * MS);
        assert!(h.expired_recently(NodeId(2), 11 * MS));
        assert!(!h.expired_recently(NodeId(2), 2_010 * MS));
        h.replied(NodeId(2), MS, 12 * MS);
        assert!(!h.expired_recently(NodeId(2), 13 * MS));
    }

    #[test]
    fn a_slow_verdict_ends_only_with_a_trial_reads_answer() {
        let mut h = CoordinatorHealth::new(CoordinatorRule::default());
        let live = [NodeId(0), NodeId(1), NodeId(2)];
        let warm = [Some(0.9), Some(0.9), Some(0.9)];
        let peers_answer = |h: &mut CoordinatorHealth, t: u64| {
            for node in [NodeId(0), NodeId(1)] {
                h.sent(node, t);
                h.replied(node, MS, t);
            }
        };
        for t in 1..5 {
            peers_answer(&mut h, t * MS);
            h.sent(NodeId(2), t * MS);
            h.replied(NodeId(2), 60 * MS, t * MS);
        }
        assert_eq!(h.passed_over(&live, &warm, None, 1, 5 * MS), 0b100);
        // Probes answered in 1 ms keep it alive, not fast.
        for t in (100..2000).step_by(100) {
            peers_answer(&mut h, t * MS);
            h.answered(NodeId(2), t * MS);
        }
        assert_eq!(h.passed_over(&live, &warm, None, 1, 1_999 * MS), 0b100);
        // Aged out: one read may go to it, and while it is out the replica is passed over.
        peers_answer(&mut h, 2_010 * MS);
        assert_eq!(h.passed_over(&live, &warm, None, 1, 2_010 * MS), 0);
        h.sent(NodeId(2), 2_010 * MS);
        assert_eq!(h.passed_over(&live, &warm, None, 1, 2_011 * MS), 0b100);
        h.answered(NodeId(2), 2_020 * MS);
        assert_eq!(
            h.passed_over(&live, &warm, None, 1, 2_021 * MS),
            0b100,
            "a probe's answer ends no trial"
        );
        // The trial read answers fast: the verdict is cleared.
        h.replied(NodeId(2), 2 * MS, 2_030 * MS);
        assert_eq!(h.passed_over(&live, &warm, None, 1, 2_031 * MS), 0);
    }

    #[test]
    fn a_slow_warm_replica_stays_when_only_a_colder_one_could_replace_it() {
        let mut h = CoordinatorHealth::new(CoordinatorRule::default());
        for t in 1..5 {
            h.replied(NodeId(1), 30 * MS, t * MS);
            h.replied(NodeId(2), 2 * MS, t * MS);
        }
        let live = [NodeId(0), NodeId(1), NodeId(2)];
        // Coordinator 0 restarted cold: at QUORUM, passing replica 1 over would only put the
        // coordinator's own cold replica in its place.
        let cold_local = [Some(0.2), Some(0.9), Some(0.9)];
        assert_eq!(h.passed_over(&live, &cold_local, Some(NodeId(0)), 2, 5 * MS), 0);
        // At ONE, replica 2 serves instead: replica 1 is passed over.
        assert_eq!(h.passed_over(&live, &cold_local, Some(NodeId(0)), 1, 5 * MS), 0b010);
        // Every replica warm: replica 1 is passed over at QUORUM too (0 and 2 serve).
        let warm = [Some(0.9), Some(0.9), Some(0.9)];
        assert_eq!(h.passed_over(&live, &warm, Some(NodeId(0)), 2, 5 * MS), 0b010);
        // A silent replica cannot serve: it does not count among the replacements.
        for _ in 0..10 {
            h.sent(NodeId(2), 0);
        }
        assert!(h.silent(NodeId(2), 500 * MS));
        assert_eq!(h.passed_over(&live, &warm, Some(NodeId(0)), 2, 500 * MS), 0b100);
    }
}
