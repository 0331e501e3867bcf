//! Starting and stopping node processes: `up` (free ports, a config file per node, one process
//! per node, then waiting until every node sees all the others), `down` (SIGTERM, then SIGKILL
//! after a grace time), killing one node and starting it again from its recorded config, and
//! the fault built on them (`cluster restart --down-s S`).

use super::cluster::{alive, block_on, is_our_node, log_tail, process_state, send_signal, ClusterFile, NodeEntry, Signal, CLUSTER_FILE};
use replica_lb_node::client;
use replica_lb_node::config::NodeConfig;
use replica_lb_node::error::NodeError;
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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
    /// Which zone each node is in.
    pub zones: ZoneLayout,
}

/// Which zone each node of a launched cluster is in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ZoneLayout {
    /// Spread over this many zones: node i is in zone i mod the count (1 = one zone, and the
    /// base config's `zone` is kept). `cluster up --zones`.
    RoundRobin(u32),
    /// Node i is in zone `zones[i]` (a scenario's `cluster.zones`); one entry per node.
    PerNode(Vec<u32>),
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
    match &opts.zones {
        ZoneLayout::RoundRobin(zones) if !(1..=opts.nodes.max(1)).contains(zones) => {
            return Err(NodeError::Config(format!(
                "--zones {zones} is not allowed; it must be in [1, {}] (at most one zone per node)",
                opts.nodes
            )));
        }
        ZoneLayout::PerNode(zones) if zones.len() != opts.nodes as usize => {
            return Err(NodeError::Config(format!(
                "{} zones given for {} nodes: give one per node",
                zones.len(),
                opts.nodes
            )));
        }
        _ => {}
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
        match &opts.zones {
            ZoneLayout::RoundRobin(zones) if *zones > 1 => cfg.zone = i as u32 % zones,
            ZoneLayout::RoundRobin(_) => {}
            ZoneLayout::PerNode(zones) => cfg.zone = zones[i],
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
