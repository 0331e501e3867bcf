//! `cluster up --engine cassandra` checks its flags before it fetches or starts anything: bad
//! input is one line on stderr and exit code 2 (no Cassandra is needed for these).

mod common;
use common::run;

#[test]
fn bad_cassandra_flags_are_refused_before_anything_starts() {
    let dir = std::env::temp_dir().join(format!("rlb-cass-flags-{}", std::process::id()));
    let d = dir.to_str().unwrap();
    let up = |extra: &[&str]| {
        let mut args = vec!["cluster", "up", "--engine", "cassandra", "--nodes", "3", "--dir", d];
        args.extend_from_slice(extra);
        run(&args)
    };
    let cases: [(&[&str], &str); 8] = [
        (&["--coordinator-policy", "c3"], "'c3'"),
        (&["--page-cache-mb", "8"], "--disk-read-iops"),
        (&["--disk-read-iops", "200"], "--page-cache-mb"),
        (&["--page-cache-mb", "0", "--disk-read-iops", "200"], "page cache 0"),
        (&["--row-cache-mb", "99999"], "--row-cache-mb 99999"),
        (&["--coordinator-policy", "hwlb", "--read-cl", "each_quorum"], "'EACH_QUORUM'"),
        (&["--coordinator-policy", "hwlb", "--hit-rate-window-ms", "10"], "window 10 ms"),
        (&["--hit-rate-tick-ms", "1000"], "--coordinator-policy"),
    ];
    for (extra, needle) in cases {
        let (code, out, err) = up(extra);
        assert_eq!(code, 2, "{extra:?}: {err}");
        assert!(out.is_empty(), "{extra:?}: {out}");
        assert_eq!(err.trim_end().lines().count(), 1, "{extra:?}: {err}");
        assert!(err.contains(needle), "{extra:?}: '{needle}' in {err}");
    }
    assert!(!dir.exists(), "nothing was created");
    // The node engine refuses the Cassandra-only flags.
    let (code, _, err) = run(&["cluster", "up", "--nodes", "3", "--dir", d, "--coordinator-policy", "hwlb"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--engine cassandra"), "{err}");
    // A switch on a directory without a cluster names the problem.
    let (code, _, err) = run(&["cluster", "switch", "--dir", d, "--coordinator-policy", "hwlb"]);
    assert_ne!(code, 0);
    assert!(err.contains("cluster.json") || err.contains("cluster"), "{err}");
}
