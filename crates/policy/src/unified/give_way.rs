//! Load inside HWLB's draw: a drawn replica gives way to one that costs less.
//!
//! HWLB draws a read's k replicas from miss-equalising shares and never looks at load: once
//! caches are equal the draw is blind to queues, and a coordinator of a large cluster keeps
//! drawing a replica that has not answered its last read (docs/unified.md, "At scale"). This
//! step, applied after the draw (or after the inner order when HWLB steps aside), lets load
//! decide within what heat allows:
//!
//! - every candidate has an **expected time** for one more read
//!   ([`super::coordinator::CoordinatorHealth::expected_ns`]): its latency average (every
//!   replica's pooled average when it has none of its own), at least the wait of its oldest
//!   unanswered read, times one plus its unanswered reads;
//! - a drawn replica `t` gives way to the undrawn candidate `j` with the lowest
//!   `expected(j) x heat(t, j)` when that is below `expected(t)`, where
//!   `heat(t, j) = (misses(colder) / misses(warmer))^heat_weight` and `misses = 1 - min(rate, cap)`:
//!   between equally warm replicas any saving decides, a replica with twice the misses per read
//!   must be `2^heat_weight` times quicker. With `heat_weight` 1 a cold replica (ten times the
//!   misses) needs a tenfold advantage: it takes a read only when the warm ones are overloaded
//!   (a whole zone back cold, a cluster past its disks' capacity: docs/unified.md), never
//!   because HWLB's own shift of reads made the warm ones a little slower;
//! - the coordinator's own replica keeps its place when drawn: HWLB's rows keep work local on
//!   purpose (a local read crosses no network), and at a busy coordinator its own reads in
//!   flight would otherwise push reads onto the network for a saving smaller than the transfer
//!   (`poc-network`: p99 2.72 ms against 2.01). It is still passed over when slow;
//! - the drawn replicas are visited from the most expensive one (ties: the first drawn), each
//!   candidate from the first in the caller's order; strict comparisons, so equal costs (no load
//!   information at all) keep HWLB's exact draw.
//!
//! The heat factor is a whole power, computed by repeated multiplication, so that the Java port
//! (`java/hwlb-snitch`, `GiveWay`) makes bit-identical comparisons (shared traces).

use crate::types::MAX_REPLICAS;

/// The largest `heat_weight`.
pub const MAX_HEAT_WEIGHT: u32 = 8;

/// One read's candidates for the step, all slices in the same (caller's) order.
#[derive(Clone, Copy, Debug)]
pub struct Costs<'a> {
    /// Each candidate's expected time for one more read, ns.
    pub expected_ns: &'a [f64],
    /// Each candidate's hit rate (`None`: unknown, which counts as equally warm).
    pub rates: &'a [Option<f64>],
    /// Which candidates may take a read (bit j = candidate j): live and not passed over.
    pub eligible: u64,
    /// The exponent on the misses ratio.
    pub heat_weight: u32,
    /// Hit rates above this count as this (HWLB's cap).
    pub hit_rate_cap: f64,
    /// Candidates that keep their place when drawn (bit j = candidate j): the coordinator's
    /// own replica, whose read crosses no network.
    pub keep: u64,
}

impl Costs<'_> {
    /// `(misses(colder) / misses(warmer))^heat_weight` for candidates `a` and `b`; 1 when a
    /// rate is unknown.
    pub fn heat(&self, a: usize, b: usize) -> f64 {
        let (Some(ra), Some(rb)) = (self.rates[a], self.rates[b]) else {
            return 1.0;
        };
        let (ma, mb) = (1.0 - ra.min(self.hit_rate_cap), 1.0 - rb.min(self.hit_rate_cap));
        let ratio = ma.max(mb) / ma.min(mb);
        let mut factor = 1.0;
        for _ in 0..self.heat_weight {
            factor *= ratio;
        }
        factor
    }
}

/// Applies the step to `targets` (indices into the candidates, the drawn ones in their order),
/// replacing in place each one that gives way; writes the replicas that gave way, in the order
/// they did, to `gave_way` and returns how many did.
pub fn give_way(costs: &Costs<'_>, targets: &mut [usize], gave_way: &mut [usize; MAX_REPLICAS]) -> usize {
    let n = costs.expected_ns.len();
    assert!(n <= MAX_REPLICAS && costs.rates.len() == n, "one cost and one rate per candidate");
    assert!(costs.heat_weight <= MAX_HEAT_WEIGHT, "heat_weight at most {MAX_HEAT_WEIGHT}");
    assert!(targets.iter().all(|&t| t < n), "targets are candidates");
    let k = targets.len();
    // The slots from the most expensive target (a stable sort: ties keep the drawn order).
    let mut slots = [0usize; MAX_REPLICAS];
    for (i, slot) in slots[..k].iter_mut().enumerate() {
        *slot = i;
    }
    slots[..k].sort_by(|&a, &b| costs.expected_ns[targets[b]].total_cmp(&costs.expected_ns[targets[a]]));
    let mut swaps = 0;
    for &slot in &slots[..k] {
        let t = targets[slot];
        if costs.keep & (1 << t) != 0 {
            continue;
        }
        let mut best: Option<usize> = None;
        let mut best_ns = costs.expected_ns[t];
        for j in 0..n {
            if costs.eligible & (1 << j) == 0 || targets.contains(&j) {
                continue;
            }
            let weighted_ns = costs.expected_ns[j] * costs.heat(t, j);
            if weighted_ns < best_ns {
                best = Some(j);
                best_ns = weighted_ns;
            }
        }
        if let Some(j) = best {
            targets[slot] = j;
            gave_way[swaps] = t;
            swaps += 1;
        }
    }
    debug_assert!(
        (0..k).all(|a| (0..a).all(|b| targets[a] != targets[b])),
        "the targets stay distinct"
    );
    swaps
}

#[cfg(test)]
mod tests {
    use super::*;

    fn costs<'a>(expected_ns: &'a [f64], rates: &'a [Option<f64>], eligible: u64, heat_weight: u32) -> Costs<'a> {
        Costs {
            expected_ns,
            rates,
            eligible,
            heat_weight,
            hit_rate_cap: 0.95,
            keep: 0,
        }
    }

    #[test]
    fn equal_costs_keep_the_draw() {
        let warm = [Some(0.8); 3];
        let c = costs(&[5.0, 5.0, 5.0], &warm, 0b111, 2);
        let (mut targets, mut out) = ([2, 0], [0; MAX_REPLICAS]);
        assert_eq!(give_way(&c, &mut targets, &mut out), 0);
        assert_eq!(targets, [2, 0]);
    }

    #[test]
    fn between_equally_warm_replicas_any_saving_decides() {
        let warm = [Some(0.8); 3];
        let c = costs(&[5.0, 9.0, 4.0], &warm, 0b111, 2);
        let (mut targets, mut out) = ([0, 1], [0; MAX_REPLICAS]);
        assert_eq!(give_way(&c, &mut targets, &mut out), 1);
        assert_eq!(targets, [0, 2], "the most expensive target gives way first");
        assert_eq!(out[0], 1);
    }

    #[test]
    fn a_colder_replica_must_be_quicker_by_the_heat_ratio() {
        // Candidate 2 misses twice as often per read (0.4 against 0.2): with heat_weight 2 it
        // must be four times quicker.
        let rates = [Some(0.8), Some(0.8), Some(0.6)];
        let (mut out, mut targets) = ([0; MAX_REPLICAS], [0, 1]);
        assert_eq!(give_way(&costs(&[5.0, 9.0, 2.3], &rates, 0b111, 2), &mut targets, &mut out), 0);
        assert_eq!(give_way(&costs(&[5.0, 9.0, 2.2], &rates, 0b111, 2), &mut targets, &mut out), 1);
        assert_eq!(targets, [0, 2]);
        // heat_weight 0: load alone.
        let mut targets = [0, 1];
        assert_eq!(give_way(&costs(&[5.0, 9.0, 8.0], &rates, 0b111, 0), &mut targets, &mut out), 1);
    }

    #[test]
    fn a_kept_target_never_gives_way() {
        let warm = [Some(0.8); 3];
        let mut c = costs(&[9.0, 5.0, 1.0], &warm, 0b111, 2);
        c.keep = 0b001;
        let (mut targets, mut out) = ([0, 1], [0; MAX_REPLICAS]);
        assert_eq!(give_way(&c, &mut targets, &mut out), 1);
        assert_eq!(targets, [0, 2], "the kept target stays, the other gives way");
    }

    #[test]
    fn only_eligible_candidates_take_a_read() {
        let warm = [Some(0.8); 3];
        let c = costs(&[5.0, 9.0, 1.0], &warm, 0b011, 2);
        let (mut targets, mut out) = ([0, 1], [0; MAX_REPLICAS]);
        assert_eq!(give_way(&c, &mut targets, &mut out), 0);
    }

    #[test]
    fn an_unknown_rate_counts_as_equally_warm() {
        let rates = [Some(0.9), None, Some(0.1)];
        let c = costs(&[5.0, 1.0, 1.0], &rates, 0b111, 2);
        assert_eq!(c.heat(0, 1), 1.0);
        assert!((c.heat(0, 2) - 81.0).abs() < 1e-9, "(0.9 / 0.1)^2");
        let (mut targets, mut out) = ([0], [0; MAX_REPLICAS]);
        assert_eq!(give_way(&c, &mut targets, &mut out), 1);
        assert_eq!(targets, [1]);
    }
}
