//! The faults and tools a Cassandra cluster offers besides its lifecycle: a stop-the-world
//! pause, a kill -9 restart on the same data, nodetool, the disk limits switched on or off, a
//! slow disk, and the delay proxy's added latency.

use super::cgroup::{DiskLimits, NodeCgroup, MAX_READ_IOPS};
use super::cluster::{alive, start_node, wait_full_view, CassandraCluster, CAP_HEADROOM_MB};
use super::proxy;
use replica_lb_launcher::{send_signal, Signal};
use std::path::Path;
use std::time::{Duration, Instant};

/// Stops node `id` (SIGSTOP) for `pause`, then continues it (SIGCONT): a stop-the-world pause.
pub fn pause(dir: &Path, id: u32, pause: Duration) -> Result<(), String> {
    let c = CassandraCluster::load(dir)?;
    let n = c.node(id)?;
    if !alive(n.pid) {
        return Err(format!("node {id} (pid {}) is not running", n.pid));
    }
    send_signal(n.pid, Signal::Stop).map_err(|e| e.to_string())?;
    std::thread::sleep(pause);
    send_signal(n.pid, Signal::Cont).map_err(|e| e.to_string())
}

/// Kills node `id` (kill -9), keeps it down for `down_for`, starts it again on the same data
/// and waits until it answers CQL and every node sees every other up (`timeout`, plus the
/// load of its saved caches where it saves them). Returns the new pid.
pub fn restart(dir: &Path, id: u32, down_for: Duration, timeout: Duration) -> Result<u32, String> {
    let mut c = CassandraCluster::load(dir)?;
    let timeout = timeout + c.saved_caches.start_allowance();
    let old = c.node(id)?.pid;
    if alive(old) {
        let _ = send_signal(old, Signal::Cont);
        send_signal(old, Signal::Kill).map_err(|e| e.to_string())?;
        let start = Instant::now();
        while alive(old) && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    if c.disk.is_some() {
        // As after a reboot: the node's data files leave the page cache with it.
        NodeCgroup::of(dir, id).drop_page_cache()?;
    }
    std::thread::sleep(down_for);
    let (lib, settings) = (c.lib.clone(), c.settings());
    let pid = start_node(dir, id, &lib, &settings, timeout, &mut |pid| {
        if let Some(n) = c.nodes.iter_mut().find(|n| n.id == id) {
            n.pid = pid;
        }
        c.save(dir)
    })?;
    wait_full_view(dir, c.nodes.len() as u32, timeout)?;
    Ok(pid)
}

/// With disk limits, on node `node` (every node if `None`): switches them off (`false`: no
/// read throttle, no page cache cap; for filling the caches quickly, as the node engine turns
/// its emulated disk off during warm-up) or on (the throttle, and the page cache capped on
/// what the node uses now: call it once the node is warm, since the JVM's own memory grows
/// while it loads data and fills its caches). An error for a cluster without disk limits.
pub fn set_disk_limits(dir: &Path, node: Option<u32>, on: bool) -> Result<(), String> {
    let c = CassandraCluster::load(dir)?;
    let Some(limits) = c.disk else {
        return Err(format!(
            "the cluster in {} has no disk limits (cluster up --page-cache-mb M --disk-read-iops N)",
            dir.display()
        ));
    };
    if let Some(id) = node {
        c.node(id)?;
    }
    for n in c.nodes.iter().filter(|n| node.is_none_or(|id| id == n.id)) {
        let g = NodeCgroup::of(dir, n.id);
        if on {
            g.throttle(&limits, &n.dir.join("data"))?;
            g.cap_page_cache(limits.page_cache_mb + CAP_HEADROOM_MB)?;
        } else {
            g.unthrottle(&n.dir.join("data"))?;
            g.uncap()?;
        }
    }
    Ok(())
}

/// With disk limits, raises each node's memory limit where its JVM grew past it (see
/// [`NodeCgroup::raise_cap`]); nothing without. Called every second while a run is measured.
pub fn follow_jvm_growth(dir: &Path) -> Result<(), String> {
    let c = CassandraCluster::load(dir)?;
    let Some(limits) = c.disk else { return Ok(()) };
    for n in c.nodes.iter().filter(|n| alive(n.pid)) {
        NodeCgroup::of(dir, n.id).raise_cap(limits.page_cache_mb + CAP_HEADROOM_MB)?;
    }
    Ok(())
}

/// Makes node `id`'s disk `factor` times slower than the cluster's disk limits allow (its
/// reads per second divided by `factor`; 1 restores them): the real cluster's form of the
/// simulator's slow disk (`kind = "slow"`, `stage = "disk"`), whose service times are
/// multiplied by the factor. An error for a cluster without disk limits.
pub fn set_disk_factor(dir: &Path, id: u32, factor: f64) -> Result<(), String> {
    if !(factor.is_finite() && factor > 0.0) {
        return Err(format!("disk factor {factor}: must be a positive number"));
    }
    let c = CassandraCluster::load(dir)?;
    let Some(limits) = c.disk else {
        return Err(format!(
            "the cluster in {} has no disk limits to slow down (cluster up --page-cache-mb M --disk-read-iops N)",
            dir.display()
        ));
    };
    let n = c.node(id)?;
    let read_iops = slowed_iops(limits.read_iops, factor);
    NodeCgroup::of(dir, id).throttle(&DiskLimits { read_iops, ..limits }, &n.dir.join("data"))
}

/// `read_iops` divided by `factor`, rounded, within what a throttle allows.
fn slowed_iops(read_iops: u32, factor: f64) -> u32 {
    ((f64::from(read_iops) / factor).round() as u32).clamp(1, MAX_READ_IOPS)
}

/// Sets node `id`'s added delay on everything it sends its clients (0 clears).
pub fn set_delay(dir: &Path, id: u32, delay_ms: u32) -> Result<(), String> {
    let c = CassandraCluster::load(dir)?;
    c.node(id)?;
    if !c.proxy_pid.is_some_and(alive) {
        return Err(format!("the delay proxy of {} is not running", dir.display()));
    }
    proxy::write_delay(dir, id, delay_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slow_disk_divides_the_reads_per_second() {
        assert_eq!(slowed_iops(220, 5.0), 44);
        assert_eq!(slowed_iops(220, 1.0), 220);
        assert_eq!(slowed_iops(220, 3.0), 73);
        // Never below one read a second, never above what a throttle allows.
        assert_eq!(slowed_iops(2, 100.0), 1);
        assert_eq!(slowed_iops(MAX_READ_IOPS, 0.5), MAX_READ_IOPS);
    }

    #[test]
    fn a_bad_factor_is_refused_before_the_cluster_is_read() {
        let e = set_disk_factor(Path::new("/nonexistent"), 1, 0.0).unwrap_err();
        assert!(e.contains("disk factor 0"), "{e}");
        let e = set_disk_factor(Path::new("/nonexistent"), 1, f64::NAN).unwrap_err();
        assert!(e.contains("must be a positive number"), "{e}");
    }
}
