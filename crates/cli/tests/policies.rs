//! `replica-lb policies`: the listing contract (names, sides, one-line descriptions, defaults).

mod common;

use common::run;

#[test]
fn json_lists_every_policy_with_side_description_and_defaults() {
    let (code, stdout, stderr) = run(&["policies", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let list: serde_json::Value = serde_json::from_str(&stdout).expect("valid JSON");
    let list = list.as_array().expect("an array");
    let names: Vec<&str> = list.iter().map(|p| p["name"].as_str().unwrap()).collect();
    for wanted in [
        "random",
        "round-robin",
        "least-outstanding",
        "p2c",
        "peak-ewma",
        "dynamic-snitch",
        "c3",
        "datastax-default",
        "weighted-least-loaded",
        "latency-aware",
        "prequal",
        "oracle",
        "naive",
        "hwlb",
    ] {
        assert!(names.contains(&wanted), "{wanted} missing from {names:?}");
    }
    for p in list {
        let obj = p.as_object().unwrap();
        let mut keys: Vec<&str> = obj.keys().map(|k| k.as_str()).collect();
        keys.sort();
        assert_eq!(keys, ["description", "name", "needs", "parameters", "side"]);
        for need in p["needs"].as_array().unwrap() {
            assert!(
                ["probes", "feedback", "truth", "topology"].contains(&need.as_str().unwrap()),
                "{need}"
            );
        }
        assert!(["client", "coordinator", "both"].contains(&p["side"].as_str().unwrap()));
        let d = p["description"].as_str().unwrap();
        assert!(!d.is_empty() && !d.contains('\n'));
        assert!(p["parameters"].is_object());
    }
    let peak = list.iter().find(|p| p["name"] == "peak-ewma").unwrap();
    assert_eq!(peak["parameters"]["tau_ms"].as_f64(), Some(10_000.0));
    let c3 = list.iter().find(|p| p["name"] == "c3").unwrap();
    assert_eq!(c3["side"], "both");
    assert_eq!(c3["parameters"]["beta"].as_f64(), Some(0.2));
    let needs = |name: &str| list.iter().find(|p| p["name"] == name).unwrap()["needs"].clone();
    assert_eq!(needs("prequal"), serde_json::json!(["probes"]));
    assert_eq!(needs("oracle"), serde_json::json!(["truth"]));
    assert_eq!(needs("c3"), serde_json::json!(["feedback"]));
    assert_eq!(needs("hwlb"), serde_json::json!(["feedback"]));
    assert_eq!(needs("weighted-least-loaded"), serde_json::json!(["topology"]));
    assert_eq!(needs("random"), serde_json::json!([]));
}

#[test]
fn table_lists_every_policy() {
    let (code, stdout, _) = run(&["policies"]);
    assert_eq!(code, 0);
    assert!(stdout.starts_with("NAME"));
    for name in ["c3", "prequal", "weighted-least-loaded", "oracle"] {
        assert!(stdout.lines().any(|l| l.starts_with(name)), "{name}");
    }
}
