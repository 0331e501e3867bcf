//! The shared decision traces of `unified`'s coordinator side:
//! `testdata/unified-coordinator-traces.json` holds cases, each a sequence of events (sends,
//! replies with their latency, expiries, pending counts, nodes going down and up, hit rates)
//! and read orders asked for (replicas in the inner order, the coordinator, k and the draw's
//! uniform number) with the order the Rust rule gives. The Cassandra plug-in's
//! `UnifiedTracesTest` replays every case through the Java code and must give the same orders.
//! This test checks the file is what the Rust code gives now; after a deliberate change of the
//! rule, regenerate it with
//! `REPLICA_LB_WRITE_TRACES=1 cargo test --release -p replica-lb-policy --test unified_coordinator_traces`.

mod common;

use common::TraceCase;
use replica_lb_policy::hwlb::PlanConfig;
use replica_lb_policy::types::{NodeId, MAX_REPLICAS};
use replica_lb_policy::unified::coordinator::{coordinator_order, CoordinatorHealth, CoordinatorRule, OrderRequest};

const NODES: usize = 4;
/// How long after coming up a node counts as warming (unified's `warmup_window_s`), us.
const WARMUP_WINDOW_US: u64 = 900_000_000;

/// One case being written: the Rust rule's state and the case's JSON events so far.
struct Case {
    name: &'static str,
    about: &'static str,
    /// One coordinator rule per trace node (each pools the other nodes' latencies), every one
    /// told every event, as the Java test's one snitch per node.
    health: [CoordinatorHealth; NODES],
    live: [bool; NODES],
    rates: [Option<f64>; NODES],
    /// When each node last came up (`up` events), us; the case's coordinator started long
    /// before, so a node that never came up is not warming.
    up_at_us: [Option<u64>; NODES],
    t_us: u64,
    events: Vec<String>,
    plans: usize,
    passed_plans: usize,
    background_plans: usize,
    gave_way_plans: usize,
}

impl Case {
    fn new(name: &'static str, about: &'static str) -> Case {
        Case {
            name,
            about,
            health: std::array::from_fn(|l| {
                let mut h = CoordinatorHealth::new(CoordinatorRule::default());
                h.set_local(NodeId(l as u16));
                h
            }),
            live: [true; NODES],
            rates: [Some(0.9), Some(0.85), Some(0.82), Some(0.9)],
            up_at_us: [None; NODES],
            t_us: 0,
            events: Vec::new(),
            plans: 0,
            passed_plans: 0,
            background_plans: 0,
            gave_way_plans: 0,
        }
    }

    fn now_ns(&self) -> u64 {
        self.t_us * 1000
    }

    fn at(&mut self, t_ms: u64) -> &mut Self {
        assert!(t_ms * 1000 >= self.t_us, "time runs forward");
        self.t_us = t_ms * 1000;
        self
    }

    fn push(&mut self, body: String) {
        self.events.push(format!("{{\"t_us\": {}, {}}}", self.t_us, body));
    }

    fn send(&mut self, node: u16, times: u32) -> &mut Self {
        for _ in 0..times {
            let now = self.now_ns();
            for h in &mut self.health {
                h.sent(NodeId(node), now);
            }
            self.push(format!("\"event\": \"send\", \"node\": {node}"));
        }
        self
    }

    fn reply(&mut self, node: u16, latency_us: u64) -> &mut Self {
        let now = self.now_ns();
        for h in &mut self.health {
            h.replied(NodeId(node), latency_us * 1000, now);
        }
        self.push(format!("\"event\": \"reply\", \"node\": {node}, \"latency_us\": {latency_us}"));
        self
    }

    /// `node` answers a probe (alive, but no read latency).
    fn probe_answer(&mut self, node: u16) -> &mut Self {
        let now = self.now_ns();
        for h in &mut self.health {
            h.answered(NodeId(node), now);
        }
        self.push(format!("\"event\": \"probe_answer\", \"node\": {node}"));
        self
    }

    /// `node` sends and replies `times` times at `latency_us`.
    fn traffic(&mut self, node: u16, times: u32, latency_us: u64) -> &mut Self {
        for _ in 0..times {
            self.send(node, 1).reply(node, latency_us);
        }
        self
    }

    fn expiry(&mut self, node: u16) -> &mut Self {
        let now = self.now_ns();
        for h in &mut self.health {
            h.expired(NodeId(node), now);
        }
        self.push(format!("\"event\": \"expiry\", \"node\": {node}"));
        self
    }

    fn pending(&mut self, node: u16, count: u32) -> &mut Self {
        for h in &mut self.health {
            h.pending(NodeId(node), count);
        }
        self.push(format!("\"event\": \"pending\", \"node\": {node}, \"count\": {count}"));
        self
    }

    fn down(&mut self, node: u16) -> &mut Self {
        self.live[node as usize] = false;
        for h in &mut self.health {
            h.reset(NodeId(node));
        }
        self.push(format!("\"event\": \"down\", \"node\": {node}"));
        self
    }

    fn up(&mut self, node: u16) -> &mut Self {
        self.live[node as usize] = true;
        self.up_at_us[node as usize] = Some(self.t_us);
        for h in &mut self.health {
            h.reset(NodeId(node));
        }
        self.push(format!("\"event\": \"up\", \"node\": {node}"));
        self
    }

    fn rates(&mut self, rates: [Option<f64>; NODES]) -> &mut Self {
        self.rates = rates;
        let text: Vec<String> = rates.iter().map(|r| r.map_or("null".to_string(), |x| format!("{x}"))).collect();
        self.push(format!("\"event\": \"rates\", \"rates\": [{}]", text.join(", ")));
        self
    }

    /// A read over `replicas` (inner order) at coordinator `local`, k, draw `unit`.
    fn plan(&mut self, replicas: &[u16], local: u16, k: usize, unit: f64) -> &mut Self {
        self.plan_warming(replicas, local, k, unit, 0.5)
    }

    /// The same, with `background_unit` deciding whether a cold replica is read in the
    /// background.
    fn plan_warming(&mut self, replicas: &[u16], local: u16, k: usize, unit: f64, background_unit: f64) -> &mut Self {
        let ids: Vec<NodeId> = replicas.iter().map(|&r| NodeId(r)).collect();
        let live: Vec<bool> = replicas.iter().map(|&r| self.live[r as usize]).collect();
        let rates: Vec<Option<f64>> = replicas.iter().map(|&r| self.rates[r as usize]).collect();
        let warming: Vec<bool> = replicas
            .iter()
            .map(|&r| self.up_at_us[r as usize].is_some_and(|t| self.t_us - t < WARMUP_WINDOW_US))
            .collect();
        let req = OrderRequest {
            replicas: &ids,
            live: &live,
            rates: &rates,
            local: NodeId(local),
            k,
            unit,
            warming: &warming,
            warmup_share: 1.0,
            background_unit,
        };
        let mut out = [NodeId(0); MAX_REPLICAS];
        let now = self.now_ns();
        let (n, outcome) = coordinator_order(&req, &self.health[local as usize], &PlanConfig::default(), now, &mut out);
        let order: Vec<String> = out[..n].iter().map(|x| x.0.to_string()).collect();
        let list: Vec<String> = replicas.iter().map(|r| r.to_string()).collect();
        self.plans += 1;
        if outcome.passed_over > 0 {
            self.passed_plans += 1;
        }
        if outcome.background.is_some() {
            self.background_plans += 1;
        }
        self.push(format!(
            "\"event\": \"plan\", \"replicas\": [{}], \"local\": {local}, \"k\": {k}, \"u\": {unit}, \"expect\": [{}], \"drawn\": {}, \"passed_over\": {}, \"u_background\": {background_unit}, \"background\": {}, \"gave_way\": {}",
            list.join(", "),
            order.join(", "),
            outcome.drawn,
            outcome.passed_over,
            outcome.background.map_or(-1, |b| i32::from(b.0)),
            outcome.gave_way
        ));
        if outcome.gave_way > 0 {
            self.gave_way_plans += 1;
        }
        self
    }

    /// Warm steady traffic: every live node of 0..3 replies 5 times at 1 ms.
    fn warm(&mut self) -> &mut Self {
        for node in 0..3u16 {
            if self.live[node as usize] {
                self.traffic(node, 5, 1000);
            }
        }
        self
    }
}

fn cases() -> Vec<Case> {
    const R: [u16; 3] = [0, 1, 2];
    let mut out = Vec::new();

    let mut c = Case::new("steady", "three warm replicas answering in 1 ms: HWLB's draw, nothing passed over");
    c.warm().at(10);
    for u in [0.05, 0.3, 0.55, 0.8, 0.97] {
        c.plan(&R, 0, 2, u).plan(&R, 0, 1, u);
    }
    c.plan(&[2, 0, 1], 0, 2, 0.4).plan(&R, 3, 2, 0.4).plan(&R, 3, 1, 0.62);
    c.rates([Some(0.9), Some(0.9), Some(0.9), Some(0.9)]).plan(&R, 0, 2, 0.3);
    out.push(c);

    let mut c = Case::new(
        "paused",
        "replica 1 pauses (GC): ten sends without a reply make it silent; its expiries keep it passed over; its first reply takes it back; the replies it had queued are stalls, not slowness",
    );
    c.warm().at(100).traffic(0, 2, 1000).traffic(2, 2, 1000);
    c.send(1, 9).plan(&R, 0, 2, 0.3).send(1, 1).plan(&R, 0, 2, 0.3);
    c.at(250).traffic(0, 2, 1000).traffic(2, 2, 1000);
    c.plan(&R, 0, 2, 0.9).plan(&R, 0, 1, 0.5).plan(&R, 1, 2, 0.2).plan(&R, 3, 1, 0.8);
    c.at(5100).expiry(1).plan(&R, 0, 2, 0.3);
    c.at(6000).plan(&R, 0, 1, 0.7);
    c.at(6050).reply(1, 5_950_000).plan(&R, 0, 2, 0.3);
    c.at(7000).send(1, 10).at(7100).plan(&R, 0, 2, 0.3);
    // Its replies after the pause: the 5.95 s one was a stall (out of the latency average), so
    // with the others measured again it is not slow either.
    c.at(7150)
        .reply(1, 900)
        .reply(1, 900)
        .traffic(0, 2, 1000)
        .traffic(2, 2, 1000)
        .plan(&R, 0, 2, 0.3)
        .plan(&R, 0, 1, 0.9);
    out.push(c);

    let mut c = Case::new("slow", "replica 2 warm but answering in 40 ms against 1 ms: passed over; after two quiet seconds its average ages out and it is tried again, until slow again");
    c.warm().traffic(2, 5, 40_000).at(20);
    for u in [0.1, 0.6] {
        c.plan(&R, 0, 2, u).plan(&R, 0, 1, u);
    }
    c.plan(&R, 2, 1, 0.45);
    c.at(2100).traffic(0, 1, 1000).traffic(1, 1, 1000).plan(&R, 0, 2, 0.6);
    c.traffic(2, 1, 9_000)
        .plan(&R, 0, 2, 0.6)
        .at(2200)
        .traffic(2, 3, 40_000)
        .plan(&R, 0, 2, 0.6);
    out.push(c);

    let mut c = Case::new(
        "slow-disk-trial",
        "replica 2's disk turns slow (60 ms against 1 ms): passed over; probes answered every 200 ms keep it alive but do not pull its average down; once the average ages out it is on trial: one read goes to it and it is passed over while that read is out; a slow answer renews the verdict, a fast one (the disk recovered) clears it",
    );
    c.warm().traffic(2, 5, 60_000).at(20).plan(&R, 0, 2, 0.6).plan(&R, 0, 1, 0.9);
    for t in (200..=1800).step_by(200) {
        c.at(t).traffic(0, 2, 1000).traffic(1, 2, 1000).probe_answer(2);
    }
    c.plan(&R, 0, 2, 0.6).plan(&R, 3, 1, 0.9);
    // Aged out (2 s without a sample), no read out to it: the next read may take it.
    c.at(2030).traffic(0, 2, 1000).traffic(1, 2, 1000).plan(&R, 0, 2, 0.6);
    c.plan(&R, 3, 1, 0.1).plan(&R, 3, 1, 0.5).plan(&R, 3, 1, 0.95);
    // That read went out: on trial, passed over while it is unanswered.
    c.send(2, 1)
        .plan(&R, 0, 2, 0.6)
        .plan(&R, 3, 1, 0.9)
        .at(2060)
        .probe_answer(2)
        .plan(&R, 0, 2, 0.6);
    // Its answer, slow: the verdict is renewed for another two seconds.
    c.at(2090).reply(2, 60_000).plan(&R, 0, 2, 0.6);
    c.at(3000).traffic(0, 2, 1000).traffic(1, 2, 1000).plan(&R, 0, 2, 0.6);
    // Aged out again; a trial read answered in 1.2 ms (the disk recovered) clears it.
    c.at(4100).traffic(0, 2, 1000).traffic(1, 2, 1000).send(2, 1).plan(&R, 0, 2, 0.6);
    c.at(4102).reply(2, 1200).plan(&R, 0, 2, 0.6).plan(&R, 3, 1, 0.95);
    // A read to it lost (never answered, never expired) holds the trial only for the latency
    // memory: then a send renews it.
    c.traffic(2, 5, 60_000)
        .at(6200)
        .traffic(0, 2, 1000)
        .traffic(1, 2, 1000)
        .send(2, 1)
        .plan(&R, 0, 2, 0.6);
    c.at(8300)
        .traffic(0, 2, 1000)
        .traffic(1, 2, 1000)
        .plan(&R, 0, 2, 0.6)
        .send(2, 1)
        .plan(&R, 0, 2, 0.6);
    out.push(c);

    let mut c = Case::new(
        "slow-local-disk",
        "coordinator 0's own reads (Cassandra feeds their latency too) take 40 ms against 1 ms: its own replica is passed over like any other, at ONE and at QUORUM; cold (restarted), it keeps its reads",
    );
    c.warm().traffic(0, 5, 40_000).at(20);
    for u in [0.1, 0.6] {
        c.plan(&R, 0, 1, u).plan(&R, 0, 2, u).plan(&R, 1, 2, u);
    }
    c.rates([Some(0.2), Some(0.85), Some(0.82), Some(0.9)])
        .plan(&R, 0, 1, 0.1)
        .plan(&R, 0, 2, 0.6);
    out.push(c);

    let mut c = Case::new("cold-restart", "replica 2 restarts with an empty cache (rate 0.1): slow but cold, so never passed over for it; no read waits for it while the two warm replicas can serve (it warms in the background); once warm (0.85) the same slowness passes it over");
    c.warm().at(10).down(2).plan(&R, 0, 2, 0.3).at(2000).up(2);
    c.rates([Some(0.9), Some(0.88), Some(0.1), Some(0.9)]);
    c.traffic(2, 3, 30_000).traffic(0, 2, 1000).traffic(1, 2, 1000).at(2010);
    for u in [0.02, 0.35, 0.7, 0.99] {
        c.plan(&R, 0, 2, u).plan(&R, 2, 2, u).plan(&R, 1, 1, u);
    }
    c.rates([Some(0.9), Some(0.88), Some(0.85), Some(0.9)])
        .plan(&R, 0, 2, 0.35)
        .plan(&R, 0, 1, 0.9);
    out.push(c);

    let mut c = Case::new(
        "warm-up",
        "replica 2 comes back with a cold cache (0.2 against 0.9 and 0.88): reads go to the warm replicas, it comes after them, and a read also reads it in the background when u_background is below the pace that gives it the warm replicas' misses per second; at ALL (too few warm) it takes its HWLB share; with replica 1 back cold too, QUORUM cannot avoid them (HWLB's shares) but ONE can (the coldest warms); after the warming window, its HWLB share",
    );
    c.warm()
        .at(10)
        .down(2)
        .at(1000)
        .up(2)
        .rates([Some(0.9), Some(0.88), Some(0.2), Some(0.9)]);
    c.traffic(0, 2, 1000).traffic(1, 2, 1000).at(1010);
    for ub in [0.05, 0.13, 0.14, 0.9] {
        c.plan_warming(&R, 0, 2, 0.5, ub)
            .plan_warming(&R, 2, 2, 0.5, ub)
            .plan_warming(&R, 3, 1, 0.3, ub)
            .plan_warming(&R, 3, 1, 0.8, ub);
    }
    c.plan_warming(&R, 0, 3, 0.5, 0.01);
    c.rates([Some(0.9), Some(0.88), Some(0.6), Some(0.9)])
        .plan_warming(&R, 0, 2, 0.5, 0.3)
        .plan_warming(&R, 0, 2, 0.5, 0.5)
        .plan_warming(&R, 3, 1, 0.5, 0.2);
    c.at(1100)
        .down(1)
        .at(1200)
        .up(1)
        .rates([Some(0.9), Some(0.3), Some(0.2), Some(0.9)]);
    c.traffic(0, 2, 1000).at(1210);
    for ub in [0.1, 0.6] {
        c.plan_warming(&R, 0, 2, 0.5, ub).plan_warming(&R, 3, 1, 0.5, ub);
    }
    c.at(1200 + 900_000)
        .traffic(0, 2, 1000)
        .plan_warming(&R, 0, 2, 0.5, 0.01)
        .plan_warming(&R, 3, 1, 0.5, 0.01);
    out.push(c);

    let mut c = Case::new(
        "loaded-while-warming",
        "coordinator 0 (no latency of its own): replica 2 restarted cold (rate 0.2) answers in 2 ms, replica 1, warm, in 20 ms under the reads HWLB moved onto it: not slow next to the colder replica alone, so HWLB keeps drawing it; once replica 2 is warm (0.84) the same gap passes replica 1 over",
    );
    c.at(10).rates([Some(0.9), Some(0.86), Some(0.2), Some(0.9)]);
    c.traffic(1, 60, 20_000).traffic(2, 60, 2_000).at(20);
    for u in [0.1, 0.5, 0.9] {
        c.plan(&R, 0, 2, u).plan(&R, 3, 1, u);
    }
    c.rates([Some(0.9), Some(0.86), Some(0.84), Some(0.9)])
        .plan(&R, 0, 2, 0.5)
        .plan(&R, 3, 1, 0.5);
    out.push(c);

    let mut c = Case::new(
        "restarted-coordinator",
        "coordinator 2 restarted cold (rate 0.2); warm replicas 0 and 1 answer in 2 and 20 ms: at QUORUM replica 1 is not passed over (only the coordinator's own cold replica could take its place), at ONE it is (replica 0 serves)",
    );
    c.at(10).rates([Some(0.9), Some(0.88), Some(0.2), Some(0.9)]);
    c.traffic(0, 60, 2_000).traffic(1, 60, 20_000).at(20);
    for u in [0.1, 0.5, 0.9] {
        c.plan(&R, 2, 2, u).plan(&R, 2, 1, u);
    }
    out.push(c);

    let mut c = Case::new(
        "comes-back",
        "replica 1 goes down (last, never drawn), comes back: everything known of it forgotten, drawn again at once",
    );
    c.warm()
        .send(1, 12)
        .at(300)
        .plan(&R, 0, 2, 0.5)
        .down(1)
        .plan(&R, 0, 2, 0.5)
        .plan(&R, 0, 1, 0.5);
    c.at(900).up(1).plan(&R, 0, 2, 0.5).plan(&R, 0, 1, 0.3);
    out.push(c);

    let mut c = Case::new(
        "fewer-than-k",
        "replica 1 silent and replica 2 slow at k = 2: replica 2 is kept (without it the read could not be served by replicas as warm), the silent one goes last",
    );
    c.warm().traffic(2, 6, 60_000).send(1, 10).at(400);
    c.plan(&R, 0, 2, 0.5)
        .plan(&[2, 1, 0], 0, 2, 0.5)
        .plan(&R, 0, 1, 0.5)
        .plan(&R, 2, 3, 0.5);
    c.send(0, 10).at(700).plan(&R, 0, 2, 0.5);
    out.push(c);

    let mut c = Case::new("pending", "messages pending on the connection to replica 2 count as in flight; a rate unknown (a peer without the plug-in) keeps the inner order, passing over still applies");
    c.warm()
        .at(300)
        .pending(2, 15)
        .plan(&R, 0, 2, 0.25)
        .pending(2, 3)
        .plan(&R, 0, 2, 0.25);
    c.pending(2, 40)
        .rates([Some(0.9), None, Some(0.82), Some(0.9)])
        .plan(&R, 0, 2, 0.25)
        .plan(&[1, 2, 0], 0, 2, 0.25);
    c.pending(2, 0).plan(&[1, 2, 0], 0, 2, 0.25);
    out.push(c);

    let mut c = Case::new(
        "paused-and-busy",
        "replica 1 paused (silent, then expired) while replica 2, taking its reads too, is briefly silent under load (ten sends without a reply): with fewer than k healthy the last resorts go by their last reply, so the first k take replica 2, not the paused replica the inner order puts first",
    );
    c.warm().at(100).traffic(0, 2, 1000).traffic(2, 2, 1000).send(1, 10);
    c.at(1100).expiry(1).traffic(2, 2, 1000).at(1300).send(2, 10).at(1350);
    c.plan(&R, 0, 2, 0.5)
        .plan(&[1, 2, 0], 0, 2, 0.5)
        .plan(&R, 3, 2, 0.5)
        .plan(&R, 0, 3, 0.5);
    c.at(1400).traffic(2, 1, 1000).plan(&R, 0, 2, 0.5);
    out.push(c);

    let mut c = Case::new(
        "overdue",
        "a coordinator of a large cluster: the replicas' own averages aged out (no reply for 2 s), every replica's pooled latency (1-5 ms) stands in; one read out to replica 1 makes it give way at once, and once it has waited longer than the pooled average plus four deviations replica 1 is overdue, passed over after one read whatever the count; past the latency memory the verdict ends (the wait still makes it the costliest), an expiry passes it over again, a reply clears it",
    );
    for _ in 0..10 {
        c.traffic(0, 1, 1000).traffic(1, 1, 5000).traffic(2, 1, 3000);
    }
    c.at(3000).plan(&R, 0, 2, 0.3).plan(&R, 3, 1, 0.55);
    c.send(1, 1).at(3001).plan(&R, 0, 2, 0.3).plan(&R, 3, 1, 0.55);
    c.at(3030).plan(&R, 0, 2, 0.3).plan(&R, 3, 1, 0.55).plan(&R, 1, 2, 0.3);
    c.at(5100).plan(&R, 0, 2, 0.3).plan(&R, 3, 1, 0.55);
    c.at(8000).expiry(1).plan(&R, 0, 2, 0.3);
    c.at(8010).reply(1, 3000).plan(&R, 0, 2, 0.3).plan(&R, 3, 1, 0.55);
    out.push(c);

    let mut c = Case::new(
        "equal-caches",
        "every cache equally warm (HWLB steps aside): the inner order's first k give way to a replica that answers quicker (replica 1 at 4 ms, not slow by the slow rule) or has fewer reads of ours unanswered",
    );
    c.rates([Some(0.9), Some(0.9), Some(0.9), Some(0.9)]);
    c.traffic(0, 5, 1000).traffic(1, 5, 4000).traffic(2, 5, 2000).at(10);
    c.plan(&R, 0, 2, 0.5).plan(&R, 3, 1, 0.5).plan(&[1, 2, 0], 3, 2, 0.5);
    c.send(0, 2).plan(&R, 3, 1, 0.5).plan(&R, 0, 2, 0.5);
    out.push(c);

    let mut c = Case::new(
        "zone-back-cold",
        "replica 2 back cold (rate 0) while the warm replicas (0.75) answer in 600 ms, overloaded: its background reads answer in 20 ms, so weighed by heat ((1 / 0.25) x 20 = 80 ms) it takes a read and is read by it, not in the background; once they answer in 40 ms (their averages near 66 ms) the warm replicas keep the reads",
    );
    c.warm()
        .at(10)
        .down(2)
        .at(2000)
        .up(2)
        .rates([Some(0.75), Some(0.75), Some(0.0), Some(0.9)]);
    c.traffic(0, 60, 600_000).traffic(1, 60, 600_000).traffic(2, 60, 20_000).at(2010);
    c.plan_warming(&R, 3, 2, 0.5, 0.01)
        .plan_warming(&R, 0, 2, 0.5, 0.01)
        .plan_warming(&R, 3, 1, 0.4, 0.9);
    c.at(2100).traffic(0, 60, 40_000).traffic(1, 60, 40_000).traffic(2, 2, 20_000);
    c.plan_warming(&R, 3, 2, 0.5, 0.01)
        .plan_warming(&R, 0, 2, 0.5, 0.01)
        .plan_warming(&R, 3, 1, 0.4, 0.9);
    out.push(c);
    out
}

fn render(cases: &[Case]) -> String {
    let cases: Vec<TraceCase> = cases
        .iter()
        .map(|c| TraceCase {
            name: c.name.to_string(),
            about: c.about.to_string(),
            fields: String::new(),
            events: c.events.clone(),
        })
        .collect();
    common::render(
        "unified's coordinator side: events and the orders the Rust rule gives; the Java plug-in must give the same \
         (crates/policy/tests/unified_coordinator_traces.rs writes it; times in microseconds)",
        "",
        &cases,
    )
}

#[test]
fn the_traces_file_is_what_the_rust_rule_gives() {
    let cases = cases();
    for c in &cases {
        assert!(c.plans > 0, "{}: no plan", c.name);
    }
    let background: usize = cases.iter().map(|c| c.background_plans).sum();
    assert!(background > 3, "the traces warm a cold replica in some plans: {background}");
    let gave_way: usize = cases.iter().map(|c| c.gave_way_plans).sum();
    assert!(gave_way > 5, "the traces give way to a cheaper replica in some plans: {gave_way}");
    let passed: usize = cases.iter().map(|c| c.passed_plans).sum();
    let plans: usize = cases.iter().map(|c| c.plans).sum();
    assert!(
        passed > 10 && passed < plans,
        "the traces pass over in some plans only: {passed} of {plans}"
    );
    common::write_or_check("unified-coordinator-traces.json", &render(&cases), "unified_coordinator_traces");
}

#[test]
fn the_traces_cover_what_they_claim() {
    let cases = cases();
    let find = |name: &str| cases.iter().find(|c| c.name == name).expect("case exists");
    let has = |c: &Case, needle: &str| c.events.iter().any(|e| e.contains(needle));
    // Paused: the silent replica goes last; steady: never passed over.
    assert!(has(find("paused"), "\"expect\": [0, 2, 1]"));
    assert_eq!(find("steady").passed_plans, 0);
    // Cold restart: slow and cold, not passed over while cold.
    let cold = find("cold-restart");
    assert!(cold.passed_plans >= 1 && cold.passed_plans < cold.plans);
    // A slow replica the read needs is kept; the silent one goes last.
    assert!(has(
        find("fewer-than-k"),
        "\"k\": 2, \"u\": 0.5, \"expect\": [0, 2, 1], \"drawn\": false, \"passed_over\": 1"
    ));
    // A restarted coordinator at QUORUM keeps the slow warm replica rather than read its own
    // cold one; at ONE it passes it over.
    let restarted = find("restarted-coordinator");
    assert!(has(
        restarted,
        "\"k\": 2, \"u\": 0.5, \"expect\": [0, 1, 2], \"drawn\": true, \"passed_over\": 0"
    ));
    assert!(has(
        restarted,
        "\"k\": 1, \"u\": 0.5, \"expect\": [0, 2, 1], \"drawn\": true, \"passed_over\": 1"
    ));
    // Warm-up: the cold replica after the warm ones, read in the background below the pace
    // (0.11 / 0.8 of the reads at QUORUM), never at ALL.
    let warm_up = find("warm-up");
    assert!(has(
        warm_up,
        "\"k\": 2, \"u\": 0.5, \"expect\": [0, 1, 2], \"drawn\": false, \"passed_over\": 0, \"u_background\": 0.13, \"background\": 2"
    ));
    assert!(has(
        warm_up,
        "\"k\": 2, \"u\": 0.5, \"expect\": [0, 1, 2], \"drawn\": false, \"passed_over\": 0, \"u_background\": 0.14, \"background\": -1"
    ));
    assert!(has(
        warm_up,
        "\"k\": 3, \"u\": 0.5, \"expect\": [0, 1, 2], \"drawn\": false, \"passed_over\": 0, \"u_background\": 0.01, \"background\": -1"
    ));
    // Paused and busy: the last resort still answering comes before the paused one.
    assert!(has(
        find("paused-and-busy"),
        "\"k\": 2, \"u\": 0.5, \"expect\": [0, 2, 1], \"drawn\": false, \"passed_over\": 2"
    ));
}
