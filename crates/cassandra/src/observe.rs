//! Each Cassandra node's own counters and the replica-lb plug-in's switch, over CQL: one driver
//! session, every query sent to one chosen node (virtual tables are node-local).
//!
//! Read per node:
//! - the plug-in's row (`replica_lb_hwlb.node`, docs/cassandra-hwlb.md): hits and misses of the cache
//!   it measures, the reads this node coordinated and how many of their replica reads it kept
//!   (local) or sent to others (remote), and the hit rate it publishes;
//! - Cassandra's own count of reads the node executed on the experiment's table
//!   (`system_views.local_read_latency`), for the reads it served for other coordinators.

use super::config::client_addr;
use scylla::client::execution_profile::ExecutionProfile;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::policies::load_balancing::{NodeIdentifier, SingleTargetLoadBalancingPolicy};
use scylla::statement::unprepared::Statement;
use scylla::statement::Consistency;
use std::net::SocketAddr;
use std::time::Duration;

/// One node's counters at one moment (cumulative since the node started).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct NodeCounters {
    /// Hits of the cache the plug-in measures.
    pub cache_hits: u64,
    /// Its misses.
    pub cache_misses: u64,
    /// Token reads this node coordinated.
    pub coordinated: u64,
    /// Replica reads of those it served itself.
    pub local_reads: u64,
    /// Replica reads of those it sent to other nodes.
    pub remote_reads: u64,
    /// Reads it executed on the table (for itself and for other coordinators).
    pub table_reads: u64,
    /// The hit rate it measures (the tracker's moving average).
    pub hit_rate: f64,
}

/// One node's plug-in warm-up counters (cumulative since it started).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WarmupCounters {
    /// Reads that left a cold warming replica out.
    pub cold_left_out: u64,
    /// Warm-up reads sent.
    pub sent: u64,
    /// Warm-up reads skipped: too many unanswered at the cold replica.
    pub skipped: u64,
    /// Warm-up reads that could not be built or sent.
    pub failed: u64,
}

/// Where the cache counters come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The replica-lb plug-in's row (the cache it measures, its coordinator counters).
    Plugin,
    /// Cassandra's row cache counters (`system_views.caches`), on a cluster without the
    /// plug-in. Which reads a node coordinated is not known then: with `every_read_local`
    /// (CL=ONE, where a coordinator that is a replica reads itself) every read counts as the
    /// node's own, otherwise as a replica read.
    RowCache {
        /// Whether every read a node executed is one it coordinated.
        every_read_local: bool,
    },
}

/// A session that queries single nodes of a cluster.
pub struct Observer {
    source: Source,
    session: Session,
    /// Where the driver reaches each node (by node id).
    nodes: Vec<SocketAddr>,
    keyspace: String,
    table: String,
}

/// How long one query may take.
const QUERY_TIMEOUT: Duration = Duration::from_millis(800);

impl Observer {
    /// Connects to the cluster of `nodes` nodes (client addresses `client_addr(0..nodes)`),
    /// observing reads of `keyspace.table` with counters from `source`.
    pub async fn connect(nodes: u32, keyspace: &str, table: &str, source: Source) -> Result<Observer, String> {
        let addrs: Vec<SocketAddr> = (0..nodes).map(client_addr).collect();
        let profile = ExecutionProfile::builder()
            .consistency(Consistency::One)
            .request_timeout(Some(QUERY_TIMEOUT))
            .build();
        let mut b = SessionBuilder::new().default_execution_profile_handle(profile.into_handle());
        for a in &addrs {
            b = b.known_node_addr(*a);
        }
        let session = tokio::time::timeout(Duration::from_secs(20), b.build())
            .await
            .map_err(|_| "the cluster did not answer within 20 s".to_string())?
            .map_err(|e| format!("cannot connect to the cluster: {e}"))?;
        Ok(Observer {
            source,
            session,
            nodes: addrs,
            keyspace: keyspace.into(),
            table: table.into(),
        })
    }

    /// Where the driver reaches node `node`.
    fn addr(&self, node: u32) -> Result<SocketAddr, String> {
        self.nodes
            .get(node as usize)
            .copied()
            .ok_or_else(|| format!("node {node} is not in the cluster (0..{})", self.nodes.len().saturating_sub(1)))
    }

    fn on_node(&self, node: u32, cql: &str) -> Result<Statement, String> {
        let addr = self.addr(node)?;
        let mut st = Statement::new(cql);
        st.set_load_balancing_policy(Some(SingleTargetLoadBalancingPolicy::new(NodeIdentifier::NodeAddress(addr), None)));
        Ok(st)
    }

    /// Node `node`'s counters now.
    pub async fn counters(&self, node: u32) -> Result<NodeCounters, String> {
        let table_reads = self.table_reads(node).await?;
        match self.source {
            Source::Plugin => self.plugin_counters(node, table_reads).await,
            Source::RowCache { every_read_local } => {
                let (hits, requests) = replica_lb_driver::hit_rates::cache_counters(
                    &self.session,
                    NodeIdentifier::NodeAddress(self.addr(node)?),
                    "rows",
                    QUERY_TIMEOUT,
                )
                .await
                .map_err(|e| format!("node {node}: {e}"))?
                .unwrap_or((0, 0));
                let own = if every_read_local { table_reads } else { 0 };
                Ok(NodeCounters {
                    cache_hits: hits,
                    cache_misses: requests.saturating_sub(hits),
                    coordinated: own,
                    local_reads: own,
                    remote_reads: 0,
                    table_reads,
                    hit_rate: if requests > 0 { hits as f64 / requests as f64 } else { 0.0 },
                })
            }
        }
    }

    /// Reads node `node` executed on the observed table (Cassandra's count).
    async fn table_reads(&self, node: u32) -> Result<u64, String> {
        let st = self.on_node(
            node,
            "SELECT count FROM system_views.local_read_latency WHERE keyspace_name = ? AND table_name = ?",
        )?;
        let reads = self
            .session
            .query_unpaged(st, (&self.keyspace, &self.table))
            .await
            .map_err(|e| format!("node {node}: local_read_latency: {e}"))?
            .into_rows_result()
            .map_err(|e| format!("node {node}: local_read_latency: {e}"))?
            .maybe_first_row::<(Option<i64>,)>()
            .map_err(|e| format!("node {node}: local_read_latency: {e}"))?
            .and_then(|(c,)| c)
            .unwrap_or(0);
        Ok(reads.max(0) as u64)
    }

    async fn plugin_counters(&self, node: u32, table_reads: u64) -> Result<NodeCounters, String> {
        let st = self.on_node(
            node,
            "SELECT hit_rate, cache_hits, cache_misses, reads_coordinated, local_reads, remote_reads FROM replica_lb_hwlb.node",
        )?;
        let rows = self
            .session
            .query_unpaged(st, ())
            .await
            .map_err(|e| format!("node {node}: replica_lb_hwlb.node: {e}"))?
            .into_rows_result()
            .map_err(|e| format!("node {node}: replica_lb_hwlb.node: {e}"))?;
        let (hit_rate, hits, misses, coordinated, local, remote) = rows
            .maybe_first_row::<(Option<f64>, Option<i64>, Option<i64>, Option<i64>, Option<i64>, Option<i64>)>()
            .map_err(|e| format!("node {node}: replica_lb_hwlb.node: {e}"))?
            .ok_or_else(|| format!("node {node}: replica_lb_hwlb.node has no row (is the plug-in installed?)"))?;
        let n = |v: Option<i64>| v.unwrap_or(0).max(0) as u64;
        Ok(NodeCounters {
            cache_hits: n(hits),
            cache_misses: n(misses),
            coordinated: n(coordinated),
            local_reads: n(local),
            remote_reads: n(remote),
            table_reads,
            hit_rate: hit_rate.unwrap_or(0.0),
        })
    }

    /// Node `node`'s plug-in warm-up counters (`unified`): reads that left a cold replica out,
    /// and warm-up reads sent, skipped (too many unanswered) and failed.
    pub async fn warmup_counters(&self, node: u32) -> Result<WarmupCounters, String> {
        let what = format!("node {node}: replica_lb_hwlb.node warm-up counters");
        let st = self.on_node(
            node,
            "SELECT cold_left_out, warmup_reads, warmup_skipped, warmup_failures FROM replica_lb_hwlb.node",
        )?;
        let row = self
            .session
            .query_unpaged(st, ())
            .await
            .map_err(|e| format!("{what}: {e}"))?
            .into_rows_result()
            .map_err(|e| format!("{what}: {e}"))?
            .maybe_first_row::<(Option<i64>, Option<i64>, Option<i64>, Option<i64>)>()
            .map_err(|e| format!("{what}: {e}"))?
            .ok_or_else(|| format!("{what}: no row (is the plug-in installed?)"))?;
        let n = |v: Option<i64>| v.unwrap_or(0).max(0) as u64;
        Ok(WarmupCounters {
            cold_left_out: n(row.0),
            sent: n(row.1),
            skipped: n(row.2),
            failed: n(row.3),
        })
    }

    /// Sets one of the plug-in's settings on node `node` (`policy`, `read_cl`, ...).
    pub async fn set(&self, node: u32, name: &str, value: &str) -> Result<(), String> {
        let st = self.on_node(node, "UPDATE replica_lb_hwlb.settings SET value = ? WHERE name = ?")?;
        self.session
            .query_unpaged(st, (value, name))
            .await
            .map_err(|e| format!("node {node}: cannot set the plug-in's {name} to {value}: {e}"))?;
        Ok(())
    }

    /// Switches every node's plug-in to the coordinator policy `name` (its run-time switch)
    /// and reads the setting back, so a node that did not take it is an error naming it.
    pub async fn set_policy(&self, name: &str) -> Result<(), String> {
        for node in 0..self.nodes.len() as u32 {
            self.set(node, "policy", name).await?;
            let now = self.setting(node, "policy").await?;
            if now != name {
                return Err(format!("node {node}: the plug-in runs {now} after the switch to {name}"));
            }
        }
        Ok(())
    }

    /// One of the plug-in's settings on node `node`, as its settings table shows it.
    pub async fn setting(&self, node: u32, name: &str) -> Result<String, String> {
        let st = self.on_node(node, "SELECT value FROM replica_lb_hwlb.settings WHERE name = ?")?;
        let fail = |e: &dyn std::fmt::Display| format!("node {node}: cannot read the plug-in's {name}: {e}");
        let row = self
            .session
            .query_unpaged(st, (name,))
            .await
            .map_err(|e| fail(&e))?
            .into_rows_result()
            .map_err(|e| fail(&e))?
            .maybe_first_row::<(Option<String>,)>()
            .map_err(|e| fail(&e))?;
        row.and_then(|(v,)| v)
            .ok_or_else(|| format!("node {node}: the plug-in has no setting {name} (an older plug-in?)"))
    }
}
