//! Cumulative node counters sampled once a second, turned into per-second deltas: what both
//! real engines' samplers share (the node cluster's Stats, Cassandra's counters over CQL).
//!
//! Sample k is taken at t0 + k s (k = 0..=duration); second k-1 gets sample k minus the last
//! good sample before it. A node that does not answer (down, paused) gets nothing for that
//! second and its next answer covers the gap; a node whose counters went back (it restarted)
//! starts again from zero.

use replica_lb_metrics::{CacheOutcome, NodeSecond, ReadKind, Recorder};

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

/// Records one node-second of counters into `rec`, read by read (the recorder keeps the
/// marginal sums the series and the summary need), with the second's bytes.
pub fn feed_second(rec: &mut Recorder, t_s: u32, node: usize, s: &NodeSecond) {
    let t_ns = u64::from(t_s) * 1_000_000_000;
    for i in 0..s.reads {
        let kind = if i < s.local_reads { ReadKind::Local } else { ReadKind::Replica };
        let cache = if i < s.cache_hits {
            CacheOutcome::Hit
        } else if i < s.cache_hits + s.cache_misses {
            CacheOutcome::Miss
        } else {
            CacheOutcome::NoCache
        };
        rec.read(t_ns, node, kind, cache);
    }
    for _ in 0..s.remote_reads {
        rec.remote_read(t_ns, node);
    }
    rec.disk_queue(t_ns, node, s.disk_queue);
    rec.sent_bytes(t_ns, node, s.internode_out_bytes, true);
    rec.sent_bytes(t_ns, node, s.nic_out_bytes.saturating_sub(s.internode_out_bytes), false);
    rec.received_bytes(t_ns, node, s.nic_in_bytes);
}

/// `now - before` as a per-second count (saturating, in `u32`).
pub fn delta(now: u64, before: u64) -> u32 {
    u32::try_from(now.saturating_sub(before)).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use replica_lb_metrics::RecorderConfig;

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

    #[test]
    fn a_second_feeds_its_marginal_sums() {
        let mut rec = Recorder::new(RecorderConfig {
            nodes: 2,
            duration_s: 3,
            phases: vec![],
            timeout_ns: 5_000_000_000,
        })
        .unwrap();
        let s = NodeSecond {
            reads: 10,
            cache_hits: 7,
            cache_misses: 3,
            local_reads: 4,
            remote_reads: 5,
            replica_reads: 6,
            disk_queue: 2,
            nic_out_bytes: 5_000,
            nic_in_bytes: 700,
            internode_out_bytes: 1_200,
        };
        rec.track_network(None);
        feed_second(&mut rec, 1, 1, &s);
        let m = rec.finish("x".into(), None, 0, 0.0);
        assert_eq!(*m.series.node(1, 1), s);
        assert_eq!(*m.series.node(0, 1), NodeSecond::default());
        // client bytes = out + in - 2 x internode (each internode byte leaves one node and
        // reaches another; here only one side was fed).
        let net = m.summary.network.expect("the real cluster counts bytes");
        assert_eq!((net.client_bytes, net.internode_bytes), (5_000 + 700 - 2 * 1_200, 1_200));
        assert_eq!(net.nic_peak_utilization, 0.0, "no NIC speed in the plan");
    }
}
