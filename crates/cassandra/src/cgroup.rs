//! What a cache miss costs on a Cassandra node of this machine: a cgroup (v1) per node that
//! caps the node's page cache (memory controller) and throttles its reads from the disk (blkio
//! controller).
//!
//! On one machine with plenty of memory the OS page cache holds every node's data files, so a
//! read that misses Cassandra's row cache costs a few microseconds and the cold-node effect
//! the seeds measured cannot show. A server's disk is slower than its memory and its page
//! cache is smaller than its data; these limits give each node that shape:
//! - `read_iops`: the node's reads from the disk holding its data are throttled to this many per
//!   second (`blkio.throttle.read_iops_device`), so a node that misses more queues for its disk,
//!   as the seeds' slow storage did (their disks served ~8 reads at once, 10 ms each);
//! - `page_cache_mb`: once the node is warm, its memory limit is set to what the JVM itself
//!   uses plus this much, so the kernel keeps at most about this much of its data files cached
//!   (page cache is reclaimed before the JVM's own memory; the JVM's later growth comes out of
//!   this budget);
//! - a restarted node starts with its page cache dropped (`memory.force_empty`), as after a
//!   reboot.
//!
//! The groups sit under this process's own cgroup of each controller, named after the cluster
//! directory and the node, and are removed when the cluster goes down.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The cgroup v1 mount points this machine has.
const MEMORY_ROOT: &str = "/sys/fs/cgroup/memory";
const BLKIO_ROOT: &str = "/sys/fs/cgroup/blkio";

/// The most reads per second a limit may allow (beyond that it limits nothing here).
pub const MAX_READ_IOPS: u32 = 1_000_000;
/// The largest page-cache budget, MiB.
pub const MAX_PAGE_CACHE_MB: u32 = 1 << 20;

/// How each node's reads from its data files cost, as on a server with a slower disk and less
/// memory than this machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskLimits {
    /// The node's page cache once warm, MiB (about; see the module docs).
    pub page_cache_mb: u32,
    /// Reads per second from the disk that holds its data.
    pub read_iops: u32,
}

impl DiskLimits {
    /// Checks the values, naming a bad one and what is allowed.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=MAX_PAGE_CACHE_MB).contains(&self.page_cache_mb) {
            return Err(format!(
                "page cache {} MiB: must be in [1, {MAX_PAGE_CACHE_MB}]",
                self.page_cache_mb
            ));
        }
        if !(1..=MAX_READ_IOPS).contains(&self.read_iops) {
            return Err(format!("disk reads {}/s: must be in [1, {MAX_READ_IOPS}]", self.read_iops));
        }
        Ok(())
    }
}

/// One node's cgroups (memory and blkio).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeCgroup {
    memory: PathBuf,
    blkio: PathBuf,
}

/// This process's cgroup directory under `root` for `controller` (from /proc/self/cgroup),
/// so that the nodes' groups nest under whatever limits this process already has.
fn own_group(root: &str, controller: &str) -> PathBuf {
    let text = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let rel = text
        .lines()
        .filter_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            controllers.split(',').any(|c| c == controller).then_some(path)
        })
        .next()
        .unwrap_or("/");
    Path::new(root).join(rel.trim_start_matches('/'))
}

/// A short stable name for a cluster directory (its groups are `replica-lb-<hash>-node-<id>`).
fn dir_tag(dir: &Path) -> String {
    // FNV-1a over the canonical path: stable across runs, short, no dependency.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in dir.as_os_str().as_encoded_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{:012x}", h & 0xffff_ffff_ffff)
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write '{text}' to {}: {e}", path.display()))
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// What a group's processes use beside the page cache, bytes, from its `memory.stat`:
/// anonymous memory (heap, off-heap caches, stacks) and mapped files (the JVM's jars) stay; the
/// rest of the page cache is what a budget replaces.
fn own_bytes(stat: &str) -> u64 {
    let field = |name: &str| -> u64 {
        stat.lines()
            .find_map(|l| l.strip_prefix(name).and_then(|v| v.trim().parse().ok()))
            .unwrap_or(0)
    };
    field("total_rss ") + field("total_mapped_file ")
}

/// The whole-disk block device (`major:minor`) holding `path`: blkio throttles whole disks, so
/// a partition maps to its disk.
pub fn disk_of(path: &Path) -> Result<String, String> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let sys = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    if !sys.exists() {
        return Err(format!(
            "{} is on device {major}:{minor}, which is not a block device (a virtual or network file system?); disk limits need a local disk",
            path.display()
        ));
    }
    if sys.join("partition").exists() {
        let parent = sys.join("..").join("dev");
        return Ok(read(&parent)?.trim().to_string());
    }
    Ok(format!("{major}:{minor}"))
}

impl NodeCgroup {
    /// The groups of node `id` of the cluster in `dir` (nothing is created).
    pub fn of(dir: &Path, id: u32) -> NodeCgroup {
        let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        let name = format!("replica-lb-{}-node-{id}", dir_tag(&dir));
        NodeCgroup {
            memory: own_group(MEMORY_ROOT, "memory").join(&name),
            blkio: own_group(BLKIO_ROOT, "blkio").join(&name),
        }
    }

    /// Creates the groups (or reuses them, keeping a memory limit already set: a restarted
    /// node starts inside its old budget) with the read throttle of `limits` on the disk that
    /// holds `data_dir`.
    pub fn create(&self, limits: &DiskLimits, data_dir: &Path) -> Result<(), String> {
        limits.validate()?;
        for (root, group) in [(MEMORY_ROOT, &self.memory), (BLKIO_ROOT, &self.blkio)] {
            if !Path::new(root).join("cgroup.procs").exists() {
                return Err(format!(
                    "disk limits need the cgroup v1 memory and blkio controllers, and {root} is not one"
                ));
            }
            std::fs::create_dir_all(group).map_err(|e| format!("cannot create cgroup {}: {e} (root is needed)", group.display()))?;
        }
        self.throttle(limits, data_dir)
    }

    /// Throttles reads from the disk holding `data_dir` to `limits.read_iops` per second.
    pub fn throttle(&self, limits: &DiskLimits, data_dir: &Path) -> Result<(), String> {
        let disk = disk_of(data_dir)?;
        write(
            &self.blkio.join("blkio.throttle.read_iops_device"),
            &format!("{disk} {}", limits.read_iops),
        )
    }

    /// Lifts the read throttle on the disk holding `data_dir`.
    pub fn unthrottle(&self, data_dir: &Path) -> Result<(), String> {
        let disk = disk_of(data_dir)?;
        write(&self.blkio.join("blkio.throttle.read_iops_device"), &format!("{disk} 0"))
    }

    /// The files a process writes `0` to in order to join both groups (see
    /// [`NodeCgroup::join_self`]).
    pub fn procs_files(&self) -> [PathBuf; 2] {
        [self.memory.join("cgroup.procs"), self.blkio.join("cgroup.procs")]
    }

    /// Sets the memory limit to what the group's processes use now, minus their page cache,
    /// plus `page_cache_mb`: from now on the kernel keeps about that much page cache for them.
    /// Returns the new limit in bytes.
    pub fn cap_page_cache(&self, page_cache_mb: u32) -> Result<u64, String> {
        let stat = read(&self.memory.join("memory.stat"))?;
        let limit = own_bytes(&stat) + u64::from(page_cache_mb) * 1024 * 1024;
        write(&self.memory.join("memory.limit_in_bytes"), &limit.to_string())?;
        Ok(limit)
    }

    /// Raises the memory limit to what the group's processes use now, minus their page cache,
    /// plus `page_cache_mb`, when that is above the limit: the budget follows the JVM's own
    /// growth (off-heap buffer pools that fill under load, threads), which would otherwise
    /// squeeze the page cache to nothing and then get the node killed by the kernel's
    /// out-of-memory killer. Never lowers the limit (a JVM starting again after a restart
    /// grows into its old one) and leaves an unlimited group alone. Returns the new limit when
    /// it was raised.
    pub fn raise_cap(&self, page_cache_mb: u32) -> Result<Option<u64>, String> {
        let limit: u64 = read(&self.memory.join("memory.limit_in_bytes"))?.trim().parse().unwrap_or(u64::MAX);
        let stat = read(&self.memory.join("memory.stat"))?;
        let wanted = own_bytes(&stat) + u64::from(page_cache_mb) * 1024 * 1024;
        if wanted <= limit {
            return Ok(None);
        }
        write(&self.memory.join("memory.limit_in_bytes"), &wanted.to_string())?;
        Ok(Some(wanted))
    }

    /// Lifts the memory limit.
    pub fn uncap(&self) -> Result<(), String> {
        write(&self.memory.join("memory.limit_in_bytes"), "-1")
    }

    /// Drops the page cache charged to the group (its node must not be running: after a
    /// kill, as after a reboot).
    pub fn drop_page_cache(&self) -> Result<(), String> {
        write(&self.memory.join("memory.force_empty"), "0")
    }

    /// The page cache charged to the group now, bytes.
    pub fn page_cache_bytes(&self) -> Result<u64, String> {
        let stat = read(&self.memory.join("memory.stat"))?;
        Ok(stat
            .lines()
            .find_map(|l| l.strip_prefix("total_cache ").and_then(|v| v.trim().parse().ok()))
            .unwrap_or(0))
    }

    /// Reads the group's processes made from the throttled disk so far.
    pub fn disk_reads(&self) -> Result<u64, String> {
        let text = read(&self.blkio.join("blkio.throttle.io_serviced"))?;
        Ok(text
            .lines()
            .filter_map(|l| {
                let mut p = l.split_whitespace();
                let (_dev, op, n) = (p.next()?, p.next()?, p.next()?);
                (op == "Read").then(|| n.parse::<u64>().ok()).flatten()
            })
            .sum())
    }

    /// Removes both groups once their processes have left (a killed JVM's threads may take a
    /// moment to exit: up to 5 s is waited). Returns an error naming a group that stays.
    pub fn remove(&self) -> Result<(), String> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        for g in [&self.memory, &self.blkio] {
            while g.exists() {
                match std::fs::remove_dir(g) {
                    Ok(()) => break,
                    Err(_) if std::time::Instant::now() < deadline => std::thread::sleep(std::time::Duration::from_millis(50)),
                    Err(e) => return Err(format!("cannot remove cgroup {}: {e}", g.display())),
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_checked() {
        assert!(DiskLimits {
            page_cache_mb: 32,
            read_iops: 300
        }
        .validate()
        .is_ok());
        let e = DiskLimits {
            page_cache_mb: 0,
            read_iops: 300,
        }
        .validate()
        .unwrap_err();
        assert!(e.contains("page cache 0") && e.contains("[1,"), "{e}");
        let e = DiskLimits {
            page_cache_mb: 32,
            read_iops: 0,
        }
        .validate()
        .unwrap_err();
        assert!(e.contains("disk reads 0/s"), "{e}");
    }

    #[test]
    fn groups_are_named_per_cluster_and_node() {
        let a = NodeCgroup::of(Path::new("/tmp/a"), 1);
        let b = NodeCgroup::of(Path::new("/tmp/b"), 1);
        let a2 = NodeCgroup::of(Path::new("/tmp/a"), 2);
        assert_ne!(a, b);
        assert_ne!(a, a2);
        assert_eq!(a, NodeCgroup::of(Path::new("/tmp/a"), 1));
        assert!(a.procs_files()[0].ends_with("cgroup.procs"));
        assert!(a.memory.to_string_lossy().contains("-node-1"));
    }

    #[test]
    fn the_disk_of_a_local_path_is_a_block_device() {
        // Wherever the temporary directory lives, the answer is major:minor or a clear error.
        match disk_of(&std::env::temp_dir()) {
            Ok(d) => assert!(d.split(':').count() == 2 && d.split(':').all(|x| x.parse::<u32>().is_ok()), "{d}"),
            Err(e) => assert!(e.contains("not a block device"), "{e}"),
        }
    }

    #[test]
    fn own_bytes_are_rss_and_mapped_files_not_the_cache() {
        let stat = "cache 900\nrss 5\ntotal_cache 1000\ntotal_rss 300\ntotal_rss_huge 0\ntotal_mapped_file 20\n";
        assert_eq!(own_bytes(stat), 320);
        assert_eq!(own_bytes(""), 0);
    }
}
