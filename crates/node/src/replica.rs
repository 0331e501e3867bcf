//! A replica's own work: read a row (cache, then the slow-disk gate and the store) and write a
//! row (store, then cache), with the counters and the feedback record every read reply carries.

use crate::metrics::{inc, GaugeGuard};
use crate::proto;
use crate::state::NodeState;
use crate::storage::Row;
use bytes::Bytes;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// A local read's result: the row if any, and the feedback to report.
pub struct LocalRead {
    /// The stored row, if the key exists.
    pub row: Option<Row>,
    /// What this node says about itself.
    pub feedback: replica_lb_policy::Feedback,
}

/// Encodes a hit rate as the one byte that travels on replies: round(rate * 255).
pub fn rate_to_byte(rate: f64) -> u32 {
    (rate.clamp(0.0, 1.0) * 255.0).round() as u32
}

/// Decodes the piggy-backed byte; values above 255 (a bad peer) give no rate.
pub fn byte_to_rate(byte: u32) -> Option<f64> {
    (byte <= 255).then(|| byte as f64 / 255.0)
}

/// The wire form of a feedback record.
pub fn feedback_to_proto(f: &replica_lb_policy::Feedback) -> proto::Feedback {
    proto::Feedback {
        hit_rate_byte: f.hit_rate.map(rate_to_byte).unwrap_or(0),
        has_hit_rate: f.hit_rate.is_some(),
        queue_len: f.queue_len.unwrap_or(0),
        service_time_ns: f.service_time_ns.unwrap_or(0),
        in_flight: f.in_flight.unwrap_or(0),
    }
}

/// The policy form of a wire feedback record (a missing one reports nothing).
pub fn feedback_from_proto(f: Option<&proto::Feedback>) -> replica_lb_policy::Feedback {
    match f {
        None => replica_lb_policy::Feedback::default(),
        Some(f) => replica_lb_policy::Feedback {
            hit_rate: if f.has_hit_rate { byte_to_rate(f.hit_rate_byte) } else { None },
            queue_len: Some(f.queue_len),
            service_time_ns: Some(f.service_time_ns),
            in_flight: Some(f.in_flight),
        },
    }
}

/// Reads `key` from this node's cache or store.
pub async fn read(state: &NodeState, key: &Bytes) -> Result<LocalRead, String> {
    let c = &state.counters;
    let _busy = GaugeGuard::new(&c.replica_in_flight);
    let start = Instant::now();
    inc(&c.reads);
    let mut queued_ns = 0;
    let row = match state.cache.get(key) {
        Ok(row) => {
            inc(&c.cache_hits);
            Some(row)
        }
        Err(ticket) => {
            inc(&c.cache_misses);
            queued_ns = state.disk.pass().await;
            let row = state.storage.get(key)?;
            if let Some(row) = &row {
                state.cache.fill(key.clone(), row.clone(), ticket);
            }
            row
        }
    };
    state.note_residence(start.elapsed().as_nanos() as u64);
    let feedback = replica_lb_policy::Feedback {
        hit_rate: Some(state.hit_rate()),
        queue_len: Some(state.disk.waiting()),
        service_time_ns: Some((start.elapsed().as_nanos() as u64).saturating_sub(queued_ns)),
        in_flight: Some(c.replica_in_flight.load(Ordering::Relaxed).saturating_sub(1) as u32),
    };
    Ok(LocalRead { row, feedback })
}

/// Writes `row` under `key` to this node's store (durable on return) and refreshes the cache.
pub async fn write(state: &NodeState, key: Bytes, row: Row) -> Result<(), String> {
    state.storage.put(key.clone(), row.clone()).await?;
    state.cache.on_write(&key, &row);
    inc(&state.counters.writes);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_byte_round_trip() {
        for r in [0.0, 0.2, 0.5, 0.95, 1.0] {
            let back = byte_to_rate(rate_to_byte(r)).unwrap();
            assert!((back - r).abs() <= 0.5 / 255.0 + 1e-12);
        }
        assert_eq!(byte_to_rate(256), None);
        assert_eq!(rate_to_byte(f64::NAN.max(2.0)), 255);
    }
}
