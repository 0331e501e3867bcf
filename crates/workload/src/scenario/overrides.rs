//! `--set KEY=VALUE` overrides: edit a scenario's TOML text before it is parsed, so a sweep
//! (say, the number of clients) needs no copy of the file.
//!
//! `KEY` is a dotted path into the file (`clients.count`, `policy.params.c3.concurrency_weight`,
//! `node.cpu_service.mean_us`); a number picks an entry of an array of tables, 0-based
//! (`fault.0.factor` is the first `[[fault]]`). `VALUE` is a TOML value (`15`, `0.5`, `true`,
//! `"c3"`, `["c3", "oracle"]`, `{ dist = "exponential", mean_us = 4000 }`); a bare word such as
//! `poisson` is taken as a string. Missing tables are created, so an override can add a key
//! the file leaves at its default. The edit keeps the file's layout (comments, order, line
//! numbers of existing keys), so a value an override makes invalid is still reported at the
//! line of the key it replaced. The edited text then goes through the normal checks: an
//! unknown key or a bad value is caught there, with the same messages as in a file.

use toml_edit::{DocumentMut, Item, TableLike, Value};

/// One parsed `KEY=VALUE`.
#[derive(Clone, Debug)]
struct Override {
    path: Vec<String>,
    value: Value,
}

/// One `--set` override as applied: what was asked, and what the file had there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edit {
    /// The override as given, `KEY=VALUE`.
    pub set: String,
    /// The key, as given.
    pub key: String,
    /// The value the file gave the key, as written (`None`: the file left it at its default).
    pub was: Option<String>,
}

/// Applies `sets` (each `KEY=VALUE`, in order; a later one wins) to the scenario `text` and
/// returns the edited text. The error is one line naming the bad override.
pub fn apply_overrides(text: &str, sets: &[String]) -> Result<String, String> {
    apply_overrides_noting(text, sets).map(|(edited, _)| edited)
}

/// [`apply_overrides`], with each override and the value the file had for its key (so that a
/// report can say what the run changed).
pub fn apply_overrides_noting(text: &str, sets: &[String]) -> Result<(String, Vec<Edit>), String> {
    if sets.is_empty() {
        return Ok((text.to_string(), Vec::new()));
    }
    let mut doc: DocumentMut = text
        .parse()
        .map_err(|e: toml_edit::TomlError| format!("the scenario is not valid TOML: {}", e.message().trim().replace('\n', " ")))?;
    let file = doc.clone();
    let mut edits = Vec::with_capacity(sets.len());
    for set in sets {
        let o = parse_override(set)?;
        edits.push(Edit {
            set: set.trim().to_string(),
            key: o.path.join("."),
            was: value_at(file.as_table(), &o.path),
        });
        set_at(doc.as_table_mut(), &o.path, o.value).map_err(|why| format!("--set '{set}': {why}"))?;
    }
    Ok((doc.to_string(), edits))
}

/// The value at `path` under `table`, as written (without its spacing and comment).
fn value_at(table: &dyn TableLike, path: &[String]) -> Option<String> {
    let (key, rest) = path.split_first()?;
    let item = table.get(key)?;
    if rest.is_empty() {
        let mut v = item.as_value()?.clone();
        v.decor_mut().clear();
        return Some(v.to_string());
    }
    if let Some(tables) = item.as_array_of_tables() {
        let (index, rest) = rest.split_first()?;
        return value_at(tables.get(index.parse().ok()?)?, rest);
    }
    value_at(item.as_table_like()?, rest)
}

fn parse_override(set: &str) -> Result<Override, String> {
    let Some((key, value)) = set.split_once('=') else {
        return Err(format!("--set '{set}': expected KEY=VALUE, e.g. clients.count=15"));
    };
    let path: Vec<String> = key.trim().split('.').map(|s| s.trim().to_string()).collect();
    if path.iter().any(|segment| segment.is_empty()) {
        return Err(format!(
            "--set '{set}': the key '{}' must be a dotted path of non-empty names, e.g. policy.params.c3.concurrency_weight",
            key.trim()
        ));
    }
    let value_text = value.trim();
    let value = match value_text.parse::<Value>() {
        Ok(v) => v,
        Err(_) if is_bare_word(value_text) => Value::from(value_text),
        Err(_) => {
            return Err(format!(
                "--set '{set}': '{value_text}' is not a TOML value (a number, true/false, a \"string\", [a, list] or {{ an = \"inline table\" }})"
            ))
        }
    };
    Ok(Override { path, value })
}

/// A word that TOML would reject unquoted but that plainly means a string (`poisson`, `c3`,
/// `weighted-least-loaded`).
fn is_bare_word(text: &str) -> bool {
    !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '/' | '+'))
}

/// Sets `path` (at least one segment) under `table` to `value`, creating missing tables.
fn set_at(table: &mut dyn TableLike, path: &[String], value: Value) -> Result<(), String> {
    let (key, rest) = path.split_first().expect("a parsed path has at least one segment");
    if rest.is_empty() {
        let mut value = value;
        if let Some(old) = table.get(key).and_then(Item::as_value) {
            // Keep the spacing and the trailing comment of the value it replaces.
            *value.decor_mut() = old.decor().clone();
        }
        table.insert(key, Item::Value(value));
        return Ok(());
    }
    if table.get(key).is_none() {
        let mut created = toml_edit::Table::new();
        created.set_implicit(true);
        table.insert(key, Item::Table(created));
    }
    let item = table.get_mut(key).expect("present or just inserted");
    if let Some(tables) = item.as_array_of_tables_mut() {
        let (index, rest) = rest.split_first().expect("checked non-empty above");
        let count = tables.len();
        let entry = index.parse::<usize>().ok().and_then(|i| tables.get_mut(i)).ok_or_else(|| {
            format!("'{key}' is a list of {count} tables: the next part of the key must be an index in 0..{count}, not '{index}'")
        })?;
        if rest.is_empty() {
            return Err(format!("'{key}.{index}' is a whole table: name a key inside it"));
        }
        return set_at(entry, rest, value);
    }
    match item.as_table_like_mut() {
        Some(inner) => set_at(inner, rest, value),
        None => Err(format!(
            "'{key}' holds a value, not a table, so '{}' cannot be set inside it",
            rest.join(".")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str =
        "name = \"x\"\n\n[clients]\ncount = 150 # the clients\narrival = \"poisson\"\n\n[[fault]]\nkind = \"fluctuate\"\nfactor = 3\n";

    fn set(list: &[&str]) -> Result<String, String> {
        apply_overrides(TEXT, &list.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn replaces_a_value_in_place_keeping_layout_and_comment() {
        let out = set(&["clients.count=15"]).unwrap();
        assert_eq!(out, TEXT.replace("count = 150 #", "count = 15 #"));
    }

    #[test]
    fn bare_words_are_strings_and_toml_values_are_typed() {
        let out = set(&["clients.arrival=fixed", "fault.0.factor=2.5"]).unwrap();
        assert!(out.contains("arrival = \"fixed\""), "{out}");
        assert!(out.contains("factor = 2.5"), "{out}");
    }

    #[test]
    fn creates_missing_tables_and_keys() {
        let out = set(&["policy.params.c3.concurrency_weight=15"]).unwrap();
        let parsed: toml::Table = toml::from_str(&out).unwrap();
        assert_eq!(parsed["policy"]["params"]["c3"]["concurrency_weight"].as_integer(), Some(15));
    }

    #[test]
    fn the_later_override_wins() {
        let out = set(&["clients.count=1", "clients.count=2"]).unwrap();
        assert!(out.contains("count = 2 #"), "{out}");
    }

    #[test]
    fn bad_overrides_name_themselves() {
        for (bad, needle) in [
            ("clients.count", "expected KEY=VALUE"),
            ("clients..count=1", "dotted path"),
            ("clients.count=[1,", "is not a TOML value"),
            ("fault.3.factor=1", "an index in 0..1"),
            ("fault.x.factor=1", "not 'x'"),
            ("fault.0=1", "whole table"),
            ("name.first=1", "holds a value"),
        ] {
            let err = set(&[bad]).unwrap_err();
            assert!(err.contains(&format!("'{bad}'")) && err.contains(needle), "{bad}: {err}");
            assert!(!err.contains('\n'), "{err}");
        }
    }

    #[test]
    fn each_edit_notes_what_the_file_had() {
        let sets: Vec<String> = [
            "clients.count = 15",
            "fault.0.factor=2",
            "policy.coordinator=c3",
            "clients.count=16",
        ]
        .map(String::from)
        .to_vec();
        let (_, edits) = apply_overrides_noting(TEXT, &sets).unwrap();
        let was: Vec<(&str, Option<&str>)> = edits.iter().map(|e| (e.key.as_str(), e.was.as_deref())).collect();
        assert_eq!(
            was,
            [
                ("clients.count", Some("150")),
                ("fault.0.factor", Some("3")),
                ("policy.coordinator", None),
                ("clients.count", Some("150"))
            ]
        );
        assert_eq!(edits[0].set, "clients.count = 15");
    }

    #[test]
    fn no_overrides_leave_the_text_alone() {
        assert_eq!(apply_overrides("not = [valid", &[]).unwrap(), "not = [valid");
    }
}
