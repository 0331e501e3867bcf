//! Cumulative node counters sampled once a second, turned into per-second deltas: what both
//! real engines' samplers share (the node cluster's Stats, Cassandra's counters over CQL).
//!
//! Sample k is taken at t0 + k s (k = 0..=duration); second k-1 gets sample k minus the last
//! good sample before it. A node that does not answer (down, paused) gets nothing for that
//! second and its next answer covers the gap; a node whose counters went back (it restarted)
//! starts again from zero.

use metrics::NodeSecond;

/// Counters that only grow while their node's process lives.
pub trait Cumulative: Copy + Default {
    /// Whether `self` can follow `before` in the same process (false: the node restarted).
    fn follows(&self, before: &Self) -> bool;
    /// What happened from `before` to `self`, as one second's counters.
    fn since(&self, before: &Self) -> NodeSecond;
}

/// `samples[k][node]`: the node's counters at t0 + k s, `None` when it did not answer.
pub type Samples<T> = Vec<Vec<Option<T>>>;

/// `(second, node, counters)` for every second with an answer.
pub fn per_second<T: Cumulative>(samples: &Samples<T>, nodes: usize) -> Vec<(u32, usize, NodeSecond)> {
    let mut out = Vec::new();
    // A node's first answer after t0 counts everything since its start (it was not up at t0).
    let mut last: Vec<Option<T>> = samples.first().cloned().unwrap_or_default();
    last.resize(nodes, None);
    for (k, row) in samples.iter().enumerate().skip(1) {
        for (node, c) in row.iter().enumerate().take(nodes) {
            let Some(now) = c else { continue };
            let before = match &last[node] {
                Some(b) if now.follows(b) => *b,
                _ => T::default(),
            };
            out.push(((k - 1) as u32, node, now.since(&before)));
            last[node] = Some(*now);
        }
    }
    out
}

/// `now - before` as a per-second count (saturating, in `u32`).
pub fn delta(now: u64, before: u64) -> u32 {
    u32::try_from(now.saturating_sub(before)).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug, Default, PartialEq)]
    struct Reads(u64);

    impl Cumulative for Reads {
        fn follows(&self, before: &Self) -> bool {
            self.0 >= before.0
        }
        fn since(&self, before: &Self) -> NodeSecond {
            NodeSecond {
                reads: delta(self.0, before.0),
                ..NodeSecond::default()
            }
        }
    }

    #[test]
    fn deltas_gaps_and_restarts() {
        let samples: Samples<Reads> = vec![
            vec![Some(Reads(100)), None],
            vec![Some(Reads(150)), Some(Reads(7))], // second 0: 50; node 1 came up: 7
            vec![None, Some(Reads(9))],             // second 1: node 0 down or paused
            vec![Some(Reads(30)), Some(Reads(12))], // second 2: node 0 restarted: 30 since its start
            vec![Some(Reads(70)), None],            // second 3: 40
        ];
        let got: Vec<(u32, usize, u32)> = per_second(&samples, 2).into_iter().map(|(t, n, s)| (t, n, s.reads)).collect();
        assert_eq!(got, vec![(0, 0, 50), (0, 1, 7), (1, 1, 2), (2, 0, 30), (2, 1, 3), (3, 0, 40)]);
    }
}
