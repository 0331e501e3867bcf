//! How far simulations have got, while they run: a bar per run on a terminal (one bar for the
//! whole batch when there are many), and when stderr is not a terminal (a pipe, a log, CI) a
//! line every [`LINE_EVERY`] with the scenario, the runs in progress, the simulated seconds,
//! the rate and the time left, so that a long run is never silent.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use replica_lb_metrics::format::thousands;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How often a progress line is printed when stderr is not a terminal.
pub const LINE_EVERY: Duration = Duration::from_secs(10);
/// When the first line is printed: a run shorter than this prints none.
const FIRST_LINE_AFTER: Duration = Duration::from_secs(5);
/// Up to this many runs, a terminal shows a bar per run; more share one bar.
const BARS_MAX: usize = 8;

/// One simulation of a batch, as progress shows it.
pub struct Run {
    /// Its scenario's name.
    pub scenario: String,
    /// Its policy label.
    pub policy: String,
    /// Its simulated milliseconds in all (warm-up and measurement).
    pub total_ms: u64,
}

/// Runs `work`, which stores run i's simulated milliseconds in `done_ms[i]` as it goes, and
/// shows how far it has got on stderr until it returns (`what` names the batch: a scenario, or
/// `tournament`). A panic in `work` comes back as `Err`.
pub fn watch<T: Send>(what: &str, runs: &[Run], done_ms: &[AtomicU64], work: impl FnOnce() -> T + Send) -> std::thread::Result<T> {
    assert_eq!(runs.len(), done_ms.len(), "one counter per run");
    let finished = AtomicBool::new(false);
    let terminal = std::io::stderr().is_terminal();
    // The watcher sleeps between updates until the work ends and wakes it (an unpark), so a
    // short run is not held up to a whole update interval after it finished.
    let watcher = std::thread::current();
    std::thread::scope(|scope| {
        let worker = scope.spawn(|| {
            let r = work();
            finished.store(true, Ordering::Release);
            watcher.unpark();
            r
        });
        let bars = terminal.then(|| Bars::new(what, runs));
        let start = Instant::now();
        let mut next_line = start + FIRST_LINE_AFTER;
        // The rate is measured since the last line: a batch's runs differ in speed.
        let mut last = (start, 0u64);
        while !finished.load(Ordering::Acquire) && !worker.is_finished() {
            let done: Vec<u64> = done_ms
                .iter()
                .zip(runs)
                .map(|(d, r)| d.load(Ordering::Relaxed).min(r.total_ms))
                .collect();
            match &bars {
                Some(b) => b.update(&done),
                None if Instant::now() >= next_line => {
                    let now = Instant::now();
                    let sum: u64 = done.iter().sum();
                    let rate = (sum - last.1) as f64 / 1000.0 / now.duration_since(last.0).as_secs_f64().max(1e-3);
                    eprintln!("{}", line(what, runs, &done, rate));
                    last = (now, sum);
                    next_line += LINE_EVERY;
                }
                None => {}
            }
            std::thread::park_timeout(Duration::from_millis(100));
        }
        if let Some(b) = bars {
            b.clear();
        }
        worker.join()
    })
}

/// The progress line, `rate` being the simulated seconds per second lately: `progress:
/// cold-restart: 624 of 2,160 simulated s (29%), 0 of 2 runs done, 104 simulated s per s, about
/// 15 s left; running: naive 312/1,080 s, hwlb 312/1,080 s`.
fn line(what: &str, runs: &[Run], done_ms: &[u64], rate: f64) -> String {
    let total: u64 = runs.iter().map(|r| r.total_ms).sum();
    let done: u64 = done_ms.iter().sum();
    let finished = runs.iter().zip(done_ms).filter(|(r, &d)| d >= r.total_ms).count();
    let left = if rate > 0.0 {
        format!("about {} left", duration_words((total - done) as f64 / 1000.0 / rate))
    } else {
        "time left unknown yet".to_string()
    };
    let running: Vec<String> = runs
        .iter()
        .zip(done_ms)
        .filter(|(r, &d)| d > 0 && d < r.total_ms)
        .map(|(r, &d)| {
            let name = if r.scenario == what {
                r.policy.clone()
            } else {
                format!("{} {}", r.scenario, r.policy)
            };
            format!(
                "{name} {}/{} s",
                thousands((d / 1000) as f64),
                thousands((r.total_ms / 1000) as f64)
            )
        })
        .collect();
    let running = if running.is_empty() {
        String::new()
    } else {
        format!("; running: {}", running.join(", "))
    };
    format!(
        "progress: {what}: {} of {} simulated s ({:.0}%), {finished} of {} runs done, {:.1} simulated s per s, {left}{running}",
        thousands((done / 1000) as f64),
        thousands((total / 1000) as f64),
        done as f64 * 100.0 / total.max(1) as f64,
        runs.len(),
        rate
    )
}

/// Seconds in words: `45 s`, `3 min 20 s`, `2 h 5 min`.
fn duration_words(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, s % 3600 / 60),
    }
}

/// The terminal's bars: one per run, or one for the batch.
struct Bars {
    _multi: MultiProgress,
    bars: Vec<ProgressBar>,
    per_run: bool,
}

impl Bars {
    fn new(what: &str, runs: &[Run]) -> Bars {
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template("{prefix:>24} [{bar:30}] {percent:>3}% simulated, {eta} left")
            .map_or_else(|_| ProgressStyle::default_bar(), |s| s.progress_chars("=> "));
        let per_run = runs.len() <= BARS_MAX;
        let bar = |prefix: String, len: u64| {
            let b = multi.add(ProgressBar::new(len.max(1)));
            b.set_style(style.clone());
            b.set_prefix(prefix);
            b
        };
        let bars = if per_run {
            runs.iter().map(|r| bar(r.policy.clone(), r.total_ms)).collect()
        } else {
            vec![bar(format!("{what} ({} runs)", runs.len()), runs.iter().map(|r| r.total_ms).sum())]
        };
        Bars {
            _multi: multi,
            bars,
            per_run,
        }
    }

    fn update(&self, done_ms: &[u64]) {
        if self.per_run {
            for (b, &d) in self.bars.iter().zip(done_ms) {
                b.set_position(d);
            }
        } else if let Some(b) = self.bars.first() {
            b.set_position(done_ms.iter().sum());
        }
    }

    fn clear(self) {
        for b in &self.bars {
            b.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_says_where_and_how_fast() {
        let runs = [
            Run {
                scenario: "cold-restart".into(),
                policy: "naive".into(),
                total_ms: 1_080_000,
            },
            Run {
                scenario: "cold-restart".into(),
                policy: "hwlb".into(),
                total_ms: 1_080_000,
            },
        ];
        let l = line("cold-restart", &runs, &[312_000, 1_080_000], 139.2);
        assert_eq!(
            l,
            "progress: cold-restart: 1,392 of 2,160 simulated s (64%), 1 of 2 runs done, 139.2 simulated s per s, about 6 s left; running: naive 312/1,080 s"
        );
        let l = line("tournament", &runs, &[0, 0], 0.0);
        assert!(l.ends_with("0 of 2 runs done, 0.0 simulated s per s, time left unknown yet"), "{l}");
        assert_eq!(
            (duration_words(200.0), duration_words(7500.0)),
            ("3 min 20 s".into(), "2 h 5 min".into())
        );
    }
}
