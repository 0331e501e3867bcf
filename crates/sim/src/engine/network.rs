//! Messages on the network: the one-way delay between zones (with jitter and a node's added
//! delay), and, with `network.nic_gbps`, each node's NIC: one FIFO per direction that
//! serialises every message at the NIC's rate, so that bursts queue behind each other and a NIC
//! near saturation adds latency to everything it carries. With `network.compression` a message
//! is smaller on the wire and costs CPU time to compress at the sender and to decompress at the
//! receiver (a delay on the message, not a CPU slot). Every message's bytes are counted per
//! node per second, split into client and internode traffic.
//!
//! The receiving NIC's FIFO is advanced when a message is sent (the simulator knows its arrival
//! time then), so two messages reaching one NIC are serialised in the order they were sent,
//! not strictly in the order they arrive; with one-way delays far above serialisation times the
//! difference is negligible.

use super::{Sim, NO_NODE};

/// One end of a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum End {
    /// A client in this zone (clients' NICs are not modelled).
    Client { zone: u16 },
    /// A node.
    Node(u16),
}

/// Each node's NIC queues, when NICs are modelled.
#[derive(Debug, Default)]
pub(super) struct Nics {
    /// Nanoseconds to put one byte on the wire (`None`: unlimited NICs).
    ns_per_byte: Option<f64>,
    /// When each node's sending side is next free, ns.
    out_free_ns: Vec<u64>,
    /// When each node's receiving side is next free, ns.
    in_free_ns: Vec<u64>,
}

impl Nics {
    /// NICs of `bits_per_s` for `nodes` nodes (`None`: unlimited).
    pub(super) fn new(nodes: usize, bits_per_s: Option<f64>) -> Nics {
        Nics {
            ns_per_byte: bits_per_s.map(|bps| 8e9 / bps),
            out_free_ns: vec![0; nodes],
            in_free_ns: vec![0; nodes],
        }
    }

    /// The time a message of `bytes` ready at `t_ns` has passed through `node`'s queue for
    /// one direction (`free_ns`), which it then occupies until that time.
    #[inline]
    fn pass(ns_per_byte: f64, free_ns: &mut u64, t_ns: u64, bytes: u64) -> u64 {
        let done = t_ns.max(*free_ns) + (bytes as f64 * ns_per_byte).ceil() as u64;
        *free_ns = done;
        done
    }
}

impl Sim<'_> {
    /// Sends a message of `bytes` (uncompressed) from `from` to `to` now; returns how long
    /// until it is received, ns, and counts its bytes.
    #[inline]
    pub(super) fn transmit(&mut self, from: End, to: End, bytes: u32) -> u64 {
        if self.nics.ns_per_byte.is_none() && self.sc.network.compression.is_none() {
            // No NIC queue and no codec: the message takes the one-way delay.
            let (sender, from_zone) = match from {
                End::Node(n) => (n, self.nodes[n as usize].zone),
                End::Client { zone } => (NO_NODE, zone),
            };
            let to_zone = match to {
                End::Node(n) => self.nodes[n as usize].zone,
                End::Client { zone } => zone,
            };
            let d = self.delay(from_zone, to_zone, sender);
            self.count_bytes(from, to, bytes as u64);
            return d;
        }
        let (wire, codec_ns) = match self.sc.network.compression {
            None => (bytes as u64, 0),
            Some(c) => (
                ((bytes as f64 * c.ratio).ceil() as u64).max(1),
                (bytes as f64 * c.cpu_ns_per_byte) as u64,
            ),
        };
        let zone = |sim: &Self, end: End| match end {
            End::Client { zone } => zone,
            End::Node(n) => sim.nodes[n as usize].zone,
        };
        let sender = match from {
            End::Node(n) => n,
            End::Client { .. } => NO_NODE,
        };
        let (from_zone, to_zone) = (zone(self, from), zone(self, to));
        let mut t = self.now + codec_ns;
        if let (Some(ns_per_byte), End::Node(n)) = (self.nics.ns_per_byte, from) {
            t = Nics::pass(ns_per_byte, &mut self.nics.out_free_ns[n as usize], t, wire);
        }
        t += self.delay(from_zone, to_zone, sender);
        if let (Some(ns_per_byte), End::Node(n)) = (self.nics.ns_per_byte, to) {
            t = Nics::pass(ns_per_byte, &mut self.nics.in_free_ns[n as usize], t, wire);
        }
        t += codec_ns;
        self.count_bytes(from, to, wire);
        t - self.now
    }

    /// Counts a message's `wire` bytes at its nodes (measured time only).
    #[inline]
    fn count_bytes(&mut self, from: End, to: End, wire: u64) {
        if let Some(m) = self.measured_t() {
            if let End::Node(n) = from {
                self.rec.sent_bytes(m, n as usize, wire, matches!(to, End::Node(_)));
            }
            if let End::Node(n) = to {
                self.rec.received_bytes(m, n as usize, wire);
            }
        }
    }

    /// The bytes of a reply carrying key `key`'s value.
    #[inline]
    pub(super) fn reply_bytes(&self, key: u64) -> u32 {
        replica_lb_workload::scenario::REPLY_HEADER_BYTES.saturating_add(self.sc.requests.value_bytes.bytes_of(key))
    }
}
