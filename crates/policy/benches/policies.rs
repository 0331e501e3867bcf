//! Per-request cost of every registered policy: one request's `plan` plus the matching
//! a send and its reply (with a full feedback record), at N = 3 and N = 16 candidates,
//! CL = 1. Virtual time advances 100 us per request (10k requests/s from this sender), so
//! interval-driven work (score updates, rate control) happens at its natural rate; a C3
//! backlog wait is retried at the time it names, like the simulator's FIFO would. Prequal is
//! also measured with its probing (`probes` plus the answers) as `prequal+probes`.
//! Target: <= 200 ns per request at N = 3.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use replica_lb_policy::{build, Decision, Event, Feedback, NodeId, ParamTable, Plan, Policy, ProbeReply, Reply, Request, Rng, POLICIES};
use std::hint::black_box;

const STEP_NS: u64 = 100_000;

/// The feedback a server would send for request number `i` to `node`.
fn reply(node: NodeId, i: u64) -> Reply {
    let k = node.0 as u64;
    Reply {
        node,
        latency_ns: 2_000_000 + k * 100_000 + (i % 5) * 50_000,
        feedback: Feedback {
            hit_rate: Some(0.5 + 0.04 * (k % 10) as f64),
            queue_len: Some(((i + k) % 7) as u32),
            service_time_ns: Some(1_000_000 + k * 10_000),
            in_flight: Some(((i + k) % 5) as u32),
        },
    }
}

/// One request, `STEP_NS` after the previous one: plan, then send to the targets and take
/// their replies. On a backlog wait (C3) the caller retries at the time it was given, as the
/// simulator's per-group FIFO would; those retries count toward the request's cost.
#[inline]
fn request(p: &mut dyn Policy, req: &Request<'_>, now: &mut u64, i: u64, rng: &mut Rng, plan: &mut Plan) {
    *now += STEP_NS;
    loop {
        match p.plan(black_box(req), *now, rng, plan) {
            Decision::Send => break,
            Decision::Wait { retry_at_ns } => *now = retry_at_ns.max(*now + 1),
            Decision::Unavailable => return,
        }
    }
    for &t in plan.targets() {
        p.observe(&Event::Sent { node: t }, *now);
        p.observe(&Event::Reply(&reply(t, i)), *now + 1);
    }
}

fn warm(p: &mut dyn Policy, req: &Request<'_>, now: &mut u64, rng: &mut Rng, plan: &mut Plan) {
    for i in 0..10_000 {
        request(p, req, now, i, rng, plan);
    }
}

fn per_request(c: &mut Criterion) {
    let mut group = c.benchmark_group("policy");
    for n in [3u16, 16] {
        let nodes: Vec<NodeId> = (0..n).map(NodeId).collect();
        let replicas = &nodes[..3];
        let req = Request {
            candidates: &nodes,
            replicas: Some(replicas),
            count: 1,
            local: None,
            group: 7,
        };
        for info in POLICIES {
            let mut p = build(info.name, &ParamTable::new()).unwrap().policy;
            let mut rng = Rng::seed_from_u64(1);
            let mut plan = Plan::new();
            let mut now = 0;
            warm(p.as_mut(), &req, &mut now, &mut rng, &mut plan);
            let mut i = 0u64;
            group.bench_function(BenchmarkId::new(info.name, n), |b| {
                b.iter(|| {
                    i += 1;
                    request(p.as_mut(), &req, &mut now, i, &mut rng, &mut plan);
                })
            });
        }
        // Prequal with its probes: about 3 per query, each answered.
        let mut p = build("prequal", &ParamTable::new()).unwrap().policy;
        let mut rng = Rng::seed_from_u64(1);
        let mut plan = Plan::new();
        let mut probes = Vec::with_capacity(16);
        let mut now = 0;
        let mut i = 0u64;
        group.bench_function(BenchmarkId::new("prequal+probes", n), |b| {
            b.iter(|| {
                i += 1;
                request(p.as_mut(), &req, &mut now, i, &mut rng, &mut plan);
                probes.clear();
                p.probes(&req, now, &mut rng, &mut probes);
                for probe in &probes {
                    let answer = ProbeReply {
                        node: probe.node,
                        in_flight: ((i + probe.node.0 as u64) % 9) as u32,
                        latency_ns: 1_000_000 + probe.node.0 as u64 * 50_000,
                    };
                    p.observe(&Event::ProbeReply(&answer), now + 1);
                }
            })
        });
    }
    group.finish();
}

criterion_group!(benches, per_request);
criterion_main!(benches);
