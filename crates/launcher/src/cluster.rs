//! A launched cluster as it is on disk and in the process table: `DIR/cluster.json` (which
//! node listens where, under which pid, with which config and log), each node's process state
//! and what `cluster status` reports, and what can be sent to a running node: signals (a
//! SIGSTOP/SIGCONT pause among them) and fault settings over gRPC (a reply delay, a slower
//! disk).

use replica_lb_node::client;
use replica_lb_node::error::NodeError;
use replica_lb_node::proto::{FaultsRequest, FaultsResponse};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The file listing a running cluster.
pub const CLUSTER_FILE: &str = "cluster.json";

/// One node of a launched cluster.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NodeEntry {
    /// Node id.
    pub id: u32,
    /// gRPC address.
    pub grpc: SocketAddr,
    /// Metrics address (`http://ADDR/metrics`).
    pub metrics: SocketAddr,
    /// Process id.
    pub pid: u32,
    /// Data directory.
    pub data_dir: PathBuf,
    /// Gossip address.
    #[serde(default)]
    pub gossip: Option<SocketAddr>,
    /// The node's config file.
    #[serde(default)]
    pub config: Option<PathBuf>,
    /// The node's log file.
    #[serde(default)]
    pub log: Option<PathBuf>,
}

/// `DIR/cluster.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ClusterFile {
    /// Every node.
    pub nodes: Vec<NodeEntry>,
}

impl ClusterFile {
    /// Reads `dir/cluster.json`.
    pub fn load(dir: &Path) -> Result<ClusterFile, NodeError> {
        let path = dir.join(CLUSTER_FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            NodeError::Failed(format!(
                "cannot read {}: {e}; is a cluster up in {}?",
                path.display(),
                dir.display()
            ))
        })?;
        serde_json::from_str(&text).map_err(|e| NodeError::Failed(format!("{} is not a cluster file: {e}", path.display())))
    }

    /// Writes `dir/cluster.json` (atomically: temp file then rename).
    pub fn save(&self, dir: &Path) -> Result<(), NodeError> {
        let path = dir.join(CLUSTER_FILE);
        let tmp = dir.join(format!("{CLUSTER_FILE}.tmp"));
        let text = serde_json::to_string_pretty(self).map_err(|e| NodeError::Failed(e.to_string()))?;
        std::fs::write(&tmp, text + "\n")
            .and_then(|_| std::fs::rename(&tmp, &path))
            .map_err(|e| NodeError::Failed(format!("cannot write {}: {e}", path.display())))
    }

    /// gRPC addresses of every node.
    pub fn grpc_addrs(&self) -> Vec<SocketAddr> {
        self.nodes.iter().map(|n| n.grpc).collect()
    }

    /// The entry of node `id`.
    pub fn node(&self, id: u32) -> Result<&NodeEntry, NodeError> {
        self.nodes.iter().find(|n| n.id == id).ok_or_else(|| {
            NodeError::Config(format!(
                "node {id} is not in the cluster; its nodes are: {}",
                self.nodes.iter().map(|n| n.id.to_string()).collect::<Vec<_>>().join(", ")
            ))
        })
    }
}

/// The last non-empty line of the node's log, for error messages.
pub(super) fn log_tail(entry: &NodeEntry) -> String {
    entry
        .log
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|t| t.lines().rev().find(|l| !l.trim().is_empty()).map(str::to_string))
        .unwrap_or_else(|| "(no log)".into())
}

/// Runs `f` to completion on a small runtime of its own, in a thread of its own (so the
/// launcher also works when called from inside another runtime, as tests do).
pub fn block_on<F>(f: F) -> Result<F::Output, NodeError>
where
    F: std::future::Future + Send,
    F::Output: Send,
{
    std::thread::scope(|s| {
        s.spawn(|| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| NodeError::Failed(format!("cannot start the async runtime: {e}")))?;
            Ok(rt.block_on(f))
        })
        .join()
        .unwrap_or_else(|_| Err(NodeError::Failed("the launcher's helper thread failed".into())))
    })
}

/// The state letter of process `pid` from /proc (R, S, D, T = stopped, Z = zombie), or None
/// when there is no such process.
pub fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.trim_start().chars().next()
}

/// Whether `pid` is the node started with config `config` (guards against recycled pids).
pub(super) fn is_our_node(pid: u32, config: Option<&PathBuf>) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let text = String::from_utf8_lossy(&cmdline);
    match config {
        Some(c) => text.contains(&*c.to_string_lossy()),
        None => text.contains("--config"),
    }
}

/// A signal the launcher may send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// SIGTERM: stop cleanly.
    Term,
    /// SIGKILL: die at once (kill -9).
    Kill,
    /// SIGSTOP: pause.
    Stop,
    /// SIGCONT: resume.
    Cont,
}

impl Signal {
    /// Parses TERM, KILL, STOP or CONT (any case, optional SIG prefix).
    pub fn parse(text: &str) -> Result<Signal, NodeError> {
        let t = text.to_ascii_uppercase();
        match t.trim_start_matches("SIG") {
            "TERM" => Ok(Signal::Term),
            "KILL" | "9" => Ok(Signal::Kill),
            "STOP" => Ok(Signal::Stop),
            "CONT" => Ok(Signal::Cont),
            _ => Err(NodeError::Config(format!("signal '{text}' is not one of: term, kill, stop, cont"))),
        }
    }

    fn raw(self) -> libc::c_int {
        match self {
            Signal::Term => libc::SIGTERM,
            Signal::Kill => libc::SIGKILL,
            Signal::Stop => libc::SIGSTOP,
            Signal::Cont => libc::SIGCONT,
        }
    }
}

/// Sends `signal` to process `pid`.
pub fn send_signal(pid: u32, signal: Signal) -> Result<(), NodeError> {
    let Ok(raw_pid) = libc::pid_t::try_from(pid) else {
        return Err(NodeError::Failed(format!("pid {pid} is out of range")));
    };
    // SAFETY: kill(2) has no memory effects; a bad pid only yields an error code.
    let rc = unsafe { libc::kill(raw_pid, signal.raw()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(NodeError::Failed(format!(
            "cannot signal pid {pid}: {}",
            std::io::Error::last_os_error()
        )))
    }
}

/// Sends `signal` to node `id` of the cluster in `dir`.
pub fn signal_node(dir: &Path, id: u32, signal: Signal) -> Result<(), NodeError> {
    let file = ClusterFile::load(dir)?;
    let e = file.node(id)?;
    if !is_our_node(e.pid, e.config.as_ref()) {
        return Err(NodeError::Failed(format!("node {id} (pid {}) is not running", e.pid)));
    }
    send_signal(e.pid, signal)?;
    if signal == Signal::Stop {
        // The kernel stops the process asynchronously: a loaded machine can let a thread finish
        // one more reply after kill(2) returns. Return once it is stopped (bounded).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while process_state(e.pid).is_some_and(|s| s != 'T' && s != 't' && s != 'Z') && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }
    Ok(())
}

/// Whether process `pid` runs (exists and is not a zombie).
pub(super) fn alive(pid: u32) -> bool {
    process_state(pid).is_some_and(|s| s != 'Z')
}

/// One node's state as `cluster status` reports it.
#[derive(Clone, Debug, Serialize)]
pub struct NodeStatus {
    /// Node id.
    pub id: u32,
    /// Process id.
    pub pid: u32,
    /// `running`, `paused`, `exited` or `unresponsive`.
    pub state: String,
    /// Live members this node sees, if it answered.
    pub live_seen: Option<usize>,
    /// Members it knows.
    pub members: Option<usize>,
    /// Its hit rate.
    pub hit_rate: Option<f64>,
    /// Reads served by its storage layer.
    pub reads: Option<u64>,
    /// Its cache's hits since it started.
    pub cache_hits: Option<u64>,
    /// Its cache's misses since it started.
    pub cache_misses: Option<u64>,
    /// Its policy.
    pub policy: Option<String>,
    /// gRPC address.
    pub grpc: SocketAddr,
}

/// Every node's state.
pub fn status(dir: &Path) -> Result<Vec<NodeStatus>, NodeError> {
    let file = ClusterFile::load(dir)?;
    Ok(file
        .nodes
        .iter()
        .map(|e| {
            let proc_state = process_state(e.pid).filter(|_| is_our_node(e.pid, e.config.as_ref()));
            let stats = match proc_state {
                Some('T') | Some('t') | Some('Z') | None => None,
                _ => block_on(client::stats(e.grpc, Duration::from_millis(1000)))
                    .ok()
                    .and_then(|r| r.ok()),
            };
            let state = match (proc_state, &stats) {
                (None, _) | (Some('Z'), _) => "exited",
                (Some('T') | Some('t'), _) => "paused",
                (_, Some(_)) => "running",
                (_, None) => "unresponsive",
            };
            NodeStatus {
                id: e.id,
                pid: e.pid,
                state: state.into(),
                live_seen: stats.as_ref().map(|s| s.members.iter().filter(|m| m.live).count()),
                members: stats.as_ref().map(|s| s.members.len()),
                hit_rate: stats.as_ref().map(|s| s.hit_rate),
                reads: stats.as_ref().map(|s| s.reads),
                cache_hits: stats.as_ref().map(|s| s.cache_hits),
                cache_misses: stats.as_ref().map(|s| s.cache_misses),
                policy: stats.as_ref().map(|s| s.policy.clone()),
                grpc: e.grpc,
            }
        })
        .collect())
}

/// The fault `cluster pause --for-s S`: SIGSTOP node `id`, wait `pause`, SIGCONT it (a real
/// "GC pause": the process keeps its sockets and state but answers nothing meanwhile).
pub fn pause_node(dir: &Path, id: u32, pause: Duration) -> Result<(), NodeError> {
    signal_node(dir, id, Signal::Stop)?;
    std::thread::sleep(pause);
    // If the node died meanwhile there is nothing to resume; say so.
    signal_node(dir, id, Signal::Cont)
}

/// Sends `request` (`Internode/SetFaults`) to node `id` of the cluster in `dir`.
pub fn set_faults(dir: &Path, id: u32, request: FaultsRequest) -> Result<FaultsResponse, NodeError> {
    let file = ClusterFile::load(dir)?;
    let e = file.node(id)?;
    block_on(client::set_faults(e.grpc, request, Duration::from_secs(2)))?.map_err(NodeError::Failed)
}
