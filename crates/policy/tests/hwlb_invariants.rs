//! Property tests: the HWLB plan satisfies every invariant of docs/algorithms.md (coordinator redistribution) exactly (to
//! 1e-9) for every N in 2..=12 and every CL in 1..N, with hit rates that include 0, 0.95, 1
//! and ties; systematic sampling reproduces k * rows[c][j] over a million draws.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use replica_lb_policy::hwlb::{redistribute, HwlbPlan, PlanConfig, SamplingRow};
use replica_lb_policy::{Rng, MAX_REPLICAS};

const TOL: f64 = 1e-9;

/// Checks every invariant of an active or inactive plan; returns a description of the first
/// violation.
fn check_plan(h: &[f64], k: usize) -> Result<(), String> {
    let n = h.len();
    let cfg = PlanConfig::default();
    let plan = HwlbPlan::compute(h, k, &cfg);
    let cap = 1.0 / k as f64;
    let p = &plan.shares;
    let sum: f64 = p.iter().sum();
    if (sum - 1.0).abs() > TOL {
        return Err(format!("shares sum to {sum}"));
    }
    for c in 0..n {
        let row = plan.row(c);
        let rs: f64 = row.iter().sum();
        if (rs - 1.0).abs() > TOL {
            return Err(format!("row {c} sums to {rs}: {row:?}"));
        }
        for (j, &x) in row.iter().enumerate() {
            if !(-TOL..=cap + TOL).contains(&x) {
                return Err(format!("rows[{c}][{j}] = {x} outside [0, 1/{k}]"));
            }
        }
    }
    if !plan.active() {
        // The naive policy's rows.
        let other = (1.0 - cap) / (n - 1) as f64;
        for c in 0..n {
            for j in 0..n {
                let want = if c == j { cap } else { other };
                if (plan.row(c)[j] - want).abs() > TOL {
                    return Err(format!("inactive rows[{c}][{j}] = {} != {want}", plan.row(c)[j]));
                }
            }
        }
        return Ok(());
    }
    for (j, &pj) in p.iter().enumerate() {
        if pj > cap + TOL || pj < -TOL {
            return Err(format!("share {j} = {pj} outside [0, 1/{k}]"));
        }
        let col: f64 = (0..n).map(|c| plan.row(c)[j]).sum::<f64>() / n as f64;
        if (col - pj).abs() > TOL {
            return Err(format!("column {j} averages {col}, share is {pj}"));
        }
        let keep = (n as f64 * pj).min(cap);
        if (plan.row(j)[j] - keep).abs() > TOL {
            return Err(format!(
                "coordinator {j} keeps {} locally, should keep min(N P, 1/k) = {keep}",
                plan.row(j)[j]
            ));
        }
    }
    // Equal misses per read among replicas that were not clipped: P_i (1 - H_i) constant.
    let capped: Vec<f64> = h.iter().map(|x| x.min(cfg.hit_rate_cap)).collect();
    let unclipped: Vec<f64> = (0..n).filter(|&i| p[i] < cap - 1e-12).map(|i| p[i] * (1.0 - capped[i])).collect();
    if let (Some(lo), Some(hi)) = (
        unclipped.iter().copied().reduce(f64::min),
        unclipped.iter().copied().reduce(f64::max),
    ) {
        if hi - lo > TOL {
            return Err(format!("misses per read differ among unclipped replicas: {lo} .. {hi}"));
        }
    }
    Ok(())
}

/// Hit rates drawn to hit the edges: exact 0, the 0.95 cap, 1, a few repeated values (ties)
/// and arbitrary values.
fn hit_rate() -> impl Strategy<Value = f64> {
    prop_oneof![
        2 => Just(0.0),
        2 => Just(0.95),
        2 => Just(1.0),
        2 => Just(0.5),
        1 => Just(0.8),
        6 => 0.0..=1.0f64,
    ]
}

fn plan_case() -> impl Strategy<Value = (Vec<f64>, usize)> {
    (2usize..=12).prop_flat_map(|n| (proptest::collection::vec(hit_rate(), n), 1..n))
}

fn fixed(cases: u32) -> Config {
    Config {
        cases,
        rng_seed: RngSeed::Fixed(0x5eed_4b1b),
        failure_persistence: None,
        ..Config::default()
    }
}

proptest! {
    #![proptest_config(fixed(4096))]

    #[test]
    fn every_invariant_holds((h, k) in plan_case()) {
        if let Err(e) = check_plan(&h, k) {
            prop_assert!(false, "H={:?} k={}: {}", h, k, e);
        }
    }
}

/// A dense deterministic sweep as well: every N and every k, 1500 random vectors each, with a
/// quarter of the entries snapped to the edge values.
#[test]
fn sweep_every_n_and_k() {
    let mut rng = Rng::seed_from_u64(2024);
    let edges = [0.0, 0.95, 1.0, 0.5];
    let mut checked = 0;
    for n in 2..=12 {
        for k in 1..n {
            for _ in 0..1500 {
                let h: Vec<f64> = (0..n)
                    .map(|_| if rng.chance(0.25) { edges[rng.below(4)] } else { rng.unit_f64() })
                    .collect();
                if let Err(e) = check_plan(&h, k) {
                    panic!("H={h:?} k={k}: {e}");
                }
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 66 * 1500);
}

/// The transport step itself never fails on valid shares (the plan would otherwise fall back
/// to giving up locality): adversarial shares, many at the 1/k cap, others tiny.
#[test]
fn redistribution_is_feasible_for_adversarial_shares() {
    let mut rng = Rng::seed_from_u64(77);
    for n in 2..=12usize {
        for k in 1..n {
            for _ in 0..3000 {
                let cap = 1.0 / k as f64;
                // Raw weights with some at the cap, then scale and clip like compute_shares.
                let raw: Vec<f64> = (0..n).map(|_| if rng.chance(0.3) { 1e-6 } else { rng.unit_f64() + 1e-9 }).collect();
                let mut p = vec![0.0; n];
                let mut fixed = vec![false; n];
                loop {
                    let free: f64 = (0..n).filter(|&i| !fixed[i]).map(|i| raw[i]).sum();
                    let room = 1.0 - fixed.iter().filter(|&&f| f).count() as f64 * cap;
                    let mut changed = false;
                    for i in 0..n {
                        if !fixed[i] && raw[i] / free * room > cap {
                            fixed[i] = true;
                            changed = true;
                        }
                    }
                    if !changed {
                        for i in 0..n {
                            p[i] = if fixed[i] { cap } else { raw[i] / free * room };
                        }
                        break;
                    }
                }
                if let Err(e) = redistribute(&p, k) {
                    panic!("P={p:?} k={k}: {e}");
                }
            }
        }
    }
}

/// Published counterexamples of the earlier implementation.
#[test]
fn published_counterexamples_are_handled() {
    check_plan(&[0.95, 0.91667, 0.75, 0.75], 3).unwrap();
    check_plan(&[0.0, 7.0 / 9.0, 7.0 / 9.0, 0.9], 2).unwrap();
    check_plan(&[0.66, 0.66, 0.34, 0.32], 3).unwrap();
    check_plan(&[0.9, 0.01, 0.01], 2).unwrap();
}

/// Draws `draws` samples of k from `row` and checks each inclusion frequency is within 5
/// standard errors of k * row[j], with no invalid draw.
fn check_sampling(row: &[f64], k: usize, draws: u64, seed: u64) -> Result<(), String> {
    let n = row.len();
    let sampler = SamplingRow::new(row);
    let mut rng = Rng::seed_from_u64(seed);
    let mut counts = [0u64; MAX_REPLICAS];
    let mut picked = [0usize; MAX_REPLICAS];
    let mut invalid = 0u64;
    for _ in 0..draws {
        sampler.sample(k, &mut rng, &mut picked);
        let mut seen = 0u64;
        for &j in &picked[..k] {
            if j >= n || seen & (1 << j) != 0 {
                invalid += 1;
                break;
            }
            seen |= 1 << j;
            counts[j] += 1;
        }
    }
    if invalid > 0 {
        return Err(format!("{invalid} invalid draws"));
    }
    for j in 0..n {
        let expect = (k as f64 * row[j]).min(1.0);
        let got = counts[j] as f64 / draws as f64;
        let se = (expect * (1.0 - expect) / draws as f64).sqrt();
        if (got - expect).abs() > 5.0 * se + 1e-12 {
            return Err(format!("replica {j}: inclusion {got}, expected {expect} (se {se})"));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(fixed(24))]

    #[test]
    fn a_million_draws_match_the_rows((h, k) in plan_case(), seed in any::<u64>()) {
        let plan = HwlbPlan::compute(&h, k, &PlanConfig::default());
        let c = (seed % h.len() as u64) as usize;
        if let Err(e) = check_sampling(plan.row(c), k, 1_000_000, seed) {
            prop_assert!(false, "H={:?} k={} coordinator {}: {}", h, k, c, e);
        }
    }
}

/// The seeds' case, every coordinator, a million draws each.
#[test]
fn cold_restart_rows_sample_exactly() {
    let plan = HwlbPlan::compute(&[0.0, 0.8, 0.8], 2, &PlanConfig::default());
    for c in 0..3 {
        check_sampling(plan.row(c), 2, 1_000_000, 11 + c as u64).unwrap();
    }
}
