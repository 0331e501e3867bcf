//! What an engine operation returns: the line to show, or a one-line error that says whether
//! the input was bad.

/// A failure of an engine operation: one line, and whether the user's input was at fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineError {
    /// Bad input (exit 2) rather than a failed operation (exit 1).
    pub usage: bool,
    /// One line naming the bad value or what failed.
    pub message: String,
}

impl EngineError {
    /// Bad input.
    pub fn usage(message: impl Into<String>) -> Self {
        EngineError {
            usage: true,
            message: message.into(),
        }
    }

    /// A failed operation.
    pub fn failed(message: impl Into<String>) -> Self {
        EngineError {
            usage: false,
            message: message.into(),
        }
    }
}

impl From<replica_lb_node::NodeError> for EngineError {
    fn from(e: replica_lb_node::NodeError) -> Self {
        EngineError {
            usage: e.is_usage(),
            message: e.to_string(),
        }
    }
}

impl From<replica_lb_experiment::gate::GateError> for EngineError {
    fn from(e: replica_lb_experiment::gate::GateError) -> Self {
        EngineError {
            usage: e.usage,
            message: e.message,
        }
    }
}

/// Result of an engine operation: the line to show.
pub type EngineResult = Result<String, EngineError>;
