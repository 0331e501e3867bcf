//! Warm-up reads: a replica that came back with a cold cache serves no reads of its own while
//! enough warm replicas can, and fills its cache from background reads that no request waits
//! for. A project extension of HWLB (off in `hwlb`, as published; on in `unified`).
//!
//! **How many.** HWLB's rule is that every replica sees the same cache misses per second; a
//! cold replica served its share in the foreground, so requests met its misses. Here the
//! foreground reads go to the warm replicas only, and a read also reads the key from the cold
//! replica in the background with the chance that gives it the warm replicas' misses per
//! second ([`background_chance`]): its disk is loaded like theirs, never more, and it warms at
//! the pace HWLB would warm it, while no request meets a cold miss. (Sending a background read
//! with every read warms it faster, but gives the cold replica several times its peers' misses
//! per second, the load HWLB exists to avoid.)
//!
//! The same split and chance serve the simulator's `hwlb`/`unified` ([`super::Hwlb`]), the
//! Rust statement of the Cassandra plug-in's rule (`unified::coordinator`) and, ported, the
//! plug-in itself (`java/hwlb-snitch`, `WarmupReads`).

use super::plan::{HwlbPlan, PlanConfig};
use crate::types::MAX_REPLICAS;

/// A warming replica whose hit rate is below the warmest candidate's by more than this is cold;
/// within it, it rejoins the foreground with HWLB's share.
pub const WARM_WITHIN: f64 = 0.05;

/// A read's candidates split while some of them warm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ColdSplit {
    /// The cold candidates (bit j = candidate j).
    pub cold_mask: u64,
    /// The coldest candidate's index (the first of equals): the one warmed in the background.
    pub coldest: usize,
    /// How many candidates are warm.
    pub warm: usize,
}

/// Which of the candidates with hit rates `rates` are cold: `warming[j]` (candidate j came up
/// recently) and a rate below the warmest's by more than [`WARM_WITHIN`]. `None` when none is
/// cold or fewer than `k` are warm (then every candidate takes its HWLB share: a read cannot
/// be served by warm replicas alone).
pub fn split_cold(rates: &[f64], warming: &[bool], k: usize) -> Option<ColdSplit> {
    let n = rates.len();
    assert!(n <= MAX_REPLICAS && warming.len() == n, "one warming flag per candidate");
    let warmest = rates.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (mut cold_mask, mut coldest, mut warm) = (0u64, None::<usize>, 0);
    for j in 0..n {
        if warming[j] && rates[j] < warmest - WARM_WITHIN {
            cold_mask |= 1 << j;
            if coldest.is_none_or(|c| rates[j] < rates[c]) {
                coldest = Some(j);
            }
        } else {
            warm += 1;
        }
    }
    let coldest = coldest?;
    (warm >= k).then_some(ColdSplit { cold_mask, coldest, warm })
}

/// A warm replica's expected cache misses per read under `plan` over replicas with hit rates
/// `rates` (the mean over them of k x share x miss rate, rates capped as the plan caps them;
/// HWLB makes these equal when it is active and no share is clipped).
pub fn misses_per_read(plan: &HwlbPlan, rates: &[f64], config: &PlanConfig) -> f64 {
    misses_per_read_of(plan.k, &plan.shares, rates, config)
}

/// [`misses_per_read`] from a plan's `k` and shares.
pub fn misses_per_read_of(k: usize, shares: &[f64], rates: &[f64], config: &PlanConfig) -> f64 {
    let n = rates.len();
    assert_eq!(shares.len(), n, "the plan is over these rates");
    let k = k as f64;
    let total: f64 = shares
        .iter()
        .zip(rates)
        .map(|(&p, &h)| k * p * (1.0 - h.min(config.hit_rate_cap)))
        .sum();
    total / n as f64
}

/// The chance that a read also reads the key from the cold replica (hit rate `cold_rate`) in
/// the background: `share` x (warm misses per read / the cold replica's miss rate), at most 1.
/// With `share` 1 the cold replica's misses per second equal a warm replica's.
pub fn background_chance(share: f64, warm_misses_per_read: f64, cold_rate: f64, config: &PlanConfig) -> f64 {
    let cold_misses = 1.0 - cold_rate.min(config.hit_rate_cap);
    if cold_misses <= 0.0 {
        return 0.0;
    }
    (share * warm_misses_per_read / cold_misses).clamp(0.0, 1.0)
}

/// The slow start of the warm-up pace: the fraction of it a cold replica gets `since_up_ns`
/// after it came up, rising linearly from 0 to 1 over `ramp_ns` (0 = no slow start, the whole
/// pace at once). A load balancer's slow start for a returning backend, applied to background
/// reads: the node's first seconds back (a fresh process, an empty page cache, clients
/// reconnecting) are not also loaded with misses. Over a ramp of R seconds the node misses
/// R / 2 seconds' worth of its peers' misses.
pub fn slow_start(since_up_ns: u64, ramp_ns: u64) -> f64 {
    if ramp_ns == 0 || since_up_ns >= ramp_ns {
        return 1.0;
    }
    since_up_ns as f64 / ramp_ns as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_start_rises_linearly_over_the_ramp() {
        assert_eq!(slow_start(5, 0), 1.0, "no ramp: the whole pace at once");
        assert_eq!(slow_start(0, 10_000_000_000), 0.0);
        assert_eq!(slow_start(2_500_000_000, 10_000_000_000), 0.25);
        assert_eq!(slow_start(10_000_000_000, 10_000_000_000), 1.0);
        assert_eq!(slow_start(u64::MAX, 10_000_000_000), 1.0);
    }

    #[test]
    fn a_warming_replica_colder_by_more_than_the_margin_is_cold() {
        let s = split_cold(&[0.9, 0.84, 0.86], &[true; 3], 2).unwrap();
        assert_eq!(
            s,
            ColdSplit {
                cold_mask: 0b010,
                coldest: 1,
                warm: 2
            }
        );
        assert_eq!(split_cold(&[0.9, 0.86, 0.86], &[true; 3], 2), None, "within the margin: warm");
        assert_eq!(
            split_cold(&[0.9, 0.1, 0.86], &[true, false, true], 2),
            None,
            "not warming: its HWLB share"
        );
    }

    #[test]
    fn a_split_needs_k_warm_replicas() {
        assert_eq!(split_cold(&[0.9, 0.1, 0.2], &[true; 3], 2), None);
        let s = split_cold(&[0.9, 0.2, 0.1], &[true; 3], 1).unwrap();
        assert_eq!((s.cold_mask, s.coldest, s.warm), (0b110, 2, 1));
    }

    #[test]
    fn background_reads_give_the_cold_replica_its_peers_misses_per_second() {
        let config = PlanConfig::default();
        // QUORUM over two warm replicas at 0.8: each reads every key, 0.2 misses per read.
        let warm = [0.8, 0.8];
        let plan = HwlbPlan::compute(&warm, 2, &config);
        let m = misses_per_read(&plan, &warm, &config);
        assert!((m - 0.2).abs() < 1e-12, "{m}");
        // Empty: one read in five; half warm: two in five; the misses per second match.
        for cold in [0.0, 0.5, 0.7] {
            let b = background_chance(1.0, m, cold, &config);
            assert!((b * (1.0 - cold) - m).abs() < 1e-12, "cold {cold}: {b}");
        }
        assert!((background_chance(0.5, m, 0.0, &config) - 0.1).abs() < 1e-12);
        assert_eq!(background_chance(1.0, 0.9, 0.5, &config), 1.0, "at most every read");
    }

    #[test]
    fn misses_per_read_follow_hwlbs_shares() {
        let config = PlanConfig::default();
        let rates = [0.9, 0.8, 0.6];
        let plan = HwlbPlan::compute(&rates, 1, &config);
        assert!(plan.active());
        let m = misses_per_read(&plan, &rates, &config);
        // HWLB equalises k x P_j x (1 - h_j): each equals the mean.
        for (j, &h) in rates.iter().enumerate() {
            assert!((plan.shares[j] * (1.0 - h) - m).abs() < 1e-9, "{j}");
        }
    }
}
