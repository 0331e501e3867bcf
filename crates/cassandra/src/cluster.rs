//! A Cassandra cluster's file (`DIR/cluster.json` with `"engine": "cassandra"`) and its
//! lifecycle: start the nodes one after another and wait until each answers CQL, report their
//! state, stop them, and the faults (pause, restart, delay).

use super::cgroup::{DiskLimits, NodeCgroup};
use super::config::{self, client_addr, node_cql_addr, node_dir, NodeSettings, SavedCaches};
use super::coordinator::CoordinatorPolicy;
use super::cql::answers_cql;
use super::{dist, proxy};
use replica_lb_launcher::{process_state, send_signal, Signal, CLUSTER_FILE};
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, SocketAddr};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Which kind of cluster a directory holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// The project's own storage nodes (`replica-lb node`).
    Node,
    /// Apache Cassandra.
    Cassandra,
}

impl Engine {
    /// Parses `node` or `cassandra`.
    pub fn parse(text: &str) -> Result<Engine, String> {
        match text {
            "node" => Ok(Engine::Node),
            "cassandra" => Ok(Engine::Cassandra),
            other => Err(format!("--engine {other}: must be node or cassandra")),
        }
    }

    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            Engine::Node => "node",
            Engine::Cassandra => "cassandra",
        }
    }
}

/// The engine of the cluster in `dir` (a cluster file without `engine` is a node cluster).
pub fn engine_of(dir: &Path) -> Result<Engine, String> {
    let path = dir.join(CLUSTER_FILE);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}; is a cluster up in {}?", path.display(), dir.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{} is not a cluster file: {e}", path.display()))?;
    match v.get("engine").and_then(|e| e.as_str()) {
        None => Ok(Engine::Node),
        Some(e) => Engine::parse(e).map_err(|_| format!("{}: unknown engine '{e}'", path.display())),
    }
}

/// One Cassandra node of a launched cluster.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CassandraNode {
    /// Node id (0-based; it listens on 127.0.0.(id+1)).
    pub id: u32,
    /// Its own address.
    pub address: IpAddr,
    /// Where clients reach its CQL port (its delay proxy; the address it advertises).
    pub cql: SocketAddr,
    /// Its own CQL port, behind the proxy.
    pub node_cql: SocketAddr,
    /// Process id of its JVM.
    pub pid: u32,
    /// Its directory (configuration, data, logs).
    pub dir: PathBuf,
    /// Its log.
    pub log: PathBuf,
}

/// `DIR/cluster.json` of a Cassandra cluster.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CassandraCluster {
    /// Always `cassandra`.
    pub engine: String,
    /// Cassandra's version.
    pub version: String,
    /// Every node.
    pub nodes: Vec<CassandraNode>,
    /// The delay proxy's process id.
    pub proxy_pid: Option<u32>,
    /// The JVM heap of each node, MiB.
    pub heap_mb: u32,
    /// The snitch every node runs.
    pub snitch: String,
    /// Whether Cassandra's dynamic snitch wraps it (`dynamic_snitch`, on as shipped).
    #[serde(default = "dynamic_snitch_as_shipped")]
    pub dynamic_snitch: bool,
    /// Extra classpath entries (a snitch plug-in).
    #[serde(default)]
    pub extra_classpath: Vec<PathBuf>,
    /// Extra JVM system properties.
    #[serde(default)]
    pub system_properties: Vec<String>,
    /// Each node's row cache, MiB (0 = off).
    #[serde(default)]
    pub row_cache_mb: u32,
    /// Each node's chunk cache, MiB (0 = off).
    #[serde(default = "default_chunk_cache_mb")]
    pub chunk_cache_mb: u32,
    /// Each node's disk limits (a cgroup per node), if any.
    #[serde(default)]
    pub disk: Option<DiskLimits>,
    /// Whether the nodes save their row cache and load it at start.
    #[serde(default)]
    pub saved_caches: SavedCaches,
    /// The coordinator policy the replica-lb plug-in runs, if installed (`None`: Cassandra as
    /// shipped, no plug-in).
    #[serde(default)]
    pub coordinator_policy: Option<CoordinatorPolicy>,
    /// Cassandra's jars.
    pub lib: PathBuf,
}

fn dynamic_snitch_as_shipped() -> bool {
    NodeSettings::default().dynamic_snitch
}

fn default_chunk_cache_mb() -> u32 {
    NodeSettings::default().chunk_cache_mb
}

impl CassandraCluster {
    /// Reads `dir/cluster.json`; an error unless it is a Cassandra cluster.
    pub fn load(dir: &Path) -> Result<CassandraCluster, String> {
        if engine_of(dir)? != Engine::Cassandra {
            return Err(format!("{} holds a node cluster, not a Cassandra one", dir.display()));
        }
        let path = dir.join(CLUSTER_FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{} is not a Cassandra cluster file: {e}", path.display()))
    }

    pub(super) fn save(&self, dir: &Path) -> Result<(), String> {
        let path = dir.join(CLUSTER_FILE);
        let tmp = dir.join(format!("{CLUSTER_FILE}.tmp"));
        let text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        std::fs::write(&tmp, text + "\n")
            .and_then(|_| std::fs::rename(&tmp, &path))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    }

    /// The CQL contact points of every node (through their proxies).
    pub fn contact_points(&self) -> Vec<SocketAddr> {
        self.nodes.iter().map(|n| n.cql).collect()
    }

    /// Node `id`'s entry.
    pub fn node(&self, id: u32) -> Result<&CassandraNode, String> {
        self.nodes.iter().find(|n| n.id == id).ok_or_else(|| {
            format!(
                "node {id} is not in the cluster; its nodes are 0..{}",
                self.nodes.len().saturating_sub(1)
            )
        })
    }

    pub(super) fn settings(&self) -> NodeSettings {
        NodeSettings {
            heap_mb: self.heap_mb,
            snitch: self.snitch.clone(),
            dynamic_snitch: self.dynamic_snitch,
            extra_classpath: self.extra_classpath.clone(),
            system_properties: self.system_properties.clone(),
            row_cache_mb: self.row_cache_mb,
            chunk_cache_mb: self.chunk_cache_mb,
            disk: self.disk,
            saved_caches: self.saved_caches,
        }
    }

    /// Records that the plug-in now runs `policy`, so that a node started
    /// again (`cluster restart`, a fault) comes back with it; the running nodes are switched over
    /// CQL ([`super::plugin::switch`]). An error if the plug-in is not installed.
    pub fn record_coordinator_policy(&mut self, dir: &Path, policy: CoordinatorPolicy) -> Result<(), String> {
        if self.coordinator_policy.is_none() {
            return Err(format!(
                "the cluster in {} runs without the replica-lb plug-in: start it with --coordinator-policy",
                dir.display()
            ));
        }
        let property = config::POLICY_PROPERTY;
        self.system_properties.retain(|p| !p.starts_with(&format!("{property}=")));
        self.system_properties.push(format!("{property}={}", policy.as_str()));
        self.coordinator_policy = Some(policy);
        self.save(dir)
    }

    /// The directory the cluster file lives in (every node's directory is below it).
    fn root(&self) -> Option<&Path> {
        self.nodes.first().and_then(|n| n.dir.parent())
    }
}

/// Runs Cassandra's nodetool against node `id` (through its JMX port on 127.0.0.1), e.g.
/// `flush replica_lb`; returns what it printed.
pub fn nodetool(dir: &Path, id: u32, args: &[&str]) -> Result<String, String> {
    let c = CassandraCluster::load(dir)?;
    c.node(id)?;
    let out = Command::new("java")
        .args(config::JAVA17_FLAGS)
        .arg("-cp")
        .arg(format!("{}/*", c.lib.display()))
        .arg("org.apache.cassandra.tools.NodeTool")
        .args(["-h", "127.0.0.1", "-p"])
        .arg((u32::from(config::JMX_BASE_PORT) + id).to_string())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run nodetool (Java 17 is needed): {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let line = err
            .lines()
            .chain(text.lines())
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no output");
        return Err(format!("nodetool {} on node {id} failed: {line}", args.join(" ")));
    }
    Ok(text)
}

/// Most Cassandra nodes on this machine (each takes about 1 GB).
pub const MAX_NODES: u32 = 5;

/// How to start a cluster.
#[derive(Clone, Debug)]
pub struct CassandraUp {
    /// Nodes, 1..=[`MAX_NODES`].
    pub nodes: u32,
    /// The cluster directory (must not hold a running cluster).
    pub dir: PathBuf,
    /// What every node runs with.
    pub settings: NodeSettings,
    /// The program that runs the delay proxy (`PROGRAM cluster proxy --dir DIR --nodes N`).
    pub proxy_program: PathBuf,
    /// The coordinator policy of the replica-lb plug-in the settings install, if any (recorded
    /// in the cluster file; [`super::plugin`] makes the settings).
    pub coordinator_policy: Option<CoordinatorPolicy>,
    /// How long one node may take to answer CQL.
    pub node_timeout: Duration,
}

pub(super) fn alive(pid: u32) -> bool {
    reap(pid);
    process_state(pid).is_some_and(|s| s != 'Z' && s != 'X')
}

/// Collects `pid` if it is a child of this process that ended (no zombie left behind).
fn reap(pid: u32) {
    // SAFETY: waitpid with WNOHANG on a pid only inspects or collects that child; it fails
    // harmlessly (ECHILD) for a process that is not ours.
    unsafe {
        libc::waitpid(pid as libc::pid_t, std::ptr::null_mut(), libc::WNOHANG);
    }
}

fn log_tail(path: &Path) -> String {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| {
            t.lines()
                .rev()
                .find(|l| l.starts_with("ERROR") || l.contains("Exception"))
                .or_else(|| t.lines().rev().find(|l| !l.trim().is_empty()))
                .map(|l| l.chars().take(300).collect())
        })
        .unwrap_or_else(|| "(no log)".into())
}

/// Starts node `id`'s JVM (in its cgroups when the settings have disk limits); returns its pid.
fn spawn_node(dir: &Path, id: u32, lib: &Path, settings: &NodeSettings) -> Result<u32, String> {
    let nd = node_dir(dir, id);
    let out_path = nd.join("stdout.log");
    let out = std::fs::File::create(&out_path).map_err(|e| format!("cannot create {}: {e}", out_path.display()))?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    let mut cmd = Command::new("java");
    cmd.args(config::java_args(&nd, id, lib, settings))
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0);
    if let Some(limits) = &settings.disk {
        let group = NodeCgroup::of(dir, id);
        group.create(limits, &nd.join("data"))?;
        let files: Vec<std::ffi::CString> = group
            .procs_files()
            .iter()
            .map(|p| std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).map_err(|e| e.to_string()))
            .collect::<Result<_, _>>()?;
        // SAFETY: between fork and exec the child only calls open, write and close (all
        // async-signal-safe) on paths prepared before the fork; writing "0" to a cgroup v1
        // cgroup.procs moves the writing process, so the JVM starts inside its groups.
        unsafe {
            cmd.pre_exec(move || {
                for f in &files {
                    let fd = libc::open(f.as_ptr(), libc::O_WRONLY);
                    if fd < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    let ok = libc::write(fd, b"0".as_ptr().cast(), 1) == 1;
                    libc::close(fd);
                    if !ok {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
    }
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot start java for node {id} (Java 17 is needed; disk limits need root): {e}"))?;
    Ok(child.id())
}

/// Waits until node `id` (process `pid`) answers CQL on its own port.
fn wait_cql(dir: &Path, id: u32, pid: u32, timeout: Duration) -> Result<(), String> {
    let start = Instant::now();
    loop {
        if answers_cql(node_cql_addr(id), Duration::from_secs(1)) {
            return Ok(());
        }
        let log = node_dir(dir, id).join("system.log");
        if !alive(pid) {
            return Err(format!("node {id} exited during start-up: {}", log_tail(&log)));
        }
        if start.elapsed() > timeout {
            return Err(format!(
                "node {id} did not answer CQL on {} within {} s: {}",
                node_cql_addr(id),
                timeout.as_secs(),
                log_tail(&log)
            ));
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// How often a node that gave up on reaching its seed during start-up is started again.
const SEED_RETRIES: u32 = 3;

/// Starts node `id` and waits until it answers CQL; `started` hears each new pid (so the
/// cluster file can name it before the wait). A node whose first gossip round found no seed
/// (Cassandra gives up after its ring delay, which a loaded machine can exceed) is started
/// again, up to [`SEED_RETRIES`] times. Returns the pid.
pub(super) fn start_node(
    dir: &Path,
    id: u32,
    lib: &Path,
    settings: &NodeSettings,
    timeout: Duration,
    started: &mut dyn FnMut(u32) -> Result<(), String>,
) -> Result<u32, String> {
    let mut attempt = 0;
    loop {
        let pid = spawn_node(dir, id, lib, settings)?;
        started(pid)?;
        match wait_cql(dir, id, pid, timeout) {
            Err(e) if e.contains("Unable to contact any seeds") && attempt < SEED_RETRIES => attempt += 1,
            other => return other.map(|_| pid),
        }
    }
}

/// Starts the cluster: fetches Cassandra's jars on first use, writes every node's
/// configuration, starts the delay proxy, then the nodes one after another, each once the
/// previous one answers CQL; writes `DIR/cluster.json`. On failure every process it started is
/// stopped.
pub fn up(opts: &CassandraUp, progress: &mut dyn FnMut(&str)) -> Result<CassandraCluster, String> {
    if !(1..=MAX_NODES).contains(&opts.nodes) {
        return Err(format!(
            "--nodes {}: a Cassandra cluster here has 1 to {MAX_NODES} nodes",
            opts.nodes
        ));
    }
    opts.settings.validate()?;
    let dir = &opts.dir;
    if dir.join(CLUSTER_FILE).exists() {
        if let Ok(old) = CassandraCluster::load(dir) {
            if old.nodes.iter().any(|n| alive(n.pid)) {
                return Err(format!(
                    "a Cassandra cluster is running in {}; `cluster down` it first",
                    dir.display()
                ));
            }
        } else if engine_of(dir) == Ok(Engine::Node) {
            return Err(format!("{} holds a node cluster; use another directory", dir.display()));
        }
    }
    for id in 0..opts.nodes {
        for addr in [node_cql_addr(id), client_addr(id)] {
            if answers_cql(addr, Duration::from_millis(300)) {
                return Err(format!("{addr} already answers CQL (another Cassandra is running); stop it first"));
            }
        }
    }
    let lib = dist::classpath_dir(progress)?;
    let version = dist::version()?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let dir = dir.canonicalize().map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut cluster = CassandraCluster {
        engine: Engine::Cassandra.as_str().into(),
        version: version.clone(),
        nodes: Vec::new(),
        proxy_pid: None,
        heap_mb: opts.settings.heap_mb,
        snitch: opts.settings.snitch.clone(),
        dynamic_snitch: opts.settings.dynamic_snitch,
        extra_classpath: opts.settings.extra_classpath.clone(),
        system_properties: opts.settings.system_properties.clone(),
        row_cache_mb: opts.settings.row_cache_mb,
        chunk_cache_mb: opts.settings.chunk_cache_mb,
        disk: opts.settings.disk,
        saved_caches: opts.settings.saved_caches,
        coordinator_policy: opts.coordinator_policy,
        lib: lib.clone(),
    };
    let result = start_all(&dir, opts, &lib, &mut cluster, progress);
    if let Err(e) = result {
        let _ = stop_processes(&cluster, Duration::from_secs(5));
        let _ = remove_cgroups(&cluster);
        let _ = std::fs::remove_file(dir.join(CLUSTER_FILE));
        return Err(e);
    }
    if let Some(limits) = cluster.disk {
        progress(&format!(
            "disk limits: {} reads/s per node from the disk; once a node is warm (cluster slow-disk --on, or an experiment after its warm-up) its memory is capped at what its JVM uses then plus {} MiB of page cache and a {} MiB margin for the JVM's growth, page cache too while the JVM does not use it",
            limits.read_iops, limits.page_cache_mb, CAP_HEADROOM_MB
        ));
    }
    progress(&format!("Cassandra {version}: {} node(s) answer CQL", cluster.nodes.len()));
    Ok(cluster)
}

fn start_all(
    dir: &Path,
    opts: &CassandraUp,
    lib: &Path,
    cluster: &mut CassandraCluster,
    progress: &mut dyn FnMut(&str),
) -> Result<(), String> {
    for id in 0..opts.nodes {
        let nd = node_dir(dir, id);
        let _ = std::fs::remove_dir_all(&nd);
        config::write_node_config(&nd, id, opts.nodes, &opts.settings)?;
        proxy::write_delay(dir, id, 0)?;
    }
    let proxy = Command::new(&opts.proxy_program)
        .args(["cluster", "proxy", "--dir"])
        .arg(dir)
        .arg("--nodes")
        .arg(opts.nodes.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("proxy.log")).map_err(|e| e.to_string())?)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start the delay proxy ({}): {e}", opts.proxy_program.display()))?;
    cluster.proxy_pid = Some(proxy.id());
    cluster.save(dir)?;
    for id in 0..opts.nodes {
        let started = Instant::now();
        let nd = node_dir(dir, id);
        let pid = start_node(dir, id, lib, &opts.settings, opts.node_timeout, &mut |pid| {
            cluster.nodes.retain(|n| n.id != id);
            cluster.nodes.push(CassandraNode {
                id,
                address: config::node_ip(id),
                cql: client_addr(id),
                node_cql: node_cql_addr(id),
                pid,
                dir: nd.clone(),
                log: nd.join("system.log"),
            });
            cluster.save(dir)
        })?;
        progress(&format!(
            "node {id}: {} up in {:.0} s (pid {pid}), clients reach it at {}",
            node_cql_addr(id),
            started.elapsed().as_secs_f64(),
            client_addr(id)
        ));
    }
    for id in 0..opts.nodes {
        if !answers_cql(client_addr(id), Duration::from_secs(2)) {
            return Err(format!(
                "node {id} answers CQL but not through its proxy at {}; see {}/proxy.log",
                client_addr(id),
                dir.display()
            ));
        }
    }
    wait_full_view(dir, opts.nodes, opts.node_timeout)?;
    progress(&format!("every node sees all {} node(s) up", opts.nodes));
    Ok(())
}

/// How many nodes `nodetool status` shows up and normal (`UN`).
fn up_normal(status: &str) -> usize {
    status.lines().filter(|l| l.starts_with("UN ")).count()
}

/// Waits until every node of the cluster in `dir` sees all `nodes` nodes up and normal (its
/// failure detector's view, through nodetool), so that a read or write at CL=ALL right after
/// finds every replica alive. An error naming the first node whose view is short when `timeout`
/// passes.
pub(super) fn wait_full_view(dir: &Path, nodes: u32, timeout: Duration) -> Result<(), String> {
    let start = Instant::now();
    let mut pending: Vec<u32> = (0..nodes).collect();
    loop {
        let mut short = None;
        pending.retain(|&id| match nodetool(dir, id, &["status"]) {
            Ok(text) if up_normal(&text) == nodes as usize => false,
            Ok(text) => {
                short.get_or_insert(format!("node {id} sees {} of {nodes} nodes up", up_normal(&text)));
                true
            }
            Err(e) => {
                short.get_or_insert(e);
                true
            }
        });
        let Some(why) = short else {
            return Ok(());
        };
        if start.elapsed() > timeout {
            return Err(format!(
                "the nodes did not all see each other up within {} s: {why}",
                timeout.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// One node's state as `cluster status` reports it.
#[derive(Clone, Debug, Serialize)]
pub struct NodeState {
    /// Node id.
    pub id: u32,
    /// Process id.
    pub pid: u32,
    /// `running`, `paused` or `down`.
    pub state: String,
    /// Whether it answers CQL (through its proxy).
    pub cql: bool,
    /// Where clients reach it.
    pub address: SocketAddr,
    /// Its current added delay, ms.
    pub delay_ms: u64,
}

/// Every node's state.
pub fn status(dir: &Path) -> Result<Vec<NodeState>, String> {
    let c = CassandraCluster::load(dir)?;
    Ok(c.nodes
        .iter()
        .map(|n| {
            let state = match process_state(n.pid) {
                Some('T') | Some('t') => "paused",
                Some('Z') | Some('X') | None => "down",
                Some(_) => "running",
            };
            NodeState {
                id: n.id,
                pid: n.pid,
                state: state.into(),
                cql: state == "running" && answers_cql(n.cql, Duration::from_secs(1)),
                address: n.cql,
                delay_ms: std::fs::read_to_string(proxy::delay_file(dir, n.id))
                    .ok()
                    .and_then(|t| t.trim().parse().ok())
                    .unwrap_or(0),
            }
        })
        .collect())
}

fn stop_processes(c: &CassandraCluster, grace: Duration) -> usize {
    let mut stopped = 0;
    for n in &c.nodes {
        if alive(n.pid) {
            let _ = send_signal(n.pid, Signal::Cont);
            let _ = send_signal(n.pid, Signal::Term);
            stopped += 1;
        }
    }
    let start = Instant::now();
    while c.nodes.iter().any(|n| alive(n.pid)) && start.elapsed() < grace {
        std::thread::sleep(Duration::from_millis(100));
    }
    for n in &c.nodes {
        if alive(n.pid) {
            let _ = send_signal(n.pid, Signal::Kill);
        }
    }
    if let Some(p) = c.proxy_pid {
        if alive(p) {
            let _ = send_signal(p, Signal::Kill);
        }
        reap(p);
    }
    let start = Instant::now();
    while c.nodes.iter().any(|n| alive(n.pid)) && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    stopped
}

/// Room left in a node's memory limit beyond its page cache budget, MiB: the JVM's buffers
/// grow a little under load (while it does not use it, it is page cache too).
pub const CAP_HEADROOM_MB: u32 = 32;

/// Removes the nodes' cgroups (after their processes ended).
fn remove_cgroups(c: &CassandraCluster) -> Result<(), String> {
    if let (Some(_), Some(root)) = (c.disk, c.root()) {
        for n in &c.nodes {
            NodeCgroup::of(root, n.id).remove()?;
        }
    }
    Ok(())
}

/// Each node's reads from its throttled disk so far (with disk limits; empty without).
pub fn disk_reads(dir: &Path) -> Result<Vec<u64>, String> {
    let c = CassandraCluster::load(dir)?;
    if c.disk.is_none() {
        return Ok(Vec::new());
    }
    c.nodes.iter().map(|n| NodeCgroup::of(dir, n.id).disk_reads()).collect()
}

/// Stops every node (SIGTERM, SIGKILL after `grace`) and the proxy, and removes the nodes'
/// cgroups; returns how many nodes were running.
pub fn down(dir: &Path, grace: Duration) -> Result<usize, String> {
    let c = CassandraCluster::load(dir)?;
    let stopped = stop_processes(&c, grace);
    remove_cgroups(&c)?;
    Ok(stopped)
}

#[cfg(test)]
mod tests {
    #[test]
    fn up_normal_counts_the_nodes_nodetool_shows_up_and_normal() {
        let status = "Datacenter: dc1\n===============\nStatus=Up/Down\n|/ State=Normal/Leaving/Joining/Moving\n\
--  Address    Load  Tokens  Owns  Host ID  Rack\n\
UN  127.0.0.1  1 MiB  16  ?  a  rack1\n\
DN  127.0.0.2  1 MiB  16  ?  b  rack2\n\
UJ  127.0.0.3  1 MiB  16  ?  c  rack3\n\
UN  127.0.0.4  1 MiB  16  ?  d  rack4\n";
        assert_eq!(super::up_normal(status), 2);
    }
}
