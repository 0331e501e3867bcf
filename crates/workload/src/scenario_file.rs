//! Loading a scenario file as every command does (`sim run`, `experiment`, `tournament`): read
//! it, apply the `--set` overrides, parse it, and render any failure as one line naming the
//! file and the bad value.

use crate::Scenario;
use std::path::Path;

/// The scenario at `path` with the `--set KEY=VALUE` overrides `sets` applied (the file's stem
/// names it when it has no `name`), the overrides kept in its `edits`. The error is one line:
/// the file that cannot be read, the override that does not apply, or the parse error (noting
/// when only the overrides broke it).
pub fn load(path: &Path, sets: &[String]) -> Result<Scenario, String> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read scenario {shown}: {e}"))?;
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("scenario");
    let (edited, edits) = crate::apply_overrides_noting(&text, sets).map_err(|e| format!("{shown}: {e}"))?;
    let mut sc = crate::parse(&edited, stem).map_err(|e| {
        let mut line = e.render(&shown);
        if !sets.is_empty() && crate::parse(&text, stem).is_ok() {
            line.push_str(" (after the --set overrides)");
        }
        line
    })?;
    sc.edits = edits;
    Ok(sc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_one_line_naming_the_file_or_the_override() {
        let dir = std::env::temp_dir().join(format!("replica-lb-scenario-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("missing.toml");
        let e = load(&missing, &[]).unwrap_err();
        assert!(
            e.starts_with("cannot read scenario") && e.contains("missing.toml") && !e.contains('\n'),
            "{e}"
        );
        let bad = dir.join("bad.toml");
        std::fs::write(&bad, "[cluster\n").unwrap();
        let e = load(&bad, &[]).unwrap_err();
        assert!(e.contains("bad.toml") && !e.contains('\n'), "{e}");
        let e = load(&bad, &["clusters.count=oops".into()]).unwrap_err();
        assert!(e.contains("bad.toml") && !e.contains('\n'), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
