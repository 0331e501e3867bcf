//! What this machine can give a run: the memory available now, for the check that refuses a
//! run that cannot fit before it starts.

/// Bytes of memory available to a new run: the kernel's estimate of what can be had without
/// swapping (`MemAvailable`), capped by this process's control group limit when it has one.
/// `None` where it cannot be read (not Linux): the caller then does not check.
pub fn available_memory_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let available = meminfo_field(&meminfo, "MemAvailable")?;
    Some(match cgroup_room() {
        Some(room) => available.min(room),
        None => available,
    })
}

/// A field of `/proc/meminfo` (`MemAvailable:   23896364 kB`), bytes.
fn meminfo_field(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.split(':').next() == Some(name))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// What the control group's memory limit leaves (limit - usage), cgroup v2 then v1; `None`
/// without a limit.
fn cgroup_room() -> Option<u64> {
    let read = |p: &str| std::fs::read_to_string(p).ok().and_then(|s| s.trim().parse::<u64>().ok());
    let pairs = [
        ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
        (
            "/sys/fs/cgroup/memory/memory.limit_in_bytes",
            "/sys/fs/cgroup/memory/memory.usage_in_bytes",
        ),
    ];
    pairs.iter().find_map(|(limit, usage)| {
        let limit = read(limit)?;
        // "Unlimited" is written as max (v2, not a number) or a huge page-rounded number (v1).
        (limit < 1 << 60).then(|| limit.saturating_sub(read(usage).unwrap_or(0)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_is_read_in_bytes() {
        let text = "MemTotal:       24684084 kB\nMemFree:        16947832 kB\nMemAvailable:   23896364 kB\n";
        assert_eq!(meminfo_field(text, "MemAvailable"), Some(23_896_364 * 1024));
        assert_eq!(meminfo_field(text, "Nope"), None);
        if cfg!(target_os = "linux") {
            assert!(available_memory_bytes().is_some_and(|b| b > 0));
        }
    }
}
