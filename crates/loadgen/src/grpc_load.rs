//! `load` on the node cluster: every key written once over gRPC, each through a coordinator
//! chosen uniformly among its replicas.

use crate::keys::{key_bytes, value_for};
use replica_lb_node::client::ClusterClient;
use replica_lb_policy::{ConsistencyLevel, Rng};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Options of `load`.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// Keys 0..keys-1 are written.
    pub keys: u64,
    /// Value size.
    pub value_bytes: usize,
    /// Consistency level of the writes.
    pub cl: ConsistencyLevel,
    /// Writes in flight at once.
    pub concurrency: usize,
    /// Per-write time-out, ms.
    pub timeout_ms: u32,
}

/// What `load` did.
#[derive(Clone, Debug)]
pub struct LoadOutcome {
    /// Writes acknowledged.
    pub written: u64,
    /// Writes that failed.
    pub failed: u64,
    /// The first failure, if any.
    pub first_error: Option<String>,
    /// Wall time.
    pub elapsed: Duration,
}

/// Writes keys 0..N-1 (closed loop, `concurrency` at a time), each through a coordinator chosen
/// uniformly among its replicas.
pub async fn load(client: &ClusterClient, opts: &LoadOptions) -> LoadOutcome {
    let start = Instant::now();
    let sem = Arc::new(tokio::sync::Semaphore::new(opts.concurrency.max(1)));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Result<(), String>>();
    let mut rng = Rng::seed_from_u64(0x10ad);
    let mut out = LoadOutcome {
        written: 0,
        failed: 0,
        first_error: None,
        elapsed: Duration::ZERO,
    };
    let note = |r: Result<(), String>, out: &mut LoadOutcome| match r {
        Ok(()) => out.written += 1,
        Err(e) => {
            out.failed += 1;
            out.first_error.get_or_insert(e);
        }
    };
    for i in 0..opts.keys {
        let Ok(permit) = sem.clone().acquire_owned().await else { break };
        while let Ok(r) = rx.try_recv() {
            note(r, &mut out);
        }
        let key = key_bytes(i);
        let (replicas, _) = client.replicas(&key);
        let Some(&via) = replicas
            .as_slice()
            .get(rng.below(replicas.len().max(1)).min(replicas.len().saturating_sub(1)))
        else {
            note(Err("the cluster has no members".into()), &mut out);
            continue;
        };
        let client = client.clone();
        let tx = tx.clone();
        let (value, cl, timeout_ms) = (value_for(i, opts.value_bytes), opts.cl, opts.timeout_ms);
        tokio::spawn(async move {
            let r = client
                .put(via, key, value, cl, timeout_ms)
                .await
                .map(|_| ())
                .map_err(|s| format!("key {i} via node {via}: {}", s.message()));
            let _ = tx.send(r);
            drop(permit);
        });
    }
    drop(tx);
    while let Some(r) = rx.recv().await {
        note(r, &mut out);
    }
    out.elapsed = start.elapsed();
    out
}
