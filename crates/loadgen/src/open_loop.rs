//! The one open-loop load-generation loop, over a [`Transport`].
//!
//! The loop owns what every `bench` shares: the schedule of intended send times (Poisson or
//! even arrivals at the target rate, [`Schedule`]), the limit on requests in flight (a request
//! past it fails at once, an error), multi-key requests' keys, the per-second progress lines,
//! the hard end (requests still out a time-out after sending stopped count as time-outs) and
//! the counts, kept in the metrics crate's [`Tally`]. Latency runs from each request's
//! intended send time to its end, so a stalled cluster or generator shows in full.
//!
//! A transport sends requests and hears their ends: gRPC to the project's nodes
//! ([`super::bench`], with the client policy's runtime in the loop's thread), CQL through the
//! scylla Rust driver ([`super::cql`]), and the Java driver in a child JVM ([`super::java`]).
//! Its tasks report back on the loop's channel ([`Ctx::tx`]) and it ends each request once
//! through [`Ctx::end`]. A transport whose client died says so ([`Transport::broken`]): the
//! loop then stops at once (the transport has ended what it had out).

use crate::client_policy::Pending;
use crate::options::{BenchOptions, MultiOptions, Schedule};
use crate::report::{second_line, SecondReport, Totals};
use replica_lb_metrics::Outcome;
use replica_lb_metrics::Tally;
use replica_lb_workload::scenario::MultiMode;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// One ended request, as a run's `on_done` hook receives it.
#[derive(Clone, Copy, Debug)]
pub struct Ended<N> {
    /// Its intended send time.
    pub intended: Instant,
    /// When it ended.
    pub finished: Instant,
    /// How it ended.
    pub outcome: Outcome,
    /// The node that coordinated it (`None`: not sent, or the transport does not know).
    pub coordinator: Option<N>,
}

/// A multi-key request's keys, as the loop hands them to [`Transport::issue`].
#[derive(Clone, Copy, Debug)]
pub struct MultiKeys<'a> {
    /// The distinct keys, the first the one the schedule drew.
    pub keys: &'a [u64],
    /// How they are read.
    pub mode: MultiMode,
}

/// The hook that hears every request's end.
pub type OnDone<'h, N> = &'h mut dyn FnMut(&Ended<N>);

/// How requests reach a cluster and how their ends come back to the loop.
pub trait Transport {
    /// How the transport names a coordinator.
    type Node: Copy;
    /// What its tasks send back to the loop's thread.
    type Msg: Send + 'static;

    /// Slots of the in-flight limit one request of `multi` takes (its sends at once).
    fn sends(&self, _multi: MultiOptions) -> usize {
        1
    }

    /// Called at the start of each round of the loop, before requests are issued.
    fn begin_round(&mut self, _cx: &mut Ctx<'_, Self::Node, Self::Msg>) {}

    /// Issues request `p` (its keys `multi` for a multi-key request) at `now`: sends it, holds
    /// it, or ends it at once through [`Ctx::end`].
    fn issue(&mut self, p: Pending, multi: Option<MultiKeys<'_>>, now: Instant, cx: &mut Ctx<'_, Self::Node, Self::Msg>);

    /// Takes one message of its tasks back.
    fn settle(&mut self, msg: Self::Msg, cx: &mut Ctx<'_, Self::Node, Self::Msg>);

    /// Work of its own after the messages are settled (timers, held requests, probes).
    fn pump(&mut self, _now: Instant, _cx: &mut Ctx<'_, Self::Node, Self::Msg>) {}

    /// Requests it holds unsent.
    fn waiting(&self) -> usize {
        0
    }

    /// When its own timer wants the loop awake (`start`: the run's time origin).
    fn wake_at(&self, _start: Instant) -> Option<Instant> {
        None
    }

    /// Whether it can send nothing more (its client died; the run fails): the loop stops.
    fn broken(&self) -> bool {
        false
    }
}

/// The loop's state a transport works with.
pub struct Ctx<'h, N, M> {
    /// The run's time origin.
    pub start: Instant,
    /// The loop's channel: a transport's tasks send their messages on it.
    pub tx: mpsc::Sender<M>,
    /// Sends in flight (a transport adds one per send and removes it when the send ends).
    pub in_flight: usize,
    requests: u64,
    total: Tally,
    seconds: Vec<Tally>,
    on_done: Option<OnDone<'h, N>>,
    /// The requests' time-out, ns (where a failed one counts in the per-second lines).
    timeout_ns: u64,
}

impl<N: Copy, M> Ctx<'_, N, M> {
    /// Nanoseconds from the run's start to `at`.
    pub fn ns(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.start).as_nanos() as u64
    }

    /// Ends a request: tells the hook, counts it in its second and in the run.
    pub fn end(&mut self, intended: Instant, finished: Instant, outcome: Outcome, coordinator: Option<N>) {
        if let Some(f) = self.on_done.as_mut() {
            f(&Ended {
                intended,
                finished,
                outcome,
                coordinator,
            });
        }
        let s = finished.saturating_duration_since(self.start).as_secs() as usize;
        if self.seconds.len() <= s {
            self.seconds.resize_with(s + 1, Tally::default);
        }
        let latency_ns = finished.saturating_duration_since(intended).as_nanos() as u64;
        self.seconds[s].record(outcome, latency_ns);
        self.total.record(outcome, latency_ns);
    }

    fn line(&self, t: usize) -> SecondReport {
        match self.seconds.get(t) {
            Some(s) => second_line(t, s, self.timeout_ns),
            None => second_line(t, &Tally::default(), self.timeout_ns),
        }
    }
}

/// Runs the open-loop schedule of `opts` from `start` over `transport`: `on_second` hears each
/// second's line as it ends, `on_done` every request's end.
pub fn run<T: Transport>(
    transport: &mut T,
    opts: &BenchOptions,
    multi: Option<MultiOptions>,
    start: Instant,
    on_second: &mut dyn FnMut(&SecondReport),
    on_done: Option<OnDone<'_, T::Node>>,
) -> Totals {
    let (tx, rx) = mpsc::channel::<T::Msg>();
    let mut cx = Ctx {
        start,
        tx,
        in_flight: 0,
        requests: 0,
        total: Tally::default(),
        seconds: Vec::new(),
        on_done,
        timeout_ns: opts.timeout_ms as u64 * 1_000_000,
    };
    let mut schedule = Schedule::new(opts, start);
    let hard_end = schedule.send_end() + Duration::from_millis(opts.timeout_ms as u64 + 2000);
    let sends = multi.map_or(1, |m| transport.sends(m));
    let mut keys = Vec::new();
    let mut reported = 0usize;
    loop {
        let now = Instant::now();
        transport.begin_round(&mut cx);
        // Issue every request whose intended time has come.
        while let Some(p) = schedule.due(now) {
            cx.requests += 1;
            if cx.in_flight + sends > opts.max_in_flight {
                cx.end(p.intended, now, Outcome::Error, None);
                continue;
            }
            let mk = multi.map(|m| {
                schedule.multi_keys(p.key, m.keys, &mut keys);
                MultiKeys { keys: &keys, mode: m.mode }
            });
            transport.issue(p, mk, now, &mut cx);
        }
        // Settle whatever came back, then the transport's own work.
        while let Ok(msg) = rx.try_recv() {
            transport.settle(msg, &mut cx);
        }
        transport.pump(Instant::now(), &mut cx);
        if transport.broken() {
            break;
        }
        // Report every second that has ended.
        let now = Instant::now();
        while start + Duration::from_secs(reported as u64 + 1) <= now && (reported as f64) < opts.duration_s.ceil() {
            on_second(&cx.line(reported));
            reported += 1;
        }
        if schedule.done() && cx.in_flight == 0 && transport.waiting() == 0 {
            break;
        }
        if now >= hard_end {
            // Requests still out after their time-out (a hung client call): time-outs.
            cx.total.timeouts += cx.requests - cx.total.ended();
            break;
        }
        // Sleep until the next send, the transport's timer, or briefly while draining.
        let mut wake = schedule.next_at().unwrap_or(now + Duration::from_millis(1));
        if let Some(at) = transport.wake_at(start) {
            wake = wake.min(at);
        }
        let gap = wake.saturating_duration_since(Instant::now());
        if !gap.is_zero() {
            if let Ok(msg) = rx.recv_timeout(gap) {
                transport.settle(msg, &mut cx);
            }
        }
    }
    let n_seconds = (opts.duration_s.ceil() as usize).max(cx.seconds.len());
    let per_second = (0..n_seconds).map(|t| cx.line(t)).collect();
    Totals {
        requests: cx.requests,
        total: cx.total,
        per_second,
    }
}
