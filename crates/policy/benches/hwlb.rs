//! HWLB speed: choosing the replicas of one request (target <= 50 ns) and recomputing a plan
//! when rates change (target <= 20 us), at N=3/CL=2 and N=9/CL=3.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use replica_lb_policy::hwlb::{HwlbPlan, PlanConfig};
use replica_lb_policy::{build, Event, Feedback, NodeId, ParamTable, Plan, Reply, Request, Rng};
use std::hint::black_box;

const CASES: [(&str, &[f64], usize); 2] = [
    ("n3_cl2", &[0.0, 0.8, 0.8], 2),
    ("n9_cl3", &[0.0, 0.8, 0.8, 0.5, 0.9, 0.95, 0.7, 0.3, 0.85], 3),
];

fn choose(c: &mut Criterion) {
    let mut group = c.benchmark_group("hwlb/choose");
    for (name, rates, k) in CASES {
        let nodes: Vec<NodeId> = (0..rates.len() as u16).map(NodeId).collect();
        let mut policy = build("hwlb", &ParamTable::new()).unwrap().policy;
        for (i, &h) in rates.iter().enumerate() {
            let reply = Reply {
                node: nodes[i],
                latency_ns: 1_000_000,
                feedback: Feedback {
                    hit_rate: Some(h),
                    ..Feedback::default()
                },
            };
            policy.observe(&Event::Reply(&reply), 0);
        }
        let req = Request {
            candidates: &nodes,
            replicas: None,
            count: k,
            local: Some(nodes[0]),
            group: 7,
        };
        let mut rng = Rng::seed_from_u64(1);
        let mut plan = Plan::new();
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                policy.plan(black_box(&req), black_box(500_000_000), &mut rng, &mut plan);
                black_box(plan.targets()[0]);
            })
        });
    }
    group.finish();
}

fn recompute(c: &mut Criterion) {
    let mut group = c.benchmark_group("hwlb/plan");
    let config = PlanConfig::default();
    for (name, rates, k) in CASES {
        let n = &name[..2];
        group.bench_function(BenchmarkId::from_parameter(n), |b| {
            b.iter(|| HwlbPlan::compute(black_box(rates), black_box(k), &config))
        });
    }
    group.finish();
}

criterion_group!(benches, choose, recompute);
criterion_main!(benches);
