//! `load` and `bench` through the real scylla Rust driver, for Apache Cassandra and ScyllaDB
//! (`--contact-points`, or `--cluster D` on a cluster from `cluster up --engine cassandra`).
//!
//! The driver chooses each request's coordinator with the load-balancing policy of the
//! session: any client-side policy of the project through [`replica_lb_driver::ReplicaLbPolicy`],
//! or the driver's own token-aware `DefaultPolicy` ([`DRIVER_DEFAULT`], the baseline). A
//! target whose policy is the Java driver's (`java:NAME`) runs through [`super::java`] instead,
//! with the same report. Reads and
//! writes are prepared statements (the only ones that carry a token). The method is the node
//! cluster's, the one open loop ([`super::open_loop`]) over this transport: intended send
//! times, latency from the intended send time, per-second lines and the same JSON report, plus which node
//! coordinated how many requests and the adapter's counters.
//!
//! Multi-key requests (`bench --multi K`, [`bench_multi`]): `parallel` sends K prepared
//! single-key reads at once (each routed by the policy with its own token) and ends with the
//! last; `in` sends one prepared `SELECT k, v ... WHERE k IN ?` with the K keys bound as a
//! list: it carries no single token, so the driver's policy chooses its coordinator without one
//! (any live node of the local datacenter, for the adapter as for `driver-default`), as the
//! simulator's `in` does. The whole request has the one time-out.

use crate::choice::ClientChoice;
pub use crate::choice::DRIVER_DEFAULT;
use crate::client_policy::Pending;
use crate::keys::{key_bytes, value_for};
use crate::open_loop::{self, Ctx, Ended, MultiKeys, Transport};
use crate::options::{check_bench_options, BenchOptions, MultiOptions};
use crate::report::{BenchReport, SecondReport};
use replica_lb_metrics::Outcome;
use replica_lb_workload::scenario::MultiMode;
use scylla::client::session::Session;
use scylla::errors::{DbError, ExecutionError, RequestAttemptError};
use scylla::response::query_result::QueryResult;
use scylla::statement::prepared::PreparedStatement;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use crate::cql_load::load;
use crate::cql_session::prepare;
pub use crate::cql_session::{
    connect, parse_contact_points, AdapterCounters, ContactPoints, CqlBenchReport, CqlCompletion, CqlHooks, CqlSession, CqlTarget,
    HitRatePollCounters, RunStart, CONNECT_TIMEOUT, KEYSPACE, TABLE,
};

/// Runs the open-loop benchmark through the driver on `rt` (call from outside the runtime).
pub fn bench(
    rt: &tokio::runtime::Handle,
    target: &CqlTarget,
    opts: &BenchOptions,
    on_second: &mut dyn FnMut(&SecondReport),
) -> Result<CqlBenchReport, String> {
    bench_with(rt, target, opts, on_second, CqlHooks::default())
}

/// [`bench`] where every request reads `multi.keys` distinct keys (`bench --multi`).
pub fn bench_multi(
    rt: &tokio::runtime::Handle,
    target: &CqlTarget,
    opts: &BenchOptions,
    multi: &MultiOptions,
    on_second: &mut dyn FnMut(&SecondReport),
) -> Result<CqlBenchReport, String> {
    multi.check(opts)?;
    run(rt, target, opts, Some(*multi), on_second, CqlHooks::default())
}

/// [`bench`] with an experiment's extras: a shared time origin and every request's end.
pub fn bench_with(
    rt: &tokio::runtime::Handle,
    target: &CqlTarget,
    opts: &BenchOptions,
    on_second: &mut dyn FnMut(&SecondReport),
    hooks: CqlHooks<'_>,
) -> Result<CqlBenchReport, String> {
    run(rt, target, opts, None, on_second, hooks)
}

/// The prepared statements of a run.
struct Statements {
    read: PreparedStatement,
    write: PreparedStatement,
    /// `SELECT k, v ... WHERE k IN ?`, prepared when the run sends `in` requests.
    read_in: Option<PreparedStatement>,
}

/// What one request does.
enum Call {
    /// Read or write one key.
    One { key: u64, read: bool },
    /// Read every key, one prepared read each, all at once.
    Parallel(Vec<u64>),
    /// Read every key in one `IN` query.
    In(Vec<u64>),
}

/// Runs one request's statements: its answer (a parallel request's first answer, when every
/// read answered; else its first failure).
async fn execute(s: &Session, st: &Statements, call: Call, value_bytes: usize) -> Result<QueryResult, ExecutionError> {
    match call {
        Call::One { key, read: true } => s.execute_unpaged(&st.read, (key_bytes(key).to_vec(),)).await,
        Call::One { key, read: false } => {
            s.execute_unpaged(&st.write, (key_bytes(key).to_vec(), value_for(key, value_bytes).to_vec()))
                .await
        }
        Call::In(keys) => {
            let list: Vec<Vec<u8>> = keys.iter().map(|&k| key_bytes(k).to_vec()).collect();
            let Some(stmt) = &st.read_in else {
                unreachable!("`run` prepares the IN statement for a run of `in` requests")
            };
            s.execute_unpaged(stmt, (list,)).await
        }
        Call::Parallel(keys) => {
            let reads = keys.iter().map(|&k| s.execute_unpaged(&st.read, (key_bytes(k).to_vec(),)));
            let mut first = None;
            // All at once; the request fails with its first failure, once every read ended.
            let mut failure = None;
            for r in join_all(reads).await {
                match r {
                    Ok(r) => {
                        first.get_or_insert(r);
                    }
                    Err(e) => {
                        failure.get_or_insert(e);
                    }
                }
            }
            match (failure, first) {
                (Some(e), _) => Err(e),
                (None, Some(r)) => Ok(r),
                // No keys (never: a multi-key request has at least 2).
                (None, None) => Err(ExecutionError::EmptyPlan),
            }
        }
    }
}

/// Polls every future until all are done (the request's reads, sent together).
async fn join_all<F: std::future::Future>(futures: impl Iterator<Item = F>) -> Vec<F::Output> {
    let mut futures: Vec<std::pin::Pin<Box<F>>> = futures.map(Box::pin).collect();
    let mut out: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (f, o) in futures.iter_mut().zip(out.iter_mut()) {
            if o.is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => *o = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out.into_iter().flatten().collect()
}

fn run(
    rt: &tokio::runtime::Handle,
    target: &CqlTarget,
    opts: &BenchOptions,
    multi: Option<MultiOptions>,
    on_second: &mut dyn FnMut(&SecondReport),
    hooks: CqlHooks<'_>,
) -> Result<CqlBenchReport, String> {
    check_bench_options(opts)?;
    if let ClientChoice::Java(policy) = &target.policy {
        return super::java::run(target, policy, opts, multi, on_second, hooks);
    }
    let timeout = Duration::from_millis(opts.timeout_ms as u64);
    let cs = rt.block_on(connect(target, opts.cl, timeout))?;
    let statements = rt.block_on(async {
        let r = prepare(&cs.session, &format!("SELECT v FROM {KEYSPACE}.kv WHERE k = ?")).await?;
        let w = prepare(&cs.session, &format!("INSERT INTO {KEYSPACE}.kv (k, v) VALUES (?, ?)")).await?;
        let read_in = match multi.map(|m| m.mode) {
            Some(MultiMode::In) => Some(prepare(&cs.session, &format!("SELECT k, v FROM {KEYSPACE}.kv WHERE k IN ?")).await?),
            _ => None,
        };
        Ok::<_, String>(Arc::new(Statements {
            read: r,
            write: w,
            read_in,
        }))
    })?;
    let mut cql = Cql {
        rt,
        session: cs.session.clone(),
        statements,
        timeout,
        value_bytes: opts.value_bytes,
        coordinators: BTreeMap::new(),
    };
    let start = hooks.start.map_or_else(Instant::now, RunStart::start_now);
    let totals = open_loop::run(&mut cql, opts, multi, start, on_second, hooks.on_done);
    let adapter = cs.adapter.as_ref().map(|a| a.stats());
    let mut report = BenchReport::new(opts, multi, totals, cs.policy.clone());
    report.feedback_replies = adapter.map_or(0, |a| a.runtime.replies);
    Ok(CqlBenchReport {
        report,
        transport: "cql",
        coordinators: cql.coordinators,
        adapter: adapter.map(AdapterCounters::from),
    })
}

/// The CQL transport's state for one run: the driver's session chooses each coordinator.
struct Cql<'a> {
    rt: &'a tokio::runtime::Handle,
    session: Arc<Session>,
    statements: Arc<Statements>,
    timeout: Duration,
    value_bytes: usize,
    /// Requests each node coordinated (answered ones), by its address.
    coordinators: BTreeMap<String, u64>,
}

impl Transport for Cql<'_> {
    type Node = SocketAddr;
    type Msg = CqlCompletion;

    fn issue(&mut self, p: Pending, multi: Option<MultiKeys<'_>>, _now: Instant, cx: &mut Ctx<'_, SocketAddr, CqlCompletion>) {
        cx.in_flight += 1;
        let (s, tx, st) = (self.session.clone(), cx.tx.clone(), self.statements.clone());
        let call = match multi {
            None => Call::One { key: p.key, read: p.read },
            Some(m) => match m.mode {
                MultiMode::Parallel => Call::Parallel(m.keys.to_vec()),
                MultiMode::In => Call::In(m.keys.to_vec()),
            },
        };
        let (value_bytes, timeout) = (self.value_bytes, self.timeout);
        self.rt.spawn(async move {
            let call = execute(&s, &st, call, value_bytes);
            let (outcome, coordinator) = match tokio::time::timeout(timeout, call).await {
                Ok(Ok(r)) => {
                    let a = r.request_coordinator().node().address;
                    (Outcome::Ok, Some(SocketAddr::new(a.ip(), a.port())))
                }
                // The driver's own request time-out (the same length as ours), or the
                // coordinator's read or write time-out.
                Ok(Err(ExecutionError::RequestTimeout(_)))
                | Ok(Err(ExecutionError::LastAttemptError(RequestAttemptError::DbError(
                    DbError::ReadTimeout { .. } | DbError::WriteTimeout { .. },
                    _,
                )))) => (Outcome::Timeout, None),
                Ok(Err(_)) => (Outcome::Error, None),
                Err(_) => (Outcome::Timeout, None),
            };
            let _ = tx.send(Ended {
                intended: p.intended,
                finished: Instant::now(),
                outcome,
                coordinator,
            });
        });
    }

    fn settle(&mut self, d: CqlCompletion, cx: &mut Ctx<'_, SocketAddr, CqlCompletion>) {
        cx.in_flight -= 1;
        if let (Outcome::Ok, Some(c)) = (d.outcome, d.coordinator) {
            *self.coordinators.entry(c.to_string()).or_insert(0) += 1;
        }
        cx.end(d.intended, d.finished, d.outcome, d.coordinator);
    }
}
