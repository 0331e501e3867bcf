//! `bench --driver java` and experiment items `java:NAME`: the same open-loop load
//! ([`super::open_loop`]) through the Apache Cassandra Java driver (4.19), what most Cassandra
//! applications run.
//!
//! The Java driver runs in a child JVM, `java/driver-runner` ([`program`]: built with Maven on
//! first use, cached, started with `java -cp`). The loop here keeps the schedule and the
//! intended send times; this transport sends each request to the JVM as one line
//! ([`protocol`]), the JVM executes it asynchronously with the driver (prepared statements,
//! the keyspace, table and queries of [`super::cql`], the driver's request time-out the run's)
//! and answers one line: ok with the node that coordinated it, time-out, or error. Latency
//! runs from the intended send time to when the answer was read, so the pipe's cost is in it.
//!
//! Nothing is silently lost: every line is checked (a malformed one fails the run with one
//! line naming it); a request whose answer does not come within its time-out and
//! [`GUARD`] is a time-out (a late answer is then ignored); if the JVM dies or stops, the
//! requests in flight count as errors, the loop stops and the run fails saying why. The JVM is
//! killed when the run ends, whatever happened. At the end the JVM reports the policy's
//! counters (none for the driver's own `DefaultLoadBalancingPolicy`).
//!
//! `java:default` is the driver's own policy; `java:NAME` any registered client policy, run in
//! the JVM by `ReplicaLbLoadBalancingPolicy` (`java/driver-policy`) over the policy's Java
//! port (`java/core`) with the run's parameters and seed; `java:hwlb-client` also reads every
//! node's hit rate from the replica-lb plug-in's table `replica_lb_hwlb.node`.

pub(crate) mod program;
pub mod protocol;

use crate::choice::ClientChoice;
use crate::choice::PolicyName;
pub use crate::choice::{JavaPolicy, JAVA_PREFIX};
use crate::client_policy::Pending;
use crate::cql_session::{AdapterCounters, CqlBenchReport, CqlHooks, CqlTarget, HitRatePollCounters, RunStart, KEYSPACE, TABLE};
use crate::keys::{key_bytes, value_for};
use crate::open_loop::{self, Ctx, MultiKeys, Transport};
use crate::options::{BenchOptions, MultiOptions};
use crate::report::{BenchReport, SecondReport};
use program::{Event, Msg, Runner};
use protocol::Reply;
use replica_lb_metrics::Outcome;
use replica_lb_policy::ParamTable;
use replica_lb_workload::scenario::MultiMode;
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long the JVM may take to start, connect and prepare its statements.
pub const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// How long past its time-out a request's answer may come before the transport ends it as a
/// time-out itself (the JVM's own time-out comes first).
pub const GUARD: Duration = Duration::from_secs(1);

/// Which driver `bench` sends requests through (`--driver`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driver {
    /// The scylla Rust driver (the default).
    Rust,
    /// The Apache Cassandra Java driver.
    Java,
}

impl Driver {
    /// Parses `rust` or `java`.
    pub fn parse(text: &str) -> Result<Driver, String> {
        match text {
            "rust" => Ok(Driver::Rust),
            "java" => Ok(Driver::Java),
            other => Err(format!("--driver '{other}' is not one of: rust, java")),
        }
    }
}

/// The client choice of `bench [--driver D] [--client-policy NAME]` on a CQL cluster: through
/// the Java driver NAME is one of its policies (its own `default` when absent; `java:`
/// optional before a client policy); through the Rust driver `driver-default` when absent;
/// without `--driver`, a `java:NAME` runs through the Java driver and anything else through
/// the Rust one.
pub fn bench_choice(driver: Option<Driver>, name: Option<&str>, params: ParamTable) -> Result<ClientChoice, String> {
    let name = match (driver, name) {
        (Some(Driver::Java), None) => PolicyName::JavaDefault,
        (Some(Driver::Java), Some(n)) => PolicyName::parse_in_java_driver(n)?,
        (_, None) => PolicyName::DriverDefault,
        (_, Some(n)) => PolicyName::parse(n)?,
    };
    if driver == Some(Driver::Rust) && matches!(name, PolicyName::Java(_) | PolicyName::JavaDefault) {
        return Err(format!(
            "--client-policy {name} is a policy of the Java driver: give --driver java (or leave --driver out)"
        ));
    }
    ClientChoice::new(name, params)
}

/// Runs `bench` (`multi`: multi-key requests) through the Java driver with `policy`.
pub(super) fn run(
    target: &CqlTarget,
    policy: &JavaPolicy,
    opts: &BenchOptions,
    multi: Option<MultiOptions>,
    on_second: &mut dyn FnMut(&SecondReport),
    hooks: CqlHooks<'_>,
) -> Result<CqlBenchReport, String> {
    if target.contact_points.is_empty() {
        return Err("no contact points".into());
    }
    let built = program::built(&mut |line| eprintln!("{line}"))?;
    let (tx, rx) = mpsc::channel();
    let runner = Runner::start(&built, tx)?;
    run_on(runner, &rx, target, policy, opts, multi, on_second, hooks)
}

/// [`run`] on a started runner whose lines come to `rx`.
#[allow(clippy::too_many_arguments)]
fn run_on(
    mut runner: Runner,
    rx: &mpsc::Receiver<Msg>,
    target: &CqlTarget,
    policy: &JavaPolicy,
    opts: &BenchOptions,
    multi: Option<MultiOptions>,
    on_second: &mut dyn FnMut(&SecondReport),
    hooks: CqlHooks<'_>,
) -> Result<CqlBenchReport, String> {
    let hit_rate_poll_ms = match policy.polls_hit_rates() {
        true => u64::try_from(target.hit_rates.clone().unwrap_or_default().every.as_millis()).unwrap_or(u64::MAX),
        false => 0,
    };
    runner.send(&protocol::hello(&protocol::Hello {
        contact_points: &target.contact_points,
        policy: policy.runner_name(),
        params: &policy.params(),
        seed: target.seed,
        hit_rate_poll_ms,
        cl: opts.cl,
        timeout_ms: opts.timeout_ms,
        keyspace: KEYSPACE,
        table: TABLE,
    }))?;
    ready(&mut runner, rx)?;
    let mut java = Java {
        runner,
        routed: false,
        wire: String::with_capacity(1 << 16),
        next_id: 0,
        out: BTreeMap::new(),
        deadlines: VecDeque::new(),
        expired: HashSet::new(),
        timeout: Duration::from_millis(u64::from(opts.timeout_ms)),
        value_bytes: opts.value_bytes,
        coordinators: BTreeMap::new(),
        failure: None,
    };
    let start = hooks.start.map_or_else(Instant::now, RunStart::start_now);
    let totals = open_loop::run(&mut java, opts, multi, start, on_second, hooks.on_done);
    if let Some(failure) = java.failure.take() {
        return Err(failure);
    }
    let counters = finish(&mut java.runner, java.timeout)?;
    let report = BenchReport::new(opts, multi, totals, policy.name());
    Ok(CqlBenchReport {
        report,
        transport: "java",
        coordinators: java.coordinators,
        adapter: counters,
    })
}

/// Waits for `ready` (or why not).
fn ready(runner: &mut Runner, rx: &mpsc::Receiver<Msg>) -> Result<(), String> {
    let Ok(msg) = rx.recv_timeout(READY_TIMEOUT) else {
        return Err(format!(
            "the Java driver's runner was not ready within {} s ({})",
            READY_TIMEOUT.as_secs(),
            runner.exit()
        ));
    };
    match msg.event {
        Event::Line(Reply::Ready { version, .. }) if version == protocol::VERSION => Ok(()),
        Event::Line(Reply::Ready { version, .. }) => Err(format!(
            "the Java driver's runner speaks protocol version {version}, this program {}",
            protocol::VERSION
        )),
        Event::Line(Reply::Fatal(m)) => Err(format!("the Java driver: {m}")),
        Event::Line(other) => Err(format!("the Java driver's runner answered {other:?} before it was ready")),
        Event::Malformed(e) => Err(e),
        Event::Closed => Err(format!("the Java driver's runner exited before it was ready ({})", runner.exit())),
    }
}

/// Ends the run: `end`, then the policy's counters and `bye`; the JVM exits.
fn finish(runner: &mut Runner, timeout: Duration) -> Result<Option<AdapterCounters>, String> {
    let (tx, rx) = mpsc::channel();
    runner.route(tx);
    runner.send(protocol::END)?;
    let deadline = Instant::now() + timeout + Duration::from_secs(10);
    let mut stats = None;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(msg) = rx.recv_timeout(left) else {
            return Err(format!("the Java driver's runner did not finish ({})", runner.exit()));
        };
        match msg.event {
            Event::Line(Reply::Stats(c)) => stats = Some(counters(&c)?),
            Event::Line(Reply::Bye) => break,
            // Late answers to requests already ended as time-outs.
            Event::Line(Reply::Ok { .. } | Reply::Timeout { .. } | Reply::Error { .. }) => {}
            Event::Line(Reply::Fatal(m)) => return Err(format!("the Java driver: {m}")),
            Event::Line(Reply::Ready { .. }) => return Err("the Java driver's runner said ready twice".into()),
            Event::Malformed(e) => return Err(e),
            Event::Closed => return Err(format!("the Java driver's runner exited before its counters ({})", runner.exit())),
        }
    }
    runner.close_input();
    runner.wait_exit(Duration::from_secs(5));
    stats.ok_or_else(|| "the Java driver's runner said bye without its counters".to_string())
}

/// The policy's counters as the report shows them: none (the driver's own policy), or every
/// one of `ReplicaLbLoadBalancingPolicy`'s (`Counters.asMap` in java/driver-policy).
fn counters(c: &[(String, u64)]) -> Result<Option<AdapterCounters>, String> {
    if c.is_empty() {
        return Ok(None);
    }
    let mut out = AdapterCounters::default();
    let mut polls = HitRatePollCounters::default();
    let names = JAVA_COUNTERS.join(", ");
    let mut seen = 0;
    for (name, v) in c {
        let slot = match name.as_str() {
            "picks" => &mut out.picks,
            "matched" => &mut out.matched,
            "untracked" => &mut out.untracked,
            "expired" => &mut out.expired,
            "open" => &mut out.open,
            "overridden" => &mut out.overridden,
            "unmapped" => &mut out.unmapped,
            "hit_rate_polls" => &mut polls.read,
            "hit_rate_missing" => &mut polls.missing,
            "hit_rate_failed" => &mut polls.failed,
            other => {
                return Err(format!(
                    "the Java driver's runner reported an unknown counter '{other}' (known: {names})"
                ))
            }
        };
        *slot = *v;
        seen += 1;
    }
    if seen != JAVA_COUNTERS.len() {
        return Err(format!(
            "the Java driver's runner reported {seen} of the {} counters ({names})",
            JAVA_COUNTERS.len()
        ));
    }
    out.hit_rates = Some(polls);
    Ok(Some(out))
}

/// The counters the runner reports for a replica-lb policy, by name.
const JAVA_COUNTERS: [&str; 10] = [
    "picks",
    "matched",
    "untracked",
    "expired",
    "open",
    "overridden",
    "unmapped",
    "hit_rate_polls",
    "hit_rate_missing",
    "hit_rate_failed",
];

/// The Java transport's state for one run.
struct Java {
    runner: Runner,
    /// Whether the reader sends to the loop's channel yet.
    routed: bool,
    /// Request lines not yet written to the JVM.
    wire: String,
    next_id: u64,
    /// Requests out, by id: their intended send times.
    out: BTreeMap<u64, Instant>,
    /// When each request out is ended as a time-out here, in the order they were sent.
    deadlines: VecDeque<(Instant, u64)>,
    /// Requests ended here as time-outs whose answer may still come.
    expired: HashSet<u64>,
    timeout: Duration,
    value_bytes: usize,
    /// Requests each node coordinated (answered ones), by its address.
    coordinators: BTreeMap<String, u64>,
    /// Why the run failed (the JVM died, stopped, or broke the protocol).
    failure: Option<String>,
}

impl Java {
    /// Ends request `id` as the JVM answered it.
    fn answered(&mut self, id: u64, at: Instant, outcome: Outcome, coordinator: Option<SocketAddr>, cx: &mut Ctx<'_, SocketAddr, Msg>) {
        if let Some(intended) = self.out.remove(&id) {
            cx.in_flight -= 1;
            if let (Outcome::Ok, Some(c)) = (outcome, coordinator) {
                *self.coordinators.entry(c.to_string()).or_insert(0) += 1;
            }
            cx.end(intended, at, outcome, coordinator);
        } else if !self.expired.remove(&id) {
            self.fail(format!("the Java driver's runner answered request {id}, which is not out"), cx);
        }
    }

    /// Fails the run with `why`: the JVM is killed, every request out ends as an error.
    fn fail(&mut self, why: String, cx: &mut Ctx<'_, SocketAddr, Msg>) {
        self.runner.kill();
        let now = Instant::now();
        let lost = self.out.len();
        for (_, intended) in std::mem::take(&mut self.out) {
            cx.in_flight -= 1;
            cx.end(intended, now, Outcome::Error, None);
        }
        self.deadlines.clear();
        self.wire.clear();
        if self.failure.is_none() {
            self.failure = Some(format!("{why}; {lost} request(s) in flight counted as errors"));
        }
    }
}

impl Transport for Java {
    type Node = SocketAddr;
    type Msg = Msg;

    fn begin_round(&mut self, cx: &mut Ctx<'_, SocketAddr, Msg>) {
        if !self.routed {
            self.runner.route(cx.tx.clone());
            self.routed = true;
        }
    }

    fn issue(&mut self, p: Pending, multi: Option<MultiKeys<'_>>, now: Instant, cx: &mut Ctx<'_, SocketAddr, Msg>) {
        if self.failure.is_some() {
            cx.end(p.intended, now, Outcome::Error, None);
            return;
        }
        let id = self.next_id;
        self.next_id += 1;
        match multi {
            None if p.read => protocol::push_read(&mut self.wire, id, &key_bytes(p.key)),
            None => protocol::push_write(&mut self.wire, id, &key_bytes(p.key), &value_for(p.key, self.value_bytes)),
            Some(m) => {
                let keys: Vec<_> = m.keys.iter().map(|&k| key_bytes(k)).collect();
                protocol::push_multi(&mut self.wire, id, m.mode == MultiMode::In, keys.iter().map(|k| &k[..]));
            }
        }
        self.out.insert(id, p.intended);
        self.deadlines.push_back((now + self.timeout + GUARD, id));
        cx.in_flight += 1;
    }

    fn settle(&mut self, msg: Msg, cx: &mut Ctx<'_, SocketAddr, Msg>) {
        if self.failure.is_some() {
            return;
        }
        match msg.event {
            Event::Line(Reply::Ok { id, coordinator }) => self.answered(id, msg.at, Outcome::Ok, coordinator, cx),
            Event::Line(Reply::Timeout { id }) => self.answered(id, msg.at, Outcome::Timeout, None, cx),
            Event::Line(Reply::Error { id, .. }) => self.answered(id, msg.at, Outcome::Error, None, cx),
            Event::Line(Reply::Fatal(m)) => self.fail(format!("the Java driver stopped: {m}"), cx),
            Event::Line(other) => self.fail(format!("the Java driver's runner sent {other:?} during the run"), cx),
            Event::Malformed(e) => self.fail(e, cx),
            Event::Closed => {
                let why = format!("the Java driver's runner exited during the run ({})", self.runner.exit());
                self.fail(why, cx);
            }
        }
    }

    fn pump(&mut self, now: Instant, cx: &mut Ctx<'_, SocketAddr, Msg>) {
        if self.failure.is_some() {
            return;
        }
        if !self.wire.is_empty() {
            let sent = self.runner.send(&self.wire);
            self.wire.clear();
            if let Err(e) = sent {
                return self.fail(e, cx);
            }
        }
        while let Some(&(deadline, id)) = self.deadlines.front() {
            if deadline > now {
                break;
            }
            self.deadlines.pop_front();
            if let Some(intended) = self.out.remove(&id) {
                cx.in_flight -= 1;
                cx.end(intended, now, Outcome::Timeout, None);
                self.expired.insert(id);
            }
        }
    }

    fn wake_at(&self, _start: Instant) -> Option<Instant> {
        self.deadlines.front().map(|&(at, _)| at)
    }

    fn broken(&self) -> bool {
        self.failure.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::key_spec;
    use crate::options::Arrivals;
    use replica_lb_policy::ParamValue;

    fn options(duration_s: f64) -> BenchOptions {
        BenchOptions {
            rate: 200.0,
            duration_s,
            cl: replica_lb_policy::ConsistencyLevel::One,
            keys: key_spec("uniform", 100, 0.1, 0.9).unwrap(),
            read_fraction: 0.9,
            value_bytes: 10,
            timeout_ms: 2000,
            max_in_flight: 1000,
            arrivals: Arrivals::Poisson,
            seed: 1,
            verify: false,
            zone: None,
        }
    }

    /// A bench run of 0.5 s against a stand-in runner, the shell `script`; also counts the
    /// ends the hook heard, by outcome (ok, error, time-out).
    fn fake(script: &str) -> (Result<CqlBenchReport, String>, [u64; 3]) {
        let (r, ends, _) = fake_with(script, JavaPolicy::Default);
        (r, ends)
    }

    /// [`fake`] with `policy`; also how long after the runner was spawned the run's clock
    /// started ([`RunStart`]), if it did.
    fn fake_with(script: &str, policy: JavaPolicy) -> (Result<CqlBenchReport, String>, [u64; 3], Option<Duration>) {
        let spawned = Instant::now();
        let (tx, rx) = mpsc::channel();
        let mut sh = std::process::Command::new("sh");
        sh.args(["-c", script]);
        let runner = Runner::spawn(sh, tx).unwrap();
        let target = CqlTarget {
            contact_points: vec!["127.0.1.1:9042".parse().unwrap()],
            policy: ClientChoice::Java(policy.clone()),
            seed: 1,
            replication_factor: 3,
            hit_rates: None,
        };
        let mut ends = [0u64; 3];
        let start = RunStart::new();
        let mut on_done = |e: &crate::cql_session::CqlCompletion| {
            ends[match e.outcome {
                Outcome::Ok => 0,
                Outcome::Error => 1,
                Outcome::Timeout => 2,
            }] += 1;
            let t0 = start.get().expect("requests end only after the run started");
            assert!(e.intended >= t0, "no request is intended before the start");
        };
        let hooks = CqlHooks {
            start: Some(&start),
            on_done: Some(&mut on_done),
        };
        let r = run_on(runner, &rx, &target, &policy, &options(0.5), None, &mut |_| {}, hooks);
        let started_after = start.get().map(|t0| t0.duration_since(spawned));
        (r, ends, started_after)
    }

    /// Answers `ready`, then every request with `ANSWER` (shell words; `$id` is its id).
    fn answering(answer: &str) -> String {
        format!(
            "read hello; echo 'ready 1 driver=stand-in'; while read verb id rest; do \
             case $verb in end) echo stats; echo bye; exit 0;; *) echo \"{answer}\";; esac; done"
        )
    }

    #[test]
    fn the_run_starts_when_the_runner_is_ready_not_before() {
        // A runner that takes 1.5 s to start: the run's clock, which an experiment's faults and
        // samples wait for, starts at its `ready`, so no request waits for the start-up (its
        // latency would otherwise count it, as in the first Java runs: p99 near 3 s).
        let (r, _, started_after) = fake_with(
            "sleep 1.5; read hello; echo 'ready 1'; while read verb id rest; do \
             case $verb in end) echo stats; echo bye; exit 0;; *) echo \"ok $id 127.0.1.1:9042\";; esac; done",
            JavaPolicy::Default,
        );
        let started_after = started_after.expect("the run started");
        assert!(
            started_after >= Duration::from_millis(1400),
            "the clock started {started_after:?} after the spawn"
        );
        let r = r.unwrap();
        assert!(r.report.completed > 50, "{}", r.report.completed);
        assert!(r.report.latency_ms.max < 1000.0, "max latency {} ms", r.report.latency_ms.max);
    }

    #[test]
    fn every_request_ends_once_with_its_coordinator() {
        let (r, ends) = fake(&answering("ok $id 127.0.1.$((id % 3 + 1)):9042"));
        let r = r.unwrap();
        assert_eq!(r.transport, "java");
        assert_eq!(r.report.client_policy, "java:default");
        assert!(r.report.requests > 50, "{}", r.report.requests);
        assert_eq!(r.report.completed, r.report.requests);
        assert_eq!(ends, [r.report.requests, 0, 0]);
        assert_eq!(r.coordinators.len(), 3);
        assert_eq!(r.coordinators.values().sum::<u64>(), r.report.completed);
        assert!(r.adapter.is_none());
        // Time-outs and errors as the runner says them.
        let (r, ends) = fake(&answering("timeout $id"));
        let r = r.unwrap();
        assert_eq!((r.report.timeouts, r.report.completed), (r.report.requests, 0));
        assert_eq!(ends[2], r.report.requests);
        let (r, ends) = fake(&answering("error $id NoNodeAvailableException: none"));
        let r = r.unwrap();
        assert_eq!((r.report.errors, ends[1]), (r.report.requests, r.report.requests));
    }

    #[test]
    fn a_client_policy_gets_its_parameters_and_seed_and_reports_its_counters() {
        let mut p = ParamTable::new();
        p.insert("concurrency_weight".into(), ParamValue::Int(3));
        let c3 = JavaPolicy::of(replica_lb_policy::registry::find("c3").unwrap(), p).unwrap();
        // The stand-in checks the hello line, then answers every request from node 1.
        let script = "read hello; case \"$hello\" in \
            *' policy=c3 '*' seed=1 hit_rate_poll_ms=0 param.concurrency_weight=3') echo 'ready 1';; \
            *) echo \"fatal unexpected $hello\"; exit 1;; esac; \
            while read verb id rest; do case $verb in \
            end) echo 'stats picks=5 matched=4 untracked=1 expired=1 open=0 overridden=0 unmapped=0 hit_rate_polls=0 hit_rate_missing=2 hit_rate_failed=0'; echo bye; exit 0;; \
            *) echo \"ok $id 127.0.1.1:9042\";; esac; done";
        let (r, _, _) = fake_with(script, c3);
        let r = r.unwrap();
        assert_eq!(r.report.client_policy, "java:c3");
        let a = r.adapter.unwrap();
        assert_eq!((a.picks, a.matched, a.untracked, a.expired, a.open), (5, 4, 1, 1, 0));
        assert_eq!(a.hit_rates.map(|h| h.missing), Some(2));
        // hwlb-client polls the nodes' hit rates (every 500 ms unless the target says).
        let (r, _, _) = fake_with(
            "read hello; case \"$hello\" in *' policy=hwlb-client '*' hit_rate_poll_ms=500'*) echo 'ready 1';; *) echo \"fatal $hello\";; esac; \
             while read verb id rest; do case $verb in end) echo stats; echo bye; exit 0;; *) echo \"ok $id -\";; esac; done",
            JavaPolicy::of(replica_lb_policy::registry::find("hwlb-client").unwrap(), ParamTable::new()).unwrap(),
        );
        assert_eq!(r.unwrap().report.client_policy, "java:hwlb-client");
    }

    #[test]
    fn a_runner_that_dies_fails_the_run_and_its_requests_are_errors() {
        // Answers the first request late, then exits: the rest were out.
        let (r, ends) = fake("read hello; echo 'ready 1'; read verb id rest; sleep 0.2; echo \"ok $id 127.0.1.1:9042\"; exit 3");
        let e = r.unwrap_err();
        assert!(
            e.contains("the Java driver's runner") && e.contains("request(s) in flight counted as errors"),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
        assert_eq!(ends[0], 1, "the answer before it died");
        assert!(ends[1] >= 10, "requests out when it died are errors: {ends:?}");
    }

    #[test]
    fn a_bad_line_fails_the_run_naming_it() {
        let (r, _) = fake(&answering("ok $id somewhere"));
        let e = r.unwrap_err();
        assert!(e.contains("malformed line 'ok 0 somewhere'"), "{e}");
        let (r, _) = fake(&answering("ok 999999 127.0.1.1:9042"));
        assert!(r.unwrap_err().contains("answered request 999999, which is not out"));
        // Before ready: the runner's own reason.
        let (r, _) = fake("read hello; echo 'fatal no node answered'; exit 1");
        assert_eq!(r.unwrap_err(), "the Java driver: no node answered");
        let (r, _) = fake("read hello; echo 'ready 2'");
        assert!(r.unwrap_err().contains("protocol version 2"));
        let (r, _) = fake("read hello; echo 'Picked up JAVA_TOOL_OPTIONS' >&2; exit 1");
        let e = r.unwrap_err();
        assert!(
            e.contains("exited before it was ready") && e.contains("Picked up JAVA_TOOL_OPTIONS"),
            "{e}"
        );
    }

    #[test]
    fn bench_names_the_driver_once() {
        let java = |d, n| bench_choice(d, n, ParamTable::new());
        let default = Ok(ClientChoice::Java(JavaPolicy::Default));
        assert_eq!(java(Some(Driver::Java), None), default);
        assert_eq!(java(Some(Driver::Java), Some("default")), default);
        assert_eq!(java(Some(Driver::Java), Some("java:default")), default);
        assert_eq!(java(None, Some("java:default")), default);
        assert_eq!(java(None, None), Ok(ClientChoice::DriverDefault));
        assert_eq!(java(Some(Driver::Rust), None), Ok(ClientChoice::DriverDefault));
        let e = java(Some(Driver::Rust), Some("java:default")).unwrap_err();
        assert!(e.contains("give --driver java"), "{e}");
        // Any client policy through the Java driver, `java:` optional.
        let c3 = java(Some(Driver::Java), Some("c3")).unwrap();
        assert_eq!(c3, java(None, Some("java:c3")).unwrap());
        assert_eq!(c3.name(), "java:c3");
        let e = java(Some(Driver::Java), Some("hwlb")).unwrap_err();
        assert!(
            e.contains("java:hwlb") && e.contains("allowed: java:default or java:CLIENT-POLICY"),
            "{e}"
        );
        assert_eq!(Driver::parse("java"), Ok(Driver::Java));
        assert!(Driver::parse("go").unwrap_err().contains("'go' is not one of: rust, java"));
    }

    #[test]
    fn counters_are_none_or_every_one_of_the_java_adapters() {
        assert!(counters(&[]).unwrap().is_none());
        let all: Vec<(String, u64)> = JAVA_COUNTERS.iter().enumerate().map(|(i, n)| (n.to_string(), i as u64)).collect();
        let c = counters(&all).unwrap().unwrap();
        assert_eq!((c.picks, c.matched, c.open, c.overridden, c.unmapped), (0, 1, 4, 5, 6));
        assert_eq!(
            c.hit_rates,
            Some(HitRatePollCounters {
                read: 7,
                missing: 8,
                failed: 9
            })
        );
        assert!(counters(&all[..2]).unwrap_err().contains("2 of the 10"));
        let e = counters(&[("speed".into(), 1)]).unwrap_err();
        assert!(e.contains("unknown counter 'speed'"), "{e}");
    }
}
