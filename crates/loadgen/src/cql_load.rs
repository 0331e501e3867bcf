//! `load` through the scylla driver: the keyspace and table (created where absent, and
//! waited for on every node), then keys `0..N-1` written with the node cluster's encoding.

use crate::cql_session::{connect, prepare, CqlTarget, KEYSPACE, TABLE};
use crate::grpc_load::{LoadOptions, LoadOutcome};
use crate::keys::{key_bytes, value_for};
use scylla::client::session::Session;
use scylla::policies::load_balancing::{NodeIdentifier, SingleTargetLoadBalancingPolicy};
use scylla::statement::unprepared::Statement;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Creates the keyspace and table if absent.
async fn schema(s: &Session, rf: u32) -> Result<(), String> {
    let ks =
        format!("CREATE KEYSPACE IF NOT EXISTS {KEYSPACE} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': {rf}}}");
    s.query_unpaged(ks, &[])
        .await
        .map_err(|e| format!("cannot create keyspace {KEYSPACE}: {e}"))?;
    s.query_unpaged(
        // Whole rows in the row cache when a node has one (`row_cache_size` > 0; nothing
        // changes without): a read either hits it or reads the SSTables, as in the seeds.
        format!(
            "CREATE TABLE IF NOT EXISTS {KEYSPACE}.{TABLE} (k blob PRIMARY KEY, v blob) \
             WITH caching = {{'keys': 'ALL', 'rows_per_partition': 'ALL'}}"
        ),
        &[],
    )
    .await
    .map_err(|e| format!("cannot create table {KEYSPACE}.kv: {e}"))?;
    s.await_schema_agreement().await.map_err(|e| format!("schema agreement: {e}"))?;
    table_everywhere(s).await?;
    s.refresh_metadata().await.map_err(|e| format!("metadata refresh: {e}"))?;
    Ok(())
}

/// Waits until every node knows the table (schema agreement as the driver sees it can come
/// before a busy node has applied the change, and a write there would then fail).
async fn table_everywhere(s: &Session) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    for node in s.get_cluster_state().get_nodes_info() {
        loop {
            let mut st = Statement::new("SELECT table_name FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?");
            st.set_load_balancing_policy(Some(SingleTargetLoadBalancingPolicy::new(NodeIdentifier::Node(node.clone()), None)));
            let known = match s.query_unpaged(st, (KEYSPACE, TABLE)).await {
                Ok(result) => result.into_rows_result().is_ok_and(|rows| rows.rows_num() > 0),
                Err(_) => false,
            };
            if known {
                break;
            }
            if Instant::now() > deadline {
                return Err(format!("node {} did not learn table {KEYSPACE}.{TABLE} within 60 s", node.address));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    Ok(())
}

/// Writes keys 0..N-1 (the node cluster's encoding), `concurrency` at a time.
pub async fn load(target: &CqlTarget, opts: &LoadOptions) -> Result<LoadOutcome, String> {
    if !(1..=7).contains(&target.replication_factor) {
        return Err(format!("--replication-factor {}: must be in [1, 7]", target.replication_factor));
    }
    let cs = connect(target, opts.cl, Duration::from_millis(opts.timeout_ms as u64)).await?;
    schema(&cs.session, target.replication_factor).await?;
    let write = Arc::new(prepare(&cs.session, &format!("INSERT INTO {KEYSPACE}.kv (k, v) VALUES (?, ?)")).await?);
    let session = cs.session.clone();
    let start = Instant::now();
    let mut out = LoadOutcome {
        written: 0,
        failed: 0,
        first_error: None,
        elapsed: Duration::ZERO,
    };
    let sem = Arc::new(tokio::sync::Semaphore::new(opts.concurrency.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..opts.keys {
        let permit = sem.clone().acquire_owned().await.map_err(|e| e.to_string())?;
        let (s, w, len) = (session.clone(), write.clone(), opts.value_bytes);
        tasks.spawn(async move {
            let r = s.execute_unpaged(&w, (key_bytes(i).to_vec(), value_for(i, len).to_vec())).await;
            drop(permit);
            r.map(|_| ()).map_err(|e| e.to_string())
        });
        while let Some(Ok(r)) = tasks.try_join_next() {
            note(r, &mut out);
        }
    }
    while let Some(r) = tasks.join_next().await {
        note(r.map_err(|e| e.to_string()).and_then(|x| x), &mut out);
    }
    out.elapsed = start.elapsed();
    Ok(out)
}

fn note(r: Result<(), String>, out: &mut LoadOutcome) {
    match r {
        Ok(()) => out.written += 1,
        Err(e) => {
            out.failed += 1;
            out.first_error.get_or_insert(e);
        }
    }
}
