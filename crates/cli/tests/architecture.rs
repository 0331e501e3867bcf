//! docs/architecture.md draws the crate graph as a table ("depends on (ours)"); this test reads
//! that table and every crate's Cargo.toml and fails when they disagree, so the drawing cannot
//! drift from the code. It also checks that the graph has no arrow back up (a cycle), which
//! Cargo would refuse anyway, and that every crate is in the table.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Each crate's dependencies on crates of this workspace, from its `[dependencies]` section
/// (dev-dependencies are the tests' business), by short name (`replica-lb-policy` -> `policy`).
fn manifests() -> BTreeMap<String, BTreeSet<String>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(root().join("crates")).expect("crates/") {
        let dir = entry.expect("an entry").path();
        let Ok(text) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
            continue;
        };
        let name = dir.file_name().expect("a name").to_string_lossy().to_string();
        let mut section = String::new();
        let mut deps = BTreeSet::new();
        for line in text.lines().map(str::trim) {
            if line.starts_with('[') {
                section = line.to_string();
            } else if section == "[dependencies]" {
                if let Some(dep) = line.strip_prefix("replica-lb-") {
                    deps.insert(
                        dep.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                            .next()
                            .unwrap_or("")
                            .to_string(),
                    );
                }
            }
        }
        out.insert(name, deps);
    }
    out
}

/// The table's rows `| \`crates/NAME\` | role | \`a\`, \`b\` | outside |`.
fn drawn() -> BTreeMap<String, BTreeSet<String>> {
    let text = std::fs::read_to_string(root().join("docs/architecture.md")).expect("docs/architecture.md");
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| l.starts_with("| `crates/")) {
        let cols: Vec<&str> = line.split(" | ").collect();
        assert!(cols.len() >= 4, "a row of four columns: {line}");
        let name = cols[0].trim_start_matches("| `crates/").trim_end_matches('`').to_string();
        let deps: BTreeSet<String> = cols[2]
            .split(',')
            .map(|d| d.trim().trim_matches('`').to_string())
            .filter(|d| !d.is_empty() && d != "nothing")
            .collect();
        out.insert(name, deps);
    }
    out
}

#[test]
fn the_crate_graph_in_architecture_md_is_the_one_in_the_manifests() {
    let (code, doc) = (manifests(), drawn());
    assert_eq!(
        code.keys().collect::<Vec<_>>(),
        doc.keys().collect::<Vec<_>>(),
        "every crate has a row, and every row a crate"
    );
    for (name, deps) in &code {
        assert_eq!(
            deps, &doc[name],
            "crates/{name}: Cargo.toml depends on {deps:?}, docs/architecture.md draws {:?}",
            doc[name]
        );
    }
}

#[test]
fn the_crate_graph_has_no_cycle() {
    let graph = manifests();
    // Kahn's algorithm: what is left once every crate without dependencies is peeled is a cycle.
    let mut left = graph.clone();
    while let Some(leaf) = left.iter().find(|(_, d)| d.is_empty()).map(|(n, _)| n.clone()) {
        left.remove(&leaf);
        for deps in left.values_mut() {
            deps.remove(&leaf);
        }
    }
    assert!(left.is_empty(), "a cycle among {:?}", left.keys().collect::<Vec<_>>());
}
