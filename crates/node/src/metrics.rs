//! Per-node counters (the ones the simulator reports, and the bytes on the wire of
//! [`crate::traffic`]) and the Prometheus text endpoint that serves them at `GET /metrics` over
//! plain HTTP/1.x.
//!
//! The endpoint is a few lines over a tokio listener: it reads at most one small request per
//! connection (bounded in size and time), answers, and closes.

use crate::traffic::Traffic;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Counters and gauges of one node. All relaxed atomics: exact totals, no ordering needed.
#[derive(Default, Debug)]
pub struct Counters {
    /// Reads served from this node's storage layer (cache or disk), for any coordinator.
    pub reads: AtomicU64,
    /// Of those, served from the row cache.
    pub cache_hits: AtomicU64,
    /// Of those, that went to disk.
    pub cache_misses: AtomicU64,
    /// Replica reads this node coordinated and served itself.
    pub local_reads: AtomicU64,
    /// Replica reads this node coordinated and sent to another node.
    pub remote_reads: AtomicU64,
    /// Replica reads served for another coordinator.
    pub replica_reads: AtomicU64,
    /// Rows written to this node's store.
    pub writes: AtomicU64,
    /// Client reads this node coordinated.
    pub coordinator_reads: AtomicU64,
    /// Client writes this node coordinated.
    pub coordinator_writes: AtomicU64,
    /// Client multi-key reads (MultiGet) this node coordinated; each key also counts in
    /// `coordinator_reads`.
    pub coordinator_multi_gets: AtomicU64,
    /// Client requests that ended in an error (time-outs included).
    pub errors: AtomicU64,
    /// Client requests that timed out.
    pub timeouts: AtomicU64,
    /// Client requests being coordinated now (gauge).
    pub in_flight: AtomicU64,
    /// Replica reads being served now (gauge).
    pub replica_in_flight: AtomicU64,
    /// Bytes sent and received, client and internode.
    pub traffic: Traffic,
}

/// Adds one.
#[inline]
pub fn inc(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// Reads a counter.
#[inline]
pub fn get(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}

/// Decrements a gauge when dropped (so every exit path, errors included, is counted).
pub struct GaugeGuard<'a>(&'a AtomicU64);

impl<'a> GaugeGuard<'a> {
    /// Increments `gauge` until the guard is dropped.
    pub fn new(gauge: &'a AtomicU64) -> Self {
        gauge.fetch_add(1, Ordering::Relaxed);
        GaugeGuard(gauge)
    }
}

impl Drop for GaugeGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Values that are not plain counters, sampled when the page is rendered.
#[derive(Clone, Copy, Debug, Default)]
pub struct Gauges {
    /// The tracker's moving-average hit rate.
    pub hit_rate: f64,
    /// Reads waiting for the emulated disk.
    pub disk_queue: u32,
    /// Reads in service on the emulated disk.
    pub disk_in_service: u32,
    /// Rows in the cache.
    pub cache_rows: u64,
    /// Live nodes this node sees (itself included).
    pub live_nodes: u32,
}

/// Renders the Prometheus text exposition of `c` and `g` for node `node`.
pub fn render(node: u32, c: &Counters, g: &Gauges) -> String {
    let mut out = String::with_capacity(4096);
    let mut metric = |name: &str, kind: &str, help: &str, value: f64| {
        let _ = writeln!(out, "# HELP replica_lb_{name} {help}");
        let _ = writeln!(out, "# TYPE replica_lb_{name} {kind}");
        let _ = writeln!(out, "replica_lb_{name}{{node=\"{node}\"}} {value}");
    };
    let hits = get(&c.cache_hits);
    let misses = get(&c.cache_misses);
    let counters: [(&str, &str, &AtomicU64); 12] = [
        ("reads_total", "Reads served by this node's storage layer.", &c.reads),
        ("cache_hits_total", "Reads served from the row cache.", &c.cache_hits),
        ("cache_misses_total", "Reads that went to disk.", &c.cache_misses),
        ("local_reads_total", "Replica reads coordinated and served here.", &c.local_reads),
        (
            "remote_reads_total",
            "Replica reads coordinated here and sent to another node.",
            &c.remote_reads,
        ),
        (
            "replica_reads_total",
            "Replica reads served for another coordinator.",
            &c.replica_reads,
        ),
        ("writes_total", "Rows written to this node's store.", &c.writes),
        ("coordinator_reads_total", "Client reads coordinated here.", &c.coordinator_reads),
        ("coordinator_writes_total", "Client writes coordinated here.", &c.coordinator_writes),
        (
            "coordinator_multi_gets_total",
            "Client multi-key reads (MultiGet) coordinated here.",
            &c.coordinator_multi_gets,
        ),
        ("errors_total", "Client requests that ended in an error.", &c.errors),
        ("timeouts_total", "Client requests that timed out.", &c.timeouts),
    ];
    for (name, help, v) in counters {
        metric(name, "counter", help, get(v) as f64);
    }
    let t = c.traffic.totals();
    const WIRE: &str = "(gRPC messages plus their 5-byte frame header; HTTP/2 and TCP headers not counted)";
    let bytes: [(&str, &str, u64); 4] = [
        (
            "client_received_bytes_total",
            "Bytes received from clients: Get, MultiGet, Put and Probe requests",
            t.client_received_bytes,
        ),
        (
            "client_sent_bytes_total",
            "Bytes sent to clients: Get, MultiGet, Put and Probe replies",
            t.client_sent_bytes,
        ),
        (
            "internode_received_bytes_total",
            "Bytes received from other nodes: replica requests served and replies to this coordinator",
            t.internode_received_bytes,
        ),
        (
            "internode_sent_bytes_total",
            "Bytes sent to other nodes: this coordinator's replica requests and replies served",
            t.internode_sent_bytes,
        ),
    ];
    for (name, help, v) in bytes {
        metric(name, "counter", &format!("{help} {WIRE}."), v as f64);
    }
    let ratio = if hits + misses == 0 {
        0.0
    } else {
        hits as f64 / (hits + misses) as f64
    };
    metric("hit_ratio", "gauge", "Cache hits / reads since start.", ratio);
    metric("hit_rate", "gauge", "Moving-average hit rate (what HWLB spreads).", g.hit_rate);
    metric("disk_queue", "gauge", "Reads waiting for the emulated disk.", g.disk_queue as f64);
    metric(
        "disk_in_service",
        "gauge",
        "Reads in service on the emulated disk.",
        g.disk_in_service as f64,
    );
    metric(
        "requests_in_flight",
        "gauge",
        "Client requests being coordinated.",
        get(&c.in_flight) as f64,
    );
    metric(
        "replica_reads_in_flight",
        "gauge",
        "Replica reads being served.",
        get(&c.replica_in_flight) as f64,
    );
    metric("cache_rows", "gauge", "Rows in the row cache.", g.cache_rows as f64);
    metric("live_nodes", "gauge", "Live nodes seen, this one included.", g.live_nodes as f64);
    out
}

/// Serves `GET /metrics` on `listener` forever; `page` renders the body.
pub async fn serve<F>(listener: TcpListener, page: F)
where
    F: Fn() -> String + Send + Sync + 'static,
{
    let page = std::sync::Arc::new(page);
    loop {
        let Ok((mut sock, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let page = page.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 2048];
            let mut len = 0;
            let read = tokio::time::timeout(Duration::from_secs(2), async {
                while len < buf.len() {
                    match sock.read(&mut buf[len..]).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => len += n,
                    }
                    if buf[..len].windows(4).any(|w| w == b"\r\n\r\n") || buf[..len].windows(2).any(|w| w == b"\n\n") {
                        break;
                    }
                }
            })
            .await;
            if read.is_err() || len == 0 {
                return;
            }
            let head = String::from_utf8_lossy(&buf[..len]);
            let mut words = head.split_whitespace();
            let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
            let (status, ctype, body) = if method == "GET" && (path == "/metrics" || path.starts_with("/metrics?")) {
                ("200 OK", "text/plain; version=0.0.4", page())
            } else {
                ("404 Not Found", "text/plain", "only GET /metrics is served\n".to_string())
            };
            let reply = format!(
                "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = tokio::time::timeout(Duration::from_secs(2), sock.write_all(reply.as_bytes())).await;
            let _ = sock.shutdown().await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_has_every_counter() {
        let c = Counters::default();
        inc(&c.cache_hits);
        inc(&c.cache_misses);
        c.traffic.received_bytes(crate::traffic::Link::Client, 1234);
        c.traffic.sent_bytes(crate::traffic::Link::Internode, 56);
        let text = render(3, &c, &Gauges::default());
        for name in [
            "reads_total",
            "cache_hits_total",
            "local_reads_total",
            "remote_reads_total",
            "replica_reads_total",
            "hit_ratio",
            "disk_queue",
            "requests_in_flight",
            "coordinator_multi_gets_total",
            "client_received_bytes_total",
            "client_sent_bytes_total",
            "internode_received_bytes_total",
            "internode_sent_bytes_total",
        ] {
            assert!(text.contains(&format!("replica_lb_{name}{{node=\"3\"}}")), "{name} missing");
            assert!(text.contains(&format!("# TYPE replica_lb_{name} ")), "{name} has no type");
        }
        assert!(text.contains("replica_lb_hit_ratio{node=\"3\"} 0.5"));
        assert!(text.contains("replica_lb_client_received_bytes_total{node=\"3\"} 1234\n"));
        assert!(text.contains("replica_lb_internode_sent_bytes_total{node=\"3\"} 56\n"));
        assert!(text.contains("# TYPE replica_lb_client_sent_bytes_total counter"));
    }
}
