//! What both drivers' transports share (the scylla Rust driver's, [`crate::cql`], and the
//! Java driver's, [`crate::java`]): where the cluster is ([`CqlTarget`]) and a session to it,
//! the keyspace and table, the report a run through a driver gives, its hooks, and the moment
//! its load starts ([`RunStart`]).

use crate::choice::ClientChoice;
pub use crate::choice::DRIVER_DEFAULT;
use crate::open_loop::Ended;
use crate::report::BenchReport;
use replica_lb_driver::hit_rates::{HitRatePoller, HitRatePolling};
use replica_lb_driver::{AdapterStats, ReplicaLbPolicy};
use replica_lb_policy::ConsistencyLevel;
use scylla::client::execution_profile::ExecutionProfile;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::policies::load_balancing::DefaultPolicy;
use scylla::statement::prepared::PreparedStatement;
use scylla::statement::Consistency;
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

pub use replica_lb_cassandra::cql::{KEYSPACE, TABLE};
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
    pub(crate) session: Arc<Session>,
    pub(crate) adapter: Option<Arc<ReplicaLbPolicy>>,
    pub(crate) policy: String,
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
            let p = ReplicaLbPolicy::builder_for(choice)
                .seed(target.seed)
                .build()
                .map_err(|e| e.to_string())?;
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

/// `--contact-points` parsed: one or more CQL addresses (a type of its own so a flag holds the
/// whole list).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContactPoints(pub Vec<SocketAddr>);

impl ContactPoints {
    /// Parses `HOST[:PORT][,HOST[:PORT]...]` ([`parse_contact_points`]).
    pub fn parse(text: &str) -> Result<ContactPoints, String> {
        parse_contact_points(text).map(ContactPoints)
    }
}

/// The CQL port a contact point without one gets.
pub const DEFAULT_CQL_PORT: u16 = 9042;

/// Parses `HOST[:PORT][,HOST[:PORT]...]`: each an IP address, with its port or CQL's 9042.
pub fn parse_contact_points(text: &str) -> Result<Vec<SocketAddr>, String> {
    let mut out = Vec::new();
    for item in text.split(',').map(str::trim) {
        let addr = match (item.parse::<SocketAddr>(), item.parse::<std::net::IpAddr>()) {
            (Ok(a), _) => a,
            (_, Ok(ip)) => SocketAddr::new(ip, DEFAULT_CQL_PORT),
            _ => {
                return Err(format!(
                    "--contact-points: '{item}' is not IP or IP:PORT (for example 127.0.0.1 or 127.0.0.1:9042)"
                ))
            }
        };
        out.push(addr);
    }
    Ok(out)
}

pub(crate) async fn prepare(s: &Session, cql: &str) -> Result<PreparedStatement, String> {
    s.prepare(cql).await.map_err(|e| format!("cannot prepare '{cql}': {e}"))
}

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
        assert_eq!(
            parse_contact_points("127.0.0.3").unwrap(),
            vec!["127.0.0.3:9042".parse().unwrap()],
            "CQL's port by default"
        );
        let e = parse_contact_points("localhost:9042").unwrap_err();
        assert!(e.contains("'localhost:9042' is not IP or IP:PORT"), "{e}");
        assert!(parse_contact_points("").is_err());
    }
}
