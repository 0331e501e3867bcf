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

pub use super::choice::DRIVER_DEFAULT;
use super::client_policy::Pending;
use super::keys::{key_bytes, value_for};
use super::open_loop::{self, Ctx, Ended, MultiKeys, Transport};
use super::report::{BenchReport, SecondReport};
use super::ClientChoice;
use super::{check_bench_options, BenchOptions, MultiMode, MultiOptions, Outcome};
use replica_lb_driver::hit_rates::{HitRatePoller, HitRatePolling};
use replica_lb_driver::{AdapterStats, ReplicaLbPolicy};
use replica_lb_policy::{ConsistencyLevel, ParamValue};
use scylla::client::execution_profile::ExecutionProfile;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::errors::{DbError, ExecutionError, RequestAttemptError};
use scylla::policies::load_balancing::DefaultPolicy;
use scylla::response::query_result::QueryResult;
use scylla::statement::prepared::PreparedStatement;
use scylla::statement::Consistency;
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The keyspace `load` and `bench` use.
pub const KEYSPACE: &str = "replica_lb";
/// Its table of keys and values.
pub const TABLE: &str = "kv";
/// How long connecting to a cluster may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

/// Where the cluster is and how the session chooses coordinators.
#[derive(Clone, Debug)]
pub struct CqlTarget {
    /// Contact points (at least one).
    pub contact_points: Vec<SocketAddr>,
    /// The client policy: a project policy with its parameters, or the driver's own.
    pub policy: ClientChoice,
    /// Seed of the policy's random choices.
    pub seed: u64,
    /// Replication factor of the keyspace `load` creates.
    pub replication_factor: u32,
    /// For `hwlb-client`: how the nodes' hit rates are polled off the request path
    /// ([`replica_lb_driver::hit_rates`]); `None` = the published tracker on the row cache.
    pub hit_rates: Option<HitRatePolling>,
}

/// A connected session with its policy (and, for `hwlb-client`, the hit-rate poller, stopped
/// when the session is dropped).
pub struct CqlSession {
    pub(super) session: Arc<Session>,
    adapter: Option<Arc<ReplicaLbPolicy>>,
    policy: String,
    poller: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for CqlSession {
    fn drop(&mut self) {
        if let Some(p) = self.poller.take() {
            p.abort();
        }
    }
}

fn consistency(cl: ConsistencyLevel) -> Consistency {
    match cl {
        ConsistencyLevel::One => Consistency::One,
        ConsistencyLevel::Two => Consistency::Two,
        ConsistencyLevel::Quorum => Consistency::Quorum,
        ConsistencyLevel::All => Consistency::All,
    }
}

/// Connects to `target` with its policy at consistency `cl` and request time-out `timeout`.
pub async fn connect(target: &CqlTarget, cl: ConsistencyLevel, timeout: Duration) -> Result<CqlSession, String> {
    if target.contact_points.is_empty() {
        return Err("no contact points".into());
    }
    let (profile, adapter, polls_hit_rates) = match &target.policy {
        ClientChoice::Java(p) => {
            return Err(format!(
                "{} runs through the Java driver (bench --driver java), not in a scylla driver session",
                p.name()
            ))
        }
        ClientChoice::DriverDefault => {
            let p = DefaultPolicy::builder().token_aware(true).build();
            (ExecutionProfile::builder().load_balancing_policy(p), None, false)
        }
        ClientChoice::Policy(choice) => {
            let mut b = ReplicaLbPolicy::builder(choice.name()).seed(target.seed);
            for (name, value) in choice.params() {
                b = match value {
                    ParamValue::Int(v) => b.param(name, *v),
                    ParamValue::Float(v) => b.param(name, *v),
                    ParamValue::Bool(v) => b.param(name, *v),
                    ParamValue::Text(v) => b.param(name, v.as_str()),
                };
            }
            let p = b.build().map_err(|e| e.to_string())?;
            (
                ExecutionProfile::builder().load_balancing_policy(p.clone()),
                Some(p),
                target.policy.polls_hit_rates(),
            )
        }
    };
    let profile = profile.consistency(consistency(cl)).request_timeout(Some(timeout)).build();
    let mut builder = SessionBuilder::new().default_execution_profile_handle(profile.into_handle());
    for cp in &target.contact_points {
        builder = builder.known_node_addr(*cp);
    }
    let session = tokio::time::timeout(CONNECT_TIMEOUT, builder.build())
        .await
        .map_err(|_| {
            format!(
                "no answer from {} within {} s",
                list(&target.contact_points),
                CONNECT_TIMEOUT.as_secs()
            )
        })?
        .map_err(|e| format!("cannot connect to {}: {e}", list(&target.contact_points)))?;
    let session = Arc::new(session);
    // hwlb-client learns every node's hit rate off the request path.
    let poller = match &adapter {
        Some(policy) if polls_hit_rates => {
            let opts = target.hit_rates.clone().unwrap_or_default();
            let poller = HitRatePoller::new(opts).map_err(|e| format!("hit-rate polling: {e}"))?;
            Some(tokio::spawn(poller.run(session.clone(), policy.clone())))
        }
        _ => None,
    };
    Ok(CqlSession {
        session,
        adapter,
        policy: target.policy.name().to_string(),
        poller,
    })
}

fn list(addrs: &[SocketAddr]) -> String {
    addrs.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(",")
}

/// Parses `HOST:PORT[,HOST:PORT...]` (each an IP address and port).
pub fn parse_contact_points(text: &str) -> Result<Vec<SocketAddr>, String> {
    let mut out = Vec::new();
    for item in text.split(',').map(str::trim) {
        let addr: SocketAddr = item
            .parse()
            .map_err(|_| format!("--contact-points: '{item}' is not IP:PORT (for example 127.0.0.1:9042)"))?;
        out.push(addr);
    }
    Ok(out)
}

pub(super) async fn prepare(s: &Session, cql: &str) -> Result<PreparedStatement, String> {
    s.prepare(cql).await.map_err(|e| format!("cannot prepare '{cql}': {e}"))
}

pub use super::cql_load::load;

/// `bench`'s report through the driver: the node cluster's report plus what the driver saw.
#[derive(Clone, Debug, Serialize)]
pub struct CqlBenchReport {
    /// The same fields as the node cluster's report.
    #[serde(flatten)]
    pub report: BenchReport,
    /// `cql`: requests went through the scylla Rust driver; `java`: through the Apache
    /// Cassandra Java driver.
    pub transport: &'static str,
    /// Requests each node coordinated (answered ones), by its address.
    pub coordinators: BTreeMap<String, u64>,
    /// The adapter's counters (absent for `driver-default` and `java:default`).
    pub adapter: Option<AdapterCounters>,
}

/// The adapter's counters as the report shows them (the Rust adapter's, or the Java driver's
/// `ReplicaLbLoadBalancingPolicy`'s: the same names, the same meaning).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AdapterCounters {
    /// Picks that opened a ticket.
    pub picks: u64,
    /// Attempt ends matched to a pick.
    pub matched: u64,
    /// Attempt ends without a ticket (retries, speculative attempts).
    pub untracked: u64,
    /// Tickets that expired unmatched.
    pub expired: u64,
    /// Tickets still open at the end.
    pub open: u64,
    /// Picks the policy could not plan, served in candidate order instead.
    pub overridden: u64,
    /// Callbacks about nodes beyond the node table's bound, ignored.
    pub unmapped: u64,
    /// The Java driver's hit-rate polls (absent for the Rust adapter, whose poller reports
    /// nothing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hit_rates: Option<HitRatePollCounters>,
}

/// What the Java driver's hit-rate poller did (`replica_lb_hwlb.node` on every node).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HitRatePollCounters {
    /// Rates read and told the policy.
    pub read: u64,
    /// Reads of nodes without the plug-in's table.
    pub missing: u64,
    /// Reads that failed otherwise.
    pub failed: u64,
}

impl From<AdapterStats> for AdapterCounters {
    fn from(s: AdapterStats) -> Self {
        AdapterCounters {
            picks: s.picks,
            matched: s.matched,
            untracked: s.untracked,
            expired: s.expired,
            open: s.open,
            overridden: s.overridden,
            unmapped: s.unmapped,
            hit_rates: None,
        }
    }
}

/// One finished request, as [`CqlHooks::on_done`] receives it (`coordinator`: the node that
/// coordinated an answered request).
pub type CqlCompletion = Ended<SocketAddr>;

/// Extras for an experiment driving [`bench_with`].
#[derive(Default)]
pub struct CqlHooks<'a> {
    /// Told the run's time origin once the transport is ready (default: the origin is then,
    /// told to no one).
    pub start: Option<&'a RunStart>,
    /// Called for every finished request, in the dispatcher thread.
    pub on_done: Option<&'a mut dyn FnMut(&CqlCompletion)>,
}

/// The moment a run's load starts, set by the transport once it is ready (connected, its
/// statements prepared, the Java driver's JVM started) and waited for by whatever is timed
/// from it (an experiment's faults and samples). An open loop timed from before the setup
/// would send the setup's worth of requests late, all at once: a JVM that took 3 s to start
/// put p99 near 3 s in every Java driver run.
#[derive(Debug, Default)]
pub struct RunStart {
    at: Mutex<Option<Instant>>,
    set: Condvar,
}

impl RunStart {
    /// Not started yet.
    pub fn new() -> Self {
        RunStart::default()
    }

    /// Starts the run now, or returns when it was started (the first call wins).
    pub fn start_now(&self) -> Instant {
        let mut at = self.at.lock().unwrap_or_else(PoisonError::into_inner);
        let t0 = *at.get_or_insert_with(Instant::now);
        self.set.notify_all();
        t0
    }

    /// When the run started, if it has.
    pub fn get(&self) -> Option<Instant> {
        *self.at.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for the start; `None` once `stop` is set first (the run failed before it).
    pub fn wait(&self, stop: &AtomicBool) -> Option<Instant> {
        let mut at = self.at.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(t0) = *at {
                return Some(t0);
            }
            if stop.load(Ordering::Relaxed) {
                return None;
            }
            at = self
                .set
                .wait_timeout(at, Duration::from_millis(50))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_start_is_set_once_and_heard_by_its_waiters() {
        let start = RunStart::new();
        let stop = AtomicBool::new(false);
        assert_eq!(start.get(), None);
        let heard = std::thread::scope(|scope| {
            let waiter = scope.spawn(|| start.wait(&stop));
            std::thread::sleep(Duration::from_millis(20));
            let t0 = start.start_now();
            assert_eq!(start.start_now(), t0, "the first call wins");
            (waiter.join().unwrap(), t0)
        });
        assert_eq!(heard.0, Some(heard.1));
        // A run that fails before it starts lets its waiters go.
        let never = RunStart::new();
        stop.store(true, Ordering::Relaxed);
        assert_eq!(never.wait(&stop), None);
    }

    #[test]
    fn contact_points_are_checked() {
        assert_eq!(
            parse_contact_points("127.0.0.1:9042, 127.0.0.2:9042").unwrap(),
            vec!["127.0.0.1:9042".parse().unwrap(), "127.0.0.2:9042".parse().unwrap()]
        );
        let e = parse_contact_points("127.0.0.1").unwrap_err();
        assert!(e.contains("'127.0.0.1' is not IP:PORT"), "{e}");
        assert!(parse_contact_points("").is_err());
    }
}
