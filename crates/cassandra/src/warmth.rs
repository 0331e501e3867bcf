//! Every node's cache counters, for the warm gate (`replica-lb warmup`, `cluster
//! rolling-restart`): one driver session from a few contact points, every node it discovers
//! asked directly (the tables are node-local).
//!
//! Two sources, chosen per node by what it answers:
//! - the replica-lb plug-in's `replica_lb_hwlb.tables`: cumulative row-cache hits and misses
//!   of each row-cached table, so the gate judges each table against the same table on the
//!   other nodes;
//! - Cassandra as shipped: the row cache's `hit_count` and `request_count` in
//!   `system_views.caches` (node-wide, one entry named `rows`).

use scylla::client::execution_profile::ExecutionProfile;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::cluster::Node;
use scylla::policies::load_balancing::{NodeIdentifier, SingleTargetLoadBalancingPolicy};
use scylla::statement::unprepared::Statement;
use scylla::statement::Consistency;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// The entry name of the node-wide row cache, where a node has no plug-in.
pub const ROW_CACHE: &str = "rows";

/// Where a node's counters came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CounterSource {
    /// The plug-in's per-table counters.
    Plugin,
    /// Cassandra's own node-wide row cache counters.
    RowCache,
}

/// One node's cumulative cache counters: `(hits, lookups)` per table (or the one `rows`
/// entry), since the node started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheCounters {
    /// Which table the plug-in's or Cassandra's counters came from.
    pub source: CounterSource,
    /// `(hits, lookups)` by table (`keyspace.table`) or [`ROW_CACHE`].
    pub tables: BTreeMap<String, (u64, u64)>,
}

/// A session that asks every node of a Cassandra cluster for its cache counters. Blocking: it
/// runs its own small runtime, so the gate's loops stay plain code.
pub struct CacheProbe {
    rt: tokio::runtime::Runtime,
    session: Session,
    nodes: Vec<Arc<Node>>,
    timeout: Duration,
}

impl CacheProbe {
    /// Connects through `contact_points` (within `timeout`) and learns every node of the
    /// cluster. An error names the contact points when none answers.
    pub fn connect(contact_points: &[SocketAddr], timeout: Duration) -> Result<CacheProbe, String> {
        assert!(!contact_points.is_empty(), "a probe needs at least one contact point");
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the driver's runtime: {e}"))?;
        let profile = ExecutionProfile::builder()
            .consistency(Consistency::One)
            .request_timeout(Some(timeout))
            .build();
        let mut b = SessionBuilder::new().default_execution_profile_handle(profile.into_handle());
        for a in contact_points {
            b = b.known_node_addr(*a);
        }
        let list = contact_points.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(",");
        let session = rt
            .block_on(async { tokio::time::timeout(timeout.max(Duration::from_secs(5)), b.build()).await })
            .map_err(|_| format!("the cluster at {list} did not answer"))?
            .map_err(|e| format!("cannot connect to the cluster at {list}: {e}"))?;
        let mut nodes: Vec<Arc<Node>> = session.get_cluster_state().get_nodes_info().to_vec();
        nodes.sort_by_key(|n| SocketAddr::new(n.address.ip(), n.address.port()));
        Ok(CacheProbe {
            rt,
            session,
            nodes,
            timeout,
        })
    }

    /// Every node's client address, in address order (the order of [`CacheProbe::sample`]).
    pub fn addresses(&self) -> Vec<SocketAddr> {
        self.nodes
            .iter()
            .map(|n| SocketAddr::new(n.address.ip(), n.address.port()))
            .collect()
    }

    /// Every node's counters now (`None` for a node that did not answer).
    pub fn sample(&self) -> Vec<Option<CacheCounters>> {
        self.rt.block_on(async {
            let mut out = Vec::with_capacity(self.nodes.len());
            for node in &self.nodes {
                out.push(self.counters(node).await.ok());
            }
            out
        })
    }

    async fn counters(&self, node: &Arc<Node>) -> Result<CacheCounters, String> {
        match self.plugin_tables(node).await {
            Ok(tables) => Ok(CacheCounters {
                source: CounterSource::Plugin,
                tables,
            }),
            // No plug-in: its keyspace does not exist on this node.
            Err(e) if e.contains("replica_lb_hwlb") || e.to_lowercase().contains("keyspace") => {
                let (hits, requests) = replica_lb_driver::hit_rates::cache_counters(
                    &self.session,
                    NodeIdentifier::Node(node.clone()),
                    ROW_CACHE,
                    self.timeout,
                )
                .await?
                .unwrap_or((0, 0));
                Ok(CacheCounters {
                    source: CounterSource::RowCache,
                    tables: BTreeMap::from([(ROW_CACHE.to_string(), (hits, requests))]),
                })
            }
            Err(e) => Err(e),
        }
    }

    /// The plug-in's per-table counters on `node`.
    async fn plugin_tables(&self, node: &Arc<Node>) -> Result<BTreeMap<String, (u64, u64)>, String> {
        let mut st = Statement::new("SELECT table_name, cache_hits, cache_misses FROM replica_lb_hwlb.tables");
        st.set_load_balancing_policy(Some(SingleTargetLoadBalancingPolicy::new(NodeIdentifier::Node(node.clone()), None)));
        st.set_request_timeout(Some(self.timeout));
        let what = |e: &dyn std::fmt::Display| format!("replica_lb_hwlb.tables: {e}");
        let rows = self
            .session
            .query_unpaged(st, &[])
            .await
            .map_err(|e| what(&e))?
            .into_rows_result()
            .map_err(|e| what(&e))?;
        let mut tables = BTreeMap::new();
        for row in rows.rows::<(String, Option<i64>, Option<i64>)>().map_err(|e| what(&e))? {
            let (table, hits, misses) = row.map_err(|e| what(&e))?;
            let hits = hits.unwrap_or(0).max(0) as u64;
            let misses = misses.unwrap_or(0).max(0) as u64;
            tables.insert(table, (hits, hits + misses));
        }
        Ok(tables)
    }
}
