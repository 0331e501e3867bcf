//! How long a restarted node takes to warm: seconds from its return until its cache hit
//! ratio is within 0.05 of its peers' mean.
//!
//! Per-second hit ratios are noisy at a few hundred reads per second, so both sides are
//! measured over a trailing window of [`WINDOW_S`] seconds (hits / lookups summed over the
//! window). The answer is the end of the first such window, minus the return time.

use crate::series::Series;

/// Seconds in the trailing window.
pub const WINDOW_S: u32 = 5;
/// How close counts as warm.
pub const TOLERANCE: f64 = 0.05;

/// Seconds from `back_s` until `node` is warm; `None` if it never gets there in the run.
pub fn warmup_seconds(series: &Series, node: usize, back_s: f64) -> Option<f64> {
    if series.nodes < 2 || node >= series.nodes || back_s < 0.0 {
        return None;
    }
    let first = back_s.ceil() as u32;
    for end in (first + WINDOW_S)..=series.seconds {
        let from = end - WINDOW_S;
        let own = series.node_total(node, from, end);
        if own.cache_hits + own.cache_misses == 0 {
            continue;
        }
        let mut peers = Vec::new();
        for n in (0..series.nodes).filter(|&n| n != node) {
            let t = series.node_total(n, from, end);
            if t.cache_hits + t.cache_misses > 0 {
                peers.push(t.hit_ratio());
            }
        }
        if peers.is_empty() {
            continue;
        }
        let mean = peers.iter().sum::<f64>() / peers.len() as f64;
        if own.hit_ratio() >= mean - TOLERANCE {
            return Some(end as f64 - back_s);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use crate::recorder::{CacheOutcome, ReadKind, Recorder, RecorderConfig};

    #[test]
    fn finds_the_first_warm_window() {
        let mut r = Recorder::new(RecorderConfig {
            nodes: 2,
            duration_s: 40,
            phases: vec![],
            timeout_ns: 5_000_000_000,
        })
        .unwrap();
        for t in 0..40u64 {
            for i in 0..100 {
                let peer = if i < 80 { CacheOutcome::Hit } else { CacheOutcome::Miss };
                r.read(t * 1_000_000_000, 0, ReadKind::Replica, peer);
                // Node 1 reaches 0.8 from second 20 on.
                let own = if t >= 20 { peer } else { CacheOutcome::Miss };
                r.read(t * 1_000_000_000, 1, ReadKind::Replica, own);
            }
        }
        let m = r.finish("x".into(), Some((1, 10.0)), 0, 0.0);
        // The window [19, 24) has 4 of 5 seconds warm: 0.64 < 0.75; [20, 25) is warm.
        assert_eq!(m.summary.warmup_s, Some(15.0));
    }
}
