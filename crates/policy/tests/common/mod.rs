//! What the shared-trace tests have in common: a trace file in `testdata/` is a JSON object
//! with an `about`, optional further fields and `cases`, each case a name, an about, optional
//! fields of its own and its `events`, one per line, so a diff shows which decision changed.
//! Each test renders the file from what the Rust code does now and either writes it
//! (`REPLICA_LB_WRITE_TRACES=1`) or checks that the file on disk is the same text; the Java
//! tests replay the file.

use std::fmt::Write;
use std::path::PathBuf;

/// One case of a trace file.
pub struct TraceCase {
    /// Its name (unique in the file).
    pub name: String,
    /// One line: what it shows.
    pub about: String,
    /// Further JSON fields of the case, each followed by `, ` (empty for none).
    pub fields: String,
    /// Its events, each a JSON object.
    pub events: Vec<String>,
}

/// The file `testdata/NAME`.
pub fn testdata(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata").join(name)
}

/// The file's text: `about`, then `fields` (further top-level JSON fields, each followed by
/// `,\n `; empty for none), then the cases.
pub fn render(about: &str, fields: &str, cases: &[TraceCase]) -> String {
    let mut text = format!("{{\"about\": \"{about}\",\n {fields}\"cases\": [\n");
    for (i, c) in cases.iter().enumerate() {
        let _ = write!(
            text,
            "  {{\"name\": \"{}\", \"about\": \"{}\", {}\"events\": [\n    {}\n  ]}}{}\n",
            c.name,
            c.about,
            c.fields,
            c.events.join(",\n    "),
            if i + 1 < cases.len() { "," } else { "" }
        );
    }
    text.push_str(" ]}\n");
    text
}

/// Writes `text` to `testdata/NAME` when `REPLICA_LB_WRITE_TRACES` is set; otherwise checks
/// that the file holds exactly `text`, telling how to regenerate it with `test` (the test
/// target's name) after a deliberate change.
pub fn write_or_check(name: &str, text: &str, test: &str) {
    let path = testdata(name);
    if std::env::var_os("REPLICA_LB_WRITE_TRACES").is_some() {
        std::fs::write(&path, text).expect("write the traces");
        return;
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("testdata/{name}: {e}"));
    assert!(
        on_disk == text,
        "testdata/{name} differs from what the Rust code gives now; after a deliberate change run \
         REPLICA_LB_WRITE_TRACES=1 cargo test --release -p replica-lb-policy --test {test}"
    );
}
