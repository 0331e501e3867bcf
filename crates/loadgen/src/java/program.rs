//! The Java driver's runner as a program: built with Maven on first use by the same code path
//! as the plug-in for Cassandra ([`dist::built_on_first_use_after`], cached by a hash of its
//! sources), started as a child process with `java -cp JAR:LIB/*`, read by a thread of its own
//! that parses every line as it comes ([`Msg`], timed when it was read), and killed when its
//! handle is dropped, whatever happened. Its stderr (the driver's warnings) is kept, the last
//! lines, for the error that tells why it stopped.

use super::protocol::{parse_reply, Reply};
use replica_lb_cassandra::dist::{self, Built, MavenProject};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// The runner's main class.
pub const MAIN_CLASS: &str = "io.replicalb.driver.runner.Main";

/// The JVM's options: a heap for the driver's buffers and a run's requests in flight.
pub const JVM_OPTIONS: [&str; 2] = ["-Xms128m", "-Xmx512m"];

/// Stderr lines kept for the error message.
const STDERR_LINES: usize = 20;

/// The runner's Maven project.
pub fn project_dir() -> PathBuf {
    java_dir().join("driver-runner")
}

fn java_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../java")
}

/// The projects the runner depends on, installed before it is built: the policies in Java
/// (`java/core`), then the driver's load-balancing policy over them (`java/driver-policy`).
pub fn required_projects() -> Vec<PathBuf> {
    vec![java_dir().join("core"), java_dir().join("driver-policy")]
}

/// The runner's jar and its dependencies, built with Maven on first use (and after its sources
/// or those of [`required_projects`] change; they are installed first), cached in
/// `~/.cache/replica-lb/java-driver-runner/`.
pub fn built(progress: &mut dyn FnMut(&str)) -> Result<Built, String> {
    let project = MavenProject {
        what: "the Java driver's runner",
        dir: project_dir(),
        artifact: "driver-runner",
        cache: dist::cache_base().join("java-driver-runner"),
        dependencies: true,
    };
    let required = required_projects();
    let required: Vec<&Path> = required.iter().map(PathBuf::as_path).collect();
    dist::built_on_first_use_after(&project, &required, progress)
}

/// What the reader thread hands on: an event and when its line was read.
#[derive(Debug)]
pub struct Msg {
    /// When the line was read (a request's end time).
    pub at: Instant,
    /// What it was.
    pub event: Event,
}

/// One thing the runner's output said.
#[derive(Debug)]
pub enum Event {
    /// A line of the protocol.
    Line(Reply),
    /// A line that is not (the error names it); the reader stops.
    Malformed(String),
    /// Its output ended: it exited or closed it.
    Closed,
}

/// Where the reader sends what it reads (switched between the handshake, the run and the end).
type Sink = Arc<Mutex<mpsc::Sender<Msg>>>;

/// A started runner; killed when dropped.
pub struct Runner {
    child: Child,
    stdin: Option<ChildStdin>,
    sink: Sink,
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// Set once its stderr is read to the end (the process closed it).
    stderr_read: Arc<AtomicBool>,
}

impl Runner {
    /// Starts the runner of `built`; what it writes goes to `first` until [`Runner::route`].
    pub fn start(built: &Built, first: mpsc::Sender<Msg>) -> Result<Runner, String> {
        let lib = built.lib.as_ref().ok_or("the runner was built without its dependencies")?;
        let classpath = format!("{}:{}/*", built.jar.display(), lib.display());
        let mut java = Command::new("java");
        java.args(JVM_OPTIONS).arg("-cp").arg(&classpath).arg(MAIN_CLASS);
        Runner::spawn(java, first).map_err(|e| format!("cannot start java (Java 17 is needed for the Java driver): {e}"))
    }

    /// Starts `command` as the runner (a stand-in in tests).
    pub(crate) fn spawn(mut command: Command, first: mpsc::Sender<Msg>) -> Result<Runner, String> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string())?;
        let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err("the Java driver's runner started without its pipes".into());
        };
        let sink: Sink = Arc::new(Mutex::new(first));
        let tail = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_LINES)));
        let stderr_read = Arc::new(AtomicBool::new(false));
        let spawned = {
            let sink = sink.clone();
            std::thread::Builder::new()
                .name("java-driver-out".into())
                .spawn(move || read_lines(stdout, &sink))
        }
        .and_then(|_| {
            let (tail, read) = (tail.clone(), stderr_read.clone());
            std::thread::Builder::new().name("java-driver-err".into()).spawn(move || {
                keep_tail(stderr, &tail);
                read.store(true, Ordering::Release);
            })
        });
        let mut runner = Runner {
            child,
            stdin: Some(stdin),
            sink,
            stderr: tail,
            stderr_read,
        };
        if let Err(e) = spawned {
            runner.kill();
            return Err(format!("cannot start a thread for the Java driver's runner: {e}"));
        }
        Ok(runner)
    }

    /// Sends what it reads from now on to `tx`.
    pub fn route(&self, tx: mpsc::Sender<Msg>) {
        *self.sink.lock().unwrap_or_else(|e| e.into_inner()) = tx;
    }

    /// Writes `text` (whole lines) to its stdin.
    pub fn send(&mut self, text: &str) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("its input is closed")?;
        stdin
            .write_all(text.as_bytes())
            .and_then(|_| stdin.flush())
            .map_err(|e| format!("cannot write to the Java driver's runner ({e}; {})", self.exit()))
    }

    /// Closes its stdin (it then stops).
    pub fn close_input(&mut self) {
        self.stdin = None;
    }

    /// Waits up to `limit` for it to exit on its own; whether it did.
    pub fn wait_exit(&mut self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => return true,
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
                _ => return false,
            }
        }
    }

    /// How it ended (or that it still runs) and its last stderr line, for an error message.
    pub fn exit(&mut self) -> String {
        // Its pipe closes a moment before its exit status is known.
        let deadline = Instant::now() + Duration::from_millis(500);
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(s)) => {
                    // Its last stderr lines may still be on their way to the reader thread.
                    while !self.stderr_read.load(Ordering::Acquire) && Instant::now() < deadline {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    break format!("exit {s}");
                }
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
                Ok(None) => break "still running".to_string(),
                Err(e) => break format!("status unknown: {e}"),
            }
        };
        match self.last_stderr() {
            Some(line) => format!("{status}; its stderr ends: {line}"),
            None => status,
        }
    }

    /// The last non-empty stderr line, cut to 300 characters.
    fn last_stderr(&self) -> Option<String> {
        let tail = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        let line = tail.iter().rev().find(|l| !l.trim().is_empty())?;
        Some(line.trim().chars().take(300).collect())
    }

    /// Kills it (if it still runs) and reaps it.
    pub fn kill(&mut self) {
        self.stdin = None;
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The reader: every line parsed, timed and sent on; a malformed line or the end of the output
/// is the last message.
fn read_lines(stdout: impl Read, sink: &Sink) {
    let send = |event: Event, at: Instant| {
        let tx = sink.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let _ = tx.send(Msg { at, event });
    };
    let mut reader = BufReader::with_capacity(1 << 16, stdout);
    let mut line = Vec::with_capacity(256);
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return send(Event::Closed, Instant::now()),
            Ok(_) => {
                let at = Instant::now();
                let text = match std::str::from_utf8(&line) {
                    Ok(t) => t.strip_suffix('\n').unwrap_or(t).trim_end_matches('\r'),
                    Err(_) => {
                        return send(
                            Event::Malformed("the Java driver's runner sent a line that is not UTF-8".into()),
                            at,
                        )
                    }
                };
                match parse_reply(text) {
                    Ok(reply) => send(Event::Line(reply), at),
                    Err(e) => return send(Event::Malformed(e), at),
                }
            }
        }
    }
}

/// Keeps the last [`STDERR_LINES`] lines of `stderr`.
fn keep_tail(stderr: impl Read, tail: &Mutex<VecDeque<String>>) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    while matches!(reader.read_until(b'\n', &mut line), Ok(n) if n > 0) {
        let mut t = tail.lock().unwrap_or_else(|e| e.into_inner());
        if t.len() == STDERR_LINES {
            t.pop_front();
        }
        t.push_back(String::from_utf8_lossy(&line).trim_end().to_string());
        line.clear();
    }
}
