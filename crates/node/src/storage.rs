//! The on-disk store: one redb database file in the node's data directory.
//!
//! Rows are `key -> (timestamp_us, value)`, last write wins (ties broken by the larger value,
//! so every replica converges on the same row). Writes go through one writer thread that
//! groups whatever is queued into one transaction committed with `Durability::Immediate`
//! (fsync): a write is acknowledged only once it would survive the process being killed, and
//! group commit keeps throughput up under many concurrent writers. Reads use redb's MVCC read
//! transactions and never wait for the writer.

use crate::error::NodeError;
use bytes::Bytes;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use std::path::Path;
use std::sync::mpsc;
use std::sync::Arc;
use tokio::sync::oneshot;

const ROWS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("rows");
/// The database file inside the data directory.
pub const DB_FILE: &str = "rows.redb";
/// Most writes grouped into one commit.
const MAX_BATCH: usize = 1024;
/// Most writes queued for the writer thread; beyond this `put` waits.
const WRITE_QUEUE: usize = 16_384;

/// One stored row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// Write timestamp, microseconds since the Unix epoch (coordinator-assigned).
    pub timestamp_us: u64,
    /// The value.
    pub value: Bytes,
}

impl Row {
    /// Whether `self` wins over `other` under last-write-wins.
    pub fn newer_than(&self, other: &Row) -> bool {
        (self.timestamp_us, &self.value[..]) > (other.timestamp_us, &other.value[..])
    }

    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 + self.value.len());
        out.extend_from_slice(&self.timestamp_us.to_le_bytes());
        out.extend_from_slice(&self.value);
        out
    }

    fn decode(bytes: &[u8]) -> Option<Row> {
        let ts = u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?);
        Some(Row {
            timestamp_us: ts,
            value: Bytes::copy_from_slice(&bytes[8..]),
        })
    }
}

struct WriteOp {
    key: Bytes,
    row: Row,
    done: oneshot::Sender<Result<(), String>>,
}

/// The store: cheap to clone, shared by every task.
#[derive(Clone)]
pub struct Storage {
    db: Arc<Database>,
    writer: mpsc::SyncSender<WriteOp>,
}

impl Storage {
    /// Opens (or creates) the store in `dir`.
    pub fn open(dir: &Path) -> Result<Storage, NodeError> {
        let fail = |why: String| NodeError::DataDir {
            dir: dir.display().to_string(),
            why,
        };
        std::fs::create_dir_all(dir).map_err(|e| fail(e.to_string()))?;
        let db = Database::create(dir.join(DB_FILE)).map_err(|e| fail(e.to_string()))?;
        // Make sure the table exists so readers never see "table does not exist".
        let txn = db.begin_write().map_err(|e| fail(e.to_string()))?;
        txn.open_table(ROWS).map_err(|e| fail(e.to_string()))?;
        txn.commit().map_err(|e| fail(e.to_string()))?;
        let db = Arc::new(db);
        let (tx, rx) = mpsc::sync_channel(WRITE_QUEUE);
        let writer_db = db.clone();
        std::thread::Builder::new()
            .name("storage-writer".into())
            .spawn(move || writer_loop(&writer_db, rx))
            .map_err(|e| fail(format!("cannot start the writer thread: {e}")))?;
        Ok(Storage { db, writer: tx })
    }

    /// Reads a row (a short blocking read, served from redb's page cache or the OS's).
    pub fn get(&self, key: &[u8]) -> Result<Option<Row>, String> {
        let txn = self.db.begin_read().map_err(|e| e.to_string())?;
        let table = txn.open_table(ROWS).map_err(|e| e.to_string())?;
        let got = table.get(key).map_err(|e| e.to_string())?;
        Ok(got.and_then(|g| Row::decode(g.value())))
    }

    /// Writes a row unless a newer one is stored; returns once it is durable.
    pub async fn put(&self, key: Bytes, row: Row) -> Result<(), String> {
        let (done, wait) = oneshot::channel();
        let writer = self.writer.clone();
        let op = WriteOp { key, row, done };
        // The queue is bounded: when it is full, wait off the async worker threads.
        if let Err(mpsc::TrySendError::Full(op)) = writer.try_send(op) {
            tokio::task::spawn_blocking(move || writer.send(op))
                .await
                .map_err(|e| e.to_string())?
                .map_err(|_| "the storage writer stopped".to_string())?;
        }
        wait.await.map_err(|_| "the storage writer stopped".to_string())?
    }
}

fn writer_loop(db: &Database, rx: mpsc::Receiver<WriteOp>) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(op) => batch.push(op),
                Err(_) => break,
            }
        }
        let result = commit(db, &batch);
        for op in batch {
            let _ = op.done.send(result.clone());
        }
    }
}

fn commit(db: &Database, batch: &[WriteOp]) -> Result<(), String> {
    let txn = db.begin_write().map_err(|e| e.to_string())?;
    {
        let mut table = txn.open_table(ROWS).map_err(|e| e.to_string())?;
        for op in batch {
            let keep_old = match table.get(&op.key[..]).map_err(|e| e.to_string())? {
                Some(old) => Row::decode(old.value()).is_some_and(|old| !op.row.newer_than(&old)),
                None => false,
            };
            if !keep_old {
                table.insert(&op.key[..], &op.row.encode()[..]).map_err(|e| e.to_string())?;
            }
        }
    }
    txn.commit().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(ts: u64, v: &str) -> Row {
        Row {
            timestamp_us: ts,
            value: Bytes::copy_from_slice(v.as_bytes()),
        }
    }

    #[tokio::test]
    async fn last_write_wins_and_survives_reopen() {
        let dir = std::env::temp_dir().join(format!("replica-lb-storage-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        {
            let s = Storage::open(&dir).unwrap();
            s.put(Bytes::from_static(b"k"), row(5, "new")).await.unwrap();
            s.put(Bytes::from_static(b"k"), row(3, "old")).await.unwrap();
            assert_eq!(s.get(b"k").unwrap(), Some(row(5, "new")));
            assert_eq!(s.get(b"missing").unwrap(), None);
        }
        // The writer thread holds the database until its channel closes; wait for that.
        let mut reopened = None;
        for _ in 0..100 {
            match Storage::open(&dir) {
                Ok(s) => {
                    reopened = Some(s);
                    break;
                }
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
            }
        }
        assert_eq!(reopened.unwrap().get(b"k").unwrap(), Some(row(5, "new")));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
