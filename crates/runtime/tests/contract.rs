//! The runtime keeps the policy contract for every registered policy: sends, replies and
//! failures end exactly once, waiting requests leave in order, the waiting room is bounded,
//! probes reach the caller, and a policy whose needs a caller cannot meet is refused.

use replica_lb_policy::{Failure, Feedback, Needs, NodeId, ParamTable, ParamValue, ProbeReply, Request, Side, POLICIES};
use replica_lb_runtime::{Accounting, Caller, Dispatch, Immediate, Released, Runtime, RuntimeConfig, Submitted, Ticket};

const SIM: Caller = Caller {
    name: "a test",
    provides: Needs::ALL,
};

fn config(seed: u64) -> RuntimeConfig {
    RuntimeConfig {
        local: None,
        seed,
        max_waiting: 64,
    }
}

/// A deterministic stand-in for a cluster: every send gets a reply or a failure after a few
/// steps, some dispatches are abandoned (time-outs), probes are answered.
#[test]
fn every_policy_ends_every_send_exactly_once() {
    let nodes: Vec<NodeId> = (0..6).map(NodeId).collect();
    for info in POLICIES {
        let side = if info.side.serves(Side::Client) {
            Side::Client
        } else {
            Side::Coordinator
        };
        let mut rt: Runtime<u64> = Runtime::build(info.name, side, &ParamTable::new(), SIM, config(3)).unwrap();
        rt.set_topology(&[(NodeId(0), 0), (NodeId(3), 1)], Some(0));
        // (due step, ticket, reply?)
        let mut out: Vec<(u64, replica_lb_runtime::Ticket, bool)> = Vec::new();
        let mut dispatches = Vec::new();
        let send = |d: replica_lb_runtime::Dispatch,
                    step: u64,
                    out: &mut Vec<(u64, replica_lb_runtime::Ticket, bool)>,
                    dispatches: &mut Vec<_>| {
            for (i, (_, t)) in d.targets().enumerate() {
                out.push((step + 1 + (step + i as u64) % 4, t, !(step + i as u64).is_multiple_of(9)));
            }
            dispatches.push((step, d.id));
        };
        for step in 0..3_000u64 {
            let now = step * 200_000;
            let group = step % 5;
            let candidates = &nodes[group as usize..group as usize + 2];
            let req = Request {
                candidates,
                replicas: None,
                count: 1 + (step % 2) as usize,
                local: if side == Side::Coordinator { Some(candidates[0]) } else { None },
                group,
            };
            match rt.submit(&req, now, || step) {
                Submitted::Send(d) => send(d, step, &mut out, &mut dispatches),
                Submitted::Queued | Submitted::Rejected | Submitted::Unavailable => {}
            }
            while let Some(p) = rt.poll_probe() {
                let answer = ProbeReply {
                    node: p.node,
                    in_flight: (step % 7) as u32,
                    latency_ns: 500_000,
                };
                rt.on_probe_reply(&answer, now);
            }
            // Replies and failures due now.
            let due: Vec<_> = out.iter().filter(|o| o.0 == step).copied().collect();
            out.retain(|o| o.0 != step);
            for (_, t, ok) in due {
                let r = if ok {
                    let fb = Feedback {
                        hit_rate: Some(0.8),
                        queue_len: Some(1),
                        service_time_ns: Some(300_000),
                        in_flight: Some(2),
                    };
                    rt.on_reply(t, 400_000, fb, now)
                } else {
                    rt.on_failure(t, Failure::Error, now)
                };
                assert!(matches!(r, Ok(()) | Err(Accounting::Late)), "{}: {r:?}", info.name);
            }
            // Close dispatches after 6 steps; every 11th is abandoned as timed out first.
            dispatches.retain(|&(at, id)| {
                if step >= at + 6 || (step == at + 2 && at % 11 == 0) {
                    if at % 11 == 0 {
                        rt.abandon(id, Failure::Timeout, now);
                    } else {
                        rt.close(id);
                    }
                    false
                } else {
                    true
                }
            });
            if rt.poll_timeout().is_some_and(|t| t <= now) {
                rt.handle_timeout(now);
            }
            while let Some((_, released)) = rt.poll_released(now, |_| true) {
                if let Released::Send(d) = released {
                    send(d, step, &mut out, &mut dispatches);
                }
            }
        }
        // Drain: answer what is out, close the rest, release anyone waiting.
        let end = 10_000 * 200_000;
        rt.cancel_waiting(|_| true, |_| {});
        for (_, t, _) in out.drain(..) {
            let _ = rt.on_reply(t, 1, Feedback::default(), end);
        }
        for (_, id) in dispatches.drain(..) {
            rt.close(id);
        }
        let s = rt.stats();
        assert!(rt.check_quiescent().is_ok(), "{}", rt.check_quiescent().unwrap_err());
        assert_eq!(s.sends, s.replies + s.failures, "{}: {s:?}", info.name);
        assert_eq!(s.violations, 0, "{}", info.name);
        assert!(s.replies > 1_000, "{}: {s:?}", info.name);
        if info.name == "prequal" {
            assert!(s.probes_sent > 1_000 && s.probe_replies == s.probes_sent, "{s:?}");
        } else {
            assert_eq!(s.probes_sent, 0, "{}: only a policy that needs probes asks for them", info.name);
        }
    }
}

/// The one-node fast path keeps the same contract: every send ends exactly once (replies,
/// failures, late ends after a duplicate), nothing waits, and a request rate control would hold
/// back is refused without a send.
#[test]
fn submit_now_ends_every_send_exactly_once() {
    let nodes: Vec<NodeId> = (0..6).map(NodeId).collect();
    for info in POLICIES.iter().filter(|p| p.side.serves(Side::Client)) {
        let mut rt: Runtime<u64> = Runtime::build(info.name, Side::Client, &ParamTable::new(), SIM, config(5)).unwrap();
        let mut out: Vec<(u64, replica_lb_runtime::Ticket, NodeId)> = Vec::new();
        let (mut sent, mut refused) = (0u64, 0u64);
        for step in 0..3_000u64 {
            let now = step * 200_000;
            let group = step % 4;
            let req = Request {
                candidates: &nodes[group as usize..group as usize + 3],
                replicas: None,
                count: 1,
                local: None,
                group,
            };
            match rt.submit_now(&req, now) {
                Immediate::Send { node, ticket } => {
                    assert!(req.candidates.contains(&node), "{}", info.name);
                    sent += 1;
                    out.push((step + 1 + step % 3, ticket, node));
                }
                Immediate::Refused => refused += 1,
                Immediate::Unavailable => {}
            }
            while let Some(p) = rt.poll_probe() {
                let answer = ProbeReply {
                    node: p.node,
                    in_flight: 1,
                    latency_ns: 500_000,
                };
                rt.on_probe_reply(&answer, now);
            }
            let due: Vec<_> = out.iter().filter(|o| o.0 == step).copied().collect();
            out.retain(|o| o.0 != step);
            for (i, (_, t, node)) in due.into_iter().enumerate() {
                let before = rt.in_flight(node);
                if (step + i as u64).is_multiple_of(7) {
                    rt.on_failure(t, Failure::Timeout, now).unwrap();
                } else {
                    rt.on_reply(t, 300_000, Feedback::default(), now).unwrap();
                }
                assert_eq!(rt.in_flight(node), before - 1, "{}", info.name);
                assert_eq!(rt.on_reply(t, 1, Feedback::default(), now), Err(Accounting::Late), "{}", info.name);
            }
            assert_eq!(rt.waiting(), 0, "{}: nothing waits", info.name);
        }
        for (_, t, _) in out.drain(..) {
            rt.on_reply(t, 1, Feedback::default(), 10_000 * 200_000).unwrap();
        }
        let s = rt.stats();
        assert!(rt.check_quiescent().is_ok(), "{}", rt.check_quiescent().unwrap_err());
        assert_eq!((s.sends, s.rejected), (sent, refused), "{}: {s:?}", info.name);
        assert_eq!(s.sends, s.replies + s.failures, "{}: {s:?}", info.name);
        assert_eq!(s.violations, 0, "{}", info.name);
        assert!(sent > 1_000, "{}: {s:?}", info.name);
    }
    // c3 with rate control and one token: the second request in a burst is refused, not held.
    let mut rt = tight_c3();
    let req = Request {
        candidates: &nodes[..1],
        replicas: None,
        count: 1,
        local: None,
        group: 1,
    };
    let mut results = Vec::new();
    for _ in 0..3 {
        results.push(rt.submit_now(&req, 0));
    }
    assert!(matches!(results[0], Immediate::Send { .. }), "{results:?}");
    assert!(results.contains(&Immediate::Refused), "{results:?}");
    assert_eq!(rt.waiting(), 0);
    for r in results {
        if let Immediate::Send { ticket, .. } = r {
            rt.on_reply(ticket, 1, Feedback::default(), 1).unwrap();
        }
    }
    rt.check_quiescent().unwrap();
}

fn tight_c3() -> Runtime<u32> {
    let mut params = ParamTable::new();
    params.insert("initial_rate".into(), ParamValue::Float(1.0));
    params.insert("max_tokens".into(), ParamValue::Float(1.0));
    Runtime::build("c3", Side::Client, &params, SIM, config(1)).unwrap()
}

#[test]
fn waiting_requests_leave_in_order_on_a_reply_or_the_timer() {
    let mut rt = tight_c3();
    let one = [NodeId(4)];
    let req = Request {
        candidates: &one,
        replicas: None,
        count: 1,
        local: None,
        group: 42,
    };
    let first = match rt.submit(&req, 0, || 0) {
        Submitted::Send(d) => d,
        other => panic!("the first request has a token: {other:?}"),
    };
    for i in 1..=3 {
        assert!(matches!(rt.submit(&req, 10, || i), Submitted::Queued));
    }
    assert_eq!(rt.waiting(), 3);
    let due = rt.poll_timeout().expect("a timer to arm");
    assert!(due > 10);
    assert!(rt.poll_released(10, |_| true).is_none(), "nothing woke it yet");
    // A reply from the group's node wakes it; whatever leaves, leaves in order.
    let (_, t) = first.targets().next().unwrap();
    rt.on_reply(t, 1_000, Feedback::default(), due).unwrap();
    rt.close(first.id);
    let mut order = Vec::new();
    let mut now = due;
    while order.len() < 3 {
        while let Some((token, released)) = rt.poll_released(now, |_| true) {
            let Released::Send(d) = released else { panic!("unavailable") };
            order.push(token);
            let (_, t) = d.targets().next().unwrap();
            rt.on_reply(t, 1_000, Feedback::default(), now).unwrap();
            rt.close(d.id);
        }
        now = rt.poll_timeout().unwrap_or(now + 1).max(now + 1);
        rt.handle_timeout(now);
    }
    assert_eq!(order, [1, 2, 3]);
    assert!(rt.check_quiescent().is_ok());
}

#[test]
fn the_waiting_room_is_bounded_and_cancellable() {
    let mut rt = tight_c3();
    let one = [NodeId(0)];
    let req = Request {
        candidates: &one,
        replicas: None,
        count: 1,
        local: None,
        group: 1,
    };
    let Submitted::Send(first) = rt.submit(&req, 0, || 0) else {
        panic!()
    };
    for i in 1..=64 {
        assert!(matches!(rt.submit(&req, 1, || i), Submitted::Queued));
    }
    assert!(
        matches!(rt.submit(&req, 1, || 65), Submitted::Rejected),
        "the 65th waits beyond the bound"
    );
    assert_eq!(rt.stats().rejected, 1);
    // Half of them time out: dropped without being planned.
    let mut cancelled = 0;
    rt.cancel_waiting(|&t| t % 2 == 0, |_| cancelled += 1);
    assert_eq!((cancelled, rt.waiting()), (32, 32));
    // The rest leave, but the ones the caller no longer wants are skipped.
    rt.abandon(first.id, Failure::Timeout, 2);
    let mut seen = Vec::new();
    let mut now = 2;
    while rt.waiting() > 0 {
        now = rt.poll_timeout().unwrap().max(now + 1);
        rt.handle_timeout(now);
        while let Some((token, released)) = rt.poll_released(now, |&t| t < 40) {
            let Released::Send(d) = released else { panic!() };
            seen.push(token);
            rt.abandon(d.id, Failure::Timeout, now);
        }
    }
    assert_eq!(seen, (1..40).filter(|t| t % 2 == 1).collect::<Vec<_>>());
    assert!(rt.check_quiescent().is_ok());
}

#[test]
fn a_waiting_request_whose_nodes_went_down_is_unavailable() {
    let mut rt = tight_c3();
    let one = [NodeId(2)];
    let req = Request {
        candidates: &one,
        replicas: None,
        count: 1,
        local: None,
        group: 5,
    };
    let Submitted::Send(first) = rt.submit(&req, 0, || 0) else {
        panic!()
    };
    assert!(matches!(rt.submit(&req, 1, || 7), Submitted::Queued));
    rt.on_node_down(NodeId(2), 2);
    let (token, released) = rt.poll_released(2, |_| true).expect("woken by the node going down");
    assert_eq!(token, 7);
    assert!(matches!(released, Released::Unavailable));
    rt.abandon(first.id, Failure::ConnectionLost, 3);
    assert!(rt.check_quiescent().is_ok());
}

/// Plans one read over two nodes and returns its dispatch, the node sent to and the ticket.
fn send_one(rt: &mut Runtime<()>) -> (Dispatch, NodeId, Ticket) {
    let nodes = [NodeId(0), NodeId(1)];
    let req = Request {
        candidates: &nodes,
        replicas: None,
        count: 1,
        local: None,
        group: 0,
    };
    let Submitted::Send(d) = rt.submit(&req, 0, || ()) else { panic!() };
    let (node, t) = d.targets().next().unwrap();
    (d, node, t)
}

#[test]
fn duplicate_and_unknown_endings_are_refused_and_counted() {
    let mut rt: Runtime<()> = Runtime::build("p2c", Side::Client, &ParamTable::new(), SIM, config(1))
        .unwrap()
        .counting_violations();
    let (d, node, t) = send_one(&mut rt);
    assert_eq!(rt.in_flight(node), 1);
    rt.on_reply(t, 5, Feedback::default(), 1).unwrap();
    assert_eq!(rt.on_reply(t, 5, Feedback::default(), 2), Err(Accounting::Duplicate));
    assert_eq!(rt.on_failure(d.id.ticket(3), Failure::Error, 2), Err(Accounting::Unknown));
    assert_eq!(rt.in_flight(node), 0, "no underflow");
    rt.close(d.id);
    assert_eq!(rt.on_reply(t, 5, Feedback::default(), 3), Err(Accounting::Late));
    assert_eq!(rt.stats().violations, 2);
    assert!(rt.check_quiescent().unwrap_err().contains("2 accounting violations"));
}

#[test]
fn a_caller_that_cannot_meet_a_need_refuses_the_policy() {
    let real = Caller {
        name: "the real cluster",
        provides: Needs::of(&[
            replica_lb_policy::Need::Feedback,
            replica_lb_policy::Need::Topology,
            replica_lb_policy::Need::Probes,
        ]),
    };
    let e = Runtime::<()>::build("oracle", Side::Client, &ParamTable::new(), real, config(1))
        .err()
        .unwrap();
    assert!(
        e.contains("'oracle'") && e.contains("'truth'") && e.contains("the real cluster"),
        "{e}"
    );
    assert!(Runtime::<()>::build("prequal", Side::Client, &ParamTable::new(), real, config(1)).is_ok());
    let e = Runtime::<()>::build("hwlb", Side::Client, &ParamTable::new(), real, config(1))
        .err()
        .unwrap();
    assert!(e.contains("coordinator side"), "{e}");
}

#[test]
#[cfg_attr(
    debug_assertions,
    should_panic(expected = "the caller broke the runtime's contract: Duplicate end of send")
)]
fn in_a_build_with_debug_assertions_a_broken_contract_panics_at_the_event() {
    let mut rt: Runtime<()> = Runtime::build("p2c", Side::Client, &ParamTable::new(), SIM, config(1)).unwrap();
    let (_, _, t) = send_one(&mut rt);
    rt.on_reply(t, 5, Feedback::default(), 1).unwrap();
    // Without debug assertions (a production build) the bug is refused and counted.
    assert_eq!(rt.on_reply(t, 5, Feedback::default(), 2), Err(Accounting::Duplicate));
    assert_eq!(rt.stats().violations, 1);
}
