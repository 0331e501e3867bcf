//! Writing a run directory, as `sim run`, `experiment` and `demo` do: `summary.json` (the
//! contract checked from outside), one `<run>/timeseries.csv` per run, and `report.html` (with
//! its charts as SVG files on request).

use metrics::{csv::timeseries_csv, RunMetrics, Summary};
use std::path::Path;

/// The runs of one scenario, for `summary.json` and the time series.
pub struct RunDir<'a> {
    /// The scenario's name.
    pub scenario: &'a str,
    /// The real engine (`node`, `cassandra`); `None` for the simulator.
    pub engine: Option<&'a str>,
    /// The seed.
    pub seed: u64,
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
            write(&dir.join("timeseries.csv"), timeseries_csv(&m.series))?;
        }
        Ok(summary)
    }
}

/// Writes `out/report.html` of `input`, and with `charts` each chart as an SVG file of its own
/// in `out/charts/`.
pub fn write_report(out: &Path, input: &report::ReportInput<'_>, charts: bool) -> Result<(), String> {
    create(out)?;
    write(&out.join("report.html"), report::render(input))?;
    if charts {
        let dir = out.join("charts");
        create(&dir)?;
        for (name, svg) in report::chart_files(input) {
            write(&dir.join(name), svg)?;
        }
    }
    Ok(())
}
