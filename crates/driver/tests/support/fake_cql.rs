//! A fake Cassandra cluster for tests and benchmarks: N listeners on 127.0.0.1..N at one port,
//! speaking just enough CQL v4 for the scylla driver to connect, read the topology (every
//! node's host id, datacenter, rack and tokens), the schema of one keyspace `ks` (SimpleStrategy,
//! RF given) with one table `t (k bigint PRIMARY KEY, v ...)`, prepare statements and execute
//! them. The driver then holds a real `ClusterState` with real nodes and connection pools.
//!
//! Each node's behaviour on EXECUTE and QUERY of the user's table can be set at any time
//! (`set`): answer after a delay, fail (Overloaded), or never answer. Test support only.

#![allow(dead_code)]

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// What a node does with a request on the user's table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Behaviour {
    /// Answer at once.
    #[default]
    Answer,
    /// Answer after this many milliseconds.
    Delay(u64),
    /// Answer with an error (Overloaded).
    Fail,
    /// Never answer.
    Hang,
}

/// One fake node.
#[derive(Clone, Debug)]
pub struct FakeNode {
    /// Its host id.
    pub host_id: u128,
    /// Its datacenter.
    pub dc: String,
    /// Its rack.
    pub rack: String,
    /// Its tokens (Murmur3).
    pub tokens: Vec<i64>,
}

/// The cluster: its nodes and their behaviours.
pub struct FakeCluster {
    /// The port every node listens on.
    pub port: u16,
    /// The nodes, node i at 127.0.0.(i+1).
    pub nodes: Vec<FakeNode>,
    behaviour: Arc<Mutex<Vec<Behaviour>>>,
    /// Requests on the user's table each node received.
    pub served: Arc<Mutex<Vec<u64>>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for FakeCluster {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl FakeCluster {
    /// Starts `n` nodes in datacenters given by `dc_of(i)` (rack `r{i % 2}`), 8 tokens each,
    /// with keyspace `ks` at replication factor `rf` (SimpleStrategy).
    pub async fn start(n: usize, rf: usize, dc_of: impl Fn(usize) -> String) -> FakeCluster {
        assert!((1..=200).contains(&n));
        let nodes: Vec<FakeNode> = (0..n)
            .map(|i| FakeNode {
                host_id: 0x1000 + i as u128,
                dc: dc_of(i),
                rack: format!("r{}", i % 2),
                tokens: (0..8)
                    .map(|v| (((v * n + i) as i128 * (u64::MAX as i128) / (8 * n) as i128) + i64::MIN as i128) as i64)
                    .collect(),
            })
            .collect();
        let behaviour = Arc::new(Mutex::new(vec![Behaviour::Answer; n]));
        let served = Arc::new(Mutex::new(vec![0; n]));
        let state = Arc::new(Shared {
            nodes: nodes.clone(),
            rf,
            behaviour: behaviour.clone(),
            served: served.clone(),
            prepared: Mutex::new(HashMap::new()),
        });
        // One port free on every address.
        'search: loop {
            let first = TcpListener::bind((Ipv4Addr::new(127, 0, 0, 1), 0)).await.unwrap();
            let port = first.local_addr().unwrap().port();
            let mut listeners = vec![first];
            for i in 1..n {
                match TcpListener::bind((Ipv4Addr::new(127, 0, 0, 1 + i as u8), port)).await {
                    Ok(l) => listeners.push(l),
                    Err(_) => continue 'search,
                }
            }
            let tasks = listeners
                .into_iter()
                .enumerate()
                .map(|(i, l)| {
                    let state = state.clone();
                    tokio::spawn(async move {
                        while let Ok((sock, _)) = l.accept().await {
                            tokio::spawn(serve(sock, i, state.clone()));
                        }
                    })
                })
                .collect();
            return FakeCluster {
                port,
                nodes,
                behaviour,
                served,
                tasks,
            };
        }
    }

    /// The first node's address, a contact point.
    pub fn contact(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::new(127, 0, 0, 1), self.port))
    }

    /// Six nodes in one datacenter `dc1`, keyspace RF=3, served by a one-worker runtime that is
    /// returned with it (what the tests, the bench and the profile pick against; keep the
    /// runtime alive as long as the cluster).
    pub fn six_in_one_dc() -> (tokio::runtime::Runtime, FakeCluster) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let cluster = rt.block_on(FakeCluster::start(6, 3, |_| "dc1".into()));
        (rt, cluster)
    }

    /// A driver session on this cluster that reads its topology but not the full schema, built
    /// on `rt` (what the tests, the bench and the profile pick against).
    pub fn session(&self, rt: &tokio::runtime::Runtime) -> scylla::client::session::Session {
        rt.block_on(
            scylla::client::session_builder::SessionBuilder::new()
                .known_node_addr(self.contact())
                .fetch_full_schema_metadata(false)
                .build(),
        )
        .expect("the driver connects to the fake cluster")
    }

    /// Sets node `i`'s behaviour.
    pub fn set(&self, i: usize, b: Behaviour) {
        self.behaviour.lock().unwrap()[i] = b;
    }

    /// Requests on the user's table served per node so far.
    pub fn served(&self) -> Vec<u64> {
        self.served.lock().unwrap().clone()
    }
}

struct Shared {
    nodes: Vec<FakeNode>,
    rf: usize,
    behaviour: Arc<Mutex<Vec<Behaviour>>>,
    served: Arc<Mutex<Vec<u64>>>,
    /// Prepared statements by id.
    prepared: Mutex<HashMap<Vec<u8>, String>>,
}

// Opcodes.
const ERROR: u8 = 0x00;
const STARTUP: u8 = 0x01;
const READY: u8 = 0x02;
const OPTIONS: u8 = 0x05;
const SUPPORTED: u8 = 0x06;
const QUERY: u8 = 0x07;
const RESULT: u8 = 0x08;
const PREPARE: u8 = 0x09;
const EXECUTE: u8 = 0x0A;
const REGISTER: u8 = 0x0B;

async fn serve(sock: TcpStream, me: usize, state: Arc<Shared>) {
    let _ = sock.set_nodelay(true);
    let (mut rd, mut wr) = sock.into_split();
    let (tx, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
    tokio::spawn(async move {
        while let Some(frame) = rx.recv().await {
            if wr.write_all(&frame).await.is_err() {
                break;
            }
        }
    });
    loop {
        let mut header = [0u8; 9];
        if rd.read_exact(&mut header).await.is_err() {
            return;
        }
        let stream = i16::from_be_bytes([header[2], header[3]]);
        let opcode = header[4];
        let len = u32::from_be_bytes([header[5], header[6], header[7], header[8]]) as usize;
        let mut body = vec![0u8; len];
        if rd.read_exact(&mut body).await.is_err() {
            return;
        }
        let tx = tx.clone();
        let state = state.clone();
        let reply = move |op: u8, body: Vec<u8>| {
            let mut f = vec![0x84, 0, 0, 0, op];
            f[2..4].copy_from_slice(&stream.to_be_bytes());
            f.extend_from_slice(&(body.len() as u32).to_be_bytes());
            f.extend_from_slice(&body);
            let _ = tx.send(f);
        };
        match opcode {
            OPTIONS => {
                let mut b = Vec::new();
                put_short(&mut b, 2);
                put_string(&mut b, "CQL_VERSION");
                put_string_list(&mut b, &["3.4.7"]);
                put_string(&mut b, "COMPRESSION");
                put_string_list(&mut b, &[]);
                reply(SUPPORTED, b);
            }
            STARTUP | REGISTER => reply(READY, Vec::new()),
            QUERY => {
                let q = long_string(&body);
                let (op, b) = query(&q, me, &state);
                if op == RESULT && is_user_table(&q) {
                    tokio::spawn(user_request(me, state, reply, b));
                } else {
                    reply(op, b);
                }
            }
            PREPARE => {
                let q = long_string(&body);
                let (id, b) = prepared(&q);
                state.prepared.lock().unwrap().insert(id, q);
                reply(RESULT, b)
            }
            EXECUTE => {
                let n = if body.len() >= 2 {
                    u16::from_be_bytes([body[0], body[1]]) as usize
                } else {
                    0
                };
                let id = body.get(2..2 + n).unwrap_or(&[]).to_vec();
                let q = state.prepared.lock().unwrap().get(&id).cloned();
                match q {
                    None => reply(ERROR, error(0x2500, "unprepared")),
                    Some(q) if !is_user_table(&q) => {
                        let (op, b) = query(&q, me, &state);
                        reply(op, b)
                    }
                    Some(_) => {
                        tokio::spawn(user_request(me, state, reply, void()));
                    }
                }
            }
            _ => reply(ERROR, error(0x000A, "unsupported")),
        }
    }
}

async fn user_request(me: usize, state: Arc<Shared>, reply: impl FnOnce(u8, Vec<u8>), ok: Vec<u8>) {
    let b = state.behaviour.lock().unwrap()[me];
    state.served.lock().unwrap()[me] += 1;
    match b {
        Behaviour::Answer => reply(RESULT, ok),
        Behaviour::Delay(ms) => {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            reply(RESULT, ok)
        }
        Behaviour::Fail => reply(ERROR, error(0x1001, "overloaded")),
        Behaviour::Hang => std::future::pending::<()>().await,
    }
}

fn is_user_table(q: &str) -> bool {
    !q.contains("system")
}

fn query(q: &str, me: usize, s: &Shared) -> (u8, Vec<u8>) {
    let text = (0x000D, None);
    let uuid = (0x000C, None);
    let inet = (0x0010, None);
    let set_text = (0x0022, Some(0x000D));
    let node_cols = |local: bool| {
        let mut c = vec![
            ("host_id", uuid),
            ("rpc_address", inet),
            ("data_center", text),
            ("rack", text),
            ("tokens", set_text),
        ];
        if local {
            c.push(("cluster_name", text));
        }
        c
    };
    let node_row = |i: usize, local: bool| {
        let n = &s.nodes[i];
        let mut r = vec![
            Some(n.host_id.to_be_bytes().to_vec()),
            Some(vec![127, 0, 0, 1 + i as u8]),
            Some(n.dc.as_bytes().to_vec()),
            Some(n.rack.as_bytes().to_vec()),
            Some(collection(n.tokens.iter().map(|t| t.to_string().into_bytes()))),
        ];
        if local {
            r.push(Some(b"fake".to_vec()));
        }
        r
    };
    if q.contains("system.local") {
        (RESULT, rows("system", "local", &node_cols(true), &[node_row(me, true)]))
    } else if q.contains("system.peers") {
        let peers: Vec<_> = (0..s.nodes.len()).filter(|&i| i != me).map(|i| node_row(i, false)).collect();
        (RESULT, rows("system", "peers", &node_cols(false), &peers))
    } else if q.contains("system_schema.keyspaces") {
        let mut map = Vec::new();
        put_int(&mut map, 2);
        for (k, v) in [
            ("class", "org.apache.cassandra.locator.SimpleStrategy".to_string()),
            ("replication_factor", s.rf.to_string()),
        ] {
            put_bytes(&mut map, k.as_bytes());
            put_bytes(&mut map, v.as_bytes());
        }
        let cols = [
            ("keyspace_name", text),
            ("replication", (0x0021, Some(0x000D))),
            ("durable_writes", (0x0004, None)),
        ];
        // A map's option is map<text, text>: handled in `rows` by the 0x0021 case.
        (
            RESULT,
            rows(
                "system_schema",
                "keyspaces",
                &cols,
                &[vec![Some(b"ks".to_vec()), Some(map), Some(vec![1])]],
            ),
        )
    } else if q.contains("system_schema.tables") {
        let cols = [("keyspace_name", text), ("table_name", text)];
        (
            RESULT,
            rows("system_schema", "tables", &cols, &[vec![Some(b"ks".to_vec()), Some(b"t".to_vec())]]),
        )
    } else if q.contains("system_schema.views") {
        let cols = [("keyspace_name", text), ("view_name", text), ("base_table_name", text)];
        (RESULT, rows("system_schema", "views", &cols, &[]))
    } else if q.contains("system") {
        (ERROR, error(0x2200, "unconfigured table"))
    } else {
        (RESULT, void())
    }
}

fn void() -> Vec<u8> {
    let mut b = Vec::new();
    put_int(&mut b, 1);
    b
}

/// A prepared statement on ks.t whose first bound value (`k bigint`) is the partition key, and
/// its id.
fn prepared(q: &str) -> (Vec<u8>, Vec<u8>) {
    let mut b = Vec::new();
    put_int(&mut b, 4);
    let id = q
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, c| (h ^ c as u64).wrapping_mul(0x0100_0000_01b3))
        .to_be_bytes();
    put_short(&mut b, id.len() as u16);
    b.extend_from_slice(&id);
    let binds = q.matches('?').count();
    put_int(&mut b, 0x0001); // global table spec
    put_int(&mut b, binds as i32);
    put_int(&mut b, binds.min(1) as i32);
    if binds > 0 {
        put_short(&mut b, 0);
    }
    put_string(&mut b, "ks");
    put_string(&mut b, "t");
    for i in 0..binds {
        put_string(&mut b, if i == 0 { "k" } else { "v" });
        put_short(&mut b, 0x0002); // bigint
    }
    put_int(&mut b, 0x0004); // result: no metadata
    put_int(&mut b, 0);
    (id.to_vec(), b)
}

type Col = (&'static str, (u16, Option<u16>));

fn rows(ks: &str, table: &str, cols: &[Col], data: &[Vec<Option<Vec<u8>>>]) -> Vec<u8> {
    let mut b = Vec::new();
    put_int(&mut b, 2);
    put_int(&mut b, 0x0001);
    put_int(&mut b, cols.len() as i32);
    put_string(&mut b, ks);
    put_string(&mut b, table);
    for (name, (ty, elem)) in cols {
        put_string(&mut b, name);
        put_short(&mut b, *ty);
        if let Some(e) = elem {
            put_short(&mut b, *e);
            if *ty == 0x0021 {
                put_short(&mut b, *e);
            }
        }
    }
    put_int(&mut b, data.len() as i32);
    for row in data {
        for cell in row {
            match cell {
                Some(v) => put_bytes(&mut b, v),
                None => put_int(&mut b, -1),
            }
        }
    }
    b
}

fn collection(items: impl ExactSizeIterator<Item = Vec<u8>>) -> Vec<u8> {
    let mut b = Vec::new();
    put_int(&mut b, items.len() as i32);
    for i in items {
        put_bytes(&mut b, &i);
    }
    b
}

fn error(code: i32, msg: &str) -> Vec<u8> {
    let mut b = Vec::new();
    put_int(&mut b, code);
    put_string(&mut b, msg);
    b
}

fn long_string(body: &[u8]) -> String {
    if body.len() < 4 {
        return String::new();
    }
    let n = (i32::from_be_bytes([body[0], body[1], body[2], body[3]]).max(0) as usize).min(body.len() - 4);
    String::from_utf8_lossy(&body[4..4 + n]).into_owned()
}

fn put_short(b: &mut Vec<u8>, v: u16) {
    b.extend_from_slice(&v.to_be_bytes());
}
fn put_int(b: &mut Vec<u8>, v: i32) {
    b.extend_from_slice(&v.to_be_bytes());
}
fn put_string(b: &mut Vec<u8>, s: &str) {
    put_short(b, s.len() as u16);
    b.extend_from_slice(s.as_bytes());
}
fn put_string_list(b: &mut Vec<u8>, l: &[&str]) {
    put_short(b, l.len() as u16);
    for s in l {
        put_string(b, s);
    }
}
fn put_bytes(b: &mut Vec<u8>, v: &[u8]) {
    put_int(b, v.len() as i32);
    b.extend_from_slice(v);
}

/// `n` routing infos of prepared reads of `ks.t` with tokens spread over the ring (xorshift
/// from a fixed seed): the requests the bench and the profile replay.
pub fn spread_routing_infos(n: usize) -> Vec<scylla::policies::load_balancing::RoutingInfo<'static>> {
    use scylla::frame::response::result::TableSpec;
    let spec: &'static TableSpec<'static> = Box::leak(Box::new(TableSpec::borrowed("ks", "t")));
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut info = scylla::policies::load_balancing::RoutingInfo::default();
            info.token = Some(scylla::routing::Token::new(x as i64));
            info.table = Some(spec);
            info
        })
        .collect()
}
