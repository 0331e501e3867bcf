//! The clients, the requests, the run, the feedback rules and the policies of a scenario.

use super::*;

pub(super) fn clients(cx: &Ctx, c: &RawClients, cluster: &Cluster) -> Res<ClientModel> {
    let count = cx.int(&c.count, "clients.count", 1, MAX_CLIENTS as i64)? as usize;
    let zone = client_zones(cx, c, cluster, count)?;
    let arrival = arrival(cx, c)?;
    let weight = demand_weights(cx, c, count)?;
    let keys = keys(cx, c)?;
    let write_fraction = cx.opt_num(&c.write_fraction, "clients.write_fraction", 0.0, 1.0, 0.0)?;
    if write_fraction > 0.0 && cluster.replication_factor > MAX_OPS_PER_REQUEST {
        let at = c.write_fraction.as_ref().expect("positive write fraction was given");
        return Err(cx.at(
            at,
            format!("writes go to every replica: replication_factor must be at most {MAX_OPS_PER_REQUEST}"),
        ));
    }
    let bursts = bursts(cx, c, arrival)?;
    let beyond_replicas = beyond_replicas(cx, c, cluster)?;
    Ok(ClientModel {
        count,
        zone,
        token_aware: c.token_aware.unwrap_or(true),
        arrival,
        weight,
        keys,
        write_fraction,
        bursts,
        beyond_replicas,
    })
}

/// Each client's zone: `clients.zones` cycled over the clients, or the first node's zone.
fn client_zones(cx: &Ctx, c: &RawClients, cluster: &Cluster, count: usize) -> Res<Vec<u16>> {
    let Some(z) = &c.zones else {
        return Ok(vec![cluster.node_zone[0]; count]);
    };
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
    Ok((0..count).map(|i| ids[i % ids.len()]).collect())
}

/// The arrival process: open loop (`poisson`, `fixed`) at a rate, or closed loop.
fn arrival(cx: &Ctx, c: &RawClients) -> Res<Arrival> {
    Ok(match c.arrival.get_ref().as_str() {
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
    })
}

/// Each client's share of the requests: equal, or skewed (`demand_skew`: a fraction of the
/// clients sends a fraction of the requests).
fn demand_weights(cx: &Ctx, c: &RawClients, count: usize) -> Res<Vec<f64>> {
    let Some(s) = &c.demand_skew else {
        return Ok(vec![1.0 / count as f64; count]);
    };
    let k = s.get_ref();
    if !(k.clients > 0.0 && k.clients < 1.0 && k.requests > 0.0 && k.requests < 1.0) {
        return cx.err(s.span(), "demand_skew: clients and requests must both be fractions in (0, 1)");
    }
    let heavy = ((count as f64 * k.clients).round() as usize).clamp(1, count.saturating_sub(1).max(1));
    if heavy >= count {
        return cx.err(s.span(), "demand_skew needs at least 2 clients");
    }
    Ok((0..count)
        .map(|i| {
            if i < heavy {
                k.requests / heavy as f64
            } else {
                (1.0 - k.requests) / (count - heavy) as f64
            }
        })
        .collect())
}

/// The key space and how clients choose keys in it.
fn keys(cx: &Ctx, c: &RawClients) -> Res<KeySpec> {
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
    Ok(KeySpec {
        pattern,
        count: key_count as u64,
    })
}

/// Periodic bursts of an open-loop arrival, if any.
fn bursts(cx: &Ctx, c: &RawClients, arrival: Arrival) -> Res<Option<Bursts>> {
    let Some(b) = &c.bursts else {
        return Ok(None);
    };
    let v = b.get_ref();
    if matches!(arrival, Arrival::Closed { .. }) {
        return cx.err(b.span(), "clients.bursts needs an open-loop arrival (poisson or fixed)");
    }
    if !(v.every_s.is_finite() && v.every_s > 0.0 && v.every_s <= 3600.0) {
        return cx.err(b.span(), format!("clients.bursts every_s = {}: must be in (0, 3600]", v.every_s));
    }
    if !(v.duration_ms.is_finite() && v.duration_ms > 0.0 && v.duration_ms < v.every_s * 1000.0) {
        return cx.err(
            b.span(),
            format!(
                "clients.bursts duration_ms = {}: must be positive and shorter than every_s",
                v.duration_ms
            ),
        );
    }
    if !(v.factor.is_finite() && v.factor > 1.0 && v.factor <= 1000.0) {
        return cx.err(b.span(), format!("clients.bursts factor = {}: must be in (1, 1000]", v.factor));
    }
    Ok(Some(Bursts {
        every_ns: (v.every_s * S) as u64,
        duration_ns: (v.duration_ms * MS) as u64,
        factor: v.factor,
    }))
}

/// Whether clients offer coordinators beyond the key's replicas (`clients.candidates`).
fn beyond_replicas(cx: &Ctx, c: &RawClients, cluster: &Cluster) -> Res<bool> {
    let Some(v) = &c.candidates else {
        return Ok(false);
    };
    match v.get_ref().as_str() {
        "replicas" => Ok(false),
        "replicas-then-others" => {
            if !c.token_aware.unwrap_or(true) || cluster.routing != Routing::Coordinator {
                return Err(cx.at(
                    v,
                    "clients.candidates = \"replicas-then-others\" needs token_aware clients and routing = \"coordinator\"",
                ));
            }
            Ok(true)
        }
        other => Err(cx.at(
            v,
            format!("clients.candidates = \"{other}\": must be \"replicas\" or \"replicas-then-others\""),
        )),
    }
}

pub(super) fn requests(cx: &Ctx, raw: &RawScenario, cluster: &Cluster, _clients: &ClientModel) -> Res<RequestModel> {
    let default = RawRequests {
        consistency: None,
        warmup_consistency: None,
        read_timeout_ms: None,
        speculative_retry: None,
        shadow_read_fraction: None,
        request_bytes: None,
        value_bytes: None,
        multi: None,
    };
    let r = raw.requests.as_ref().map(|r| r.get_ref()).unwrap_or(&default);
    let consistency = cx.cl(&r.consistency, ConsistencyLevel::One)?;
    let warmup_consistency = cx.cl(&r.warmup_consistency, consistency)?;
    for (cl, s, key) in [
        (consistency, &r.consistency, "requests.consistency"),
        (warmup_consistency, &r.warmup_consistency, "requests.warmup_consistency"),
    ] {
        check_consistency(cx, cluster, cl, s, key)?;
    }
    let read_timeout_ms = cx.opt_num(&r.read_timeout_ms, "requests.read_timeout_ms", 0.001, 3.6e6, 5000.0)?;
    let speculative = speculative(cx, r)?;
    let shadow_read_fraction = cx.opt_num(&r.shadow_read_fraction, "requests.shadow_read_fraction", 0.0, 1.0, 0.0)?;
    if shadow_read_fraction > 0.0 && cluster.replication_factor + 1 > MAX_OPS_PER_REQUEST {
        let at = r.shadow_read_fraction.as_ref().map(|s| cx.line(s.span().start));
        return Err(ScenarioError {
            line: at,
            message: format!(
                "shadow reads go to every replica of a key: replication_factor must be at most {}",
                MAX_OPS_PER_REQUEST - 1
            ),
        });
    }
    let request_bytes = cx.opt_num(&r.request_bytes, "requests.request_bytes", 1.0, 1e8, 100.0)? as u32;
    let value_bytes = value_bytes(cx, r)?;
    let multi = multi(cx, r, cluster)?;
    Ok(RequestModel {
        consistency,
        warmup_consistency,
        read_timeout_ns: (read_timeout_ms * MS) as u64,
        speculative,
        shadow_read_fraction,
        request_bytes,
        value_bytes,
        multi,
    })
}

/// Refuses a consistency level `cl` (set at `s` under `key`) the replication factor cannot
/// meet, or that needs more replicas per read than a request can hold.
fn check_consistency(cx: &Ctx, cluster: &Cluster, cl: ConsistencyLevel, s: &Option<Spanned<String>>, key: &str) -> Res<()> {
    let named = named_replicas(cl);
    if named > cluster.replication_factor {
        let at = s.as_ref().map(|s| cx.line(s.span().start));
        return Err(ScenarioError {
            line: at,
            message: format!(
                "{key} = \"{}\" needs {named} replicas of each key, more than replication_factor = {}: use one, quorum or all, or raise cluster.replication_factor",
                cl.as_str(),
                cluster.replication_factor
            ),
        });
    }
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
    Ok(())
}

/// The speculative retry: none, after a fixed delay (`10ms`), or at a percentile (`p99`).
fn speculative(cx: &Ctx, r: &RawRequests) -> Res<Speculative> {
    let Some(s) = &r.speculative_retry else {
        return Ok(Speculative::None);
    };
    let t = s.get_ref().trim();
    if t == "none" {
        Ok(Speculative::None)
    } else if let Some(ms) = t.strip_suffix("ms").and_then(|v| v.trim().parse::<f64>().ok()) {
        if !(ms > 0.0 && ms < 3.6e6) {
            return Err(cx.at(s, format!("speculative_retry '{t}': the delay must be positive")));
        }
        Ok(Speculative::After {
            delay_ns: (ms * MS) as u64,
        })
    } else if let Some(p) = t.strip_prefix('p').and_then(|v| v.parse::<f64>().ok()) {
        if !(p > 0.0 && p < 100.0) {
            return Err(cx.at(s, format!("speculative_retry '{t}': the percentile must be in (0, 100)")));
        }
        Ok(Speculative::Percentile { quantile: p / 100.0 })
    } else {
        Err(cx.at(
            s,
            format!("speculative_retry '{t}' is not one of: none, <N>ms, p<N> (e.g. 10ms, p99)"),
        ))
    }
}

/// The distribution of a value's size (1,000 bytes when not given).
fn value_bytes(cx: &Ctx, r: &RawRequests) -> Res<SizeDist> {
    let Some(v) = &r.value_bytes else {
        return Ok(SizeDist(Dist::Constant { mean_ns: 1000.0 }));
    };
    let d = v.get_ref();
    if !(d.mean_bytes.is_finite() && (1.0..=1e8).contains(&d.mean_bytes)) {
        return cx.err(
            v.span(),
            format!("requests.value_bytes mean_bytes = {}: must be in [1, 1e8]", d.mean_bytes),
        );
    }
    // A distribution of sizes reuses the duration distributions, one "ns" per byte.
    Ok(SizeDist(cx.dist(
        v.span(),
        "requests.value_bytes",
        &d.dist,
        d.mean_bytes / 1000.0,
        d.sigma,
        d.shape,
    )?))
}

/// Multi-key reads, if any: their share, keys per read, and how they are sent.
fn multi(cx: &Ctx, r: &RawRequests, cluster: &Cluster) -> Res<Option<MultiModel>> {
    let Some(m) = &r.multi else {
        return Ok(None);
    };
    let v = m.get_ref();
    if !(v.fraction.is_finite() && v.fraction > 0.0 && v.fraction <= 1.0) {
        return cx.err(m.span(), format!("requests.multi fraction = {}: must be in (0, 1]", v.fraction));
    }
    if !(2..=MAX_MULTI_KEYS as i64).contains(&v.keys) {
        return cx.err(
            m.span(),
            format!("requests.multi keys = {}: must be an integer in [2, {MAX_MULTI_KEYS}]", v.keys),
        );
    }
    let mode = match v.mode.as_str() {
        "in" => MultiMode::In,
        "parallel" => MultiMode::Parallel,
        other => {
            return cx.err(
                m.span(),
                format!("requests.multi mode = \"{other}\": must be \"in\" or \"parallel\""),
            )
        }
    };
    if mode == MultiMode::In && cluster.routing != Routing::Coordinator {
        return cx.err(
            m.span(),
            "requests.multi mode = \"in\" needs routing = \"coordinator\" (a coordinator answers an IN query)",
        );
    }
    Ok(Some(MultiModel {
        fraction: v.fraction,
        keys: v.keys as u32,
        mode,
    }))
}

/// The replicas a consistency level names whatever the replication factor: 2 for `two`, 1
/// for the others (`quorum` and `all` follow the factor). Above the factor the level cannot be
/// met; the scenario is refused rather than run at a lower level.
fn named_replicas(cl: ConsistencyLevel) -> usize {
    match cl {
        ConsistencyLevel::Two => 2,
        ConsistencyLevel::One | ConsistencyLevel::Quorum | ConsistencyLevel::All => 1,
    }
}

pub(super) fn run(cx: &Ctx, raw: &RawScenario) -> Res<RunModel> {
    let r = raw.run.get_ref();
    let failure_detection_ms = cx.opt_num(&r.failure_detection_ms, "run.failure_detection_ms", 0.0, 3.6e6, 2000.0)?;
    let client_ms = cx.opt_num(
        &r.client_failure_detection_ms,
        "run.client_failure_detection_ms",
        0.0,
        3.6e6,
        failure_detection_ms,
    )?;
    Ok(RunModel {
        warmup_ns: (cx.opt_num(&r.warmup_s, "run.warmup_s", 0.0, 36_000.0, 0.0)? * S) as u64,
        duration_s: cx.int(&r.duration_s, "run.duration_s", 1, MAX_DURATION_S as i64)? as u32,
        failure_detection_ns: (failure_detection_ms * MS) as u64,
        client_failure_detection_ns: (client_ms * MS) as u64,
        up_detection_ns: (cx.opt_num(&r.up_detection_ms, "run.up_detection_ms", 0.0, 3.6e6, 1000.0)? * MS) as u64,
        restart_start_ns: (cx.opt_num(&r.restart_start_ms, "run.restart_start_ms", 0.0, 3.6e6, 0.0)? * MS) as u64,
    })
}

pub(super) fn feedback(cx: &Ctx, raw: &RawScenario) -> Res<FeedbackModel> {
    let Some(f) = &raw.feedback else {
        return Ok(FeedbackModel {
            tick_ns: 10 * S as u64,
            window_ns: 60 * S as u64,
            piggyback: true,
            load_reports: true,
            gossip: false,
            gossip_delay_ns: S as u64,
            gossip_heartbeat: false,
        });
    };
    let f = f.get_ref();
    Ok(FeedbackModel {
        tick_ns: (cx.opt_num(&f.hit_rate_tick_s, "feedback.hit_rate_tick_s", 0.001, 3600.0, 10.0)? * S) as u64,
        window_ns: (cx.opt_num(&f.hit_rate_window_s, "feedback.hit_rate_window_s", 0.001, 36_000.0, 60.0)? * S) as u64,
        piggyback: f.piggyback.unwrap_or(true),
        load_reports: f.load_reports.unwrap_or(true),
        gossip: f.gossip.unwrap_or(false),
        gossip_delay_ns: (cx.opt_num(&f.gossip_delay_ms, "feedback.gossip_delay_ms", 0.0, 3.6e6, 1000.0)? * MS) as u64,
        gossip_heartbeat: match (f.gossip_heartbeat, f.gossip) {
            (Some(true), Some(true)) => true,
            (Some(true), _) => {
                return cx.err(
                    raw.feedback.as_ref().map_or(0..0, |s| s.span()),
                    "feedback.gossip_heartbeat needs feedback.gossip = true",
                )
            }
            _ => false,
        },
    })
}

pub(super) fn policies(cx: &Ctx, raw: &RawScenario, routing: Routing) -> Res<PolicyModel> {
    let p = raw.policy.get_ref();
    let mut params = BTreeMap::new();
    for (name, table) in &p.params {
        match PolicyChoice::any_side(name, table.get_ref().clone()) {
            Ok(checked) => params.insert(name.clone(), checked),
            Err(e) => return cx.err(table.span(), format!("policy.params.{name}: {e}")),
        };
    }
    let both_side = match p.both_side.as_ref().map(|s| s.get_ref().as_str()) {
        None | Some("coordinator") => Side::Coordinator,
        Some("client") => Side::Client,
        Some(other) => {
            let s = p.both_side.as_ref().expect("matched Some");
            return Err(cx.at(s, format!("both_side '{other}' is not one of: client, coordinator")));
        }
    };
    let side = |side: Side| (routing == Routing::Coordinator).then_some(side);
    let chosen = |s: Option<&Spanned<String>>, default: &str, side: Option<Side>| match s {
        Some(s) => choose(&params, s.get_ref(), side).map_err(|e| cx.at(s, e.to_string())),
        None => choose(&params, default, side).map_err(|e| cx.at(&raw.policy, e.to_string())),
    };
    let client = chosen(p.client.as_ref(), replica_lb_policy::baselines::random::NAME, side(Side::Client))?;
    let coordinator = match &p.coordinator {
        Some(s) if routing == Routing::Direct => {
            return Err(cx.at(s, "policy.coordinator is not used with routing = \"direct\"; remove it"))
        }
        s => chosen(s.as_ref(), replica_lb_policy::naive::NAME, Some(Side::Coordinator))?,
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
        let mut compare = Vec::with_capacity(list.get_ref().len());
        for item in list.get_ref() {
            match parse_item(item, &model, routing) {
                Ok(run) => compare.push(run),
                Err(e) => return Err(cx.at(list, format!("policy.compare: {e}"))),
            }
        }
        model.compare = compare;
    }
    Ok(model)
}
