//! The row cache: an LRU of whole rows in front of the store, capacity in rows.
//!
//! Split into shards, each an `lru::LruCache` behind its own mutex, so concurrent readers
//! rarely meet (per-shard LRU: an approximation of a global LRU, as most caches do). Hits and
//! misses are counted by the caller ([`crate::replica`]), which also feeds the hit-rate tracker.
//!
//! Writes do not fill the cache (like Cassandra's row cache): a write updates a cached row and
//! bumps its shard's generation; a read that missed fills the cache only if the generation did
//! not move while it read the disk, so a slow read can never put back a row older than a write
//! that finished meanwhile.

use crate::storage::Row;
use bytes::Bytes;
use lru::LruCache;
use std::num::NonZeroUsize;
use std::sync::Mutex;

const SHARDS: usize = 16;

struct Shard {
    lru: LruCache<Bytes, Row>,
    generation: u64,
}

/// A sharded LRU row cache.
pub struct RowCache {
    shards: Vec<Mutex<Shard>>,
    enabled: bool,
}

/// A token taken before a disk read and given back to [`RowCache::fill`].
#[derive(Clone, Copy, Debug)]
pub struct FillTicket {
    shard: usize,
    generation: u64,
}

impl RowCache {
    /// A cache holding at most about `capacity_rows` rows (0 disables it).
    pub fn new(capacity_rows: u64) -> RowCache {
        let per_shard = (capacity_rows as usize).div_ceil(SHARDS).max(1);
        let cap = NonZeroUsize::new(per_shard).unwrap_or(NonZeroUsize::MIN);
        RowCache {
            shards: (0..SHARDS)
                .map(|_| {
                    Mutex::new(Shard {
                        lru: LruCache::new(cap),
                        generation: 0,
                    })
                })
                .collect(),
            enabled: capacity_rows > 0,
        }
    }

    fn shard_of(key: &[u8]) -> usize {
        (replica_lb_workload::placement::key_token(key) >> 59) as usize % SHARDS
    }

    fn lock(&self, i: usize) -> std::sync::MutexGuard<'_, Shard> {
        // A poisoned shard only means another reader panicked mid-operation; the LRU itself
        // is still consistent, so keep serving.
        self.shards[i].lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The cached row, promoted to most recently used; on a miss, a ticket for [`Self::fill`].
    pub fn get(&self, key: &[u8]) -> Result<Row, FillTicket> {
        let shard = Self::shard_of(key);
        let mut s = self.lock(shard);
        if self.enabled {
            if let Some(row) = s.lru.get(key) {
                return Ok(row.clone());
            }
        }
        Err(FillTicket {
            shard,
            generation: s.generation,
        })
    }

    /// Caches a row read from disk after a miss, unless a write touched the shard since.
    pub fn fill(&self, key: Bytes, row: Row, ticket: FillTicket) {
        if !self.enabled {
            return;
        }
        let mut s = self.lock(ticket.shard);
        if s.generation == ticket.generation {
            s.lru.put(key, row);
        }
    }

    /// A write was stored: refresh the cached copy if there is one.
    pub fn on_write(&self, key: &[u8], row: &Row) {
        let mut s = self.lock(Self::shard_of(key));
        s.generation += 1;
        if let Some(cached) = s.lru.peek_mut(key) {
            if row.newer_than(cached) {
                *cached = row.clone();
            }
        }
    }

    /// Rows held now.
    pub fn len(&self) -> usize {
        (0..SHARDS).map(|i| self.lock(i).lru.len()).sum()
    }

    /// Whether no row is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(ts: u64) -> Row {
        Row {
            timestamp_us: ts,
            value: Bytes::from_static(b"v"),
        }
    }

    #[test]
    fn miss_fill_hit_and_stale_fill_rejected() {
        let c = RowCache::new(1000);
        let t = c.get(b"a").unwrap_err();
        c.fill(Bytes::from_static(b"a"), row(1), t);
        assert_eq!(c.get(b"a").unwrap(), row(1));
        c.on_write(b"a", &row(2));
        assert_eq!(c.get(b"a").unwrap(), row(2));
        let t = c.get(b"b").unwrap_err();
        c.on_write(b"b", &row(9));
        c.fill(Bytes::from_static(b"b"), row(1), t);
        assert!(c.get(b"b").is_err(), "a fill older than a write is dropped");
    }

    #[test]
    fn capacity_bounds_and_disabled() {
        let c = RowCache::new(32);
        for i in 0..1000u32 {
            let k = Bytes::from(i.to_string());
            let t = c.get(&k).unwrap_err();
            c.fill(k, row(1), t);
        }
        assert!(c.len() <= 32);
        let off = RowCache::new(0);
        let t = off.get(b"a").unwrap_err();
        off.fill(Bytes::from_static(b"a"), row(1), t);
        assert!(off.get(b"a").is_err());
    }
}
