//! Writing a run directory, as `sim run`, `experiment`, `demo` and `tournament` do:
//! `summary.json` (the contract checked from outside), one `<run>/timeseries.csv` per run, and
//! `report.html` (with its charts as SVG files on request).
//!
//! The folder is checked before any work ([`OutDir::check`]: creatable, writable, a folder,
//! holding nothing but an earlier run) and a new run replaces what an earlier one left there
//! whole ([`OutDir::clear`]), so nothing stale lies beside a new summary.

use replica_lb_metrics::{csv::write_timeseries_csv, Asked, RunMetrics, Summary};
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The files at the top of a folder that say it holds a replica-lb run (a run's summary, a
/// tournament's leaderboard): only such a folder, or an empty one, is replaced by a new run.
const RUN_MARKS: [&str; 2] = ["summary.json", "leaderboard.json"];

/// An output folder checked before any work: it exists (created if it did not), it is a
/// folder, it can be written, and it is empty or holds an earlier run, which a new run replaces
/// ([`OutDir::clear`]).
#[derive(Clone, Debug)]
pub struct OutDir {
    path: PathBuf,
}

impl OutDir {
    /// Checks `path` for a run's results (`flag` names it in the error, `--out`). The error is
    /// one line naming the folder, what is wrong and what to give instead.
    pub fn check(path: &Path, flag: &str) -> Result<OutDir, String> {
        let shown = path.display();
        if path.exists() && !path.is_dir() {
            return Err(format!("{flag} {shown}: is a file, not a folder; give a folder for the results"));
        }
        if !path.exists() {
            std::fs::create_dir_all(path).map_err(|e| format!("{flag} {shown}: cannot create the folder: {e}"))?;
        }
        let entries = std::fs::read_dir(path).map_err(|e| format!("{flag} {shown}: cannot read the folder: {e}"))?;
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        if !names.is_empty() && !names.iter().any(|n| RUN_MARKS.contains(&n.as_str())) {
            let shown_names = names.iter().take(3).cloned().collect::<Vec<_>>().join(", ");
            return Err(format!(
                "{flag} {shown}: holds files that are not a replica-lb run ({shown_names}{}; no summary.json), and a run replaces its folder whole; give a new or empty folder",
                if names.len() > 3 { ", ..." } else { "" }
            ));
        }
        let probe = path.join(format!(".replica-lb-write-check-{}", std::process::id()));
        std::fs::write(&probe, b"").map_err(|e| format!("{flag} {shown}: cannot write in the folder: {e}"))?;
        let _ = std::fs::remove_file(&probe);
        Ok(OutDir { path: path.to_path_buf() })
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes what an earlier run left in the folder (every entry: [`OutDir::check`] made sure
    /// it held nothing else), so that what the new run writes is all there is.
    pub fn clear(&self) -> Result<(), String> {
        let shown = self.path.display();
        let entries = std::fs::read_dir(&self.path).map_err(|e| format!("cannot read {shown}: {e}"))?;
        for entry in entries {
            let entry = entry.map_err(|e| format!("cannot read {shown}: {e}"))?;
            let p = entry.path();
            let removed = if entry.file_type().is_ok_and(|t| t.is_dir()) {
                std::fs::remove_dir_all(&p)
            } else {
                std::fs::remove_file(&p)
            };
            removed.map_err(|e| format!("cannot replace the earlier run in {shown}: cannot remove {}: {e}", p.display()))?;
        }
        Ok(())
    }
}

/// Checks, before any work, that a result file can be written at `path` (`flag` names it in
/// the error): not a folder, in a folder that exists and can be written. Leaves no file behind.
pub fn check_out_file(path: &Path, flag: &str) -> Result<(), String> {
    let shown = path.display();
    if path.is_dir() {
        return Err(format!("{flag} {shown}: is a folder; give a file name for the results"));
    }
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| format!("{flag} {shown}: cannot write the file: {e}"))?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// The runs of one scenario, for `summary.json` and the time series.
pub struct RunDir<'a> {
    /// The scenario's name.
    pub scenario: &'a str,
    /// The real engine (`node`, `cassandra`); `None` for the simulator.
    pub engine: Option<&'a str>,
    /// The seed.
    pub seed: u64,
    /// What the run was asked (version, policies, overrides).
    pub asked: &'a Asked,
    /// Each run's subdirectory and metrics, in order.
    pub runs: Vec<(&'a str, &'a RunMetrics)>,
}

fn write(path: &Path, text: impl AsRef<[u8]>) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn create(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot write {}: {e}", dir.display()))
}

impl RunDir<'_> {
    /// Its `summary.json`.
    pub fn summary(&self) -> Summary {
        Summary {
            scenario: self.scenario.to_string(),
            engine: self.engine.map(str::to_string),
            seed: self.seed,
            asked: self.asked.clone(),
            runs: self.runs.iter().map(|(_, m)| m.summary.clone()).collect(),
        }
    }

    /// Writes `out/summary.json` and each run's `out/<dir>/timeseries.csv` (creating the
    /// directories); returns the summary. The error names the file that could not be written.
    pub fn write(&self, out: &Path) -> Result<Summary, String> {
        create(out)?;
        let summary = self.summary();
        write(&out.join("summary.json"), summary.to_json())?;
        for (dir, m) in &self.runs {
            let dir = out.join(dir);
            create(&dir)?;
            let path = dir.join("timeseries.csv");
            let failed = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
            let file = std::fs::File::create(&path).map_err(failed)?;
            let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
            write_timeseries_csv(&mut w, &m.series).map_err(failed)?;
            w.flush().map_err(failed)?;
        }
        Ok(summary)
    }
}

/// Writes `out/report.html` of `input`, and with `charts` each chart as an SVG file of its own
/// in `out/charts/`.
pub fn write_report(out: &Path, input: &crate::ReportInput<'_>, charts: bool) -> Result<(), String> {
    create(out)?;
    write(&out.join("report.html"), crate::render(input))?;
    if charts {
        let dir = out.join("charts");
        create(&dir)?;
        for (name, svg) in crate::chart_files(input) {
            write(&dir.join(name), svg)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("replica-lb-run-dir-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    /// A new folder is created; a file, a folder of other files or an uncreatable place is
    /// refused on one line; an earlier run's folder is accepted and cleared whole.
    #[test]
    fn the_output_folder_is_checked_then_replaced_whole() {
        let d = scratch("check");
        let new = d.join("a").join("b");
        assert_eq!(OutDir::check(&new, "--out").unwrap().path(), new);
        let file = d.join("f");
        std::fs::write(&file, "x").unwrap();
        let e = OutDir::check(&file, "--out").unwrap_err();
        assert!(e.contains("is a file, not a folder") && !e.contains('\n'), "{e}");
        let e = OutDir::check(&file.join("below"), "--out").unwrap_err();
        assert!(e.starts_with("--out ") && e.contains("cannot create"), "{e}");
        let other = d.join("other");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join("notes.txt"), "mine").unwrap();
        let e = OutDir::check(&other, "--out").unwrap_err();
        assert!(e.contains("not a replica-lb run (notes.txt; no summary.json)"), "{e}");
        let run = d.join("run");
        std::fs::create_dir_all(run.join("old-policy")).unwrap();
        std::fs::write(run.join("summary.json"), "{}").unwrap();
        std::fs::write(run.join("old-policy").join("timeseries.csv"), "t_s").unwrap();
        let out = OutDir::check(&run, "--out").unwrap();
        out.clear().unwrap();
        assert_eq!(std::fs::read_dir(&run).unwrap().count(), 0);
        // A result file: not a folder, in a folder that exists; nothing left behind.
        assert!(check_out_file(&run, "--out").unwrap_err().contains("is a folder"));
        assert!(check_out_file(&file.join("x.json"), "--out")
            .unwrap_err()
            .contains("cannot write the file"));
        check_out_file(&run.join("bench.json"), "--out").unwrap();
        assert!(!run.join("bench.json").exists());
        let _ = std::fs::remove_dir_all(&d);
    }
}
