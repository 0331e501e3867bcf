//! The gated rolling restart on a small cluster: the warm gate waits for the node that came
//! back to be warm by the rule (a fixed interval does not), a node never read times out
//! (`warm_at_s` null), and the record is the same run after run.

use replica_lb_metrics::rolling::RollingRestart;
use replica_lb_metrics::warm_gate::Warmth;
use replica_lb_sim::{apply_overrides, parse, parse_list, run_all};

/// 6 nodes, RF = 3, a hot set each node's cache holds (~0.9 hits once warm), 1,500 reads/s;
/// nodes 0, 2, 4 restart from t = 2 s behind a warm gate judging a 3 s window.
const SMALL: &str = r#"
name = "small-gate"
seed = 7
[cluster]
nodes = 6
replication_factor = 3
[node]
cpu_concurrency = 4
cpu_service = { dist = "exponential", mean_us = 100 }
disk_concurrency = 8
disk_service = { dist = "exponential", mean_us = 2000 }
cache_rows = 1200
[clients]
count = 4
token_aware = true
arrival = "poisson"
rate_per_s = 1500
keys = { pattern = "hot-set", count = 100000, hot_keys = 2000, hot_fraction = 0.9 }
[requests]
consistency = "one"
[run]
warmup_s = 10
duration_s = 60
[policy]
coordinator = "naive"
[[fault]]
kind = "restart"
nodes = [0, 2, 4]
at_s = 2
duration_s = 1
gate = "warm"
gate_window_s = 3
gate_timeout_s = 20
"#;

/// The rolling restart of `text` with `sets` applied, for policy `naive`.
fn roll(sets: &[&str]) -> RollingRestart {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let sc = parse(&apply_overrides(SMALL, &sets).unwrap(), "small-gate").unwrap();
    let specs = parse_list(Some("naive"), &sc).unwrap();
    let r = run_all(&sc, &specs, 7, 1, None).unwrap().remove(0);
    assert_eq!(r.audit, Ok(()));
    let mut rolls = r.metrics.summary.rolling_restarts;
    assert_eq!(rolls.len(), 1);
    rolls.remove(0)
}

#[test]
fn the_warm_gate_waits_for_the_node_that_came_back() {
    let r = roll(&[]);
    assert_eq!((r.gate.as_str(), r.planned, r.restarted, r.timeouts), ("warm", 3, 3, 0), "{r:?}");
    let order: Vec<usize> = r.nodes.iter().map(|n| n.node).collect();
    assert_eq!(order, [0, 2, 4]);
    assert_eq!((r.nodes[0].down_at_s, r.nodes[0].up_at_s), (2.0, Some(3.0)));
    for k in 0..3 {
        let n = &r.nodes[k];
        let (up, warm) = (n.up_at_s.unwrap(), n.warm_at_s.expect("warm within the time-out"));
        assert_eq!(n.up_at_s, Some(n.down_at_s + 1.0));
        // Judged on a whole window (3 s) since it came back, at a whole second.
        assert!(warm >= up + 3.0 && warm == warm.round(), "{n:?}");
        assert_eq!(n.warmth, Some(Warmth::Warm), "{n:?}");
        let (own, median) = (n.misses_per_read.unwrap(), n.peers_median.unwrap());
        assert!(own <= (median * 1.2).max(median + 0.005), "{n:?}");
        if k + 1 < 3 {
            assert_eq!(r.nodes[k + 1].down_at_s, warm, "the next goes down the second it is warm");
        }
    }
    let last = r.nodes[2].warm_at_s.unwrap();
    assert_eq!(r.duration_s, Some(last - 2.0));

    // The same nodes at a fixed 1 s interval, the rule only watched: the next goes down
    // before the last one is warm.
    let fixed = roll(&["fault.0.gate=\"watch\"", "fault.0.stagger_s=1"]);
    let downs: Vec<f64> = fixed.nodes.iter().map(|n| n.down_at_s).collect();
    assert_eq!(downs, [2.0, 3.0, 4.0]);
    assert!(fixed.nodes[0].warm_at_s.unwrap() > 3.0, "{fixed:?}");
    assert_ne!(fixed.nodes[0].warmth, Some(Warmth::Warm), "cold when the next went down: {fixed:?}");
    assert!(fixed.duration_s.unwrap() < r.duration_s.unwrap());
}

/// Node 0 frozen from just after it came back until past its time-out serves no read: the
/// rule finds it unread, the gate gives up at the time-out and lets node 2 go.
#[test]
fn a_node_never_read_times_out() {
    let pause = "[[fault]]\nkind = \"restart\"\nnodes = [0, 2]\nat_s = 2\nduration_s = 1\ngate = \"warm\"\ngate_window_s = 3\ngate_timeout_s = 5\n[[fault]]\nkind = \"pause\"\nnode = 0\nat_s = 3.5\nduration_s = 10";
    let text = SMALL[..SMALL.find("[[fault]]").unwrap()].to_string() + pause + "\n";
    let sc = parse(&text, "small-gate").unwrap();
    let specs = parse_list(Some("naive"), &sc).unwrap();
    let r = run_all(&sc, &specs, 7, 1, None).unwrap().remove(0);
    assert_eq!(r.audit, Ok(()));
    let roll = &r.metrics.summary.rolling_restarts[0];
    let first = &roll.nodes[0];
    assert_eq!(
        (first.up_at_s, first.warm_at_s, first.timed_out),
        (Some(3.0), None, true),
        "{roll:?}"
    );
    assert_eq!(first.warmth, Some(Warmth::Unread), "{roll:?}");
    // Up at 3 s, time-out 5 s: given up on at the tick of 8 s, when node 2 goes down.
    assert_eq!(roll.nodes[1].down_at_s, 8.0, "{roll:?}");
    assert!(roll.timeouts >= 1, "{roll:?}");
    let json = serde_json::to_string(roll).unwrap();
    assert!(json.contains("\"warm_at_s\":null"), "{json}");
}

#[test]
fn a_gated_run_is_the_same_every_time() {
    assert_eq!(roll(&[]), roll(&[]));
}

/// A restart that keeps its cache (`cache = "kept"`, Cassandra's saved row cache loaded
/// whole) comes back warm: the gate finds each node warm within two whole windows (never
/// before the first ends) and the restart is over sooner than the cold one, whose nodes need the reads
/// to fill their caches.
#[test]
fn a_kept_cache_comes_back_warm() {
    let cold = roll(&[]);
    let kept = roll(&["fault.0.cache=\"kept\""]);
    assert_eq!((kept.restarted, kept.timeouts), (3, 0), "{kept:?}");
    for n in &kept.nodes {
        let (up, warm) = (n.up_at_s.unwrap(), n.warm_at_s.unwrap());
        assert!(
            warm >= up + 3.0 && warm <= up + 6.0,
            "warm once back a whole window, within two: {n:?}"
        );
        assert!(n.misses_vs_peers().unwrap() < 1.2, "{n:?}");
    }
    assert!(kept.duration_s.unwrap() < cold.duration_s.unwrap(), "{kept:?} against {cold:?}");
}
