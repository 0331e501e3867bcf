//! Ctrl-C and SIGTERM during an experiment: the node processes and Cassandra clusters this
//! process started are stopped before it exits (130).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// Process ids of nodes started by this process, killed on Ctrl-C.
static LIVE_PIDS: Mutex<Vec<u32>> = Mutex::new(Vec::new());
/// Directories of the Cassandra clusters this process runs, brought down on Ctrl-C.
static LIVE_CASSANDRA_DIRS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
static INTERRUPT_HANDLER: std::sync::Once = std::sync::Once::new();
/// Set by the interrupt handler before it stops anything: work that fails after this point
/// failed because its cluster was being brought down, and the process exits 130, not 1.
static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// When an interrupt (Ctrl-C or SIGTERM) is being handled, waits for the handler to stop the
/// nodes and exit the process with 130 (or exits 130 itself after `grace`); returns at once
/// otherwise. A command that fails calls this before exiting with its own code, so the error a
/// stopped cluster causes (a connection reset) never hides the interrupt.
pub fn defer_to_interrupt(grace: Duration) {
    if !INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    std::thread::sleep(grace);
    std::process::exit(130);
}

/// Brings the Cassandra cluster in `dir` down if this process is interrupted (Ctrl-C or
/// SIGTERM) before [`forget_cassandra_dir`]: its nodes and proxy run in process groups of
/// their own and would outlive the experiment.
pub fn watch_cassandra_dir(dir: &Path) {
    install_interrupt_handler();
    LIVE_CASSANDRA_DIRS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(dir.to_path_buf());
}

/// The cluster in `dir` was brought down: an interrupt leaves it alone.
pub fn forget_cassandra_dir(dir: &Path) {
    LIVE_CASSANDRA_DIRS.lock().unwrap_or_else(|p| p.into_inner()).retain(|d| d != dir);
}

pub(crate) fn register_pid(pid: u32) {
    LIVE_PIDS.lock().unwrap_or_else(|p| p.into_inner()).push(pid);
}

pub(crate) fn unregister_pid(pid: u32) {
    LIVE_PIDS.lock().unwrap_or_else(|p| p.into_inner()).retain(|&p| p != pid);
}

/// On Ctrl-C or SIGTERM, kill every node this process started and bring its Cassandra
/// clusters down, then exit (130). Nodes run in their own process groups, so without this an
/// interrupted experiment would leave them running.
pub(crate) fn install_interrupt_handler() {
    INTERRUPT_HANDLER.call_once(|| {
        let _ = std::thread::Builder::new().name("interrupt".into()).spawn(|| {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
                return;
            };
            rt.block_on(async {
                let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) else {
                    return;
                };
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            });
            INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
            let pids = LIVE_PIDS.lock().unwrap_or_else(|p| p.into_inner()).clone();
            for pid in pids {
                let _ = replica_lb_launcher::send_signal(pid, replica_lb_launcher::Signal::Kill);
            }
            let dirs = LIVE_CASSANDRA_DIRS.lock().unwrap_or_else(|p| p.into_inner()).clone();
            for dir in dirs {
                let _ = replica_lb_cassandra::down(&dir, Duration::from_secs(5));
            }
            eprintln!("replica-lb: interrupted; the experiment's nodes were stopped");
            std::process::exit(130);
        });
    });
}
