//! Many threads picking and reporting at once on one policy, as the driver's worker threads
//! do: the in-flight counts never exceed what is really out, and end at zero.

mod support;

use replica_lb_driver::ReplicaLbPolicy;
use replica_lb_policy::Rng;
use scylla::errors::{BrokenConnectionError, BrokenConnectionErrorKind, RequestAttemptError};
use scylla::frame::response::result::TableSpec;
use scylla::policies::load_balancing::{LoadBalancingPolicy, RoutingInfo};
use scylla::routing::Token;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use support::fake_cql::FakeCluster;

#[test]
fn threads_picking_and_reporting_keep_the_counts_exact() {
    let (rt, cluster) = FakeCluster::six_in_one_dc();
    let session = cluster.session(&rt);
    let state = session.get_cluster_state();
    let spec = TableSpec::borrowed("ks", "t");
    let ttl = Duration::from_millis(300);
    for shards in [1, 3] {
        let policy = ReplicaLbPolicy::builder("c3")
            .seed(11)
            .shards(shards)
            .ticket_ttl(ttl)
            .build()
            .unwrap();
        let lost = AtomicU64::new(0);
        let hosts: Vec<uuid::Uuid> = state.get_nodes_info().iter().map(|n| n.host_id).collect();
        std::thread::scope(|s| {
            for t in 0..6u64 {
                let (policy, state, lost, spec) = (&policy, &state, &lost, &spec);
                s.spawn(move || {
                    let mut rng = Rng::seed_from_u64(100 + t);
                    let mut mine = Vec::new();
                    for i in 0..20_000u64 {
                        let mut info = RoutingInfo::default();
                        info.token = Some(Token::new(rng.next_u64() as i64));
                        info.table = Some(spec);
                        let (node, _) = policy.pick(&info, state).expect("live replicas");
                        mine.push((node.clone(), std::time::Instant::now()));
                        // End a few at a time, in any order; some are lost, some retried.
                        if mine.len() >= 4 || i % 7 == 0 {
                            let k = rng.below(mine.len());
                            let (node, start) = mine.swap_remove(k);
                            match rng.below(50) {
                                0 => {
                                    lost.fetch_add(1, Ordering::Relaxed);
                                }
                                1 => {
                                    let kind = BrokenConnectionErrorKind::WriteError(std::io::Error::other("reset"));
                                    let e = RequestAttemptError::BrokenConnectionError(BrokenConnectionError::from(kind));
                                    policy.on_request_failure(&info, start.elapsed(), &node, &e);
                                    policy.on_request_success(&info, start.elapsed(), &node);
                                }
                                _ => policy.on_request_success(&info, start.elapsed(), &node),
                            }
                        }
                        if i % 1_000 == 0 {
                            // Never more counted out than picks could be out.
                            let out = policy.outstanding();
                            assert!(out <= 6 * 5 + lost.load(Ordering::Relaxed) + 100, "{out} out");
                        }
                    }
                    for (node, start) in mine {
                        let info = RoutingInfo::default();
                        policy.on_request_success(&info, start.elapsed(), &node);
                    }
                });
            }
        });
        let st = policy.stats();
        assert_eq!(st.picks, 6 * 20_000, "{st:?}");
        assert!(st.untracked > 0, "retries end untracked: {st:?}");
        let lost = lost.load(Ordering::Relaxed);
        assert!(lost > 0);
        // Only lost picks (and picks robbed by a retry's second end) are still open.
        assert!(policy.outstanding() <= lost + st.untracked, "{st:?}");
        std::thread::sleep(ttl + Duration::from_millis(50));
        policy.check_quiescent().unwrap();
        assert_eq!(hosts.iter().map(|h| policy.in_flight(*h)).sum::<u32>(), 0);
        let st = policy.stats();
        assert_eq!(st.runtime.sends, st.runtime.replies + st.runtime.failures, "{st:?}");
        assert_eq!(st.runtime.violations, 0);
    }
}

type NodeArc = std::sync::Arc<scylla::cluster::Node>;

/// One request's side of [`late_end_of_a_second_request`]: picks on `policy` (until it lands
/// on `on`, when given; the other picks end at once) and returns the node.
fn pick_on(policy: &ReplicaLbPolicy, state: &scylla::cluster::ClusterState, on: Option<&NodeArc>) -> NodeArc {
    let spec = TableSpec::borrowed("ks", "t");
    let mut info = RoutingInfo::default();
    info.token = Some(Token::new(42));
    info.table = Some(&spec);
    loop {
        let (node, _) = policy.pick(&info, state).expect("live replicas");
        if on.is_none_or(|x| std::sync::Arc::ptr_eq(x, node)) {
            return node.clone();
        }
        policy.on_request_success(&info, Duration::ZERO, node);
    }
}

/// Two requests to one node: `d` picks, `a` picks 10 ms later and its end reports 5 ms of
/// latency (so by time `d`'s older ticket is its best match, as when an end is matched in a
/// shard that holds only another request's older ticket of the node), then
/// `d` ends 100 ms after, beyond the match window. Returns the untracked ends and the requests
/// still counted in flight. `in_tasks`: each request picks and ends in its own tokio task, as
/// inside the scylla driver; else both run on this thread, outside any task.
fn late_end_of_a_second_request(in_tasks: bool) -> (u64, u64) {
    let (rt, cluster) = FakeCluster::six_in_one_dc();
    let session = cluster.session(&rt);
    let state = session.get_cluster_state();
    let policy = std::sync::Arc::new(ReplicaLbPolicy::builder("c3").seed(3).shards(1).build().unwrap());
    let end = |policy: &ReplicaLbPolicy, node: &NodeArc, latency: Duration| {
        let spec = TableSpec::borrowed("ks", "t");
        let mut info = RoutingInfo::default();
        info.table = Some(&spec);
        policy.on_request_success(&info, latency, node);
    };
    if in_tasks {
        // Two workers: `d`'s task blocks one while it waits for its end.
        let tasks = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
        let (x_tx, x_rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let d = tasks.spawn({
            let (policy, state) = (policy.clone(), state.clone());
            async move {
                let x = pick_on(&policy, &state, None);
                x_tx.send(x.clone()).unwrap();
                go_rx.recv().unwrap();
                end(&policy, &x, Duration::ZERO);
            }
        });
        let x = x_rx.recv().unwrap();
        std::thread::sleep(Duration::from_millis(10));
        let a = tasks.spawn({
            let (policy, state, x) = (policy.clone(), state.clone(), x.clone());
            async move {
                pick_on(&policy, &state, Some(&x));
                end(&policy, &x, Duration::from_millis(5));
            }
        });
        tasks.block_on(a).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        go_tx.send(()).unwrap();
        tasks.block_on(d).unwrap();
    } else {
        let x = pick_on(&policy, &state, None);
        std::thread::sleep(Duration::from_millis(10));
        pick_on(&policy, &state, Some(&x));
        end(&policy, &x, Duration::from_millis(5));
        std::thread::sleep(Duration::from_millis(100));
        end(&policy, &x, Duration::ZERO);
    }
    (policy.stats().untracked, policy.outstanding())
}

#[test]
fn an_end_takes_its_own_tasks_pick_where_times_would_take_another() {
    // By time alone, `a`'s end takes `d`'s older ticket, and `d`'s end, 100 ms on, finds only
    // `a`'s, picked after it started and beyond the window: untracked, and `a`'s ticket keeps
    // counting a request in flight until the TTL (a phantom the ranking reads as a stuck node).
    assert_eq!(late_end_of_a_second_request(false), (1, 1), "outside tasks, times pair them");
    // In their tasks each end takes its own ticket.
    assert_eq!(late_end_of_a_second_request(true), (0, 0));
}
