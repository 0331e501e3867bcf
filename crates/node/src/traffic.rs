//! Bytes on the wire, per node: what it sends and receives, split into client traffic (the
//! public `ReplicaLb` service: Get, MultiGet, Put and Probe requests in, their replies out) and
//! internode traffic (the `Internode` service's ReplicaRead and ReplicaWrite, on both sides: as
//! a replica, requests in and replies out; as a coordinator, requests out and replies in).
//!
//! What a message costs is the gRPC payload on the wire: its encoded protobuf length plus the
//! 5-byte gRPC frame header (compression flag and length) that precedes it in the HTTP/2 DATA
//! frame ([`wire_bytes`]). HTTP/2 frame and header overhead (the path, status and trailers), TCP
//! and IP headers are not counted: gRPC does not expose them, and they are a small, roughly
//! constant cost per call. An error answer carries no message (only a status in the trailers)
//! and counts 0 bytes. Stats and SetFaults (monitoring and fault injection) and gossip (UDP,
//! inside chitchat) are not counted, so that watching a node does not change what it counts.
//!
//! Each message is counted once, by the one place that encodes or decodes it on this node: the
//! service handler for what the node serves, the coordinator for its calls to replicas. A node
//! never calls its own Internode service (its own replica reads and writes are local), so no
//! message is seen twice. Counters are relaxed atomics: exact totals, one add per message.

use prost::Message;
use std::sync::atomic::{AtomicU64, Ordering};

/// The gRPC length-prefixed message header: one compression flag byte and a 4-byte length.
pub const GRPC_FRAME_HEADER_BYTES: u64 = 5;

/// The bytes `message` takes on the wire as a gRPC payload: its encoded length plus the frame
/// header (what tonic writes into the HTTP/2 DATA frames for it, uncompressed).
#[inline]
pub fn wire_bytes<M: Message>(message: &M) -> u64 {
    message.encoded_len() as u64 + GRPC_FRAME_HEADER_BYTES
}

/// Which traffic a message belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// Between a client and this node (the public service).
    Client,
    /// Between this node and another node (the internode service).
    Internode,
}

/// A node's byte counters since it started.
#[derive(Default, Debug)]
pub struct Traffic {
    client_received: AtomicU64,
    client_sent: AtomicU64,
    internode_received: AtomicU64,
    internode_sent: AtomicU64,
}

/// A reading of [`Traffic`]'s counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TrafficTotals {
    /// Bytes received from clients.
    pub client_received_bytes: u64,
    /// Bytes sent to clients.
    pub client_sent_bytes: u64,
    /// Bytes received from other nodes.
    pub internode_received_bytes: u64,
    /// Bytes sent to other nodes.
    pub internode_sent_bytes: u64,
}

impl TrafficTotals {
    /// Everything the node sent (its NIC's outgoing bytes, as counted here).
    pub fn sent_bytes(&self) -> u64 {
        self.client_sent_bytes + self.internode_sent_bytes
    }

    /// Everything the node received.
    pub fn received_bytes(&self) -> u64 {
        self.client_received_bytes + self.internode_received_bytes
    }
}

impl Traffic {
    fn pair(&self, link: Link) -> (&AtomicU64, &AtomicU64) {
        match link {
            Link::Client => (&self.client_received, &self.client_sent),
            Link::Internode => (&self.internode_received, &self.internode_sent),
        }
    }

    /// Counts `message`, received on `link`; returns its wire bytes.
    #[inline]
    pub fn received<M: Message>(&self, link: Link, message: &M) -> u64 {
        let bytes = wire_bytes(message);
        self.received_bytes(link, bytes);
        bytes
    }

    /// Counts `message`, sent on `link`; returns its wire bytes.
    #[inline]
    pub fn sent<M: Message>(&self, link: Link, message: &M) -> u64 {
        let bytes = wire_bytes(message);
        self.sent_bytes(link, bytes);
        bytes
    }

    /// Counts `bytes` received on `link` (a message measured with [`wire_bytes`] earlier).
    #[inline]
    pub fn received_bytes(&self, link: Link, bytes: u64) {
        self.pair(link).0.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Counts `bytes` sent on `link` (a message measured with [`wire_bytes`] before it left).
    #[inline]
    pub fn sent_bytes(&self, link: Link, bytes: u64) {
        self.pair(link).1.fetch_add(bytes, Ordering::Relaxed);
    }

    /// The counters now.
    pub fn totals(&self) -> TrafficTotals {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        TrafficTotals {
            client_received_bytes: g(&self.client_received),
            client_sent_bytes: g(&self.client_sent),
            internode_received_bytes: g(&self.internode_received),
            internode_sent_bytes: g(&self.internode_sent),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto;

    /// What a gRPC peer writes for `m`: the header, then the encoded message.
    fn framed<M: Message>(m: &M) -> usize {
        let body = m.encode_to_vec();
        let mut frame = vec![0u8];
        frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
        frame.extend_from_slice(&body);
        frame.len()
    }

    #[test]
    fn wire_bytes_is_the_encoded_message_plus_the_grpc_header() {
        let get = proto::GetRequest {
            key: bytes::Bytes::from_static(b"12345"),
            consistency: proto::Consistency::Quorum as i32,
            timeout_ms: 2000,
        };
        // key: tag + len + 5; consistency: tag + 1; timeout: tag + 2 (varint 2000).
        assert_eq!(wire_bytes(&get), 7 + 2 + 3 + 5);
        assert_eq!(wire_bytes(&get) as usize, framed(&get));
        let reply = proto::ReplicaReadResponse {
            found: true,
            value: bytes::Bytes::from(vec![7u8; 1000]),
            timestamp_us: 1_700_000_000_000_000,
            feedback: Some(proto::Feedback {
                hit_rate_byte: 200,
                queue_len: 3,
                service_time_ns: 12_345,
                in_flight: 1,
                has_hit_rate: true,
            }),
            node_id: 2,
        };
        assert_eq!(wire_bytes(&reply) as usize, framed(&reply));
        assert!(wire_bytes(&reply) > 1000 + GRPC_FRAME_HEADER_BYTES);
        // An empty message still has its header on the wire.
        assert_eq!(wire_bytes(&proto::ProbeRequest {}), GRPC_FRAME_HEADER_BYTES);
    }

    #[test]
    fn each_direction_and_link_counts_apart_and_exactly() {
        let t = Traffic::default();
        let m = proto::PutRequest {
            key: bytes::Bytes::from_static(b"k"),
            value: bytes::Bytes::from(vec![1u8; 100]),
            consistency: 0,
            timeout_ms: 0,
        };
        let n = wire_bytes(&m);
        assert_eq!(t.received(Link::Client, &m), n);
        assert_eq!(t.sent(Link::Internode, &m), n);
        t.sent_bytes(Link::Client, 10);
        t.received_bytes(Link::Internode, 20);
        t.received_bytes(Link::Internode, 1);
        let got = t.totals();
        assert_eq!(
            got,
            TrafficTotals {
                client_received_bytes: n,
                client_sent_bytes: 10,
                internode_received_bytes: 21,
                internode_sent_bytes: n,
            }
        );
        assert_eq!((got.sent_bytes(), got.received_bytes()), (n + 10, n + 21));
    }

    #[test]
    fn concurrent_counting_loses_nothing() {
        let t = std::sync::Arc::new(Traffic::default());
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let t = t.clone();
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        t.sent_bytes(Link::Client, 3);
                    }
                })
            })
            .collect();
        for th in threads {
            th.join().unwrap();
        }
        assert_eq!(t.totals().client_sent_bytes, 120_000);
    }
}
