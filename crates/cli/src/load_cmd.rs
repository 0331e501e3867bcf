//! `replica-lb load` and `replica-lb bench`: write keys into a cluster; drive an open-loop load
//! and report latency (JSON with `--out`), single-key or multi-key requests (`--multi`).

use crate::error::{CliError, CliResult};
use crate::node_cmd::parse_params;
use clap::Args;
use replica_lb_engine::{ClientTarget as Target, Cluster};
use replica_lb_loadgen::cql;
use replica_lb_loadgen::java;
use replica_lb_loadgen::keys::{key_spec_of, Distribution};
use replica_lb_loadgen::{Arrivals, BenchOptions, LoadOptions, MultiMode, MultiOptions};
use replica_lb_policy::{ConsistencyLevel, ParamTable};
use std::path::PathBuf;

/// `load` arguments.
#[derive(Args, Debug)]
pub struct LoadArgs {
    /// The cluster directory (with cluster.json): a node cluster, or a Cassandra one (through
    /// the scylla driver).
    #[arg(
        long,
        value_name = "DIR",
        required_unless_present = "contact_points",
        conflicts_with = "contact_points"
    )]
    cluster: Option<PathBuf>,
    /// An existing Cassandra or ScyllaDB cluster: HOST:PORT[,HOST:PORT...] (through the scylla
    /// driver; keyspace `replica_lb`, table `kv`).
    #[arg(long, value_name = "ADDRS", value_parser = cql::ContactPoints::parse)]
    contact_points: Option<cql::ContactPoints>,
    /// Replication factor of the keyspace `load` creates on a Cassandra or ScyllaDB cluster.
    #[arg(long, default_value_t = 3, value_name = "RF")]
    replication_factor: u32,
    /// Keys 0..N-1 are written.
    #[arg(long, value_name = "N")]
    keys: u64,
    /// Value size, bytes.
    #[arg(long, default_value_t = 100, value_name = "B")]
    value_bytes: usize,
    /// Consistency level: one, two, quorum or all.
    #[arg(long, default_value = "quorum", value_name = "LEVEL", value_parser = ConsistencyLevel::parse)]
    cl: ConsistencyLevel,
    /// Writes in flight at once.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Per-write time-out, ms.
    #[arg(long, default_value_t = 5000)]
    timeout_ms: u32,
    /// Client threads.
    #[arg(long, default_value_t = 2)]
    threads: usize,
}

/// `bench` arguments.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// The cluster directory (with cluster.json): a node cluster, or a Cassandra one (through
    /// the scylla driver).
    #[arg(
        long,
        value_name = "DIR",
        required_unless_present = "contact_points",
        conflicts_with = "contact_points"
    )]
    cluster: Option<PathBuf>,
    /// An existing Cassandra or ScyllaDB cluster: HOST:PORT[,HOST:PORT...] (through the scylla
    /// driver, after `load --contact-points`).
    #[arg(long, value_name = "ADDRS", value_parser = cql::ContactPoints::parse)]
    contact_points: Option<cql::ContactPoints>,
    /// Target rate, requests per second.
    #[arg(long, value_name = "R")]
    rate: f64,
    /// How long to send, seconds.
    #[arg(long, value_name = "S")]
    duration_s: f64,
    /// Consistency level: one, two, quorum or all.
    #[arg(long, default_value = "quorum", value_name = "LEVEL", value_parser = ConsistencyLevel::parse)]
    cl: ConsistencyLevel,
    /// Keys 0..N-1 are used (load them first).
    #[arg(long, default_value_t = 10_000, value_name = "N")]
    keys: u64,
    /// Key popularity: uniform, zipfian (theta 0.99) or hotspot.
    #[arg(long, default_value = "uniform", value_parser = Distribution::parse)]
    distribution: Distribution,
    /// Hotspot: share of keys in the hot set.
    #[arg(long, default_value_t = 0.1)]
    hot_fraction: f64,
    /// Hotspot: share of requests to the hot set.
    #[arg(long, default_value_t = 0.9)]
    hot_ops: f64,
    /// Share of reads; the rest are writes.
    #[arg(long, default_value_t = 1.0, value_name = "F")]
    read_fraction: f64,
    /// Written value size, bytes.
    #[arg(long, default_value_t = 100)]
    value_bytes: usize,
    /// Per-request time-out, ms.
    #[arg(long, default_value_t = 5000)]
    timeout_ms: u32,
    /// Client-side policy choosing the coordinator (default: uniform among the key's replicas;
    /// through the driver, `driver-default`, the driver's own token-aware DefaultPolicy; with
    /// `--driver java`, `default`, the Java driver's DefaultLoadBalancingPolicy, or any client
    /// policy through it).
    #[arg(long, value_name = "NAME")]
    client_policy: Option<String>,
    /// On a Cassandra cluster, the driver requests go through: `rust` (the scylla Rust driver,
    /// the default) or `java` (the Apache Cassandra Java driver 4.19 in a child JVM, built
    /// with Maven on first use; its policies: `default` and any client policy with a Java port).
    /// The same open loop and JSON report.
    #[arg(long, value_name = "rust|java", value_parser = java::Driver::parse)]
    driver: Option<java::Driver>,
    /// A client-policy parameter override, NAME=VALUE (repeatable).
    #[arg(long = "client-param", value_name = "NAME=VALUE")]
    client_params: Vec<String>,
    /// Arrival process: poisson or uniform.
    #[arg(long, default_value = "poisson", value_parser = Arrivals::parse)]
    arrivals: Arrivals,
    /// Requests in flight beyond which new ones fail at once (counted as errors).
    #[arg(long, default_value_t = 20_000)]
    max_in_flight: usize,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Check every value read against what `load` wrote (mismatches count as errors).
    #[arg(long)]
    verify: bool,
    /// The client's zone, for zone-aware policies (weighted-least-loaded); nodes take theirs
    /// from `cluster up --zones`.
    #[arg(long, value_name = "ZONE")]
    zone: Option<u32>,
    /// Multi-key requests: every request reads K distinct keys (2..=1000) chosen by the key
    /// distribution; no single-key requests are mixed in (reads only). Latency runs from the
    /// intended send time to the last key's answer; the JSON adds `multi`, `multi_mode` and
    /// `multi_keys`.
    #[arg(long, value_name = "K")]
    multi: Option<usize>,
    /// How a multi-key request is sent: `parallel` (K single-key reads at once, each to a
    /// coordinator the client policy picks for its key; done when all answered) or `in` (one
    /// request for all K keys to the coordinator picked for the first key, which reads them
    /// from their replicas; a CQL `IN` query through the driver). Needs --multi; default
    /// parallel.
    #[arg(long, value_name = "MODE", value_parser = replica_lb_loadgen::parse_multi_mode)]
    multi_mode: Option<MultiMode>,
    /// Write the JSON report here.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Client threads.
    #[arg(long, default_value_t = 2)]
    threads: usize,
}

/// Where `load` or `bench` goes: a node cluster over gRPC, or a CQL cluster through the
/// driver (the engine of the cluster in `--cluster`, [`Cluster::open`]).
fn target(cluster: Option<&PathBuf>, contact_points: Option<&cql::ContactPoints>) -> Result<Target, CliError> {
    match (cluster, contact_points) {
        (_, Some(cp)) => Ok(Target::Cql(cp.0.clone())),
        (Some(dir), None) => Ok(Cluster::open(dir)?.client_target()?),
        (None, None) => Err(CliError::usage("give --cluster DIR or --contact-points HOST:PORT")),
    }
}

/// Runs `load`.
pub fn load(a: LoadArgs) -> CliResult {
    let cl = a.cl;
    if a.keys == 0 {
        return Err(CliError::usage("--keys must be at least 1"));
    }
    let opts = LoadOptions {
        keys: a.keys,
        value_bytes: a.value_bytes,
        cl,
        concurrency: a.concurrency,
        timeout_ms: a.timeout_ms,
    };
    let out = target(a.cluster.as_ref(), a.contact_points.as_ref())?.load(&opts, a.threads, a.replication_factor)?;
    let secs = out.elapsed.as_secs_f64();
    println!(
        "wrote {} of {} keys at CL {} in {:.1} s ({:.0} writes/s)",
        out.written,
        a.keys,
        cl.as_str(),
        secs,
        out.written as f64 / secs.max(1e-9)
    );
    match out.first_error {
        None => Ok(()),
        Some(e) => Err(CliError::failed(format!("{} write(s) failed; first: {e}", out.failed))),
    }
}

/// Runs `bench`.
pub fn bench(a: BenchArgs) -> CliResult {
    let cl = a.cl;
    let keys = key_spec_of(a.distribution, a.keys, a.hot_fraction, a.hot_ops).map_err(CliError::usage)?;
    let arrivals = a.arrivals;
    let mut params = ParamTable::new();
    parse_params("--client-param", &a.client_params, &mut params)?;
    let opts = BenchOptions {
        rate: a.rate,
        duration_s: a.duration_s,
        cl,
        keys,
        read_fraction: a.read_fraction,
        value_bytes: a.value_bytes,
        timeout_ms: a.timeout_ms,
        max_in_flight: a.max_in_flight.max(1),
        arrivals,
        seed: a.seed,
        verify: a.verify,
        zone: a.zone,
    };
    replica_lb_loadgen::check_bench_options(&opts).map_err(CliError::usage)?;
    if let Some(path) = &a.out {
        replica_lb_report::run_dir::check_out_file(path, "--out").map_err(CliError::usage)?;
    }
    let multi = multi_options(a.multi, a.multi_mode, &opts)?;
    let driver = a.driver;
    let target = target(a.cluster.as_ref(), a.contact_points.as_ref())?;
    let choice = target.client_choice(driver, a.client_policy.as_deref(), params)?;
    let mut line = |s: &replica_lb_loadgen::report::SecondReport| println!("{}", s.text());
    let run = target.bench(&choice, &opts, multi.as_ref(), a.threads, &mut line)?;
    print_summary(&run.report);
    if let Some(nodes) = &run.coordinators {
        println!("coordinators: {}", nodes.join(" "));
    }
    let json = run.json;
    if let Some(path) = &a.out {
        std::fs::write(path, json + "\n").map_err(|e| CliError::failed(format!("cannot write {}: {e}", path.display())))?;
    }
    Ok(())
}

/// `--multi K [--multi-mode MODE]` as options (`None`: single-key requests), checked against
/// the run's (one line naming the bad value, exit 2).
fn multi_options(keys: Option<usize>, mode: Option<MultiMode>, opts: &BenchOptions) -> Result<Option<MultiOptions>, CliError> {
    let Some(keys) = keys else {
        return match mode {
            None => Ok(None),
            Some(m) => Err(CliError::usage(format!(
                "--multi-mode {} needs --multi K (the keys per request, 2 to {})",
                replica_lb_loadgen::multi_mode_name(m),
                replica_lb_loadgen::MAX_MULTI_KEYS
            ))),
        };
    };
    let mode = mode.unwrap_or(MultiMode::Parallel);
    let m = MultiOptions { keys, mode };
    m.check(opts).map_err(CliError::usage)?;
    Ok(Some(m))
}

fn print_summary(report: &replica_lb_loadgen::report::BenchReport) {
    let (a, l) = (&report.latency_all_ms, &report.latency_ms);
    let what = match (report.multi_keys, report.multi_mode) {
        (Some(k), Some(mode)) => format!("multi-key requests ({k} keys, {mode}): "),
        _ => String::new(),
    };
    println!(
        "{what}requests={} completed={} errors={} timeouts={} rate={:.0}/s latency ms, every request (a failed one at the time-out): mean={:.3} p50={:.3} p95={:.3} p99={:.3} p999={:.3}; completed only: mean={:.3} p50={:.3} p99={:.3} p999={:.3}",
        report.requests,
        report.completed,
        report.errors,
        report.timeouts,
        report.achieved_rate,
        a.mean,
        a.p50,
        a.p95,
        a.p99,
        a.p999,
        l.mean,
        l.p50,
        l.p99,
        l.p999
    );
    if let Some(n) = report.network {
        let per = |b: u64| b as f64 / report.completed.max(1) as f64;
        println!(
            "bytes the nodes counted: client {} ({:.0} per completed request), internode {} ({:.0} per completed request)",
            n.client_bytes,
            per(n.client_bytes),
            n.internode_bytes,
            per(n.internode_bytes)
        );
    }
}
