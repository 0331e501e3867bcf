//! Once a second, every node's counters (its Stats); [`super::series`] turns them into
//! per-second deltas (gaps and restarts handled there, for both engines). A node restarted
//! when its uptime went back or a counter fell.
//!
//! Bytes come from the node's own counters ([`replica_lb_node::traffic`]): `nic_out_bytes` is everything
//! it sent that second (to clients and to nodes), `nic_in_bytes` everything it received, and
//! `internode_out_bytes` what it sent to other nodes, as the simulator fills them.

use crate::series::{self, Cumulative};
use replica_lb_metrics::NodeSecond;
use replica_lb_node::client;
use replica_lb_node::proto::StatsResponse;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The counters kept from one Stats answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    uptime_ms: u64,
    reads: u64,
    cache_hits: u64,
    cache_misses: u64,
    local_reads: u64,
    remote_reads: u64,
    replica_reads: u64,
    disk_queue: u32,
    client_received_bytes: u64,
    client_sent_bytes: u64,
    internode_received_bytes: u64,
    internode_sent_bytes: u64,
}

impl From<&StatsResponse> for Counts {
    fn from(s: &StatsResponse) -> Counts {
        Counts {
            uptime_ms: s.uptime_ms,
            reads: s.reads,
            cache_hits: s.cache_hits,
            cache_misses: s.cache_misses,
            local_reads: s.local_reads,
            remote_reads: s.remote_reads,
            replica_reads: s.replica_reads,
            disk_queue: s.disk_queue,
            client_received_bytes: s.client_received_bytes,
            client_sent_bytes: s.client_sent_bytes,
            internode_received_bytes: s.internode_received_bytes,
            internode_sent_bytes: s.internode_sent_bytes,
        }
    }
}

/// `samples[k][node]`: node's counters at t0 + k s, `None` when it did not answer.
pub type Samples = series::Samples<Counts>;

/// Samples every node at t0, t0 + 1 s, ..., t0 + `duration_s` s (or until `stop`).
pub fn sample(addrs: &[SocketAddr], t0: Instant, duration_s: u32, stop: &AtomicBool) -> Samples {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
        return Vec::new();
    };
    let mut out = Vec::with_capacity(duration_s as usize + 1);
    for k in 0..=duration_s {
        let at = t0 + Duration::from_secs(k as u64);
        loop {
            let now = Instant::now();
            if now >= at {
                break;
            }
            if stop.load(Ordering::Relaxed) && k > 0 && now + Duration::from_secs(2) < at {
                return out;
            }
            std::thread::sleep((at - now).min(Duration::from_millis(100)));
        }
        let row = rt.block_on(async {
            let mut set = tokio::task::JoinSet::new();
            for (i, &a) in addrs.iter().enumerate() {
                set.spawn(async move { (i, client::stats(a, Duration::from_millis(400)).await.ok()) });
            }
            let mut row = vec![None; addrs.len()];
            while let Some(r) = set.join_next().await {
                if let Ok((i, s)) = r {
                    row[i] = s.as_ref().map(Counts::from);
                }
            }
            row
        });
        out.push(row);
    }
    out
}

impl Cumulative for Counts {
    fn follows(&self, b: &Self) -> bool {
        self.uptime_ms >= b.uptime_ms
            && self.reads >= b.reads
            && self.cache_hits >= b.cache_hits
            && self.cache_misses >= b.cache_misses
            && self.local_reads >= b.local_reads
            && self.remote_reads >= b.remote_reads
            && self.replica_reads >= b.replica_reads
            && self.client_received_bytes >= b.client_received_bytes
            && self.client_sent_bytes >= b.client_sent_bytes
            && self.internode_received_bytes >= b.internode_received_bytes
            && self.internode_sent_bytes >= b.internode_sent_bytes
    }

    fn since(&self, b: &Self) -> NodeSecond {
        let d = series::delta;
        let sent = self.client_sent_bytes + self.internode_sent_bytes;
        let received = self.client_received_bytes + self.internode_received_bytes;
        NodeSecond {
            reads: d(self.reads, b.reads),
            cache_hits: d(self.cache_hits, b.cache_hits),
            cache_misses: d(self.cache_misses, b.cache_misses),
            local_reads: d(self.local_reads, b.local_reads),
            remote_reads: d(self.remote_reads, b.remote_reads),
            replica_reads: d(self.replica_reads, b.replica_reads),
            disk_queue: self.disk_queue,
            nic_out_bytes: sent.saturating_sub(b.client_sent_bytes + b.internode_sent_bytes),
            nic_in_bytes: received.saturating_sub(b.client_received_bytes + b.internode_received_bytes),
            internode_out_bytes: self.internode_sent_bytes.saturating_sub(b.internode_sent_bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(uptime_ms: u64, reads: u64, misses: u64) -> Option<Counts> {
        // Bytes grow with the reads: 100 per read from clients, 10 per read to other nodes.
        Some(Counts {
            uptime_ms,
            reads,
            cache_hits: reads - misses,
            cache_misses: misses,
            local_reads: reads / 2,
            remote_reads: 0,
            replica_reads: reads - reads / 2,
            disk_queue: 1,
            client_received_bytes: 20 * reads,
            client_sent_bytes: 100 * reads,
            internode_received_bytes: 7 * reads,
            internode_sent_bytes: 10 * reads,
        })
    }

    #[test]
    fn deltas_gaps_and_restarts() {
        let samples: Samples = vec![
            vec![c(1000, 100, 10)],
            vec![c(2000, 150, 20)], // second 0: 50 reads, 10 misses
            vec![None],             // second 1: down or paused
            vec![c(500, 30, 30)],   // second 2: restarted, counts since its start
            vec![c(1500, 70, 40)],  // second 3: 40 reads, 10 misses
        ];
        let got = series::per_second(&samples, 1);
        let pick: Vec<(u32, u32, u32)> = got.iter().map(|(t, _, s)| (*t, s.reads, s.cache_misses)).collect();
        assert_eq!(pick, vec![(0, 50, 10), (2, 30, 30), (3, 40, 10)]);
        assert!(got.iter().all(|(_, _, s)| s.local_reads + s.replica_reads == s.reads));
        let bytes: Vec<(u64, u64, u64)> = got
            .iter()
            .map(|(_, _, s)| (s.nic_out_bytes, s.nic_in_bytes, s.internode_out_bytes))
            .collect();
        assert_eq!(
            bytes,
            vec![(110 * 50, 27 * 50, 500), (110 * 30, 27 * 30, 300), (110 * 40, 27 * 40, 400)]
        );
    }

    #[test]
    fn bytes_that_fell_mean_a_restart() {
        let mut before = c(1000, 100, 10).unwrap();
        let mut now = before;
        now.uptime_ms = 2000;
        now.internode_sent_bytes = 3; // fell: a new process (reads did not move)
        assert!(!now.follows(&before));
        let s = series::per_second(&vec![vec![Some(before)], vec![Some(now)]], 1)[0].2;
        assert_eq!((s.internode_out_bytes, s.nic_out_bytes, s.reads), (3, 10_000 + 3, 100));
        before.uptime_ms = 1500;
        let same = before.since(&before);
        assert_eq!((same.nic_out_bytes, same.nic_in_bytes, same.reads), (0, 0, 0));
    }
}
