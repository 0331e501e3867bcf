//! Target shares P_j: every replica should see the same cache misses per second.
//!
//! With hit rates H_i (capped at `cap`, 0.95 published), r_i = 1 / (1 - H_i) and
//! P_i = r_i / sum r, so P_i (1 - H_i) is equal for all i. With k > 1 replicas per request a
//! replica can take at most 1/k of the reads, so shares above 1/k are clipped to exactly 1/k and
//! the remainder re-normalised over the others in proportion to r, repeated until none exceeds
//! 1/k. The published code checked before rescaling and could overshoot; here the check follows
//! every rescale, so the result never exceeds 1/k.

/// Fills `shares` with the clipped shares for hit rates `hit_rates` (already in [0, 1]) and `k`
/// replicas per request. Requires `1 <= k <= n` and `shares.len() == hit_rates.len()`.
pub fn compute_shares(hit_rates: &[f64], cap: f64, k: usize, shares: &mut [f64]) {
    let n = hit_rates.len();
    assert!(n >= 1 && k >= 1 && k <= n, "shares need 1 <= k <= n (k={k}, n={n})");
    assert_eq!(shares.len(), n);
    let limit = 1.0 / k as f64;
    // `shares[i] < 0` marks "not clipped yet": it holds -r_i until the loop settles it.
    for (s, &h) in shares.iter_mut().zip(hit_rates) {
        *s = -weight(h.min(cap));
    }
    loop {
        let clipped = shares.iter().filter(|s| **s >= 0.0).count();
        let free_weight: f64 = shares.iter().filter(|s| **s < 0.0).map(|s| -*s).sum();
        let room = 1.0 - clipped as f64 * limit;
        // Any free share that would exceed 1/k after this rescale is clipped now; re-normalise.
        let mut changed = false;
        for s in shares.iter_mut() {
            if *s < 0.0 && -*s / free_weight * room > limit {
                *s = limit;
                changed = true;
            }
        }
        if !changed {
            for s in shares.iter_mut() {
                if *s < 0.0 {
                    *s = -*s / free_weight * room;
                }
            }
            break;
        }
    }
    debug_assert!((shares.iter().sum::<f64>() - 1.0).abs() < 1e-9);
    debug_assert!(shares.iter().all(|&s| s <= limit + 1e-12));
}

/// r = 1 / (1 - H): proportional to the reads a replica can take for one unit of misses.
#[inline]
fn weight(hit_rate: f64) -> f64 {
    1.0 / (1.0 - hit_rate)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shares(h: &[f64], k: usize) -> Vec<f64> {
        let mut s = vec![0.0; h.len()];
        compute_shares(h, 0.95, k, &mut s);
        s
    }

    #[test]
    fn equal_misses_per_replica() {
        let s = shares(&[0.0, 0.5, 0.75], 1);
        // r = 1, 2, 4 -> P = 1/7, 2/7, 4/7; misses P(1-H) = 1/7 each.
        assert!((s[0] - 1.0 / 7.0).abs() < 1e-12);
        assert!((s[1] - 2.0 / 7.0).abs() < 1e-12);
        assert!((s[2] - 4.0 / 7.0).abs() < 1e-12);
    }

    #[test]
    fn cap_limits_hot_replicas() {
        let s = shares(&[1.0, 0.95, 0.0], 1);
        assert!((s[0] - s[1]).abs() < 1e-12, "1.0 is capped to 0.95: {s:?}");
    }

    #[test]
    fn clipping_never_overshoots_the_published_counterexample() {
        // The published code gave .400 > 1/3 here.
        let s = shares(&[0.95, 0.91667, 0.75, 0.75], 3);
        for &x in &s {
            assert!(x <= 1.0 / 3.0 + 1e-12, "{s:?}");
        }
        assert!((s.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn clipping_keeps_the_rest_proportional() {
        // One hot, two cold, k=2: the hot one is clipped at 1/2 and the rest split evenly.
        let s = shares(&[0.9, 0.01, 0.01], 2);
        assert!((s[0] - 0.5).abs() < 1e-12);
        assert!((s[1] - 0.25).abs() < 1e-12 && (s[2] - 0.25).abs() < 1e-12);
    }
}
