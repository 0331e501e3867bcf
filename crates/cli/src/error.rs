//! The CLI's error type: one line for the user, and the exit code that goes with it.

use std::fmt;

/// A failure the user should read: bad input (exit 2) or a failed operation (exit 1).
#[derive(Debug)]
pub struct CliError {
    /// One line: what was wrong and what is allowed.
    pub message: String,
    /// The process exit code.
    pub code: i32,
}

impl CliError {
    /// Bad input from the user: exit code 2.
    pub fn usage(message: impl Into<String>) -> Self {
        CliError {
            message: message.into(),
            code: 2,
        }
    }

    /// The operation failed (I/O, a node unreachable, ...): exit code 1.
    pub fn failed(message: impl Into<String>) -> Self {
        CliError {
            message: message.into(),
            code: 1,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<replica_lb_policy::PolicyError> for CliError {
    fn from(e: replica_lb_policy::PolicyError) -> Self {
        CliError::usage(e.to_string())
    }
}

impl From<replica_lb_engine::EngineError> for CliError {
    fn from(e: replica_lb_engine::EngineError) -> Self {
        match e.usage {
            true => CliError::usage(e.message),
            false => CliError::failed(e.message),
        }
    }
}

impl From<replica_lb_experiment::gate::GateError> for CliError {
    fn from(e: replica_lb_experiment::gate::GateError) -> Self {
        match e.usage {
            true => CliError::usage(e.message),
            false => CliError::failed(e.message),
        }
    }
}

/// Result of a command.
pub type CliResult = Result<(), CliError>;

/// Collapses a clap error into one line ("error: ... : --cl <K>"), keeping the bad value.
pub fn one_line(rendered: &str) -> String {
    let mut parts = Vec::new();
    for line in rendered.lines() {
        let line = line.trim();
        if line.is_empty() {
            break;
        }
        parts.push(line.trim_start_matches("error: ").to_string());
    }
    parts.join(" ")
}
