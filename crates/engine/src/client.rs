//! `load` and `bench` against a [`ClientTarget`] of either engine: gRPC to the node cluster
//! with the load generator's own client policy, or CQL through the scylla Rust driver or the
//! Apache Cassandra Java driver ([`replica_lb_loadgen::java`]).

use crate::error::EngineError;
use replica_lb_launcher::ClusterFile;
use replica_lb_loadgen::client_policy::TOKEN_AWARE_RANDOM;
use replica_lb_loadgen::cql::{self, CqlTarget};
use replica_lb_loadgen::java::{self, Driver};
use replica_lb_loadgen::report::{BenchReport, SecondReport};
use replica_lb_loadgen::{BenchOptions, ClientChoice, ClientPolicy, ClientRuntime, LoadOptions, LoadOutcome, MultiOptions};
use replica_lb_node::client::ClusterClient;
use replica_lb_policy::ParamTable;
use replica_lb_workload::run_item::PolicyName;
use std::net::SocketAddr;
use std::path::Path;
use std::path::PathBuf;

/// Where a client sends requests: a node cluster over gRPC, or a CQL cluster through the
/// driver.
#[derive(Clone, Debug)]
pub enum ClientTarget {
    /// The node cluster in this directory.
    Node(PathBuf),
    /// These contact points.
    Cql(Vec<SocketAddr>),
}

/// What `bench` measured, as the user sees it.
#[derive(Clone, Debug)]
pub struct BenchRun {
    /// The report both engines share.
    pub report: BenchReport,
    /// Through the driver: how many requests each node coordinated, `ADDRESS=N`.
    pub coordinators: Option<Vec<String>>,
    /// The whole report as pretty JSON (the driver's adds what it saw).
    pub json: String,
}

fn json<T: serde::Serialize>(value: &T) -> Result<String, EngineError> {
    serde_json::to_string_pretty(value).map_err(|e| EngineError::failed(e.to_string()))
}

fn connect(dir: &Path, threads: usize) -> Result<(ClientRuntime, ClusterClient), EngineError> {
    let file = ClusterFile::load(dir).map_err(|e| EngineError::failed(e.to_string()))?;
    let rt = replica_lb_loadgen::client_runtime(threads).map_err(EngineError::failed)?;
    let client = rt
        .block_on(ClusterClient::connect(&file.grpc_addrs()))
        .map_err(EngineError::failed)?;
    Ok((rt, client))
}

/// The node cluster refusing a driver's own policy.
fn drivers_own(own: &ClientChoice) -> EngineError {
    EngineError::usage(format!(
        "--client-policy {} is a Cassandra driver's own policy: bench a Cassandra cluster (--cluster on one from cluster up --engine cassandra, or --contact-points)",
        own.name()
    ))
}

impl ClientTarget {
    /// The client policy `name` with `params` through `driver` (`None`: the target's default,
    /// token-aware `random` on a node cluster, the driver's own `DefaultPolicy` through a
    /// driver; [`java::bench_choice`] on a Cassandra cluster), checked for this target.
    pub fn client_choice(&self, driver: Option<Driver>, name: Option<&str>, params: ParamTable) -> Result<ClientChoice, EngineError> {
        match self {
            ClientTarget::Node(_) if driver == Some(Driver::Java) => Err(EngineError::usage(
                "--driver java runs the Java driver against a Cassandra cluster (--cluster on one from cluster up --engine cassandra, or --contact-points)",
            )),
            ClientTarget::Node(_) => {
                let name = PolicyName::parse(name.unwrap_or(TOKEN_AWARE_RANDOM)).map_err(EngineError::usage)?;
                let choice = ClientChoice::new(name, params).map_err(EngineError::usage)?;
                match choice {
                    ClientChoice::Policy(_) => Ok(choice),
                    own => Err(drivers_own(&own)),
                }
            }
            ClientTarget::Cql(_) => java::bench_choice(driver, name, params).map_err(EngineError::usage),
        }
    }

    /// Writes keys `0..opts.keys` with `threads` client threads (a keyspace of
    /// `replication_factor` replicas where the driver creates one).
    pub fn load(&self, opts: &LoadOptions, threads: usize, replication_factor: u32) -> Result<LoadOutcome, EngineError> {
        match self {
            ClientTarget::Node(dir) => {
                let (rt, client) = connect(dir, threads)?;
                Ok(rt.block_on(replica_lb_loadgen::load(&client, opts)))
            }
            ClientTarget::Cql(contact_points) => {
                let rt = replica_lb_loadgen::client_runtime(threads).map_err(EngineError::failed)?;
                let t = CqlTarget {
                    contact_points: contact_points.clone(),
                    policy: ClientChoice::DriverDefault,
                    seed: 1,
                    replication_factor,
                    hit_rates: None,
                };
                rt.block_on(cql::load(&t, opts)).map_err(EngineError::failed)
            }
        }
    }

    /// Drives the open-loop load `opts` (multi-key requests with `multi`) with `choice`
    /// choosing coordinators, on `threads` client threads; `on_second` hears every second.
    pub fn bench(
        &self,
        choice: &ClientChoice,
        opts: &BenchOptions,
        multi: Option<&MultiOptions>,
        threads: usize,
        on_second: &mut dyn FnMut(&SecondReport),
    ) -> Result<BenchRun, EngineError> {
        match (self, choice) {
            (ClientTarget::Node(dir), ClientChoice::Policy(p)) => {
                let mut policy = ClientPolicy::new(p, opts.seed).map_err(EngineError::usage)?;
                let (rt, client) = connect(dir, threads)?;
                let report = match multi {
                    None => replica_lb_loadgen::bench(rt.handle(), &client, &mut policy, opts, on_second),
                    Some(m) => replica_lb_loadgen::bench_multi(rt.handle(), &client, &mut policy, opts, m, on_second),
                }
                .map_err(EngineError::usage)?;
                Ok(BenchRun {
                    json: json(&report)?,
                    report,
                    coordinators: None,
                })
            }
            (ClientTarget::Node(_), own) => Err(drivers_own(own)),
            (ClientTarget::Cql(contact_points), _) => {
                let rt = replica_lb_loadgen::client_runtime(threads).map_err(EngineError::failed)?;
                let t = CqlTarget {
                    contact_points: contact_points.clone(),
                    policy: choice.clone(),
                    seed: opts.seed,
                    replication_factor: 3,
                    hit_rates: None,
                };
                let report = match multi {
                    None => cql::bench(rt.handle(), &t, opts, on_second),
                    Some(m) => cql::bench_multi(rt.handle(), &t, opts, m, on_second),
                }
                .map_err(EngineError::failed)?;
                Ok(BenchRun {
                    json: json(&report)?,
                    coordinators: Some(report.coordinators.iter().map(|(a, n)| format!("{a}={n}")).collect()),
                    report: report.report,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_target_has_its_default_client_and_refuses_the_others() {
        let node = ClientTarget::Node("unused".into());
        let c = node.client_choice(None, None, ParamTable::new()).unwrap();
        assert_eq!(c.name(), "random");
        let e = node
            .client_choice(None, Some(replica_lb_loadgen::cql::DRIVER_DEFAULT), ParamTable::new())
            .unwrap_err();
        assert!(
            e.usage && e.message.contains("driver-default is a Cassandra driver's own policy"),
            "{e:?}"
        );
        let e = node.client_choice(None, Some("hwlb"), ParamTable::new()).unwrap_err();
        assert!(e.usage && e.message.contains("'hwlb'"), "{e:?}");
        let cql = ClientTarget::Cql(Vec::new());
        assert_eq!(
            cql.client_choice(None, None, ParamTable::new()).unwrap(),
            ClientChoice::DriverDefault
        );
        assert_eq!(cql.client_choice(None, Some("c3"), ParamTable::new()).unwrap().name(), "c3");
    }
}
