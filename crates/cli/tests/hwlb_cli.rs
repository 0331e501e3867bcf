//! The `replica-lb hwlb plan|sample` contract, checked from outside through the binary.

use serde_json::Value;

mod common;
use common::run;

#[test]
fn plan_json_has_the_contract_keys() {
    let (code, out, _) = run(&["hwlb", "plan", "--hit-rates", "0,0.8,0.8", "--cl", "2", "--json"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["hit_rates"], serde_json::json!([0.0, 0.8, 0.8]));
    assert_eq!(v["cl"], 2);
    assert_eq!(v["active"], true);
    let shares: Vec<f64> = serde_json::from_value(v["shares"].clone()).unwrap();
    assert!((shares[0] - 1.0 / 11.0).abs() < 1e-12);
    let rows: Vec<Vec<f64>> = serde_json::from_value(v["rows"].clone()).unwrap();
    assert_eq!(rows.len(), 3);
    assert!((rows[0][0] - 3.0 / 11.0).abs() < 1e-12);
}

#[test]
fn inactive_plan_shows_the_naive_rows() {
    let (code, out, _) = run(&["hwlb", "plan", "--hit-rates", "0.8,0.8,0.8,0.8", "--cl", "3", "--json"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["active"], false);
    let rows: Vec<Vec<f64>> = serde_json::from_value(v["rows"].clone()).unwrap();
    assert!((rows[1][1] - 1.0 / 3.0).abs() < 1e-12 && (rows[1][0] - (2.0 / 3.0) / 3.0).abs() < 1e-12);
    let shares: Vec<f64> = serde_json::from_value(v["shares"].clone()).unwrap();
    assert!(shares.iter().all(|s| (s - 0.25).abs() < 1e-12));
}

#[test]
fn sample_is_deterministic_and_valid() {
    let args = [
        "hwlb",
        "sample",
        "--hit-rates",
        "0,0.8,0.8",
        "--cl",
        "2",
        "--draws",
        "200000",
        "--seed",
        "7",
        "--json",
    ];
    let (code, first, _) = run(&args);
    assert_eq!(code, 0);
    let (_, second, _) = run(&args);
    assert_eq!(first, second);
    let v: Value = serde_json::from_str(first.trim()).unwrap();
    assert_eq!(v["draws"], 200000);
    assert_eq!(v["invalid"], 0);
    let reads: Vec<u64> = serde_json::from_value(v["reads"].clone()).unwrap();
    assert_eq!(reads.iter().sum::<u64>(), 400000);
    let coordinated: Vec<u64> = serde_json::from_value(v["coordinated"].clone()).unwrap();
    assert_eq!(coordinated.iter().sum::<u64>(), 200000);
    let local: Vec<u64> = serde_json::from_value(v["local_reads"].clone()).unwrap();
    // Warm coordinators keep exactly half their reads (one of two) local; the cold one 3/11 x 2.
    assert_eq!(local[1], coordinated[1]);
    let cold_local = local[0] as f64 / coordinated[0] as f64;
    assert!((cold_local - 6.0 / 11.0).abs() < 0.01, "{cold_local}");
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let cases: [&[&str]; 10] = [
        &["hwlb", "plan", "--hit-rates", "0,x", "--cl", "1"],
        &["hwlb", "plan", "--hit-rates", "0,1.5", "--cl", "1"],
        &["hwlb", "plan", "--hit-rates", "", "--cl", "1"],
        &["hwlb", "plan", "--hit-rates", "0.1,0.2", "--cl", "0"],
        &["hwlb", "plan", "--hit-rates", "0.1,0.2", "--cl", "3"],
        &["hwlb", "plan", "--cl", "1"],
        &["hwlb", "plan", "--hit-rates", "0.1,0.2"],
        &[
            "hwlb",
            "sample",
            "--hit-rates",
            "0.1,0.2",
            "--cl",
            "1",
            "--draws",
            "0",
            "--seed",
            "1",
        ],
        &["hwlb", "sample", "--hit-rates", "0.1,0.2", "--cl", "1", "--seed", "1"],
        &["hwlb", "plan", "--hit-rates", "-0.5,0.2", "--cl", "1"],
    ];
    for args in cases {
        let (code, out, err) = run(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    let too_many = vec!["0.5"; 65].join(",");
    let (code, _, err) = run(&["hwlb", "plan", "--hit-rates", &too_many, "--cl", "1"]);
    assert_eq!(code, 2);
    assert!(err.contains("65") && err.contains("64"), "{err}");
    let (_, _, err) = run(&["hwlb", "plan", "--hit-rates", "0.1,0.2", "--cl", "3"]);
    assert!(err.contains("'3'") && err.contains("[1, 2]"), "{err}");
    let (_, _, err) = run(&["hwlb", "plan", "--cl", "1"]);
    assert!(err.contains("--hit-rates"), "{err}");
}
