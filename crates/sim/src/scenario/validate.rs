//! Checks a raw scenario and converts it to a [`Scenario`]; every error names its line.

use super::raw::*;
use super::*;
use crate::dist::Dist;
use crate::keys::{KeyPattern, KeySpec};
use crate::runs::parse_item;
use toml::Spanned;

type Res<T> = Result<T, ScenarioError>;

struct Ctx<'a> {
    text: &'a str,
}

impl Ctx<'_> {
    fn line(&self, offset: usize) -> usize {
        self.text[..offset.min(self.text.len())].bytes().filter(|&b| b == b'\n').count() + 1
    }

    fn err<T>(&self, span: std::ops::Range<usize>, message: impl Into<String>) -> Res<T> {
        Err(ScenarioError {
            line: Some(self.line(span.start)),
            message: message.into(),
        })
    }

    fn at<T>(&self, s: &Spanned<T>, message: impl Into<String>) -> ScenarioError {
        ScenarioError {
            line: Some(self.line(s.span().start)),
            message: message.into(),
        }
    }

    fn int(&self, v: &Spanned<i64>, name: &str, min: i64, max: i64) -> Res<i64> {
        let x = *v.get_ref();
        if x < min || x > max {
            return self.err(v.span(), format!("{name} = {x}: must be an integer in [{min}, {max}]"));
        }
        Ok(x)
    }

    fn num(&self, v: &Spanned<f64>, name: &str, min: f64, max: f64) -> Res<f64> {
        let x = *v.get_ref();
        if !x.is_finite() || x < min || x > max {
            return self.err(v.span(), format!("{name} = {x}: must be a number in [{min}, {max}]"));
        }
        Ok(x)
    }

    fn opt_num(&self, v: &Option<Spanned<f64>>, name: &str, min: f64, max: f64, default: f64) -> Res<f64> {
        match v {
            Some(v) => self.num(v, name, min, max),
            None => Ok(default),
        }
    }

    fn dist(&self, span: std::ops::Range<usize>, name: &str, d: &str, mean_us: f64, sigma: Option<f64>, shape: Option<f64>) -> Res<Dist> {
        Dist::new(d, mean_us, sigma, shape).or_else(|e| self.err(span, format!("{name}: {e}")))
    }

    fn cl(&self, v: &Option<Spanned<String>>, default: ConsistencyLevel) -> Res<ConsistencyLevel> {
        match v {
            Some(s) => ConsistencyLevel::parse(s.get_ref()).map_err(|e| self.at(s, e)),
            None => Ok(default),
        }
    }
}

const MS: f64 = 1e6;
const US: f64 = 1e3;
const S: f64 = 1e9;

/// Parses and checks a scenario file. `default_name` (the file stem) names it when the file
/// does not.
pub fn parse(text: &str, default_name: &str) -> Result<Scenario, ScenarioError> {
    let raw: RawScenario = toml::from_str(text).map_err(|e| {
        let cx = Ctx { text };
        ScenarioError {
            line: e.span().map(|s| cx.line(s.start)),
            message: e.message().trim().replace('\n', " "),
        }
    })?;
    let cx = Ctx { text };
    let cluster = cluster(&cx, &raw)?;
    let node = node(&cx, raw.node.get_ref())?;
    let network = network(&cx, &raw, &cluster)?;
    let run = run(&cx, &raw)?;
    let clients = clients(&cx, raw.clients.get_ref(), &cluster)?;
    let requests = requests(&cx, &raw, &cluster, &clients)?;
    let feedback = feedback(&cx, &raw)?;
    let policy = policies(&cx, &raw, cluster.routing)?;
    let phases = phases(&cx, &raw, run.duration_s)?;
    let faults = faults(&cx, &raw, &cluster, &run)?;
    let seed = match &raw.seed {
        Some(s) => cx.int(s, "seed", 0, i64::MAX)? as u64,
        None => 1,
    };
    let name = match &raw.name {
        Some(n) if n.get_ref().is_empty() || n.get_ref().contains(['/', '\\']) => {
            return Err(cx.at(n, "name must be non-empty and contain no path separator"));
        }
        Some(n) => n.get_ref().clone(),
        None => default_name.to_string(),
    };
    Ok(Scenario {
        name,
        description: raw.description.clone().unwrap_or_default(),
        seed,
        cluster,
        node,
        network,
        clients,
        requests,
        run,
        feedback,
        policy,
        phases,
        faults,
    })
}

fn cluster(cx: &Ctx, raw: &RawScenario) -> Res<Cluster> {
    let c = raw.cluster.get_ref();
    let nodes = cx.int(&c.nodes, "cluster.nodes", 1, MAX_NODES as i64)? as usize;
    let mut zone_names: Vec<String> = Vec::new();
    let node_zone = match &c.zones {
        None => {
            zone_names.push("z0".into());
            vec![0; nodes]
        }
        Some(z) => {
            if z.get_ref().len() != nodes {
                return Err(cx.at(
                    z,
                    format!(
                        "cluster.zones lists {} zones for {nodes} nodes: give one per node",
                        z.get_ref().len()
                    ),
                ));
            }
            z.get_ref()
                .iter()
                .map(|name| match zone_names.iter().position(|n| n == name) {
                    Some(i) => i as u16,
                    None => {
                        zone_names.push(name.clone());
                        (zone_names.len() - 1) as u16
                    }
                })
                .collect()
        }
    };
    let rf = cx.int(&c.replication_factor, "cluster.replication_factor", 1, MAX_NODES as i64)? as usize;
    if rf > nodes {
        return Err(cx.at(
            &c.replication_factor,
            format!("replication_factor {rf} is more than the {nodes} nodes"),
        ));
    }
    let placement = match c.placement.as_ref().map(|p| p.get_ref().as_str()) {
        None | Some("ring") => Placement::Ring,
        Some("one-per-zone") => {
            if rf > zone_names.len() {
                let p = c.placement.as_ref().expect("matched Some");
                return Err(cx.at(
                    p,
                    format!(
                        "one-per-zone placement needs at least {rf} zones, the cluster has {}",
                        zone_names.len()
                    ),
                ));
            }
            Placement::OnePerZone
        }
        Some(other) => {
            let p = c.placement.as_ref().expect("matched Some");
            return Err(cx.at(p, format!("placement '{other}' is not one of: ring, one-per-zone")));
        }
    };
    let routing = match c.routing.as_ref().map(|p| p.get_ref().as_str()) {
        None | Some("coordinator") => Routing::Coordinator,
        Some("direct") => Routing::Direct,
        Some(other) => {
            let p = c.routing.as_ref().expect("matched Some");
            return Err(cx.at(p, format!("routing '{other}' is not one of: coordinator, direct")));
        }
    };
    Ok(Cluster {
        nodes,
        node_zone,
        zone_names,
        replication_factor: rf,
        placement,
        routing,
    })
}

fn node(cx: &Ctx, n: &RawNode) -> Res<NodeModel> {
    let cpu_concurrency = cx.int(&n.cpu_concurrency, "node.cpu_concurrency", 1, 4096)? as u32;
    let d = n.cpu_service.get_ref();
    let cpu_service = cx.dist(n.cpu_service.span(), "node.cpu_service", &d.dist, d.mean_us, d.sigma, d.shape)?;
    let coordinator_service = match &n.coordinator_service {
        Some(s) => {
            let d = s.get_ref();
            Some(cx.dist(s.span(), "node.coordinator_service", &d.dist, d.mean_us, d.sigma, d.shape)?)
        }
        None => None,
    };
    let extra_delay = match &n.extra_delay {
        Some(s) => {
            let e = s.get_ref();
            if !(0.0..=1.0).contains(&e.probability) {
                return cx.err(
                    s.span(),
                    format!("node.extra_delay.probability = {}: must be in [0, 1]", e.probability),
                );
            }
            Some((
                e.probability,
                cx.dist(s.span(), "node.extra_delay", &e.dist, e.mean_us, e.sigma, e.shape)?,
            ))
        }
        None => None,
    };
    let disk = match (&n.disk_concurrency, &n.disk_service) {
        (Some(c), Some(s)) => {
            let conc = cx.int(c, "node.disk_concurrency", 1, 4096)? as u32;
            let d = s.get_ref();
            Some((conc, cx.dist(s.span(), "node.disk_service", &d.dist, d.mean_us, d.sigma, d.shape)?))
        }
        (None, None) => None,
        (Some(c), None) => return Err(cx.at(c, "node.disk_concurrency needs node.disk_service too")),
        (None, Some(s)) => return Err(cx.at(s, "node.disk_service needs node.disk_concurrency too")),
    };
    let cache_rows = match &n.cache_rows {
        Some(c) => Some(cx.int(c, "node.cache_rows", 1, MAX_KEYS as i64)? as usize),
        None => None,
    };
    Ok(NodeModel {
        cpu_concurrency,
        cpu_service,
        coordinator_service,
        extra_delay,
        disk,
        cache_rows,
    })
}

fn network(cx: &Ctx, raw: &RawScenario, cluster: &Cluster) -> Res<NetworkModel> {
    let zones = cluster.zone_names.len();
    let (same, cross, jitter, links) = match &raw.network {
        Some(n) => {
            let n = n.get_ref();
            let same = cx.opt_num(&n.same_zone_us, "network.same_zone_us", 0.0, 1e7, 100.0)?;
            let cross = cx.opt_num(&n.cross_zone_us, "network.cross_zone_us", 0.0, 1e7, same)?;
            let jitter = cx.opt_num(&n.jitter_us, "network.jitter_us", 0.0, 1e7, 0.0)?;
            (same, cross, jitter, n.link.as_slice())
        }
        None => (100.0, 100.0, 0.0, &[][..]),
    };
    let mut one_way_ns = vec![(cross * US) as u64; zones * zones];
    for z in 0..zones {
        one_way_ns[z * zones + z] = (same * US) as u64;
    }
    for l in links {
        let link = l.get_ref();
        let find = |name: &str| cluster.zone_names.iter().position(|z| z == name);
        let (Some(from), Some(to)) = (find(&link.from), find(&link.to)) else {
            return cx.err(
                l.span(),
                format!(
                    "network.link {} -> {}: unknown zone; zones are: {}",
                    link.from,
                    link.to,
                    cluster.zone_names.join(", ")
                ),
            );
        };
        if !link.one_way_us.is_finite() || !(0.0..=1e7).contains(&link.one_way_us) {
            return cx.err(
                l.span(),
                format!("network.link one_way_us = {}: must be in [0, 1e7]", link.one_way_us),
            );
        }
        one_way_ns[from * zones + to] = (link.one_way_us * US) as u64;
    }
    Ok(NetworkModel {
        one_way_ns,
        zones,
        jitter_mean_ns: jitter * US,
    })
}

fn clients(cx: &Ctx, c: &RawClients, cluster: &Cluster) -> Res<ClientModel> {
    let count = cx.int(&c.count, "clients.count", 1, MAX_CLIENTS as i64)? as usize;
    let zone = match &c.zones {
        None => vec![cluster.node_zone[0]; count],
        Some(z) => {
            if z.get_ref().is_empty() {
                return Err(cx.at(z, "clients.zones is empty: list the zones clients sit in (they cycle over it)"));
            }
            let mut ids = Vec::new();
            for name in z.get_ref() {
                match cluster.zone_names.iter().position(|n| n == name) {
                    Some(i) => ids.push(i as u16),
                    None => {
                        return Err(cx.at(
                            z,
                            format!("clients.zones: unknown zone '{name}'; zones are: {}", cluster.zone_names.join(", ")),
                        ))
                    }
                }
            }
            (0..count).map(|i| ids[i % ids.len()]).collect()
        }
    };
    let arrival = match c.arrival.get_ref().as_str() {
        kind @ ("poisson" | "fixed") => {
            let Some(rate) = &c.rate_per_s else {
                return Err(cx.at(&c.arrival, format!("arrival '{kind}' needs clients.rate_per_s")));
            };
            let rate_per_s = cx.num(rate, "clients.rate_per_s", 1e-3, 1e9)?;
            if kind == "poisson" {
                Arrival::Poisson { rate_per_s }
            } else {
                Arrival::Fixed { rate_per_s }
            }
        }
        "closed" => {
            let Some(o) = &c.outstanding else {
                return Err(cx.at(&c.arrival, "arrival 'closed' needs clients.outstanding"));
            };
            Arrival::Closed {
                outstanding: cx.int(o, "clients.outstanding", 1, 100_000)? as u32,
                think_time_ns: (cx.opt_num(&c.think_time_us, "clients.think_time_us", 0.0, 1e9, 0.0)? * US) as u64,
            }
        }
        other => return Err(cx.at(&c.arrival, format!("arrival '{other}' is not one of: poisson, fixed, closed"))),
    };
    let weight = match &c.demand_skew {
        None => vec![1.0 / count as f64; count],
        Some(s) => {
            let k = s.get_ref();
            if !(k.clients > 0.0 && k.clients < 1.0 && k.requests > 0.0 && k.requests < 1.0) {
                return cx.err(s.span(), "demand_skew: clients and requests must both be fractions in (0, 1)");
            }
            let heavy = ((count as f64 * k.clients).round() as usize).clamp(1, count.saturating_sub(1).max(1));
            if heavy >= count {
                return cx.err(s.span(), "demand_skew needs at least 2 clients");
            }
            (0..count)
                .map(|i| {
                    if i < heavy {
                        k.requests / heavy as f64
                    } else {
                        (1.0 - k.requests) / (count - heavy) as f64
                    }
                })
                .collect()
        }
    };
    let k = c.keys.get_ref();
    let key_count = k.count;
    if key_count < 1 || key_count as u64 > MAX_KEYS {
        return cx.err(
            c.keys.span(),
            format!("clients.keys.count = {key_count}: must be in [1, {MAX_KEYS}]"),
        );
    }
    let pattern = match k.pattern.as_str() {
        "uniform" => KeyPattern::Uniform,
        "sequential" => KeyPattern::Sequential,
        "zipfian" => {
            let e = k.exponent.unwrap_or(0.99);
            if !(e > 0.0 && e <= 10.0) {
                return cx.err(c.keys.span(), format!("clients.keys.exponent = {e}: must be in (0, 10]"));
            }
            KeyPattern::Zipfian { exponent: e }
        }
        "hot-set" => {
            let hot = k.hot_keys.unwrap_or(0);
            let frac = k.hot_fraction.unwrap_or(-1.0);
            if hot < 1 || hot >= key_count || !(0.0..=1.0).contains(&frac) {
                return cx.err(
                    c.keys.span(),
                    "hot-set keys need hot_keys in [1, count) and hot_fraction in [0, 1] (the share of reads to the hot keys)",
                );
            }
            KeyPattern::HotSet {
                hot_keys: hot as u64,
                hot_fraction: frac,
            }
        }
        other => {
            return cx.err(
                c.keys.span(),
                format!("key pattern '{other}' is not one of: uniform, zipfian, hot-set, sequential"),
            )
        }
    };
    let write_fraction = cx.opt_num(&c.write_fraction, "clients.write_fraction", 0.0, 1.0, 0.0)?;
    if write_fraction > 0.0 && cluster.replication_factor > MAX_OPS_PER_REQUEST {
        let at = c.write_fraction.as_ref().expect("positive write fraction was given");
        return Err(cx.at(
            at,
            format!("writes go to every replica: replication_factor must be at most {MAX_OPS_PER_REQUEST}"),
        ));
    }
    Ok(ClientModel {
        count,
        zone,
        token_aware: c.token_aware.unwrap_or(true),
        arrival,
        weight,
        keys: KeySpec {
            pattern,
            count: key_count as u64,
        },
        write_fraction,
    })
}

fn requests(cx: &Ctx, raw: &RawScenario, cluster: &Cluster, _clients: &ClientModel) -> Res<RequestModel> {
    let default = RawRequests {
        consistency: None,
        warmup_consistency: None,
        read_timeout_ms: None,
        speculative_retry: None,
    };
    let r = raw.requests.as_ref().map(|r| r.get_ref()).unwrap_or(&default);
    let consistency = cx.cl(&r.consistency, ConsistencyLevel::One)?;
    let warmup_consistency = cx.cl(&r.warmup_consistency, consistency)?;
    for (cl, s) in [(consistency, &r.consistency), (warmup_consistency, &r.warmup_consistency)] {
        if cl.required(cluster.replication_factor) + 1 > MAX_OPS_PER_REQUEST {
            let at = s.as_ref().map(|s| cx.line(s.span().start));
            return Err(ScenarioError {
                line: at,
                message: format!(
                    "consistency {} needs more than {} replicas per read",
                    cl.as_str(),
                    MAX_OPS_PER_REQUEST - 1
                ),
            });
        }
    }
    let read_timeout_ms = cx.opt_num(&r.read_timeout_ms, "requests.read_timeout_ms", 0.001, 3.6e6, 5000.0)?;
    let speculative = match &r.speculative_retry {
        None => Speculative::None,
        Some(s) => {
            let t = s.get_ref().trim();
            if t == "none" {
                Speculative::None
            } else if let Some(ms) = t.strip_suffix("ms").and_then(|v| v.trim().parse::<f64>().ok()) {
                if !(ms > 0.0 && ms < 3.6e6) {
                    return Err(cx.at(s, format!("speculative_retry '{t}': the delay must be positive")));
                }
                Speculative::After {
                    delay_ns: (ms * MS) as u64,
                }
            } else if let Some(p) = t.strip_prefix('p').and_then(|v| v.parse::<f64>().ok()) {
                if !(p > 0.0 && p < 100.0) {
                    return Err(cx.at(s, format!("speculative_retry '{t}': the percentile must be in (0, 100)")));
                }
                Speculative::Percentile { quantile: p / 100.0 }
            } else {
                return Err(cx.at(
                    s,
                    format!("speculative_retry '{t}' is not one of: none, <N>ms, p<N> (e.g. 10ms, p99)"),
                ));
            }
        }
    };
    Ok(RequestModel {
        consistency,
        warmup_consistency,
        read_timeout_ns: (read_timeout_ms * MS) as u64,
        speculative,
    })
}

fn run(cx: &Ctx, raw: &RawScenario) -> Res<RunModel> {
    let r = raw.run.get_ref();
    Ok(RunModel {
        warmup_ns: (cx.opt_num(&r.warmup_s, "run.warmup_s", 0.0, 36_000.0, 0.0)? * S) as u64,
        duration_s: cx.int(&r.duration_s, "run.duration_s", 1, MAX_DURATION_S as i64)? as u32,
        failure_detection_ns: (cx.opt_num(&r.failure_detection_ms, "run.failure_detection_ms", 0.0, 3.6e6, 2000.0)? * MS) as u64,
        up_detection_ns: (cx.opt_num(&r.up_detection_ms, "run.up_detection_ms", 0.0, 3.6e6, 1000.0)? * MS) as u64,
    })
}

fn feedback(cx: &Ctx, raw: &RawScenario) -> Res<FeedbackModel> {
    let Some(f) = &raw.feedback else {
        return Ok(FeedbackModel {
            tick_ns: 10 * S as u64,
            window_ns: 60 * S as u64,
            piggyback: true,
            gossip: false,
            gossip_delay_ns: S as u64,
        });
    };
    let f = f.get_ref();
    Ok(FeedbackModel {
        tick_ns: (cx.opt_num(&f.hit_rate_tick_s, "feedback.hit_rate_tick_s", 0.001, 3600.0, 10.0)? * S) as u64,
        window_ns: (cx.opt_num(&f.hit_rate_window_s, "feedback.hit_rate_window_s", 0.001, 36_000.0, 60.0)? * S) as u64,
        piggyback: f.piggyback.unwrap_or(true),
        gossip: f.gossip.unwrap_or(false),
        gossip_delay_ns: (cx.opt_num(&f.gossip_delay_ms, "feedback.gossip_delay_ms", 0.0, 3.6e6, 1000.0)? * MS) as u64,
    })
}

fn policies(cx: &Ctx, raw: &RawScenario, routing: Routing) -> Res<PolicyModel> {
    let p = raw.policy.get_ref();
    let mut params = BTreeMap::new();
    for (name, table) in &p.params {
        if let Err(e) = policy::build(name, table.get_ref()) {
            return cx.err(table.span(), format!("policy.params.{name}: {e}"));
        }
        params.insert(name.clone(), table.get_ref().clone());
    }
    let both_side = match p.both_side.as_ref().map(|s| s.get_ref().as_str()) {
        None | Some("coordinator") => Side::Coordinator,
        Some("client") => Side::Client,
        Some(other) => {
            let s = p.both_side.as_ref().expect("matched Some");
            return Err(cx.at(s, format!("both_side '{other}' is not one of: client, coordinator")));
        }
    };
    let check = |s: &Spanned<String>, side: Side| -> Res<String> {
        let name = s.get_ref();
        let built = if routing == Routing::Direct {
            policy::build(name, params.get(name).unwrap_or(&ParamTable::new()))
        } else {
            policy::build_for(name, side, params.get(name).unwrap_or(&ParamTable::new()))
        };
        built.map(|_| name.clone()).map_err(|e| cx.at(s, e.to_string()))
    };
    let client = match &p.client {
        Some(s) => check(s, Side::Client)?,
        None => "random".to_string(),
    };
    let coordinator = match &p.coordinator {
        Some(s) if routing == Routing::Direct => {
            return Err(cx.at(s, "policy.coordinator is not used with routing = \"direct\"; remove it"))
        }
        Some(s) => check(s, Side::Coordinator)?,
        None => "naive".to_string(),
    };
    let mut model = PolicyModel {
        client,
        coordinator,
        both_side,
        compare: Vec::new(),
        params,
    };
    if let Some(list) = &p.compare {
        if list.get_ref().is_empty() {
            return Err(cx.at(list, "policy.compare is empty: list the --policy items to run, or remove it"));
        }
        for item in list.get_ref() {
            if let Err(e) = parse_item(item, &model, routing) {
                return Err(cx.at(list, format!("policy.compare: {e}")));
            }
        }
        model.compare = list.get_ref().clone();
    }
    Ok(model)
}

fn phases(cx: &Ctx, raw: &RawScenario, duration_s: u32) -> Res<Vec<PhaseSpec>> {
    let mut out: Vec<PhaseSpec> = Vec::new();
    for p in &raw.phase {
        let r = p.get_ref();
        if r.start_s < 0 || r.end_s <= r.start_s || r.end_s > duration_s as i64 {
            return cx.err(
                p.span(),
                format!(
                    "phase '{}' [{}, {}) s: need 0 <= start_s < end_s <= run.duration_s ({duration_s})",
                    r.name, r.start_s, r.end_s
                ),
            );
        }
        if r.name.is_empty() || out.iter().any(|q| q.name == r.name) {
            return cx.err(p.span(), format!("phase name '{}' is empty or used twice", r.name));
        }
        out.push(PhaseSpec {
            name: r.name.clone(),
            start_s: r.start_s as u32,
            end_s: r.end_s as u32,
        });
    }
    Ok(out)
}

fn faults(cx: &Ctx, raw: &RawScenario, cluster: &Cluster, run: &RunModel) -> Res<Vec<Fault>> {
    let mut out = Vec::new();
    let earliest_s = -(run.warmup_ns as f64) / S;
    for f in &raw.fault {
        let r = f.get_ref();
        let line = cx.line(f.span().start);
        let bad = |m: String| -> ScenarioError {
            ScenarioError {
                line: Some(line),
                message: m,
            }
        };
        let kind_name = r.kind.get_ref().as_str();
        let positive = |v: Option<f64>, name: &str| -> Res<Option<f64>> {
            match v {
                Some(x) if !(x.is_finite() && x > 0.0) => Err(bad(format!("fault {kind_name}: {name} = {x} must be positive"))),
                other => Ok(other),
            }
        };
        let duration_s = positive(r.duration_s, "duration_s")?;
        let every_s = positive(r.every_s, "every_s")?;
        let at_s = r.at_s.unwrap_or(if kind_name == "fluctuate" { earliest_s } else { 0.0 });
        if !at_s.is_finite() || at_s < earliest_s || at_s > run.duration_s as f64 {
            return Err(bad(format!(
                "fault {kind_name}: at_s = {at_s} must be within [-warmup_s, duration_s]"
            )));
        }
        let nodes: Vec<u16> = match (r.node, &r.nodes) {
            (Some(_), Some(_)) => return Err(bad("give node or nodes, not both".into())),
            (Some(n), None) => vec![n],
            (None, Some(ns)) => ns.clone(),
            (None, None) if kind_name == "fluctuate" => (0..cluster.nodes as i64).collect(),
            (None, None) => return Err(bad(format!("fault {kind_name} needs node = <id> or nodes = [..]"))),
        }
        .into_iter()
        .map(|n| {
            if n < 0 || n as usize >= cluster.nodes {
                Err(bad(format!("node {n} does not exist: nodes are 0..{}", cluster.nodes - 1)))
            } else {
                Ok(n as u16)
            }
        })
        .collect::<Res<_>>()?;
        let kind = match kind_name {
            "restart" | "pause" => {
                if duration_s.is_none() {
                    return Err(bad(format!(
                        "fault {kind_name} needs duration_s (how long the node is down/frozen)"
                    )));
                }
                if kind_name == "restart" {
                    FaultKind::Restart
                } else {
                    FaultKind::Pause
                }
            }
            "delay" => match r.added_delay_us {
                Some(d) if d.is_finite() && d > 0.0 && d < 1e9 => FaultKind::Delay { added_ns: (d * US) as u64 },
                _ => return Err(bad("fault delay needs added_delay_us > 0".into())),
            },
            "slow" => {
                let factor = match r.factor {
                    Some(f) if f.is_finite() && f > 0.0 && f <= 1e4 => f,
                    _ => return Err(bad("fault slow needs factor in (0, 10000]".into())),
                };
                let stage = match r.stage.as_deref() {
                    None | Some("all") => StageSel::All,
                    Some("cpu") => StageSel::Cpu,
                    Some("disk") => StageSel::Disk,
                    Some(o) => return Err(bad(format!("stage '{o}' is not one of: cpu, disk, all"))),
                };
                FaultKind::Slow { factor, stage }
            }
            "fluctuate" => {
                let (Some(interval_ms), Some(probability), Some(factor)) = (r.interval_ms, r.probability, r.factor) else {
                    return Err(bad("fault fluctuate needs interval_ms, probability and factor".into()));
                };
                let valid =
                    interval_ms >= 1.0 && interval_ms.is_finite() && (0.0..=1.0).contains(&probability) && factor > 0.0 && factor <= 1e4;
                if !valid {
                    return Err(bad(
                        "fault fluctuate: interval_ms >= 1, probability in [0, 1], factor in (0, 10000]".into(),
                    ));
                }
                FaultKind::Fluctuate {
                    interval_ns: (interval_ms * MS) as u64,
                    probability,
                    factor,
                }
            }
            other => {
                return Err(cx.at(
                    &r.kind,
                    format!("fault kind '{other}' is not one of: restart, pause, delay, slow, fluctuate"),
                ));
            }
        };
        if let (Some(every), Some(dur)) = (every_s, duration_s) {
            if dur >= every {
                return Err(bad(format!(
                    "fault {kind_name}: duration_s ({dur}) must be shorter than every_s ({every})"
                )));
            }
        }
        if let Some(every) = every_s {
            let count = (run.duration_s as f64 - at_s) / every;
            if count * nodes.len() as f64 > MAX_FAULT_ACTIONS as f64 / 2.0 {
                return Err(bad(format!(
                    "fault {kind_name} repeats too often (more than {MAX_FAULT_ACTIONS} actions)"
                )));
            }
        }
        out.push(Fault {
            kind,
            nodes,
            at_ns: (at_s * S) as i64,
            duration_ns: duration_s.map(|d| (d * S) as u64),
            every_ns: every_s.map(|d| (d * S) as u64),
            until_ns: r.until_s.map(|u| (u * S) as i64),
            line,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
name = "t"
[cluster]
nodes = 3
replication_factor = 3
[node]
cpu_concurrency = 4
cpu_service = { dist = "exponential", mean_us = 100 }
[clients]
count = 2
arrival = "poisson"
rate_per_s = 1000
keys = { pattern = "uniform", count = 1000 }
[run]
duration_s = 5
[policy]
coordinator = "naive"
"#;

    fn err_of(text: &str) -> ScenarioError {
        parse(text, "x").unwrap_err()
    }

    #[test]
    fn minimal_parses() {
        let s = parse(MINIMAL, "x").unwrap();
        assert_eq!(s.name, "t");
        assert_eq!(s.cluster.nodes, 3);
        assert_eq!(s.policy.client, "random");
    }

    #[test]
    fn unknown_key_names_its_line() {
        let text = MINIMAL.replace("count = 2\n", "count = 2\nbogus = 1\n");
        let e = err_of(&text);
        assert_eq!(e.line, Some(11), "{e}");
        assert!(e.message.contains("bogus"), "{e}");
    }

    #[test]
    fn impossible_topology_names_its_line() {
        let e = err_of(&MINIMAL.replace("replication_factor = 3", "replication_factor = 4"));
        assert_eq!(e.line, Some(5), "{e}");
        assert!(e.message.contains("more than the 3 nodes"), "{e}");
    }

    #[test]
    fn bad_values_name_their_line() {
        let e = err_of(&MINIMAL.replace("\"exponential\"", "\"gaussian\""));
        assert_eq!(e.line, Some(8), "{e}");
        let e = err_of(&MINIMAL.replace("coordinator = \"naive\"", "coordinator = \"nope\""));
        assert_eq!(e.line, Some(17), "{e}");
        let e = err_of(&MINIMAL.replace("rate_per_s = 1000", "rate_per_s = -1"));
        assert_eq!(e.line, Some(12), "{e}");
        let e = err_of(&format!("{MINIMAL}[[fault]]\nkind = \"restart\"\nnode = 7\nduration_s = 3\n"));
        assert!(matches!(e.line, Some(18 | 19)), "{e}");
        assert!(e.message.contains("node 7"), "{e}");
    }
}
