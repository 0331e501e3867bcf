//! What each node runs with: its cassandra.yaml, rack file and log configuration (the jar
//! ships no `conf/`), its addresses, and the JVM command line for Java 17.

use super::cgroup::DiskLimits;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

/// The system property that sets the policy the plug-in starts with.
pub const POLICY_PROPERTY: &str = "replica_lb.hwlb.policy";

/// The CQL port every node listens on (each at its own loopback address).
pub const CQL_PORT: u16 = 9042;
/// The internode (gossip and messaging) port.
pub const STORAGE_PORT: u16 = 7000;
/// The first node's JMX port; node I uses `JMX_BASE_PORT + I`.
pub const JMX_BASE_PORT: u16 = 7199;

/// Where node `id` (0-based) listens: 127.0.0.(id+1).
pub fn node_ip(id: u32) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, (id + 1) as u8))
}

/// Where clients reach node `id`: its proxy at 127.0.1.(id+1), the address the node
/// advertises (`broadcast_rpc_address`), so a driver discovers every node behind its proxy.
pub fn client_ip(id: u32) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 1, (id + 1) as u8))
}

/// Node `id`'s CQL address as clients use it (through its proxy).
pub fn client_addr(id: u32) -> SocketAddr {
    SocketAddr::new(client_ip(id), CQL_PORT)
}

/// Node `id`'s own CQL address (behind the proxy).
pub fn node_cql_addr(id: u32) -> SocketAddr {
    SocketAddr::new(node_ip(id), CQL_PORT)
}

/// How many tokens (virtual nodes) each node owns: Cassandra's default.
pub const TOKENS_PER_NODE: u32 = 16;

/// Node `id`'s tokens in a cluster of `nodes`, written as its `initial_token`.
///
/// The ring is cut into `TOKENS_PER_NODE × nodes` equal arcs dealt round-robin, and each token
/// sits in the middle of its arc (never Murmur3's reserved minimum). Every node owns the same
/// share, and no node depends on what it has heard of the others when it joins: with
/// Cassandra's token allocation (`allocate_tokens_for_local_replication_factor`) a node that
/// joins before the previous one's tokens reach it computes that node's tokens again and stops
/// with "Bootstrap Token collision" (seen once here, starting nodes one after another).
pub fn initial_tokens(id: u32, nodes: u32) -> Vec<i64> {
    assert!(id < nodes, "node {id} of a {nodes}-node cluster");
    let arcs = i128::from(TOKENS_PER_NODE) * i128::from(nodes);
    let ring = 1i128 << 64;
    (0..TOKENS_PER_NODE)
        .map(|j| {
            let arc = i128::from(j) * i128::from(nodes) + i128::from(id);
            let token = i128::from(i64::MIN) + (2 * arc + 1) * ring / (2 * arcs);
            i64::try_from(token).expect("a token inside the ring")
        })
        .collect()
}

/// The directory of node `id` in cluster directory `dir`.
pub fn node_dir(dir: &Path, id: u32) -> PathBuf {
    dir.join(format!("node-{id}"))
}

/// The settings every node shares.
#[derive(Clone, Debug)]
pub struct NodeSettings {
    /// JVM heap, MiB (-Xms and -Xmx).
    pub heap_mb: u32,
    /// The snitch class (`endpoint_snitch`).
    pub snitch: String,
    /// Whether Cassandra wraps the snitch in its DynamicEndpointSnitch (`dynamic_snitch`; on
    /// as shipped). The replica-lb plug-in leaves it on and takes the dynamic snitch out of the
    /// read path itself for its own policies.
    pub dynamic_snitch: bool,
    /// Extra jar directories or files on the classpath (a snitch plug-in).
    pub extra_classpath: Vec<PathBuf>,
    /// Extra JVM system properties, `name=value`.
    pub system_properties: Vec<String>,
    /// Cassandra's off-heap row cache, MiB (`row_cache_size`; 0 = off, Cassandra's default).
    /// Tables that `load` creates cache whole rows, so with a row cache a read either hits it
    /// or reads the SSTables: the seeds' row cache.
    pub row_cache_mb: u32,
    /// Cassandra's chunk cache of data file pages, MiB (`file_cache_size`; 0 = off).
    pub chunk_cache_mb: u32,
    /// What a read from the data files costs ([`DiskLimits`]: a cgroup per node), or nothing
    /// (this machine's page cache and disk).
    pub disk: Option<DiskLimits>,
    /// Whether the row cache is saved to disk and loaded at start (off, as shipped).
    pub saved_caches: SavedCaches,
}

/// Cassandra's own remedy for a cold restart: the row cache's keys saved to
/// `saved_caches_directory` every `row_cache_save_period_s`, and read back at start, the node
/// answering CQL only once the load is done or `cache_load_timeout_s` has passed (Cassandra's
/// `CassandraDaemon.setup` waits on `loadRowAndKeyCacheAsync`). Loading reads each saved row
/// from the data files again, so on a slow disk a short time-out loads part of the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SavedCaches {
    /// Seconds between saves of the row cache (`row_cache_save_period`; 0 = never, the default).
    pub row_cache_save_period_s: u32,
    /// The longest a starting node spends loading saved caches (`cache_load_timeout`; 30 s as
    /// shipped).
    pub cache_load_timeout_s: u32,
}

impl Default for SavedCaches {
    /// As Cassandra ships: the row cache never saved, 30 s to load what was.
    fn default() -> Self {
        SavedCaches {
            row_cache_save_period_s: 0,
            cache_load_timeout_s: 30,
        }
    }
}

/// The longest save period accepted, seconds (a day).
pub const MAX_SAVE_PERIOD_S: u32 = 86_400;
/// The longest cache load time-out accepted, seconds (an hour).
pub const MAX_CACHE_LOAD_TIMEOUT_S: u32 = 3_600;

impl SavedCaches {
    /// Whether a node saves its row cache, so that it loads one when it starts again.
    pub fn saves(&self) -> bool {
        self.row_cache_save_period_s > 0
    }

    /// How much longer than usual a node may take to start: the load of its saved caches.
    pub fn start_allowance(&self) -> std::time::Duration {
        match self.saves() {
            true => std::time::Duration::from_secs(u64::from(self.cache_load_timeout_s)),
            false => std::time::Duration::ZERO,
        }
    }

    /// Checks the values, naming a bad one and what is allowed.
    pub fn validate(&self) -> Result<(), String> {
        if self.row_cache_save_period_s > MAX_SAVE_PERIOD_S {
            return Err(format!(
                "row cache save period {} s: must be in [0, {MAX_SAVE_PERIOD_S}] (0 = never)",
                self.row_cache_save_period_s
            ));
        }
        if !(1..=MAX_CACHE_LOAD_TIMEOUT_S).contains(&self.cache_load_timeout_s) {
            return Err(format!(
                "cache load time-out {} s: must be in [1, {MAX_CACHE_LOAD_TIMEOUT_S}]",
                self.cache_load_timeout_s
            ));
        }
        Ok(())
    }
}

impl Default for NodeSettings {
    fn default() -> Self {
        NodeSettings {
            heap_mb: 768,
            snitch: "GossipingPropertyFileSnitch".into(),
            dynamic_snitch: true,
            extra_classpath: Vec::new(),
            system_properties: Vec::new(),
            row_cache_mb: 0,
            chunk_cache_mb: 64,
            disk: None,
            saved_caches: SavedCaches::default(),
        }
    }
}

/// The most row cache a node may have, MiB (it lives beside the heap in the node's memory).
pub const MAX_ROW_CACHE_MB: u32 = 8_192;

impl NodeSettings {
    /// Checks the values, naming a bad one and what is allowed.
    pub fn validate(&self) -> Result<(), String> {
        if !(256..=16_384).contains(&self.heap_mb) {
            return Err(format!("--heap-mb {}: must be in [256, 16384]", self.heap_mb));
        }
        if self.row_cache_mb > MAX_ROW_CACHE_MB {
            return Err(format!("--row-cache-mb {}: must be in [0, {MAX_ROW_CACHE_MB}]", self.row_cache_mb));
        }
        if self.chunk_cache_mb > MAX_ROW_CACHE_MB {
            return Err(format!(
                "chunk cache {} MiB: must be in [0, {MAX_ROW_CACHE_MB}]",
                self.chunk_cache_mb
            ));
        }
        if let Some(d) = &self.disk {
            d.validate()?;
        }
        self.saved_caches.validate()
    }
}

/// Writes node `id`'s configuration under `node_dir` for a cluster of `nodes` whose seed is
/// node 0.
pub fn write_node_config(node_dir: &Path, id: u32, nodes: u32, settings: &NodeSettings) -> Result<(), String> {
    let conf = node_dir.join("conf");
    for d in ["conf", "data", "commitlog", "saved_caches", "hints", "cdc"] {
        let p = node_dir.join(d);
        std::fs::create_dir_all(&p).map_err(|e| format!("cannot create {}: {e}", p.display()))?;
    }
    let nd = node_dir.display();
    // With disk limits every read of a data file goes through the page cache the cgroup caps
    // (no memory-mapped data or index files, whose pages the JVM would pin).
    let disk_access_mode = if settings.disk.is_some() {
        "disk_access_mode: standard\n"
    } else {
        ""
    };
    let chunk_cache = match settings.chunk_cache_mb {
        0 => "file_cache_enabled: false\n".to_string(),
        mb => format!("file_cache_enabled: true\nfile_cache_size: {mb}MiB\n"),
    };
    let tokens: Vec<String> = initial_tokens(id, nodes).iter().map(i64::to_string).collect();
    let yaml = format!(
        "# Written by replica-lb for node {id}.\n\
cluster_name: replica-lb\n\
num_tokens: {TOKENS_PER_NODE}\n\
initial_token: {tokens}\n\
partitioner: org.apache.cassandra.dht.Murmur3Partitioner\n\
seed_provider:\n  - class_name: org.apache.cassandra.locator.SimpleSeedProvider\n    parameters:\n      - seeds: \"{seed}:{STORAGE_PORT}\"\n\
listen_address: {ip}\n\
rpc_address: {ip}\n\
broadcast_rpc_address: {client_ip}\n\
storage_port: {STORAGE_PORT}\n\
native_transport_port: {CQL_PORT}\n\
endpoint_snitch: {snitch}\n\
dynamic_snitch: {dynamic_snitch}\n\
data_file_directories:\n  - {nd}/data\n\
commitlog_directory: {nd}/commitlog\n\
saved_caches_directory: {nd}/saved_caches\n\
hints_directory: {nd}/hints\n\
cdc_raw_directory: {nd}/cdc\n\
commitlog_sync: periodic\n\
commitlog_sync_period: 10000ms\n\
concurrent_reads: 8\n\
concurrent_writes: 8\n\
concurrent_counter_writes: 4\n\
memtable_heap_space: 64MiB\n\
memtable_offheap_space: 64MiB\n\
key_cache_size: 16MiB\n\
key_cache_save_period: 0s\n\
row_cache_size: {row_cache}MiB\n\
row_cache_save_period: {save_period}s\n\
cache_load_timeout: {load_timeout}s\n\
{chunk_cache}\
{disk_access_mode}\
read_request_timeout: 5000ms\n\
write_request_timeout: 2000ms\n\
auto_snapshot: false\n\
start_native_transport: true\n",
        seed = node_ip(0),
        ip = node_ip(id),
        client_ip = client_ip(id),
        snitch = settings.snitch,
        dynamic_snitch = settings.dynamic_snitch,
        row_cache = settings.row_cache_mb,
        save_period = settings.saved_caches.row_cache_save_period_s,
        load_timeout = settings.saved_caches.cache_load_timeout_s,
        tokens = tokens.join(","),
    );
    write(&conf.join("cassandra.yaml"), &yaml)?;
    write(&conf.join("cassandra-rackdc.properties"), &format!("dc=dc1\nrack=rack{}\n", id + 1))?;
    write(
        &conf.join("logback.xml"),
        "<configuration scan=\"false\">\n  <appender name=\"FILE\" class=\"ch.qos.logback.core.FileAppender\">\n    <file>${cassandra.logdir}/system.log</file>\n    <encoder><pattern>%-5level [%thread] %date{ISO8601} %F:%L - %msg%n</pattern></encoder>\n  </appender>\n  <root level=\"INFO\"><appender-ref ref=\"FILE\"/></root>\n</configuration>\n",
    )
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The module exports and opens Cassandra needs on Java 17 (as its `jvm17-server.options`).
pub(crate) const JAVA17_FLAGS: &[&str] = &[
    "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-exports=java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED",
    "--add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED",
    "--add-exports=java.rmi/sun.rmi.server=ALL-UNNAMED",
    "--add-exports=java.sql/java.sql=ALL-UNNAMED",
    "--add-exports=java.base/java.lang.ref=ALL-UNNAMED",
    "--add-exports=jdk.unsupported/sun.misc=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.module=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.loader=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.reflect=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.math=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.module=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.util.jar=ALL-UNNAMED",
    "--add-opens=jdk.management/com.sun.management.internal=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.math=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens=java.base/java.net=ALL-UNNAMED",
];

/// The `java` arguments that run node `id` from `node_dir` with the jars in `lib`.
pub fn java_args(node_dir: &Path, id: u32, lib: &Path, settings: &NodeSettings) -> Vec<String> {
    let nd = node_dir.display();
    let mut args = vec![
        format!("-Xms{}m", settings.heap_mb),
        format!("-Xmx{}m", settings.heap_mb),
        "-Xss256k".into(),
        "-XX:+UseG1GC".into(),
        // The whole heap resident from the start: a node's memory use then grows only by
        // its off-heap caches and buffers (disk limits cap the page cache on top of it).
        "-XX:+AlwaysPreTouch".into(),
        "-XX:+ExitOnOutOfMemoryError".into(),
        "-Djdk.attach.allowAttachSelf=true".into(),
        "-Dio.netty.tryReflectionSetAccessible=true".into(),
    ];
    args.extend(JAVA17_FLAGS.iter().map(|s| s.to_string()));
    args.extend([
        format!("-Dcassandra.config=file://{nd}/conf/cassandra.yaml"),
        format!("-Dcassandra-rackdc.properties=file://{nd}/conf/cassandra-rackdc.properties"),
        format!("-Dlogback.configurationFile=file://{nd}/conf/logback.xml"),
        format!("-Dcassandra.logdir={nd}"),
        format!("-Dcassandra.storagedir={nd}"),
        format!("-Dcassandra.jmx.local.port={}", JMX_BASE_PORT as u32 + id),
        "-Dcassandra-foreground=yes".into(),
        "-Dcassandra.skip_wait_for_gossip_to_settle=0".into(),
        "-Dcassandra.ring_delay_ms=1000".into(),
    ]);
    args.extend(settings.system_properties.iter().map(|p| format!("-D{p}")));
    let mut cp = format!("{nd}/conf:{}/*", lib.display());
    for extra in &settings.extra_classpath {
        cp.push(':');
        cp.push_str(&extra.display().to_string());
    }
    args.extend(["-cp".into(), cp, "org.apache.cassandra.service.CassandraDaemon".into()]);
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_node_gets_its_addresses_and_the_client_policy_settings() {
        let dir = std::env::temp_dir().join(format!("rlb-cass-conf-{}", std::process::id()));
        write_node_config(&dir, 2, 3, &NodeSettings::default()).unwrap();
        let yaml = std::fs::read_to_string(dir.join("conf/cassandra.yaml")).unwrap();
        for line in [
            "listen_address: 127.0.0.3",
            "rpc_address: 127.0.0.3",
            "broadcast_rpc_address: 127.0.1.3",
            "seeds: \"127.0.0.1:7000\"",
            "endpoint_snitch: GossipingPropertyFileSnitch",
            "dynamic_snitch: true",
            "num_tokens: 16",
            "row_cache_save_period: 0s",
            "cache_load_timeout: 30s",
        ] {
            assert!(
                yaml.lines().any(|l| l.trim() == line || l.trim().ends_with(line)),
                "{line} in\n{yaml}"
            );
        }
        let tokens: Vec<i64> = yaml
            .lines()
            .find_map(|l| l.strip_prefix("initial_token: "))
            .expect("initial_token")
            .split(',')
            .map(|t| t.parse().unwrap())
            .collect();
        assert_eq!(tokens, initial_tokens(2, 3));
        let rack = std::fs::read_to_string(dir.join("conf/cassandra-rackdc.properties")).unwrap();
        assert_eq!(rack, "dc=dc1\nrack=rack3\n");
        let args = java_args(&dir, 2, Path::new("/lib"), &NodeSettings::default());
        assert!(args.contains(&"-Xmx768m".to_string()));
        assert!(args.contains(&"-Dcassandra.jmx.local.port=7201".to_string()));
        assert_eq!(args.last().unwrap(), "org.apache.cassandra.service.CassandraDaemon");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_saved_row_cache_is_written_checked_and_lengthens_the_start() {
        let dir = std::env::temp_dir().join(format!("rlb-cass-saved-{}", std::process::id()));
        let saved = SavedCaches {
            row_cache_save_period_s: 30,
            cache_load_timeout_s: 600,
        };
        let settings = NodeSettings {
            saved_caches: saved,
            ..NodeSettings::default()
        };
        write_node_config(&dir, 0, 3, &settings).unwrap();
        let yaml = std::fs::read_to_string(dir.join("conf/cassandra.yaml")).unwrap();
        assert!(yaml.contains("\nrow_cache_save_period: 30s\ncache_load_timeout: 600s\n"), "{yaml}");
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(saved.start_allowance(), std::time::Duration::from_secs(600));
        assert_eq!(
            SavedCaches::default().start_allowance(),
            std::time::Duration::ZERO,
            "nothing saved, nothing loaded"
        );
        let bad = SavedCaches {
            cache_load_timeout_s: 0,
            ..saved
        };
        assert!(bad
            .validate()
            .unwrap_err()
            .contains("cache load time-out 0 s: must be in [1, 3600]"));
        let bad = NodeSettings {
            saved_caches: SavedCaches {
                row_cache_save_period_s: 100_000,
                ..saved
            },
            ..NodeSettings::default()
        };
        assert!(bad.validate().unwrap_err().contains("row cache save period 100000 s"));
    }

    #[test]
    fn tokens_cut_the_ring_into_equal_arcs_dealt_round_robin() {
        for nodes in 1..=5u32 {
            let mut all: Vec<(i64, u32)> = (0..nodes)
                .flat_map(|id| initial_tokens(id, nodes).into_iter().map(move |t| (t, id)))
                .collect();
            all.sort_unstable();
            assert_eq!(all.len(), (TOKENS_PER_NODE * nodes) as usize);
            assert!(all[0].0 > i64::MIN, "Murmur3's minimum is reserved");
            let arc = ((1i128 << 64) / i128::from(TOKENS_PER_NODE * nodes)) as i64;
            for (i, w) in all.windows(2).enumerate() {
                assert!((w[1].0 - w[0].0 - arc).abs() <= 1, "{nodes} nodes: gap {i}");
                assert_eq!(w[0].1, i as u32 % nodes, "{nodes} nodes: arc {i} dealt out of turn");
            }
        }
    }
}
