//! The cluster, the node model and the network of a scenario.

use super::*;

pub(super) fn cluster(cx: &Ctx, raw: &RawScenario) -> Res<Cluster> {
    let c = raw.cluster.get_ref();
    let nodes = cx.int(&c.nodes, "cluster.nodes", 1, MAX_NODES as i64)? as usize;
    let mut zone_names: Vec<String> = Vec::new();
    let node_zone = match &c.zones {
        None => {
            zone_names.push("z0".into());
            vec![0; nodes]
        }
        Some(z) => {
            let listed = z.get_ref().len();
            if listed == 0 || listed > nodes {
                return Err(cx.at(
                    z,
                    format!(
                        "cluster.zones lists {listed} zones for {nodes} nodes: give one per node, or 1 to {nodes} cycled over the nodes"
                    ),
                ));
            }
            let listed_zone: Vec<u16> = z
                .get_ref()
                .iter()
                .map(|name| match zone_names.iter().position(|n| n == name) {
                    Some(i) => i as u16,
                    None => {
                        zone_names.push(name.clone());
                        (zone_names.len() - 1) as u16
                    }
                })
                .collect();
            // A shorter list is cycled over: node i is in the (i mod len)-th zone listed.
            (0..nodes).map(|i| listed_zone[i % listed]).collect()
        }
    };
    let rf = cx.int(
        &c.replication_factor,
        "cluster.replication_factor",
        1,
        replica_lb_policy::MAX_REPLICAS as i64,
    )? as usize;
    if rf > nodes {
        return Err(cx.at(
            &c.replication_factor,
            format!("replication_factor {rf} is more than the {nodes} nodes"),
        ));
    }
    let placement = match &c.placement {
        None => Placement::Ring,
        Some(p) => {
            let placement = Placement::parse(p.get_ref()).map_err(|e| cx.at(p, e))?;
            if placement == Placement::OnePerZone && rf > zone_names.len() {
                return Err(cx.at(
                    p,
                    format!(
                        "one-per-zone placement needs at least {rf} zones, the cluster has {}",
                        zone_names.len()
                    ),
                ));
            }
            placement
        }
    };
    let vnodes = match &c.vnodes {
        None => 1,
        Some(v) => cx.int(v, "cluster.vnodes", 1, MAX_VNODES as i64)? as u32,
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
        vnodes,
        routing,
    })
}

pub(super) fn node(cx: &Ctx, n: &RawNode) -> Res<NodeModel> {
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
    let disk_throttle = match (&n.disk_iops, &disk) {
        (Some(v), Some(_)) => Some(DiskThrottle {
            reads_per_s: cx.num(v, "node.disk_iops", 0.001, 1e9)?,
            burst_ns: cx.opt_num(&n.disk_burst_ms, "node.disk_burst_ms", 0.0, 60_000.0, DEFAULT_DISK_BURST_MS)? * MS,
        }),
        (Some(v), None) => return Err(cx.at(v, "node.disk_iops needs a disk stage (node.disk_concurrency and node.disk_service)")),
        (None, _) => None,
    };
    if let (Some(b), None) = (&n.disk_burst_ms, &n.disk_iops) {
        return Err(cx.at(b, "node.disk_burst_ms needs node.disk_iops too"));
    }
    let disk_reads_per_miss = match (&n.disk_reads_per_miss, &disk) {
        (Some(v), Some(_)) => cx.num(v, "node.disk_reads_per_miss", 1.0, 16.0)?,
        (Some(v), None) => {
            return Err(cx.at(
                v,
                "node.disk_reads_per_miss needs a disk stage (node.disk_concurrency and node.disk_service)",
            ))
        }
        (None, _) => 1.0,
    };
    let index_pages = match (&n.index_pages, &disk) {
        (Some(p), Some(_)) => Some(cx.int(p, "node.index_pages", 1, 1 << 26)? as u32),
        (Some(p), None) => {
            return Err(cx.at(
                p,
                "node.index_pages needs a disk stage (node.disk_concurrency and node.disk_service)",
            ))
        }
        (None, _) => None,
    };
    let read_threads = match &n.read_threads {
        Some(t) => Some(cx.int(t, "node.read_threads", 1, 65_536)? as u32),
        None => None,
    };
    let cache_rows = match &n.cache_rows {
        Some(c) => Some(cx.int(c, "node.cache_rows", 1, MAX_CACHE_ROWS as i64)? as usize),
        None => None,
    };
    Ok(NodeModel {
        cpu_concurrency,
        cpu_service,
        coordinator_service,
        extra_delay,
        disk,
        disk_throttle,
        disk_reads_per_miss,
        read_threads,
        index_pages,
        cache_rows,
    })
}

pub(super) fn network(cx: &Ctx, raw: &RawScenario, cluster: &Cluster) -> Res<NetworkModel> {
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
    let raw_net = raw.network.as_ref().map(|n| n.get_ref());
    let nic_bits_per_s = match raw_net.and_then(|n| n.nic_gbps.as_ref()) {
        Some(g) => Some(cx.num(g, "network.nic_gbps", 0.000_001, 10_000.0)? * 1e9),
        None => None,
    };
    let compression = match raw_net.and_then(|n| n.compression.as_ref()) {
        None => None,
        Some(c) => {
            let v = c.get_ref();
            if !(v.ratio.is_finite() && v.ratio > 0.0 && v.ratio <= 1.0) {
                return cx.err(c.span(), format!("network.compression ratio = {}: must be in (0, 1]", v.ratio));
            }
            let cpu = v.cpu_us_per_kb.unwrap_or(0.0);
            if !(cpu.is_finite() && (0.0..=1e4).contains(&cpu)) {
                return cx.err(c.span(), format!("network.compression cpu_us_per_kb = {cpu}: must be in [0, 1e4]"));
            }
            Some(Compression {
                ratio: v.ratio,
                cpu_ns_per_byte: cpu * 1000.0 / 1024.0,
            })
        }
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
        nic_bits_per_s,
        compression,
    })
}

pub(super) fn cassandra(cx: &Ctx, raw: &RawScenario) -> Res<CassandraModel> {
    let Some(c) = &raw.cassandra else {
        return Ok(CassandraModel::default());
    };
    let c = c.get_ref();
    let d = CassandraModel::default();
    let opt = |v: &Option<Spanned<i64>>, name: &str, min: i64, max: i64, default: u32| -> Res<u32> {
        match v {
            Some(v) => Ok(cx.int(v, name, min, max)? as u32),
            None => Ok(default),
        }
    };
    let disk = match (&c.page_cache_mb, &c.disk_read_iops) {
        (Some(p), Some(r)) => Some((
            cx.int(p, "cassandra.page_cache_mb", 1, 1 << 20)? as u32,
            cx.int(r, "cassandra.disk_read_iops", 1, 1_000_000)? as u32,
        )),
        (None, None) => None,
        (Some(p), None) => return Err(cx.at(p, "cassandra.page_cache_mb needs cassandra.disk_read_iops too")),
        (None, Some(r)) => return Err(cx.at(r, "cassandra.disk_read_iops needs cassandra.page_cache_mb too")),
    };
    Ok(CassandraModel {
        heap_mb: opt(&c.heap_mb, "cassandra.heap_mb", 256, 16_384, d.heap_mb)?,
        row_cache_mb: opt(&c.row_cache_mb, "cassandra.row_cache_mb", 0, 8_192, d.row_cache_mb)?,
        chunk_cache_mb: opt(&c.chunk_cache_mb, "cassandra.chunk_cache_mb", 0, 8_192, d.chunk_cache_mb)?,
        disk,
        row_cache_save_period_s: opt(
            &c.row_cache_save_period_s,
            "cassandra.row_cache_save_period_s",
            0,
            86_400,
            d.row_cache_save_period_s,
        )?,
        cache_load_timeout_s: opt(
            &c.cache_load_timeout_s,
            "cassandra.cache_load_timeout_s",
            1,
            3_600,
            d.cache_load_timeout_s,
        )?,
    })
}
