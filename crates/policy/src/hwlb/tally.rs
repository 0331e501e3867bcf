//! Where a plan's reads go: draw requests from an [`HwlbPlan`] (a uniformly random coordinator,
//! then its row's k replicas) and count them, so a user can check the plan's shares and its
//! locality against the draws (`replica-lb hwlb sample`).

use super::plan::HwlbPlan;
use super::sampling::SamplingRow;
use crate::rng::Rng;
use crate::types::MAX_REPLICAS;
use serde::Serialize;

/// The counts of [`tally_draws`], by replica.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DrawTally {
    /// Requests drawn.
    pub draws: u64,
    /// Reads each replica was sent (k per request).
    pub reads: Vec<u64>,
    /// Requests each replica coordinated.
    pub coordinated: Vec<u64>,
    /// Reads each replica served as its own coordinator.
    pub local_reads: Vec<u64>,
    /// Requests whose k replicas were not k distinct valid ones (0 for a correct sampler).
    pub invalid: u64,
}

/// Draws `draws` requests of `k` replicas from `plan` with `rng` and counts them.
pub fn tally_draws(plan: &HwlbPlan, k: usize, draws: u64, rng: &mut Rng) -> DrawTally {
    let n = plan.shares.len();
    assert!((1..=n).contains(&k) && n <= MAX_REPLICAS, "k = {k} of n = {n} replicas");
    let rows: Vec<SamplingRow> = (0..n).map(|c| SamplingRow::new(plan.row(c))).collect();
    let mut out = DrawTally {
        draws,
        reads: vec![0; n],
        coordinated: vec![0; n],
        local_reads: vec![0; n],
        invalid: 0,
    };
    let mut picked = [0usize; MAX_REPLICAS];
    for _ in 0..draws {
        let c = rng.below(n);
        out.coordinated[c] += 1;
        rows[c].sample(k, rng, &mut picked);
        let mut seen: u64 = 0;
        let mut valid = true;
        for &j in &picked[..k] {
            if j >= n || seen & (1 << j) != 0 {
                valid = false;
                continue;
            }
            seen |= 1 << j;
            out.reads[j] += 1;
            if j == c {
                out.local_reads[c] += 1;
            }
        }
        if !valid || seen.count_ones() as usize != k {
            out.invalid += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hwlb::PlanConfig;

    #[test]
    fn the_reads_follow_the_shares_and_every_draw_is_valid() {
        let plan = HwlbPlan::compute(&[0.0, 0.8, 0.8], 2, &PlanConfig::default());
        let t = tally_draws(&plan, 2, 200_000, &mut Rng::seed_from_u64(7));
        assert_eq!(t.invalid, 0);
        assert_eq!(t.reads.iter().sum::<u64>(), 400_000);
        assert_eq!(t.coordinated.iter().sum::<u64>(), 200_000);
        for (j, &r) in t.reads.iter().enumerate() {
            let share = r as f64 / 400_000.0;
            assert!(
                (share - plan.shares[j]).abs() < 0.005,
                "replica {j}: {share} against {}",
                plan.shares[j]
            );
        }
        assert!(t.local_reads.iter().zip(&t.reads).all(|(l, r)| l <= r));
    }
}
