//! The shared decision traces of the client policies a driver runs (`unified`, `c3`,
//! `hwlb-client`, `weighted-least-loaded`, `peak-ewma`, `p2c`):
//! `testdata/client-policy-traces.json` holds, first, values of the random-number generator
//! (so the Java `Rng` can be checked bit for bit), then cases: a policy with its parameters, a
//! seed for the generator its plans draw from, and a sequence of events (sends, replies with
//! their latency and maybe a hit rate, failures, hit rates polled off the request path, nodes
//! going down and up, zones) and plans asked for, each with the order the Rust policy gives.
//! Each policy decides as a client does through a driver: one target (`count` 1), no local
//! node, the candidates being the key's replicas, one replica group. The order is the plan's
//! targets and fallbacks, then the candidates the plan left out in candidate order: the
//! whole order a driver tries (only `hwlb-client` leaves some out). The Java core's
//! `ClientTracesTest` replays every case through the Java policies and must give the same
//! orders. This test checks the file is what the Rust policies give now; after a deliberate
//! change, regenerate it with
//! `REPLICA_LB_WRITE_TRACES=1 cargo test --release -p replica-lb-policy --test client_policy_traces`.

mod common;

use common::TraceCase;
use replica_lb_policy::types::{Decision, Failure, Feedback, NodeCaps, NodeId, Plan, Reply, Request};
use replica_lb_policy::{Event, ParamTable, ParamValue, Policy, Rng};

/// The six policies, each with the parameters a driver runs it with (`c3` without rate
/// control: a driver cannot hold a request back).
const POLICIES: [(&str, &[(&str, &str)]); 6] = [
    ("unified", &[]),
    ("c3", &[("rate_control", "false")]),
    ("hwlb-client", &[]),
    ("weighted-least-loaded", &[]),
    ("peak-ewma", &[]),
    ("p2c", &[]),
];

/// The replica group of every request (a driver passes the key's token range; fixed here).
const GROUP: u64 = 7;

/// One case being written: the Rust policy, its random stream, and the events so far.
struct Case {
    name: String,
    about: &'static str,
    fields: String,
    policy: Box<dyn Policy>,
    rng: Rng,
    t_us: u64,
    events: Vec<String>,
    plans: usize,
    /// Sends without an end yet, as (node, when it was sent, when it answers; µs, `None`:
    /// never).
    open: Vec<(u16, u64, Option<u64>)>,
}

impl Case {
    fn new(name: &str, about: &'static str, policy: &str, params: &[(&str, &str)], seed: u64) -> Case {
        let table: ParamTable = params.iter().map(|&(k, v)| (k.to_string(), ParamValue::parse_text(v))).collect();
        let built = replica_lb_policy::build(policy, &table).unwrap_or_else(|e| panic!("{policy}: {e}"));
        let params_json: Vec<String> = params.iter().map(|(k, v)| format!("\"{k}\": \"{v}\"")).collect();
        Case {
            name: format!("{name}/{policy}"),
            about,
            fields: format!(
                "\"policy\": \"{policy}\", \"params\": {{{}}}, \"seed\": {seed}, ",
                params_json.join(", ")
            ),
            policy: built.policy,
            rng: Rng::seed_from_u64(seed),
            t_us: 0,
            events: Vec::new(),
            plans: 0,
            open: Vec::new(),
        }
    }

    fn now_ns(&self) -> u64 {
        self.t_us * 1000
    }

    fn at(&mut self, t_us: u64) -> &mut Self {
        assert!(t_us >= self.t_us, "time runs forward");
        self.t_us = t_us;
        self
    }

    fn push(&mut self, body: String) {
        self.events.push(format!("{{\"t_us\": {}, {}}}", self.t_us, body));
    }

    fn send(&mut self, node: u16) -> &mut Self {
        let now = self.now_ns();
        self.policy.observe(&Event::Sent { node: NodeId(node) }, now);
        self.push(format!("\"event\": \"send\", \"node\": {node}"));
        self
    }

    fn reply(&mut self, node: u16, latency_us: u64, hit_rate: Option<f64>) -> &mut Self {
        let now = self.now_ns();
        let reply = Reply {
            node: NodeId(node),
            latency_ns: latency_us * 1000,
            feedback: Feedback {
                hit_rate,
                ..Feedback::default()
            },
        };
        self.policy.observe(&Event::Reply(&reply), now);
        let rate = hit_rate.map_or(String::new(), |h| format!(", \"hit_rate\": {h}"));
        self.push(format!(
            "\"event\": \"reply\", \"node\": {node}, \"latency_us\": {latency_us}{rate}"
        ));
        self
    }

    fn failure(&mut self, node: u16, failure: Failure) -> &mut Self {
        let now = self.now_ns();
        self.policy.observe(
            &Event::Failure {
                node: NodeId(node),
                failure,
            },
            now,
        );
        let kind = match failure {
            Failure::Error => "error",
            Failure::Timeout => "timeout",
            Failure::ConnectionLost => "connection_lost",
        };
        self.push(format!("\"event\": \"failure\", \"node\": {node}, \"kind\": \"{kind}\""));
        self
    }

    fn hit_rate(&mut self, node: u16, hit_rate: f64) -> &mut Self {
        let now = self.now_ns();
        let info = Feedback {
            hit_rate: Some(hit_rate),
            ..Feedback::default()
        };
        self.policy.observe(
            &Event::Info {
                node: NodeId(node),
                info: &info,
            },
            now,
        );
        self.push(format!("\"event\": \"hit_rate\", \"node\": {node}, \"hit_rate\": {hit_rate}"));
        self
    }

    fn down(&mut self, node: u16) -> &mut Self {
        let now = self.now_ns();
        self.policy.observe(&Event::NodeDown { node: NodeId(node) }, now);
        self.push(format!("\"event\": \"down\", \"node\": {node}"));
        self
    }

    fn up(&mut self, node: u16) -> &mut Self {
        let now = self.now_ns();
        self.policy.observe(
            &Event::NodeUp {
                node: NodeId(node),
                caps: NodeCaps::default(),
            },
            now,
        );
        self.push(format!("\"event\": \"up\", \"node\": {node}"));
        self
    }

    /// Zones: `zones[i]` is node i's zone (`None`: unknown); the client's own `local`.
    fn topology(&mut self, zones: &[Option<u32>], local: Option<u32>) -> &mut Self {
        let known: Vec<(NodeId, u32)> = zones
            .iter()
            .enumerate()
            .filter_map(|(i, z)| z.map(|z| (NodeId(i as u16), z)))
            .collect();
        self.policy.observe(
            &Event::Topology {
                zones: &known,
                local_zone: local,
            },
            0,
        );
        let zone = |z: &Option<u32>| z.map_or("-1".to_string(), |z| z.to_string());
        let list: Vec<String> = zones.iter().map(zone).collect();
        self.push(format!(
            "\"event\": \"topology\", \"zones\": [{}], \"local_zone\": {}",
            list.join(", "),
            zone(&local)
        ));
        self
    }

    /// Asks for a plan over `candidates` and records the whole order; returns its first node.
    fn plan(&mut self, candidates: &[u16]) -> u16 {
        let ids: Vec<NodeId> = candidates.iter().map(|&c| NodeId(c)).collect();
        let req = Request {
            candidates: &ids,
            replicas: Some(&ids),
            count: 1,
            local: None,
            group: GROUP,
        };
        let mut plan = Plan::new();
        let now = self.now_ns();
        let decision = self.policy.plan(&req, now, &mut self.rng, &mut plan);
        assert_eq!(decision, Decision::Send, "{}: a client plan is sent at once", self.name);
        assert_eq!(plan.count(), 1, "{}", self.name);
        let mut order: Vec<u16> = plan.all().iter().map(|x| x.0).collect();
        for &c in candidates {
            if !order.contains(&c) {
                order.push(c);
            }
        }
        let text = |xs: &[u16]| xs.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ");
        self.push(format!(
            "\"event\": \"plan\", \"candidates\": [{}], \"expect\": [{}]",
            text(candidates),
            text(&order)
        ));
        self.plans += 1;
        order[0]
    }

    /// A closed loop of `reads` reads, one every `every_us`: each is planned over `candidates`
    /// and sent to the first node of its order, which answers after `latency_us(node)` µs
    /// (`None`: never; such sends stay open until [`Case::expire`]) with `hit_rate(node)`.
    fn reads(
        &mut self,
        reads: u32,
        every_us: u64,
        candidates: &[u16],
        latency_us: impl Fn(u16) -> Option<u64>,
        hit_rate: impl Fn(u16) -> Option<f64>,
    ) -> &mut Self {
        for _ in 0..reads {
            let t = self.t_us + every_us;
            self.answer_until(t, &hit_rate);
            self.at(t);
            let node = self.plan(candidates);
            self.send(node);
            self.open.push((node, t, latency_us(node).map(|l| t + l)));
        }
        self
    }

    /// Lets `dt_us` pass, delivering the replies due meanwhile (without a hit rate).
    fn wait(&mut self, dt_us: u64) -> &mut Self {
        let t = self.t_us + dt_us;
        self.answer_until(t, &no_rate);
        self.at(t)
    }

    /// Delivers, in time order, the replies due by `t_us`.
    fn answer_until(&mut self, t_us: u64, hit_rate: &impl Fn(u16) -> Option<f64>) {
        loop {
            let next = (0..self.open.len())
                .filter_map(|i| self.open[i].2.filter(|&due| due <= t_us).map(|due| (due, i)))
                .min();
            let Some((due, i)) = next else { return };
            let (node, sent_us, _) = self.open.remove(i);
            self.at(due);
            self.reply(node, due - sent_us, hit_rate(node));
        }
    }

    /// Every open send to `node` that never answers ends with `failure` now.
    fn expire(&mut self, node: u16, failure: Failure) -> &mut Self {
        let stuck = self.open.iter().filter(|(n, _, due)| *n == node && due.is_none()).count();
        self.open.retain(|(n, _, due)| !(*n == node && due.is_none()));
        for _ in 0..stuck {
            self.failure(node, failure);
        }
        self
    }

    /// Delivers every reply still due and settles time past it.
    fn drain(&mut self) -> &mut Self {
        let last = self.open.iter().filter_map(|x| x.2).max().unwrap_or(self.t_us);
        self.answer_until(last, &|_| None);
        self
    }
}

fn equal(_: u16) -> Option<u64> {
    Some(1_000)
}

fn no_rate(_: u16) -> Option<f64> {
    None
}

/// Every scenario, for one policy.
fn scenarios(policy: &str, params: &[(&str, &str)]) -> Vec<Case> {
    const ALL: [u16; 3] = [0, 1, 2];
    let mut out = Vec::new();

    let mut c = Case::new(
        "steady",
        "three equal nodes answering in 1 ms, reads every 0.5 ms",
        policy,
        params,
        11,
    );
    c.reads(40, 500, &ALL, equal, no_rate);
    out.push(c);

    let mut c = Case::new(
        "slow-node",
        "node 2 answers in 20 ms, the others in 1 ms; then four candidates in another order",
        policy,
        params,
        12,
    );
    c.reads(60, 500, &ALL, |n| Some(if n == 2 { 20_000 } else { 1_000 }), no_rate);
    c.reads(20, 700, &[2, 3, 1, 0], |n| Some(if n == 2 { 20_000 } else { 1_100 }), no_rate);
    out.push(c);

    let mut c = Case::new(
        "stops-answering",
        "node 1 stops answering (its requests stay in flight, the wait a lower bound on its response time), its requests time out, then it answers again",
        policy,
        params,
        13,
    );
    c.reads(30, 500, &ALL, equal, no_rate);
    c.reads(60, 1_000, &ALL, |n| if n == 1 { None } else { Some(1_500) }, no_rate);
    for _ in 0..4 {
        c.wait(40_000).plan(&ALL);
    }
    c.expire(1, Failure::Timeout);
    c.plan(&ALL);
    c.reads(30, 1_000, &ALL, equal, no_rate);
    out.push(c);

    let mut c = Case::new(
        "down-and-back",
        "node 2 goes down (a connection lost, then left out of the candidates), comes back after 5 s and ramps up over the next 40 s",
        policy,
        params,
        14,
    );
    c.up(0).up(1).up(2);
    c.reads(20, 500, &ALL, equal, no_rate).drain();
    c.send(2);
    c.wait(100).failure(2, Failure::ConnectionLost).down(2);
    c.reads(20, 500, &[0, 1], equal, no_rate).drain();
    c.wait(5_000_000).up(2);
    for _ in 0..8 {
        c.reads(5, 500, &ALL, equal, no_rate).drain();
        c.wait(5_000_000);
    }
    out.push(c);

    let mut c = Case::new(
        "hit-rates",
        "node 1 restarted cold: hit rates polled off the request path and carried by replies (0.9, 0.3, 0.85), later all warm, then node 1's rate turns stale",
        policy,
        params,
        15,
    );
    let rates = [0.9, 0.3, 0.85];
    for (n, r) in rates.iter().enumerate() {
        c.hit_rate(n as u16, *r);
    }
    c.reads(40, 500, &ALL, equal, |n| Some(rates[n as usize]));
    c.drain();
    for n in 0..3 {
        c.hit_rate(n, 0.9);
    }
    c.reads(10, 500, &ALL, equal, |_| Some(0.9)).drain();
    c.hit_rate(1, 0.5).hit_rate(0, 0.9).hit_rate(2, 0.9);
    c.reads(10, 20_000, &[0, 2], equal, |_| Some(0.9));
    c.reads(10, 500, &ALL, equal, |_| None);
    c.send(1);
    c.wait(200).failure(1, Failure::Error);
    c.reads(5, 500, &ALL, equal, no_rate);
    out.push(c);

    let mut c = Case::new(
        "in-flight-skew",
        "many of our requests in flight at node 0 and a few at node 2 (none answered yet), then answered; two zones: the client's and node 3's",
        policy,
        params,
        16,
    );
    c.topology(&[Some(1), Some(1), Some(1), Some(2)], Some(1));
    c.reads(12, 500, &[0, 1, 2, 3], equal, no_rate).drain();
    for _ in 0..12 {
        c.send(0);
    }
    for _ in 0..3 {
        c.send(2);
    }
    for _ in 0..8 {
        c.plan(&[0, 1, 2, 3]);
    }
    c.wait(300);
    for _ in 0..12 {
        c.reply(0, 2_000, None);
    }
    for _ in 0..3 {
        c.failure(2, Failure::Timeout);
    }
    c.reads(20, 400, &[0, 1, 2, 3], |n| Some(if n == 3 { 4_000 } else { 1_000 }), no_rate);
    out.push(c);
    out
}

fn cases() -> Vec<Case> {
    POLICIES.iter().flat_map(|(p, params)| scenarios(p, params)).collect()
}

/// The generator's values: for a few seeds, the first 64-bit values, then from a fresh stream
/// unit doubles, draws below a bound, and a forked stream's first values.
fn rng_section() -> String {
    let mut items = Vec::new();
    for seed in [0u64, 1, 7, 42, 0x9e37_79b9_7f4a_7c15, u64::MAX] {
        let mut r = Rng::seed_from_u64(seed);
        let next: Vec<String> = (0..6).map(|_| format!("\"{}\"", r.next_u64())).collect();
        let mut r = Rng::seed_from_u64(seed);
        let unit: Vec<String> = (0..6).map(|_| format!("{:?}", r.unit_f64())).collect();
        let bounds = [1usize, 2, 3, 7, 64, 1000, 4096, 1 << 30];
        let below: Vec<String> = bounds.iter().map(|&n| format!("[{n}, {}]", r.below(n))).collect();
        let mut fork = r.fork();
        let forked: Vec<String> = (0..3).map(|_| format!("\"{}\"", fork.next_u64())).collect();
        let after: Vec<String> = (0..2).map(|_| format!("\"{}\"", r.next_u64())).collect();
        items.push(format!(
            "{{\"seed\": \"{seed}\", \"next_u64\": [{}], \"unit_f64\": [{}], \"below\": [{}], \"fork_next_u64\": [{}], \"after_fork_next_u64\": [{}]}}",
            next.join(", "),
            unit.join(", "),
            below.join(", "),
            forked.join(", "),
            after.join(", ")
        ));
    }
    format!("\"rng\": [\n  {}\n ],\n ", items.join(",\n  "))
}

fn render(cases: &[Case]) -> String {
    let cases: Vec<TraceCase> = cases
        .iter()
        .map(|c| TraceCase {
            name: c.name.clone(),
            about: c.about.to_string(),
            fields: c.fields.clone(),
            events: c.events.clone(),
        })
        .collect();
    common::render(
        "the client policies a driver runs: the generator's values (u64 as decimal strings; unit_f64 after next_u64 of a fresh stream of the same seed; \
         below then fork draw on from there), then events and the whole order each plan gives in Rust (targets, fallbacks, then the candidates the plan left out); \
         the Java core must give the same (crates/policy/tests/client_policy_traces.rs writes it; times in microseconds)",
        &rng_section(),
        &cases,
    )
}

#[test]
fn the_traces_file_is_what_the_rust_policies_give() {
    let cases = cases();
    for c in &cases {
        assert!(c.plans > 0, "{}: no plan", c.name);
    }
    common::write_or_check("client-policy-traces.json", &render(&cases), "client_policy_traces");
}

/// The first node of each plan of case `name`.
fn firsts(cases: &[Case], name: &str) -> Vec<u16> {
    let case = cases.iter().find(|c| c.name == name).unwrap_or_else(|| panic!("case {name}"));
    case.events
        .iter()
        .filter_map(|e| e.split("\"expect\": [").nth(1))
        .map(|rest| rest.split([',', ']']).next().unwrap().trim().parse().unwrap())
        .collect()
}

#[test]
fn the_traces_show_what_each_case_is_about() {
    let cases = cases();
    // Once it has answered (a node never heard from is tried first), a slow node gets little
    // of the latency-aware policies' traffic.
    for p in ["unified", "c3", "peak-ewma"] {
        let f = &firsts(&cases, &format!("slow-node/{p}"))[45..];
        let to_slow = f.iter().filter(|&&n| n == 2).count();
        assert!(to_slow * 5 < f.len(), "{p}: {to_slow} of {} reads to the slow node", f.len());
    }
    // unified leaves a node that stopped answering while its requests are in flight: the
    // four plans made while it is silent (40 ms apart) put it last.
    let case = cases.iter().find(|c| c.name == "stops-answering/unified").unwrap();
    let silent: Vec<&String> = case.events.iter().filter(|e| e.contains("\"plan\"")).skip(90).take(4).collect();
    for e in &silent {
        assert!(e.ends_with("1]}"), "the silent node is last: {e}");
    }
    // In-flight skew: while 12 of ours are at node 0, p2c, wll and peak-ewma never pick it.
    for p in ["p2c", "weighted-least-loaded", "peak-ewma"] {
        let case = cases.iter().find(|c| c.name == format!("in-flight-skew/{p}")).unwrap();
        let skewed: Vec<&String> = case.events.iter().filter(|e| e.contains("\"plan\"")).skip(12).take(8).collect();
        for e in &skewed {
            assert!(!e.contains("\"expect\": [0,"), "{p}: {e}");
        }
    }
    // hwlb-client sends the cold node less than a third of the reads while rates differ.
    let f = firsts(&cases, "hit-rates/hwlb-client");
    let to_cold = f[..40].iter().filter(|&&n| n == 1).count();
    assert!(to_cold < 8, "{to_cold} of 40 reads to the cold node");
}
