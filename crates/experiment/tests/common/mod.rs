//! Shared by the integration tests: a real cluster of node processes on 127.0.0.1 that is
//! always torn down (every process killed, the directory removed) when the guard drops, even
//! when a test fails.

#![allow(dead_code)]

use replica_lb_launcher::{ClusterFile, NodeCommand, UpOptions, ZoneLayout};
use replica_lb_node::client::ClusterClient;
use replica_lb_node::NodeConfig;
use std::path::PathBuf;
use std::process::Child;
use std::time::{Duration, Instant};

/// Cluster tests run one at a time: the machine has 2 cores.
pub static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The node binary built for tests.
pub fn node_command() -> NodeCommand {
    NodeCommand {
        program: PathBuf::from(env!("CARGO_BIN_EXE_replica-lb-node")),
        args: vec![],
    }
}

/// A fresh directory under the system temp dir.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("replica-lb-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A running cluster; dropping it kills every node.
pub struct TestCluster {
    pub dir: PathBuf,
    pub children: Vec<Child>,
    pub file: ClusterFile,
}

/// Settings for test nodes: small, fast failure detection.
pub fn test_config() -> NodeConfig {
    NodeConfig {
        replication_factor: 3,
        gossip_interval_ms: 100,
        read_timeout_ms: 2000,
        write_timeout_ms: 2000,
        worker_threads: 1,
        seed_timeout_ms: 10_000,
        ..NodeConfig::default()
    }
}

impl TestCluster {
    /// Starts `n` nodes with `base` settings.
    pub fn up(name: &str, n: u32, base: NodeConfig) -> TestCluster {
        TestCluster::up_in_zones(name, n, 1, base)
    }

    /// Starts `n` nodes spread over `zones` zones (node i in zone i mod `zones`).
    pub fn up_in_zones(name: &str, n: u32, zones: u32, base: NodeConfig) -> TestCluster {
        let dir = temp_dir(name);
        let opts = UpOptions {
            nodes: n,
            dir: dir.clone(),
            base,
            command: node_command(),
            wait_timeout: Duration::from_secs(30),
            zones: ZoneLayout::RoundRobin(zones),
        };
        let launched = replica_lb_launcher::up(&opts).unwrap_or_else(|e| panic!("cluster up failed: {e}"));
        TestCluster {
            dir,
            children: launched.children,
            file: launched.file,
        }
    }

    /// A token-aware client.
    pub async fn client(&self) -> ClusterClient {
        ClusterClient::connect(&self.file.grpc_addrs()).await.expect("client connects")
    }

    /// Kills node `id` with SIGKILL and reaps it.
    pub fn kill9(&mut self, id: u32) {
        let pid = ClusterFile::load(&self.dir).unwrap().node(id).unwrap().pid;
        replica_lb_launcher::send_signal(pid, replica_lb_launcher::Signal::Kill).unwrap();
        for c in self.children.iter_mut().filter(|c| c.id() == pid) {
            let _ = c.wait();
        }
    }

    /// Restarts node `id` from its recorded config.
    pub fn restart(&mut self, id: u32) {
        let child = replica_lb_launcher::restart_node(&self.dir, id, &node_command()).unwrap();
        self.children.push(child);
        self.file = ClusterFile::load(&self.dir).unwrap();
    }

    /// Sends `sig` to node `id`.
    pub fn signal(&self, id: u32, sig: replica_lb_launcher::Signal) {
        replica_lb_launcher::signal_node(&self.dir, id, sig).unwrap();
    }

    /// Waits (bounded) until every node in `ids` sees `live` live members.
    pub async fn wait_live(&self, ids: &[u32], live: usize, timeout: Duration) {
        let start = Instant::now();
        loop {
            let mut ok = true;
            for &id in ids {
                let addr = self.file.node(id).unwrap().grpc;
                match replica_lb_node::client::stats(addr, Duration::from_millis(500)).await {
                    Ok(s) if s.members.iter().filter(|m| m.live).count() == live => {}
                    _ => ok = false,
                }
            }
            if ok {
                return;
            }
            assert!(
                start.elapsed() < timeout,
                "nodes {ids:?} did not see {live} live members within {timeout:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        // Only our own unreaped children are signalled (never a pid that may have been reused).
        for c in self.children.iter_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A unary call with raw bytes as the request body (a malformed protobuf message, or one
/// encoded by hand); the reply's message bytes exactly as they came off the wire.
pub async fn raw_call(addr: std::net::SocketAddr, path: &'static str, body: Vec<u8>) -> Result<Vec<u8>, tonic::Status> {
    use bytes::{Buf, BufMut};
    use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
    struct Raw;
    impl Encoder for Raw {
        type Item = Vec<u8>;
        type Error = tonic::Status;
        fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), tonic::Status> {
            dst.put_slice(&item);
            Ok(())
        }
    }
    impl Decoder for Raw {
        type Item = Vec<u8>;
        type Error = tonic::Status;
        fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, tonic::Status> {
            let mut v = vec![0; src.remaining()];
            src.copy_to_slice(&mut v);
            Ok(Some(v))
        }
    }
    struct RawCodec;
    impl Codec for RawCodec {
        type Encode = Vec<u8>;
        type Decode = Vec<u8>;
        type Encoder = Raw;
        type Decoder = Raw;
        fn encoder(&mut self) -> Raw {
            Raw
        }
        fn decoder(&mut self) -> Raw {
            Raw
        }
    }
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.unwrap();
    let path = tonic::codegen::http::uri::PathAndQuery::from_static(path);
    grpc.unary(tonic::Request::new(body), path, RawCodec).await.map(|r| r.into_inner())
}

/// A plain HTTP GET of `path` on `addr` (the nodes' Prometheus endpoint); the whole answer.
pub async fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut out = String::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_string(&mut out))
        .await
        .unwrap()
        .unwrap();
    out
}
