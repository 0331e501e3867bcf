//! The user-space delay proxy in front of each node's CQL port (this kernel has no netem).
//! Node I advertises 127.0.1.(I+1):9042 to clients; the proxy listens there and forwards every
//! connection to the node's own 127.0.0.(I+1):9042. Bytes from the client pass at once; bytes
//! from the node are held for the node's current delay before they go on (in order), so every
//! answer the node gives a client comes that much later: a slow node as its clients see it.
//!
//! One proxy process serves the whole cluster (`replica-lb cluster proxy --dir D`, started by
//! `cluster up`, stopped by `cluster down`). The delay of node I is the number in
//! `D/node-I/delay_ms` (absent: 0), which `cluster delay` writes and the proxy reads every
//! [`POLL_MS`] ms.

use super::config::{client_addr, node_cql_addr, node_dir};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// How often the proxy rereads the delay files, ms.
pub const POLL_MS: u64 = 100;
/// The largest delay `cluster delay` accepts, ms.
pub const MAX_DELAY_MS: u32 = 60_000;

/// The file holding node `id`'s delay.
pub fn delay_file(dir: &Path, id: u32) -> PathBuf {
    node_dir(dir, id).join("delay_ms")
}

/// Sets node `id`'s delay (0 clears it).
pub fn write_delay(dir: &Path, id: u32, delay_ms: u32) -> Result<(), String> {
    if delay_ms > MAX_DELAY_MS {
        return Err(format!("--ms {delay_ms}: at most {MAX_DELAY_MS}"));
    }
    let path = delay_file(dir, id);
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, delay_ms.to_string())
        .and_then(|_| std::fs::rename(&tmp, &path))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn read_delay(dir: &Path, id: u32) -> u64 {
    std::fs::read_to_string(delay_file(dir, id))
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok())
        .unwrap_or(0)
}

/// Runs the proxies of nodes `0..nodes` of the cluster in `dir` until the process is stopped.
pub fn run(dir: &Path, nodes: u32) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the proxy runtime: {e}"))?;
    rt.block_on(async move {
        let mut tasks = Vec::new();
        for id in 0..nodes {
            let listener = TcpListener::bind(client_addr(id))
                .await
                .map_err(|e| format!("proxy for node {id}: cannot listen on {}: {e}", client_addr(id)))?;
            let delay = Arc::new(AtomicU64::new(read_delay(dir, id)));
            let (dir2, delay2) = (dir.to_path_buf(), delay.clone());
            tasks.push(tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(POLL_MS)).await;
                    delay2.store(read_delay(&dir2, id), Ordering::Relaxed);
                }
            }));
            tasks.push(tokio::spawn(accept_loop(listener, id, delay)));
        }
        for t in tasks {
            let _ = t.await;
        }
        Ok(())
    })
}

async fn accept_loop(listener: TcpListener, id: u32, delay_ms: Arc<AtomicU64>) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        let delay_ms = delay_ms.clone();
        tokio::spawn(async move {
            if let Ok(node) = TcpStream::connect(node_cql_addr(id)).await {
                forward(client, node, delay_ms).await;
            }
        });
    }
}

/// Forwards one connection: client to node at once, node to client after the delay.
pub async fn forward(client: TcpStream, node: TcpStream, delay_ms: Arc<AtomicU64>) {
    let _ = client.set_nodelay(true);
    let _ = node.set_nodelay(true);
    let (mut client_rx, mut client_tx) = client.into_split();
    let (mut node_rx, mut node_tx) = node.into_split();
    let upstream = async move {
        let _ = tokio::io::copy(&mut client_rx, &mut node_tx).await;
        let _ = node_tx.shutdown().await;
    };
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let reader = async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match node_rx.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let due = Instant::now() + Duration::from_millis(delay_ms.load(Ordering::Relaxed));
                    if tx.send((due, buf[..n].to_vec())).is_err() {
                        break;
                    }
                }
            }
        }
    };
    let writer = async move {
        while let Some((due, bytes)) = rx.recv().await {
            tokio::time::sleep_until(due).await;
            if client_tx.write_all(&bytes).await.is_err() {
                break;
            }
        }
        let _ = client_tx.shutdown().await;
    };
    tokio::join!(upstream, reader, writer);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn answers_come_back_after_the_delay_and_requests_go_through_at_once() {
        let echo = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let echo_addr = echo.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = echo.accept().await.unwrap();
            let mut buf = [0u8; 16];
            loop {
                let n = s.read(&mut buf).await.unwrap();
                if n == 0 {
                    break;
                }
                s.write_all(&buf[..n]).await.unwrap();
            }
        });
        let front = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let front_addr = front.local_addr().unwrap();
        let delay = Arc::new(AtomicU64::new(0));
        let d2 = delay.clone();
        tokio::spawn(async move {
            let (client, _) = front.accept().await.unwrap();
            let node = TcpStream::connect(echo_addr).await.unwrap();
            forward(client, node, d2).await;
        });
        let mut c = TcpStream::connect(front_addr).await.unwrap();
        let mut buf = [0u8; 4];
        for (delay_ms, payload) in [(0u64, b"ping"), (150, b"pong")] {
            delay.store(delay_ms, Ordering::Relaxed);
            let start = Instant::now();
            c.write_all(payload).await.unwrap();
            c.read_exact(&mut buf).await.unwrap();
            assert_eq!(&buf, payload);
            let took = start.elapsed();
            assert!(took >= Duration::from_millis(delay_ms), "{delay_ms} ms delay, answered in {took:?}");
        }
    }

    #[test]
    fn the_delay_file_is_checked_and_read_back() {
        let dir = std::env::temp_dir().join(format!("rlb-proxy-{}", std::process::id()));
        std::fs::create_dir_all(node_dir(&dir, 1)).unwrap();
        assert_eq!(read_delay(&dir, 1), 0);
        write_delay(&dir, 1, 25).unwrap();
        assert_eq!(read_delay(&dir, 1), 25);
        assert!(write_delay(&dir, 1, MAX_DELAY_MS + 1).unwrap_err().contains("at most"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
