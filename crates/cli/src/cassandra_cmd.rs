//! `replica-lb cluster ...` on an Apache Cassandra cluster (`cluster up --engine cassandra`,
//! and every command on a directory whose cluster file says `"engine": "cassandra"`).

use crate::cluster_cmd::ClusterCommand;
use crate::error::{CliError, CliResult};
use harness::cassandra::{self, config::NodeSettings, CassandraUp};
use harness::launcher::{check_fault_s, send_signal, Signal};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `cluster up --engine cassandra`.
pub fn up(dir: &Path, nodes: u32, heap_mb: u32, node_timeout_s: u64, policy_given: bool) -> CliResult {
    if policy_given {
        return Err(CliError::usage(
            "--policy sets the node engine's coordinator policy; a Cassandra cluster's clients choose their policy (bench --client-policy)",
        ));
    }
    let opts = CassandraUp {
        nodes,
        dir: dir.to_path_buf(),
        settings: NodeSettings {
            heap_mb,
            ..NodeSettings::default()
        },
        proxy_program: std::env::current_exe().map_err(|e| CliError::failed(format!("cannot find this program: {e}")))?,
        node_timeout: Duration::from_secs(node_timeout_s.max(1)),
    };
    let cluster = cassandra::up(&opts, &mut |line| eprintln!("{line}")).map_err(CliError::failed)?;
    for n in &cluster.nodes {
        println!("node {}: cql {} (node {}) pid {}", n.id, n.cql, n.node_cql, n.pid);
    }
    println!(
        "Cassandra {} cluster of {} node(s) up; contact points {}; {}",
        cluster.version,
        cluster.nodes.len(),
        cluster.contact_points().iter().map(|a| a.to_string()).collect::<Vec<_>>().join(","),
        dir.join(harness::launcher::CLUSTER_FILE).display()
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
            if a.json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&nodes).map_err(|e| CliError::failed(e.to_string()))?
                );
                return Ok(());
            }
            println!(
                "{:<6}{:<9}{:<10}{:<6}{:<18}{:>9}",
                "node", "pid", "state", "cql", "address", "delay ms"
            );
            for n in nodes {
                println!(
                    "{:<6}{:<9}{:<10}{:<6}{:<18}{:>9}",
                    n.id,
                    n.pid,
                    n.state,
                    if n.cql { "yes" } else { "no" },
                    n.address.to_string(),
                    n.delay_ms
                );
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
        ClusterCommand::SlowDisk(_) => Err(CliError::usage(
            "cluster slow-disk works on the node engine only (a Cassandra node has no emulated disk); use cluster delay",
        )),
        ClusterCommand::Signal(a) => {
            let sig = Signal::parse(&a.signal).map_err(|e| CliError::usage(e.to_string()))?;
            let c = cassandra::CassandraCluster::load(&a.dir).map_err(CliError::failed)?;
            let pid = c.node(a.id).map_err(CliError::usage)?.pid;
            send_signal(pid, sig).map_err(|e| CliError::failed(e.to_string()))?;
            println!("sent {sig:?} to node {}", a.id);
            Ok(())
        }
        ClusterCommand::Up(_) | ClusterCommand::Proxy(_) => Err(CliError::failed("cluster up and proxy do not act on a running cluster")),
    }
}
