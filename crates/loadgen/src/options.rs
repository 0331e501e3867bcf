//! What a run of `bench` is given and hears: its options (checked once at the edge), the
//! open-loop schedule they make, the hooks an experiment adds, and the client's runtime.

use crate::client_policy;
use replica_lb_metrics::Outcome;
use replica_lb_policy::{ConsistencyLevel, NodeId};
use replica_lb_workload::scenario::MultiMode;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The open-loop schedule both `bench` paths follow (the node cluster's and the driver's):
/// each request's intended send time (latency is measured from it, so a slow cluster does not
/// slow the load: no coordinated omission), key and kind, from one seeded generator.
pub struct Schedule {
    rng: replica_lb_policy::Rng,
    keygen: replica_lb_workload::KeyGen,
    /// Keys `0..count` exist.
    count: u64,
    next_at: Instant,
    send_end: Instant,
    mean_gap_s: f64,
    arrivals: Arrivals,
    read_fraction: f64,
    /// The keys of the multi-key request being drawn (reused).
    seen: HashSet<u64>,
}

impl Schedule {
    /// The schedule of `opts` starting at `start`.
    pub fn new(opts: &BenchOptions, start: Instant) -> Schedule {
        Schedule {
            rng: replica_lb_policy::Rng::seed_from_u64(opts.seed),
            keygen: replica_lb_workload::KeyGen::new(opts.keys, 0, 1),
            next_at: start,
            send_end: start + Duration::from_secs_f64(opts.duration_s),
            mean_gap_s: 1.0 / opts.rate,
            count: opts.keys.count,
            arrivals: opts.arrivals,
            read_fraction: opts.read_fraction,
            seen: HashSet::new(),
        }
    }

    /// The next request if its intended time has come by `now`.
    pub fn due(&mut self, now: Instant) -> Option<client_policy::Pending> {
        if self.next_at > now || self.next_at >= self.send_end {
            return None;
        }
        let pending = client_policy::Pending {
            key: self.keygen.next(&mut self.rng),
            intended: self.next_at,
            read: self.rng.chance(self.read_fraction),
            multi: None,
        };
        self.next_at += Duration::from_secs_f64(match self.arrivals {
            Arrivals::Poisson => self.rng.exponential(self.mean_gap_s),
            Arrivals::Uniform => self.mean_gap_s,
        });
        Some(pending)
    }

    /// The `k` distinct keys of a multi-key request whose first key is `first` (the one
    /// [`Schedule::due`] drew), into `out`: the others drawn by the same key generator, a key
    /// drawn twice drawn again. After `64 k` draws without enough distinct keys (a skew that
    /// keeps repeating a few), the next unused keys after the last one drawn fill the rest.
    /// `k` must not exceed the number of keys ([`MultiOptions::check`]).
    pub fn multi_keys(&mut self, first: u64, k: usize, out: &mut Vec<u64>) {
        out.clear();
        self.seen.clear();
        out.push(first);
        self.seen.insert(first);
        let mut draws = 64 * k;
        while out.len() < k && draws > 0 {
            draws -= 1;
            let key = self.keygen.next(&mut self.rng);
            if self.seen.insert(key) {
                out.push(key);
            }
        }
        let n = self.count.max(1);
        let mut key = out.last().copied().unwrap_or(0);
        while out.len() < k && (out.len() as u64) < n {
            key = (key + 1) % n;
            if self.seen.insert(key) {
                out.push(key);
            }
        }
    }

    /// When the next request is due (`None`: every request was issued).
    pub fn next_at(&self) -> Option<Instant> {
        (self.next_at < self.send_end).then_some(self.next_at)
    }

    /// Whether every request was issued.
    pub fn done(&self) -> bool {
        self.next_at >= self.send_end
    }

    /// When sending stops.
    pub fn send_end(&self) -> Instant {
        self.send_end
    }
}

/// Inter-arrival times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrivals {
    /// Exponential gaps (Poisson process).
    Poisson,
    /// Even gaps.
    Uniform,
}

impl Arrivals {
    /// Parses `poisson` or `uniform`.
    pub fn parse(text: &str) -> Result<Arrivals, String> {
        match text {
            "poisson" => Ok(Arrivals::Poisson),
            "uniform" => Ok(Arrivals::Uniform),
            other => Err(format!("'{other}' is not one of: poisson, uniform")),
        }
    }
}

/// Options of `bench`.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Target requests per second.
    pub rate: f64,
    /// How long to send, seconds.
    pub duration_s: f64,
    /// Consistency level.
    pub cl: ConsistencyLevel,
    /// Keys 0..keys-1 are used.
    pub keys: replica_lb_workload::KeySpec,
    /// Share of reads (the rest are writes).
    pub read_fraction: f64,
    /// Size of written values.
    pub value_bytes: usize,
    /// Per-request time-out, ms.
    pub timeout_ms: u32,
    /// Requests in flight beyond which new ones fail at once (counted as errors).
    pub max_in_flight: usize,
    /// Arrival process.
    pub arrivals: Arrivals,
    /// Seed of the generator.
    pub seed: u64,
    /// Check that each value read is the one `load` wrote (counts mismatches as errors).
    pub verify: bool,
    /// The client's zone, told to zone-aware policies (`None`: unknown, every node local).
    pub zone: Option<u32>,
}

/// Most keys in one multi-key request (what a node's `MultiGet` takes).
pub const MAX_MULTI_KEYS: usize = replica_lb_node::coordinator::MAX_MULTI_KEYS;

/// Multi-key requests of `bench --multi K --multi-mode in|parallel`: every request of the run
/// reads `keys` distinct keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MultiOptions {
    /// Keys per request, 2 to [`MAX_MULTI_KEYS`].
    pub keys: usize,
    /// `Parallel`: one token-aware single read per key, all at once, each coordinator chosen by
    /// the client policy; done when the last answers. `In`: one request for every key to one
    /// coordinator (chosen as for the first key), which reads them all and answers once.
    pub mode: MultiMode,
}

impl MultiOptions {
    /// Checks the options against the run's, naming the bad flag.
    pub fn check(&self, opts: &BenchOptions) -> Result<(), String> {
        if !(2..=MAX_MULTI_KEYS).contains(&self.keys) {
            return Err(format!(
                "--multi {} must be a number of keys per request in [2, {MAX_MULTI_KEYS}]",
                self.keys
            ));
        }
        if self.keys as u64 > opts.keys.count {
            return Err(format!(
                "--multi {} asks for more distinct keys per request than --keys {} has",
                self.keys, opts.keys.count
            ));
        }
        if opts.read_fraction != 1.0 {
            return Err(format!(
                "--read-fraction {}: with --multi every request is a multi-key read; leave it at 1",
                opts.read_fraction
            ));
        }
        Ok(())
    }

    /// The mode as the flag and the report spell it.
    pub fn mode_name(&self) -> &'static str {
        multi_mode_name(self.mode)
    }
}

/// `in` or `parallel`.
pub fn multi_mode_name(mode: MultiMode) -> &'static str {
    match mode {
        MultiMode::In => "in",
        MultiMode::Parallel => "parallel",
    }
}

/// Parses `--multi-mode`: `in` or `parallel`.
pub fn parse_multi_mode(text: &str) -> Result<MultiMode, String> {
    match text {
        "in" => Ok(MultiMode::In),
        "parallel" => Ok(MultiMode::Parallel),
        other => Err(format!("--multi-mode '{other}' is not one of: in, parallel")),
    }
}

/// One finished request, as [`BenchHooks::on_done`] receives it.
#[derive(Clone, Copy, Debug)]
pub struct Completion {
    /// Its intended send time, ns since the run's start.
    pub intended_ns: u64,
    /// When it finished, ns since the run's start.
    pub finished_ns: u64,
    /// How it ended.
    pub outcome: Outcome,
    /// Its coordinator.
    pub node: NodeId,
}

/// Extras for an experiment driving [`bench_with`].
#[derive(Default)]
pub struct BenchHooks<'a> {
    /// The run's time origin (default: when `bench_with` starts); must not be in the future
    /// by more than a few ms.
    pub start: Option<Instant>,
    /// Called for every finished request, in the dispatcher thread.
    pub on_done: Option<&'a mut dyn FnMut(&Completion)>,
    /// Nodes the client must not use as coordinator (bit i = node i), like a driver that
    /// knows a host is down; a key whose replicas are all excluded fails at once (an error).
    pub down_mask: Option<Arc<std::sync::atomic::AtomicU64>>,
}

/// The tokio runtime a client runs on.
pub type ClientRuntime = tokio::runtime::Runtime;

/// A multi-threaded runtime with `threads` workers for the client side.
pub fn client_runtime(threads: usize) -> Result<ClientRuntime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.clamp(1, 64))
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}

/// Checks the options a user gives, naming the bad one.
pub fn check_bench_options(opts: &BenchOptions) -> Result<(), String> {
    if !(opts.rate.is_finite() && opts.rate > 0.0 && opts.rate <= 10_000_000.0) {
        return Err(format!(
            "--rate {} must be a number of requests per second in (0, 10000000]",
            opts.rate
        ));
    }
    if !(opts.duration_s.is_finite() && opts.duration_s > 0.0 && opts.duration_s <= 86_400.0) {
        return Err(format!(
            "--duration-s {} must be a number of seconds in (0, 86400]",
            opts.duration_s
        ));
    }
    if !(0.0..=1.0).contains(&opts.read_fraction) {
        return Err(format!("--read-fraction {} must be in [0, 1]", opts.read_fraction));
    }
    if opts.timeout_ms == 0 || opts.timeout_ms > replica_lb_node::service::MAX_TIMEOUT_MS {
        return Err(format!(
            "--timeout-ms {} must be in [1, {}]",
            opts.timeout_ms,
            replica_lb_node::service::MAX_TIMEOUT_MS
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(n: u64, pattern: &str, read_fraction: f64) -> BenchOptions {
        BenchOptions {
            rate: 100.0,
            duration_s: 1.0,
            cl: ConsistencyLevel::One,
            keys: crate::keys::key_spec(pattern, n, 0.1, 0.9).unwrap(),
            read_fraction,
            value_bytes: 10,
            timeout_ms: 1000,
            max_in_flight: 100,
            arrivals: Arrivals::Poisson,
            seed: 3,
            verify: false,
            zone: None,
        }
    }

    #[test]
    fn multi_keys_are_distinct_start_with_the_first_and_follow_the_generator() {
        for (n, pattern, k) in [
            (1000, "uniform", 20),
            (1000, "zipfian", 100),
            (50, "zipfian", 50),
            (3, "uniform", 2),
        ] {
            let opts = options(n, pattern, 1.0);
            let mut s = Schedule::new(&opts, Instant::now());
            let mut out = Vec::new();
            for _ in 0..50 {
                let first = s.keygen.next(&mut s.rng);
                s.multi_keys(first, k, &mut out);
                assert_eq!(out.len(), k, "{pattern} over {n}");
                assert_eq!(out[0], first);
                let set: HashSet<u64> = out.iter().copied().collect();
                assert_eq!(set.len(), k, "{pattern} over {n}: distinct");
                assert!(out.iter().all(|&x| x < n));
            }
        }
        // The same seed draws the same keys.
        let opts = options(1000, "uniform", 1.0);
        let (mut a, mut b) = (Schedule::new(&opts, Instant::now()), Schedule::new(&opts, Instant::now()));
        let (mut x, mut y) = (Vec::new(), Vec::new());
        a.multi_keys(5, 30, &mut x);
        b.multi_keys(5, 30, &mut y);
        assert_eq!(x, y);
    }

    #[test]
    fn multi_options_are_checked_naming_the_flag() {
        let ok = MultiOptions {
            keys: 20,
            mode: MultiMode::In,
        };
        assert!(ok.check(&options(100, "uniform", 1.0)).is_ok());
        let err = |m: MultiOptions, o: BenchOptions| m.check(&o).unwrap_err();
        let e = err(MultiOptions { keys: 1, ..ok }, options(100, "uniform", 1.0));
        assert!(e.contains("--multi 1") && e.contains("[2, 1000]"), "{e}");
        let e = err(MultiOptions { keys: 1001, ..ok }, options(10_000, "uniform", 1.0));
        assert!(e.contains("--multi 1001"), "{e}");
        let e = err(MultiOptions { keys: 200, ..ok }, options(100, "uniform", 1.0));
        assert!(e.contains("--keys 100"), "{e}");
        let e = err(ok, options(100, "uniform", 0.9));
        assert!(e.contains("--read-fraction 0.9"), "{e}");
        assert_eq!(parse_multi_mode("in"), Ok(MultiMode::In));
        assert_eq!(parse_multi_mode("parallel"), Ok(MultiMode::Parallel));
        assert!(parse_multi_mode("IN").unwrap_err().contains("'IN' is not one of: in, parallel"));
        assert_eq!(ok.mode_name(), "in");
    }

    #[test]
    fn a_multi_request_times_out_as_a_whole() {
        use Outcome::*;
        assert_eq!(Ok.and(Ok), Ok);
        assert_eq!(Ok.and(Error), Error);
        assert_eq!(Error.and(Timeout), Timeout);
        assert_eq!(Timeout.and(Ok), Timeout);
    }
}
