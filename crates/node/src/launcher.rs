//! A local cluster on loopback: start N nodes as separate processes, wait until every node
//! sees all the others, record them in `DIR/cluster.json`; report their state; stop them by
//! pid; restart or signal one of them; inject faults (a restart after some time down, a
//! SIGSTOP/SIGCONT pause, a reply delay, a slower disk).
//!
//! Layout of DIR: `cluster.json`, and per node `node-I/node.toml`, `node-I/node.log`,
//! `node-I/data/`. Ports are free ephemeral ports on 127.0.0.1 picked at start.

use crate::client;
use crate::config::NodeConfig;
use crate::error::NodeError;
use serde::{Deserialize, Serialize};
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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

/// How to start a node: `program args... --config FILE`.
#[derive(Clone, Debug)]
pub struct NodeCommand {
    /// The executable.
    pub program: PathBuf,
    /// Arguments before `--config FILE` (e.g. `node` for the replica-lb binary).
    pub args: Vec<String>,
}

impl NodeCommand {
    /// `replica-lb node`, using the running binary.
    pub fn current_exe_node() -> Result<NodeCommand, NodeError> {
        let program = std::env::current_exe().map_err(|e| NodeError::Failed(format!("cannot find the replica-lb binary: {e}")))?;
        Ok(NodeCommand {
            program,
            args: vec!["node".into()],
        })
    }

    /// Starts a node from `config`, logging to `log` (appended), in its own process group (so
    /// a Ctrl-C at the launcher does not reach it).
    pub fn spawn(&self, config: &Path, log: &Path) -> Result<Child, NodeError> {
        use std::os::unix::process::CommandExt;
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|e| NodeError::Failed(format!("cannot open log {}: {e}", log.display())))?;
        let err = out.try_clone().map_err(|e| NodeError::Failed(e.to_string()))?;
        Command::new(&self.program)
            .args(&self.args)
            .arg("--config")
            .arg(config)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0)
            .spawn()
            .map_err(|e| NodeError::Failed(format!("cannot start {}: {e}", self.program.display())))
    }
}

/// What `up` needs.
#[derive(Clone, Debug)]
pub struct UpOptions {
    /// How many nodes (1..=64).
    pub nodes: u32,
    /// The cluster directory (created).
    pub dir: PathBuf,
    /// Settings shared by every node (addresses, id, data dir and seeds are filled in).
    pub base: NodeConfig,
    /// How to start a node.
    pub command: NodeCommand,
    /// How long to wait for every node to see all the others.
    pub wait_timeout: Duration,
    /// How many zones the nodes are spread over: node i is in zone i mod `zones` (1 = one
    /// zone, and the base config's `zone` is kept).
    pub zones: u32,
}

/// A launched cluster: the file, and the child processes when this process started them.
pub struct Launched {
    /// What was written to cluster.json.
    pub file: ClusterFile,
    /// The node processes (for callers that reap or kill them; dropping does not stop them).
    pub children: Vec<Child>,
}

/// Picks `n` distinct free loopback ports usable for both TCP and UDP.
fn free_ports(n: usize) -> Result<Vec<u16>, NodeError> {
    let mut held = Vec::new();
    let mut ports = Vec::new();
    for _ in 0..n * 20 {
        if ports.len() == n {
            break;
        }
        let tcp = TcpListener::bind("127.0.0.1:0").map_err(|e| NodeError::Failed(format!("cannot find a free port on 127.0.0.1: {e}")))?;
        let port = tcp.local_addr().map_err(|e| NodeError::Failed(e.to_string()))?.port();
        if let Ok(udp) = UdpSocket::bind(("127.0.0.1", port)) {
            ports.push(port);
            held.push((tcp, udp));
        }
    }
    if ports.len() < n {
        return Err(NodeError::Failed(format!("could not find {n} free ports on 127.0.0.1")));
    }
    Ok(ports)
}

/// Starts the cluster and waits until every node sees all the others. On failure every node
/// started is stopped again.
pub fn up(opts: &UpOptions) -> Result<Launched, NodeError> {
    if !(1..=64).contains(&opts.nodes) {
        return Err(NodeError::Config(format!(
            "--nodes {} is not allowed; it must be in [1, 64]",
            opts.nodes
        )));
    }
    if opts.dir.join(CLUSTER_FILE).exists() {
        if let Ok(old) = ClusterFile::load(&opts.dir) {
            if old.nodes.iter().any(|n| process_state(n.pid).is_some_and(|s| s != 'Z')) {
                return Err(NodeError::Failed(format!(
                    "a cluster is already running in {}; run `replica-lb cluster down --dir {}` first",
                    opts.dir.display(),
                    opts.dir.display()
                )));
            }
        }
    }
    std::fs::create_dir_all(&opts.dir).map_err(|e| NodeError::Failed(format!("cannot create {}: {e}", opts.dir.display())))?;
    let dir = opts
        .dir
        .canonicalize()
        .map_err(|e| NodeError::Failed(format!("{}: {e}", opts.dir.display())))?;
    if !(1..=opts.nodes.max(1)).contains(&opts.zones) {
        return Err(NodeError::Config(format!(
            "--zones {} is not allowed; it must be in [1, {}] (at most one zone per node)",
            opts.zones, opts.nodes
        )));
    }
    let n = opts.nodes as usize;
    let ports = free_ports(3 * n)?;
    let local = |p: u16| SocketAddr::from(([127, 0, 0, 1], p));
    let gossip: Vec<SocketAddr> = (0..n).map(|i| local(ports[3 * i + 2])).collect();
    let mut entries = Vec::new();
    // Killed on any early return or panic; handed to the caller on success.
    let mut children = ChildGuard(Vec::new());
    for i in 0..n {
        let node_dir = dir.join(format!("node-{i}"));
        std::fs::create_dir_all(&node_dir).map_err(|e| NodeError::Failed(format!("cannot create {}: {e}", node_dir.display())))?;
        let mut cfg = opts.base.clone();
        cfg.id = i as u32;
        if opts.zones > 1 {
            cfg.zone = i as u32 % opts.zones;
        }
        cfg.grpc_addr = local(ports[3 * i]);
        cfg.metrics_addr = local(ports[3 * i + 1]);
        cfg.gossip_addr = gossip[i];
        cfg.seeds = gossip
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, a)| a.to_string())
            .collect();
        cfg.data_dir = node_dir.join("data");
        cfg.validate()?;
        let config_path = node_dir.join("node.toml");
        std::fs::write(&config_path, cfg.to_toml())
            .map_err(|e| NodeError::Failed(format!("cannot write {}: {e}", config_path.display())))?;
        let log = node_dir.join("node.log");
        let child = opts.command.spawn(&config_path, &log)?;
        entries.push(NodeEntry {
            id: i as u32,
            grpc: cfg.grpc_addr,
            metrics: cfg.metrics_addr,
            pid: child.id(),
            data_dir: cfg.data_dir.clone(),
            gossip: Some(cfg.gossip_addr),
            config: Some(config_path),
            log: Some(log),
        });
        children.0.push(child);
    }
    let file = ClusterFile { nodes: entries };
    file.save(&dir)?;
    wait_until_converged(&file, &mut children.0, opts.wait_timeout)?;
    Ok(Launched {
        file,
        children: std::mem::take(&mut children.0),
    })
}

/// Child processes killed and reaped when dropped.
struct ChildGuard(Vec<Child>);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        for c in self.0.iter_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn log_tail(entry: &NodeEntry) -> String {
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

/// Waits until every node's Stats lists every node live.
fn wait_until_converged(file: &ClusterFile, children: &mut [Child], timeout: Duration) -> Result<(), NodeError> {
    let n = file.nodes.len();
    let start = Instant::now();
    loop {
        for (entry, child) in file.nodes.iter().zip(children.iter_mut()) {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(NodeError::Failed(format!(
                    "node {} exited ({status}): {}",
                    entry.id,
                    log_tail(entry)
                )));
            }
        }
        let seen: Vec<usize> = block_on(async {
            let mut out = Vec::new();
            for e in &file.nodes {
                let live = match client::stats(e.grpc, Duration::from_millis(500)).await {
                    Ok(s) => s.members.iter().filter(|m| m.live).count(),
                    Err(_) => 0,
                };
                out.push(live);
            }
            out
        })?;
        if seen.iter().all(|&s| s == n) {
            return Ok(());
        }
        if start.elapsed() > timeout {
            let lagging: Vec<String> = file
                .nodes
                .iter()
                .zip(&seen)
                .filter(|(_, &s)| s != n)
                .map(|(e, s)| format!("node {} sees {s} of {n}", e.id))
                .collect();
            return Err(NodeError::Failed(format!(
                "the cluster did not converge within {} ms: {}",
                timeout.as_millis(),
                lagging.join("; ")
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The state letter of process `pid` from /proc (R, S, D, T = stopped, Z = zombie), or None
/// when there is no such process.
pub fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.trim_start().chars().next()
}

/// Whether `pid` is the node started with config `config` (guards against recycled pids).
fn is_our_node(pid: u32, config: Option<&PathBuf>) -> bool {
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
    send_signal(e.pid, signal)
}

fn alive(pid: u32) -> bool {
    process_state(pid).is_some_and(|s| s != 'Z')
}

/// Stops every node (SIGTERM, then SIGKILL after `grace`). Returns how many were running.
pub fn down(dir: &Path, grace: Duration) -> Result<usize, NodeError> {
    let file = ClusterFile::load(dir)?;
    let running: Vec<&NodeEntry> = file
        .nodes
        .iter()
        .filter(|e| alive(e.pid) && is_our_node(e.pid, e.config.as_ref()))
        .collect();
    for e in &running {
        let _ = send_signal(e.pid, Signal::Term);
        let _ = send_signal(e.pid, Signal::Cont); // a paused node must wake up to exit
    }
    let start = Instant::now();
    while running.iter().any(|e| alive(e.pid)) && start.elapsed() < grace {
        std::thread::sleep(Duration::from_millis(50));
    }
    for e in &running {
        if alive(e.pid) && is_our_node(e.pid, e.config.as_ref()) {
            let _ = send_signal(e.pid, Signal::Kill);
        }
    }
    Ok(running.len())
}

/// Starts node `id` again from its recorded config (after a kill): same addresses and data,
/// an empty cache. Updates its pid in cluster.json.
pub fn restart_node(dir: &Path, id: u32, command: &NodeCommand) -> Result<Child, NodeError> {
    let mut file = ClusterFile::load(dir)?;
    let e = file.node(id)?.clone();
    if alive(e.pid) && is_our_node(e.pid, e.config.as_ref()) {
        return Err(NodeError::Failed(format!(
            "node {id} is still running (pid {}); stop it first",
            e.pid
        )));
    }
    let config = e
        .config
        .clone()
        .ok_or_else(|| NodeError::Failed(format!("node {id} has no recorded config")))?;
    let log = e.log.clone().unwrap_or_else(|| dir.join(format!("node-{id}/node.log")));
    let child = command.spawn(&config, &log)?;
    for n in file.nodes.iter_mut().filter(|n| n.id == id) {
        n.pid = child.id();
    }
    file.save(dir)?;
    Ok(child)
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
                policy: stats.as_ref().map(|s| s.policy.clone()),
                grpc: e.grpc,
            }
        })
        .collect())
}

/// Longest time a fault may last (down time, pause), seconds.
pub const MAX_FAULT_S: f64 = 86_400.0;

/// Checks a fault duration in seconds given by a user (`what` names the flag).
pub fn check_fault_s(what: &str, s: f64) -> Result<Duration, NodeError> {
    if !(s.is_finite() && (0.0..=MAX_FAULT_S).contains(&s)) {
        return Err(NodeError::Config(format!(
            "{what} {s} must be a number of seconds in [0, {MAX_FAULT_S}]"
        )));
    }
    Ok(Duration::from_secs_f64(s))
}

/// Waits (bounded by `timeout`) until process `pid` has exited.
fn wait_exit(pid: u32, timeout: Duration) -> bool {
    let start = Instant::now();
    while alive(pid) {
        if start.elapsed() > timeout {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// Kills node `id` (SIGKILL) if it runs and waits until it is gone.
pub fn kill_node(dir: &Path, id: u32) -> Result<(), NodeError> {
    let file = ClusterFile::load(dir)?;
    let e = file.node(id)?;
    if alive(e.pid) && is_our_node(e.pid, e.config.as_ref()) {
        // A stopped process dies on SIGKILL too.
        send_signal(e.pid, Signal::Kill)?;
        if !wait_exit(e.pid, Duration::from_secs(10)) {
            return Err(NodeError::Failed(format!(
                "node {id} (pid {}) did not die within 10 s of SIGKILL",
                e.pid
            )));
        }
    }
    Ok(())
}

/// Waits (bounded by `timeout`) until node `entry` answers Stats and sees `live` live members
/// (0 = any). Fails early if `child` exits.
pub fn wait_node_up(entry: &NodeEntry, live: usize, child: Option<&mut Child>, timeout: Duration) -> Result<(), NodeError> {
    let start = Instant::now();
    let mut child = child;
    loop {
        if let Some(c) = child.as_deref_mut() {
            if let Ok(Some(status)) = c.try_wait() {
                return Err(NodeError::Failed(format!(
                    "node {} exited ({status}): {}",
                    entry.id,
                    log_tail(entry)
                )));
            }
        }
        let seen = block_on(client::stats(entry.grpc, Duration::from_millis(500)))?.map(|s| s.members.iter().filter(|m| m.live).count());
        if let Ok(n) = seen {
            if live == 0 || n >= live {
                return Ok(());
            }
        }
        if start.elapsed() > timeout {
            return Err(NodeError::Failed(format!(
                "node {} did not come back within {} ms: {}",
                entry.id,
                timeout.as_millis(),
                match seen {
                    Ok(n) => format!("it sees {n} of {live} nodes live"),
                    Err(e) => e,
                }
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The fault `cluster restart --down-s S`: kills node `id` (SIGKILL, if it runs), keeps it
/// down for `down`, starts it again from its recorded config (same data, an empty cache) and
/// waits (bounded by `up_timeout`) until it answers (a node that exits or never answers is an
/// error, and is stopped), then until it sees every node of the cluster live (best effort:
/// other nodes may be down). Returns the new process.
pub fn restart_node_after(dir: &Path, id: u32, down: Duration, command: &NodeCommand, up_timeout: Duration) -> Result<Child, NodeError> {
    kill_node(dir, id)?;
    std::thread::sleep(down);
    let start = Instant::now();
    let mut child = restart_node(dir, id, command)?;
    let file = ClusterFile::load(dir)?;
    let entry = file.node(id)?.clone();
    if let Err(e) = wait_node_up(&entry, 0, Some(&mut child), up_timeout) {
        let _ = child.kill();
        let _ = child.wait();
        return Err(e);
    }
    let _ = wait_node_up(
        &entry,
        file.nodes.len(),
        Some(&mut child),
        up_timeout.saturating_sub(start.elapsed()),
    );
    Ok(child)
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
pub fn set_faults(dir: &Path, id: u32, request: crate::proto::FaultsRequest) -> Result<crate::proto::FaultsResponse, NodeError> {
    let file = ClusterFile::load(dir)?;
    let e = file.node(id)?;
    block_on(client::set_faults(e.grpc, request, Duration::from_secs(2)))?.map_err(NodeError::Failed)
}
