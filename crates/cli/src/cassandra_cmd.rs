//! `replica-lb cluster ...` on an Apache Cassandra cluster (`cluster up --engine cassandra`,
//! and every command on a directory whose cluster file says `"engine": "cassandra"`).

use crate::cluster_cmd::{ClusterCommand, UpArgs};
use crate::error::{CliError, CliResult};
use harness::cassandra::cgroup::DiskLimits;
use harness::cassandra::plugin::{self, CoordinatorPolicy, PluginSettings, PluginState};
use harness::cassandra::{self, config::NodeSettings, CassandraUp};
use harness::launcher::{check_fault_s, send_signal, Signal};
use std::path::PathBuf;
use std::time::Duration;

/// `cluster up --engine cassandra`.
pub fn up(a: &UpArgs) -> CliResult {
    if a.policy.is_some() {
        return Err(CliError::usage(
            "--policy sets the node engine's coordinator policy; on Cassandra use --coordinator-policy dynamic-snitch|naive|hwlb|unified, and clients choose theirs (bench --client-policy)",
        ));
    }
    let disk = match (a.page_cache_mb, a.disk_read_iops) {
        (Some(page_cache_mb), Some(read_iops)) => Some(DiskLimits { page_cache_mb, read_iops }),
        (None, None) => None,
        (Some(_), None) => return Err(CliError::usage("--page-cache-mb needs --disk-read-iops too")),
        (None, Some(_)) => return Err(CliError::usage("--disk-read-iops needs --page-cache-mb too")),
    };
    let settings = NodeSettings {
        heap_mb: a.heap_mb,
        row_cache_mb: a.row_cache_mb,
        chunk_cache_mb: a.chunk_cache_mb,
        disk,
        ..NodeSettings::default()
    };
    settings.validate().map_err(CliError::usage)?;
    let policy = a
        .coordinator_policy
        .as_deref()
        .map(CoordinatorPolicy::parse)
        .transpose()
        .map_err(|e| CliError::usage(format!("--coordinator-policy: {e}")))?
        .unwrap_or(CoordinatorPolicy::DynamicSnitch);
    if !policy.needs_plugin() {
        for (given, flag) in [
            (a.hit_rate_tick_ms != 10_000, "--hit-rate-tick-ms"),
            (a.hit_rate_window_ms != 60_000, "--hit-rate-window-ms"),
            (a.read_cl != "quorum", "--read-cl"),
        ] {
            if given {
                return Err(CliError::usage(format!(
                    "{flag} sets the replica-lb plug-in, which Cassandra as shipped (dynamic-snitch) does not run: give --coordinator-policy naive|hwlb|unified too"
                )));
            }
        }
    }
    let mut progress = |line: &str| eprintln!("{line}");
    let (settings, coordinator_policy) = if policy.needs_plugin() {
        let plugin = PluginSettings {
            tick_ms: a.hit_rate_tick_ms,
            window_ms: a.hit_rate_window_ms,
            read_cl: a.read_cl.to_uppercase(),
            ..PluginSettings::new(policy)
        };
        plugin
            .validate()
            .map_err(|e| CliError::usage(format!("--coordinator-policy: {e}")))?;
        let jar = plugin::jar(&mut progress).map_err(CliError::failed)?;
        let installed = plugin.install(settings, jar).map_err(CliError::usage)?;
        (installed, Some(policy.as_str().to_string()))
    } else {
        (settings, None)
    };
    let opts = CassandraUp {
        nodes: a.nodes,
        dir: a.dir.clone(),
        settings,
        proxy_program: std::env::current_exe().map_err(|e| CliError::failed(format!("cannot find this program: {e}")))?,
        node_timeout: Duration::from_secs(a.node_timeout_s.max(1)),
        coordinator_policy,
    };
    let cluster = cassandra::up(&opts, &mut progress).map_err(CliError::failed)?;
    for n in &cluster.nodes {
        println!("node {}: cql {} (node {}) pid {}", n.id, n.cql, n.node_cql, n.pid);
    }
    println!(
        "Cassandra {} cluster of {} node(s) up{}; contact points {}; {}",
        cluster.version,
        cluster.nodes.len(),
        cluster
            .coordinator_policy
            .as_deref()
            .map(|p| format!(" with the replica-lb plug-in ({p})"))
            .unwrap_or_else(|| " as shipped (dynamic snitch on, no plug-in)".into()),
        cluster.contact_points().iter().map(|a| a.to_string()).collect::<Vec<_>>().join(","),
        a.dir.join(harness::launcher::CLUSTER_FILE).display()
    );
    Ok(())
}

/// The hidden `cluster proxy`: runs until stopped.
pub fn proxy(dir: PathBuf, nodes: u32) -> CliResult {
    if !(1..=cassandra::cluster::MAX_NODES).contains(&nodes) {
        return Err(CliError::usage(format!("--nodes {nodes}: 1..{}", cassandra::cluster::MAX_NODES)));
    }
    cassandra::proxy::run(&dir, nodes).map_err(CliError::failed)
}

/// Every other `cluster` command on a Cassandra cluster.
pub fn run(cmd: ClusterCommand) -> CliResult {
    match cmd {
        ClusterCommand::Status(a) => {
            let nodes = cassandra::status(&a.dir).map_err(CliError::failed)?;
            // The plug-in's view, where it runs; nodes that do not answer show none.
            let cluster = cassandra::CassandraCluster::load(&a.dir).map_err(CliError::failed)?;
            let with_plugin = cluster.coordinator_policy.is_some();
            let plugin: Vec<Option<PluginState>> = if with_plugin && nodes.iter().any(|n| n.cql) {
                plugin::states(&cluster).map_err(CliError::failed)?
            } else {
                vec![None; nodes.len()]
            };
            if a.json {
                #[derive(serde::Serialize)]
                struct Row<'a> {
                    #[serde(flatten)]
                    node: &'a cassandra::NodeState,
                    #[serde(skip_serializing_if = "Option::is_none")]
                    plugin: Option<&'a PluginState>,
                }
                let rows: Vec<Row> = nodes
                    .iter()
                    .zip(&plugin)
                    .map(|(node, p)| Row { node, plugin: p.as_ref() })
                    .collect();
                println!(
                    "{}",
                    serde_json::to_string_pretty(&rows).map_err(|e| CliError::failed(e.to_string()))?
                );
                return Ok(());
            }
            print!(
                "{:<6}{:<9}{:<10}{:<6}{:<18}{:>9}",
                "node", "pid", "state", "cql", "address", "delay ms"
            );
            if with_plugin {
                print!("  {:<15}{:>9}{:>13}", "policy", "hit rate", "coordinated");
            }
            println!();
            for (n, p) in nodes.iter().zip(&plugin) {
                print!(
                    "{:<6}{:<9}{:<10}{:<6}{:<18}{:>9}",
                    n.id,
                    n.pid,
                    n.state,
                    if n.cql { "yes" } else { "no" },
                    n.address.to_string(),
                    n.delay_ms
                );
                match p {
                    Some(p) => print!("  {:<15}{:>9.3}{:>13}", p.policy, p.hit_rate, p.reads_coordinated),
                    None if with_plugin => print!("  {:<15}{:>9}{:>13}", "-", "-", "-"),
                    None => {}
                }
                println!();
            }
            Ok(())
        }
        ClusterCommand::Down(a) => {
            let n = cassandra::down(&a.dir, Duration::from_secs(20)).map_err(CliError::failed)?;
            println!("stopped {n} Cassandra node(s) of {}", a.dir.display());
            Ok(())
        }
        ClusterCommand::Restart(a) => {
            let down = check_fault_s("--down-s", a.down_s).map_err(|e| CliError::usage(e.to_string()))?;
            let timeout = Duration::from_secs(a.up_timeout_s.max(60));
            let pid = cassandra::restart(&a.dir, a.node, down, timeout).map_err(CliError::failed)?;
            println!(
                "node {} restarted after {:.1} s down (same data, empty caches), pid {pid}",
                a.node, a.down_s
            );
            Ok(())
        }
        ClusterCommand::Pause(a) => {
            let pause = check_fault_s("--for-s", a.for_s).map_err(|e| CliError::usage(e.to_string()))?;
            cassandra::pause(&a.dir, a.node, pause).map_err(CliError::failed)?;
            println!("node {} paused for {:.1} s and resumed", a.node, a.for_s);
            Ok(())
        }
        ClusterCommand::Delay(a) => {
            cassandra::set_delay(&a.dir, a.node, a.ms).map_err(CliError::usage)?;
            match a.ms {
                0 => println!("node {}: added delay cleared", a.node),
                ms => println!("node {}: every answer to its clients delayed by {ms} ms", a.node),
            }
            Ok(())
        }
        ClusterCommand::SlowDisk(a) => {
            if a.factor.is_some() || a.on == a.off {
                return Err(CliError::usage(
                    "cluster slow-disk on Cassandra: give --on (read throttle on, page cache capped on what the node uses now) or --off; --factor is the node engine's",
                ));
            }
            cassandra::set_disk_limits(&a.dir, Some(a.node), a.on).map_err(CliError::usage)?;
            match a.on {
                true => println!("node {}: reads from its disk throttled, page cache capped", a.node),
                false => println!("node {}: disk limits lifted", a.node),
            }
            Ok(())
        }
        ClusterCommand::Signal(a) => {
            let sig = Signal::parse(&a.signal).map_err(|e| CliError::usage(e.to_string()))?;
            let c = cassandra::CassandraCluster::load(&a.dir).map_err(CliError::failed)?;
            let pid = c.node(a.id).map_err(CliError::usage)?.pid;
            send_signal(pid, sig).map_err(|e| CliError::failed(e.to_string()))?;
            println!("sent {sig:?} to node {}", a.id);
            Ok(())
        }
        ClusterCommand::Switch(a) => {
            let policy =
                CoordinatorPolicy::parse(&a.coordinator_policy).map_err(|e| CliError::usage(format!("--coordinator-policy: {e}")))?;
            plugin::switch(&a.dir, policy).map_err(CliError::failed)?;
            println!("every coordinator of {} now runs {}", a.dir.display(), policy.as_str());
            Ok(())
        }
        ClusterCommand::Up(_) | ClusterCommand::Proxy(_) => Err(CliError::failed("cluster up and proxy do not act on a running cluster")),
    }
}
