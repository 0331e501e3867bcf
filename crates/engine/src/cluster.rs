//! A running cluster of either engine, found once from its directory, and every `cluster`
//! operation on it.

use crate::client::ClientTarget;
use crate::error::{EngineError, EngineResult};
use crate::status;
use replica_lb_cassandra::{plugin, CassandraCluster, Engine};
use replica_lb_experiment::gate::GateError;
use replica_lb_experiment::rolling::{self, RollingPlan};
use replica_lb_launcher::{NodeCommand, Signal};
use replica_lb_metrics::rolling::RollingRestart;
use replica_lb_node::proto::FaultsRequest;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How `cluster slow-disk` changes a node's disk.
#[derive(Clone, Copy, Debug, Default)]
pub struct SlowDisk {
    /// The node engine: multiply the emulated disk's service times by this.
    pub factor: Option<f64>,
    /// Switch it on.
    pub on: bool,
    /// Switch it off.
    pub off: bool,
}

/// A running cluster, its engine read once from its directory.
#[derive(Clone, Debug)]
pub enum Cluster {
    /// Node processes (or a directory with no cluster file yet).
    Node(PathBuf),
    /// Apache Cassandra.
    Cassandra(PathBuf),
}

impl Cluster {
    /// The cluster in `dir`, as its cluster file says (an error when there is none).
    pub fn open(dir: &Path) -> Result<Cluster, EngineError> {
        Ok(match replica_lb_cassandra::engine_of(dir).map_err(EngineError::failed)? {
            Engine::Node => Cluster::Node(dir.to_path_buf()),
            Engine::Cassandra => Cluster::Cassandra(dir.to_path_buf()),
        })
    }

    /// [`Cluster::open`], but a directory without a cluster file is taken as a node cluster
    /// (whose operations then report what is missing, as `cluster` commands do).
    pub fn at(dir: &Path) -> Result<Cluster, EngineError> {
        match dir.join(replica_lb_launcher::CLUSTER_FILE).exists() {
            true => Cluster::open(dir),
            false => Ok(Cluster::Node(dir.to_path_buf())),
        }
    }

    /// Its engine.
    pub fn engine(&self) -> Engine {
        match self {
            Cluster::Node(_) => Engine::Node,
            Cluster::Cassandra(_) => Engine::Cassandra,
        }
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        match self {
            Cluster::Node(d) | Cluster::Cassandra(d) => d,
        }
    }

    /// Where `load` and `bench` send requests.
    pub fn client_target(&self) -> Result<ClientTarget, EngineError> {
        match self {
            Cluster::Node(d) => Ok(ClientTarget::Node(d.clone())),
            Cluster::Cassandra(d) => Ok(ClientTarget::Cql(
                CassandraCluster::load(d).map_err(EngineError::failed)?.contact_points(),
            )),
        }
    }

    /// Each node's state as a table, or as JSON.
    pub fn status(&self, json: bool) -> EngineResult {
        match self {
            Cluster::Node(d) => status::node(d, json),
            Cluster::Cassandra(d) => status::cassandra(d, json),
        }
    }

    /// Stops every node.
    pub fn down(&self) -> EngineResult {
        match self {
            Cluster::Node(d) => {
                let n = replica_lb_launcher::down(d, Duration::from_secs(5))?;
                Ok(format!("stopped {n} node(s) of {}", d.display()))
            }
            Cluster::Cassandra(d) => {
                let n = replica_lb_cassandra::down(d, Duration::from_secs(20)).map_err(EngineError::failed)?;
                Ok(format!("stopped {n} Cassandra node(s) of {}", d.display()))
            }
        }
    }

    /// Kills node `id`, keeps it down `down_s` seconds, starts it again (same data, empty
    /// caches) and waits up to `up_timeout` until it is back.
    pub fn restart(&self, id: u32, down_s: f64, up_timeout: Duration) -> EngineResult {
        let down = replica_lb_launcher::check_fault_s("--down-s", down_s)?;
        match self {
            Cluster::Node(d) => {
                let cmd = NodeCommand::current_exe_node()?;
                let child = replica_lb_launcher::restart_node_after(d, id, down, &cmd, up_timeout)?;
                Ok(format!(
                    "node {id} restarted after {down_s:.1} s down (same data, empty cache), pid {}",
                    child.id()
                ))
            }
            Cluster::Cassandra(d) => {
                let timeout = up_timeout.max(Duration::from_secs(60));
                let pid = replica_lb_cassandra::restart(d, id, down, timeout).map_err(EngineError::failed)?;
                let caches = match replica_lb_cassandra::CassandraCluster::load(d).map(|c| c.saved_caches.saves()) {
                    Ok(true) => "its row cache loaded from the last save",
                    _ => "empty caches",
                };
                Ok(format!(
                    "node {id} restarted after {down_s:.1} s down (same data, {caches}), pid {pid}"
                ))
            }
        }
    }

    /// Restarts every node in id order, cold, at `plan`'s pace; the record is also written to
    /// `DIR/rolling-restart.json` after each node.
    pub fn rolling_restart(
        &self,
        plan: RollingPlan,
        up_timeout: Duration,
        progress: &mut dyn FnMut(&str),
    ) -> Result<RollingRestart, EngineError> {
        replica_lb_launcher::check_fault_s("--down-s", plan.down_s)?;
        let ids = rolling::node_ids(self.dir())?;
        let mut restart = |id: u32| {
            self.restart(id, plan.down_s, up_timeout).map(|_| ()).map_err(|e| GateError {
                usage: e.usage,
                message: e.message,
            })
        };
        let mut save = |r: &RollingRestart| rolling::write_record(self.dir(), r);
        let hooks = rolling::Hooks {
            restart: &mut restart,
            on_node: &mut save,
            stop: &|| false,
        };
        Ok(rolling::rolling_restart(self.dir(), &ids, plan, Instant::now(), hooks, progress)?)
    }

    /// Stops node `id` for `for_s` seconds and resumes it.
    pub fn pause(&self, id: u32, for_s: f64) -> EngineResult {
        let pause = replica_lb_launcher::check_fault_s("--for-s", for_s)?;
        match self {
            Cluster::Node(d) => replica_lb_launcher::pause_node(d, id, pause)?,
            Cluster::Cassandra(d) => replica_lb_cassandra::pause(d, id, pause).map_err(EngineError::failed)?,
        }
        Ok(format!("node {id} paused for {for_s:.1} s and resumed"))
    }

    /// Delays what node `id` sends by `ms` milliseconds (0 clears).
    pub fn delay(&self, id: u32, ms: u32) -> EngineResult {
        let ms = match self {
            Cluster::Node(d) => {
                let req = FaultsRequest {
                    reply_delay_ms: Some(ms),
                    ..Default::default()
                };
                replica_lb_launcher::set_faults(d, id, req)?.reply_delay_ms
            }
            Cluster::Cassandra(d) => {
                replica_lb_cassandra::set_delay(d, id, ms).map_err(EngineError::usage)?;
                ms
            }
        };
        Ok(match (ms, self) {
            (0, _) => format!("node {id}: added delay cleared"),
            (ms, Cluster::Node(_)) => format!("node {id}: every message it sends delayed by {ms} ms"),
            (ms, Cluster::Cassandra(_)) => format!("node {id}: every answer to its clients delayed by {ms} ms"),
        })
    }

    /// Slows node `id`'s disk, or switches its slowing on or off.
    pub fn slow_disk(&self, id: u32, s: SlowDisk) -> EngineResult {
        match self {
            Cluster::Node(d) => {
                if s.factor.is_none() && !s.on && !s.off {
                    return Err(EngineError::usage("cluster slow-disk: give --factor F, --on or --off"));
                }
                if let Some(f) = s.factor {
                    let (lo, hi) = replica_lb_node::slow_disk::FACTOR_RANGE;
                    if !(f.is_finite() && (lo..=hi).contains(&f)) {
                        return Err(EngineError::usage(format!("--factor {f} must be in [{lo}, {hi}]")));
                    }
                }
                let req = FaultsRequest {
                    slow_disk_factor: s.factor,
                    slow_disk: Some(!s.off),
                    ..Default::default()
                };
                let r = replica_lb_launcher::set_faults(d, id, req)?;
                Ok(match r.slow_disk {
                    true => format!("node {id}: emulated disk on, service times x{}", r.slow_disk_factor),
                    false => format!("node {id}: emulated disk off (real reads only)"),
                })
            }
            Cluster::Cassandra(d) => {
                if s.factor.is_some() || s.on == s.off {
                    return Err(EngineError::usage(
                        "cluster slow-disk on Cassandra: give --on (read throttle on, page cache capped on what the node uses now) or --off; --factor is the node engine's",
                    ));
                }
                replica_lb_cassandra::set_disk_limits(d, Some(id), s.on).map_err(EngineError::usage)?;
                Ok(match s.on {
                    true => format!("node {id}: reads from its disk throttled, page cache capped"),
                    false => format!("node {id}: disk limits lifted"),
                })
            }
        }
    }

    /// Sends signal `signal` (kill, term, stop, cont) to node `id`.
    pub fn signal(&self, id: u32, sig: Signal) -> EngineResult {
        match self {
            Cluster::Node(d) => replica_lb_launcher::signal_node(d, id, sig)?,
            Cluster::Cassandra(d) => {
                let c = CassandraCluster::load(d).map_err(EngineError::failed)?;
                let pid = c.node(id).map_err(EngineError::usage)?.pid;
                replica_lb_launcher::send_signal(pid, sig).map_err(|e| EngineError::failed(e.to_string()))?;
            }
        }
        Ok(format!("sent {sig:?} to node {id}"))
    }

    /// Switches every coordinator to `policy` at run time (Cassandra with the plug-in).
    pub fn switch(&self, policy: plugin::CoordinatorPolicy) -> EngineResult {
        match self {
            Cluster::Node(_) => Err(EngineError::usage(
                "cluster switch is for a Cassandra cluster with the replica-lb plug-in; a node cluster's coordinator policy is set by cluster up --policy",
            )),
            Cluster::Cassandra(d) => {
                plugin::switch(d, policy).map_err(EngineError::failed)?;
                Ok(format!("every coordinator of {} now runs {}", d.display(), policy.as_str()))
            }
        }
    }
}
