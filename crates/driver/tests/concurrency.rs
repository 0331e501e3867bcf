//! Many threads picking and reporting at once on one policy, as the driver's worker threads
//! do: the in-flight counts never exceed what is really out, and end at zero.

mod support;

use policy::Rng;
use replica_lb_driver::ReplicaLbPolicy;
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
