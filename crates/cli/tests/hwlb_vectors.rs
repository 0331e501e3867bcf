//! The shared HWLB test vectors: `testdata/hwlb-vectors.json` holds `replica-lb hwlb plan
//! --json` for a fixed set of inputs (the hand-picked published cases and a seeded sweep of
//! N = 2..=6 replicas, every CL). The Cassandra plug-in's test suite (`java/hwlb-snitch`) checks
//! its shares and rows against the same file to 1e-9, so the Java and Rust implementations
//! cannot drift apart. This test checks the file is what the binary produces now; after a
//! deliberate change of the algorithm, regenerate it with
//! `REPLICA_LB_WRITE_VECTORS=1 cargo test --release -p replica-lb --test hwlb_vectors`.

mod common;

use serde_json::Value;
use std::path::PathBuf;

fn vectors_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/hwlb-vectors.json")
}

/// The inputs: (hit rates as typed on the command line, CL).
fn inputs() -> Vec<(Vec<String>, usize)> {
    let mut cases: Vec<(Vec<String>, usize)> = Vec::new();
    let picked: [&[&str]; 10] = [
        &["0", "0.8", "0.8"],                                      // the seeds' cold restart
        &["0", "0.5", "0.75"],                                     // k = 1: the published surplus/deficit split
        &["0", "0.7777777777777778", "0.7777777777777778", "0.9"], // published code broke 1/k
        &["0.95", "0.91667", "0.75", "0.75"],                      // published clip overshoot
        &["0.66", "0.66", "0.34", "0.32"],                         // published code broke 1/k at k = 3
        &["1", "0.95", "0"],                                       // 1.0 and 0.95 capped alike
        &["0.9", "0.01", "0.01"],                                  // one hot, two cold: the clip binds
        &["0.8", "0.8", "0.8"],                                    // equally warm: steps aside
        &["0.8", "0.81", "0.805"],                                 // within min_spread: steps aside
        &["0.8", "0.8101", "0.8"],                                 // just above min_spread: active
    ];
    for rates in picked {
        for k in 1..=rates.len() {
            cases.push((rates.iter().map(|s| s.to_string()).collect(), k));
        }
    }
    // A seeded sweep (splitmix64), rates rounded to 4 decimals, with zeros and ones mixed in.
    let mut state: u64 = 0x5eed_0001;
    let mut next = || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    for n in 2..=6usize {
        for k in 1..=n {
            for _ in 0..6 {
                let rates = (0..n)
                    .map(|_| match next() % 10 {
                        0 => "0".to_string(),
                        1 => "1".to_string(),
                        _ => format!("{:.4}", (next() % 10_001) as f64 / 10_000.0),
                    })
                    .collect();
                cases.push((rates, k));
            }
        }
    }
    cases
}

fn plan(rates: &[String], k: usize) -> Value {
    let out = common::bin()
        .args(["hwlb", "plan", "--hit-rates", &rates.join(","), "--cl", &k.to_string(), "--json"])
        .output()
        .expect("binary runs");
    assert!(
        out.status.success(),
        "hwlb plan {rates:?} --cl {k}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("hwlb plan --json prints JSON")
}

fn render(cases: &[Value]) -> String {
    let mut text = String::from(
        "{\"about\": \"replica-lb hwlb plan --json for fixed inputs; the Rust and Java HWLB must agree to 1e-9 \
         (crates/cli/tests/hwlb_vectors.rs writes it)\",\n \"cases\": [\n",
    );
    for (i, case) in cases.iter().enumerate() {
        text.push_str("  ");
        text.push_str(&case.to_string());
        text.push_str(if i + 1 < cases.len() { ",\n" } else { "\n" });
    }
    text.push_str(" ]}\n");
    text
}

#[test]
fn the_shared_vectors_are_what_hwlb_plan_prints() {
    let cases: Vec<Value> = inputs().iter().map(|(rates, k)| plan(rates, *k)).collect();
    assert!(cases.len() > 150, "{} cases", cases.len());
    let active = cases.iter().filter(|c| c["active"] == true).count();
    assert!(active > 80 && active < cases.len(), "both active and stepped-aside plans: {active}");
    let text = render(&cases);
    let path = vectors_path();
    if std::env::var_os("REPLICA_LB_WRITE_VECTORS").is_some() {
        std::fs::write(&path, &text).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == text,
        "{} is not what `replica-lb hwlb plan --json` prints now; if the algorithm changed on purpose, \
         regenerate it: REPLICA_LB_WRITE_VECTORS=1 cargo test --release -p replica-lb --test hwlb_vectors",
        path.display()
    );
}
