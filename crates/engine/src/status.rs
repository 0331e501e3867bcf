//! `cluster status` of either engine: a table, or JSON.

use crate::error::{EngineError, EngineResult};
use replica_lb_cassandra::{plugin, plugin::PluginState};
use std::fmt::Write as _;
use std::path::Path;

fn json<T: serde::Serialize>(value: &T) -> EngineResult {
    serde_json::to_string_pretty(value).map_err(|e| EngineError::failed(e.to_string()))
}

/// The node cluster in `dir`.
pub(super) fn node(dir: &Path, as_json: bool) -> EngineResult {
    let nodes = replica_lb_launcher::status(dir)?;
    if as_json {
        return json(&nodes);
    }
    let mut t = format!(
        "{:<6}{:<9}{:<14}{:<22}{:>10}{:>10}{:>12}  policy",
        "node", "pid", "state", "grpc", "live seen", "hit rate", "reads"
    );
    let dash = || "-".to_string();
    for n in nodes {
        let _ = write!(
            t,
            "\n{:<6}{:<9}{:<14}{:<22}{:>10}{:>10}{:>12}  {}",
            n.id,
            n.pid,
            n.state,
            n.grpc.to_string(),
            n.live_seen.zip(n.members).map(|(l, m)| format!("{l}/{m}")).unwrap_or_else(dash),
            n.hit_rate.map(|h| format!("{h:.3}")).unwrap_or_else(dash),
            n.reads.map(|r| r.to_string()).unwrap_or_else(dash),
            n.policy.unwrap_or_else(dash)
        );
    }
    Ok(t)
}

/// The Cassandra cluster in `dir`, with the plug-in's view where it runs (nodes that do not
/// answer show none).
pub(super) fn cassandra(dir: &Path, as_json: bool) -> EngineResult {
    let nodes = replica_lb_cassandra::status(dir).map_err(EngineError::failed)?;
    let cluster = replica_lb_cassandra::CassandraCluster::load(dir).map_err(EngineError::failed)?;
    let with_plugin = cluster.coordinator_policy.is_some();
    let plugin: Vec<Option<PluginState>> = if with_plugin && nodes.iter().any(|n| n.cql) {
        plugin::states(&cluster).map_err(EngineError::failed)?
    } else {
        vec![None; nodes.len()]
    };
    if as_json {
        #[derive(serde::Serialize)]
        struct Row<'a> {
            #[serde(flatten)]
            node: &'a replica_lb_cassandra::NodeState,
            #[serde(skip_serializing_if = "Option::is_none")]
            plugin: Option<&'a PluginState>,
        }
        let rows: Vec<Row> = nodes
            .iter()
            .zip(&plugin)
            .map(|(node, p)| Row { node, plugin: p.as_ref() })
            .collect();
        return json(&rows);
    }
    let mut t = format!(
        "{:<6}{:<9}{:<10}{:<6}{:<18}{:>9}",
        "node", "pid", "state", "cql", "address", "delay ms"
    );
    if with_plugin {
        let _ = write!(t, "  {:<15}{:>9}{:>13}", "policy", "hit rate", "coordinated");
    }
    for (n, p) in nodes.iter().zip(&plugin) {
        let _ = write!(
            t,
            "\n{:<6}{:<9}{:<10}{:<6}{:<18}{:>9}",
            n.id,
            n.pid,
            n.state,
            if n.cql { "yes" } else { "no" },
            n.address.to_string(),
            n.delay_ms
        );
        match p {
            Some(p) => {
                let _ = write!(t, "  {:<15}{:>9.3}{:>13}", p.policy, p.hit_rate, p.reads_coordinated);
            }
            None if with_plugin => {
                let _ = write!(t, "  {:<15}{:>9}{:>13}", "-", "-", "-");
            }
            None => {}
        }
    }
    Ok(t)
}
