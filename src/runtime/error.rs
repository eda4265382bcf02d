use crate::model::ModelError;
use crate::runtime::ask_user::{Violation, describe};
use crate::store::StoreError;

/// Why an answer was not accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RejectReason {
    /// The answer does not fit the question (wrong kind, unknown label, ...).
    InvalidAnswer,
    /// The run has no such tool call waiting.
    ToolCallNotPending,
    /// Another answer was accepted first.
    AlreadyAnswered,
    /// The question expired before the answer came.
    QuestionExpired,
    /// The answer names another run than the stream's.
    RunMismatch,
    /// The run is not waiting for answers.
    RunNotSuspended,
    /// Another claimant holds the call's claim.
    AlreadyClaimed,
    /// The `answer_id` was accepted before with different content.
    AnswerIdReused,
}

impl RejectReason {
    /// The `ErrorInfo` / `AnswerRejected` reason code.
    pub fn code(self) -> &'static str {
        match self {
            RejectReason::InvalidAnswer => "INVALID_ANSWER",
            RejectReason::ToolCallNotPending => "TOOL_CALL_NOT_PENDING",
            RejectReason::AlreadyAnswered => "ALREADY_ANSWERED",
            RejectReason::QuestionExpired => "QUESTION_EXPIRED",
            RejectReason::RunMismatch => "RUN_MISMATCH",
            RejectReason::RunNotSuspended => "RUN_NOT_SUSPENDED",
            RejectReason::AlreadyClaimed => "ALREADY_CLAIMED",
            RejectReason::AnswerIdReused => "ANSWER_ID_REUSED",
        }
    }
}

/// Errors of the runtime layer; the API maps each to a gRPC status in one place.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("invalid argument: {}", describe(.0))]
    InvalidArgument(Vec<Violation>),
    #[error("agent \"{0}\" not found")]
    AgentNotFound(String),
    #[error("run \"{0}\" not found")]
    RunNotFound(String),
    #[error("{message}")]
    AnswerRejected {
        reason: RejectReason,
        message: String,
        violations: Vec<Violation>,
    },
    #[error("run \"{run_id}\" already {status}")]
    RunFinished {
        run_id: String,
        status: &'static str,
    },
    #[error("the server is shutting down")]
    ShuttingDown,
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Model(#[from] ModelError),
    /// A fault of the server itself (a task that panicked).
    #[error("{0}")]
    Internal(String),
}

impl RuntimeError {
    pub(crate) fn rejected(reason: RejectReason, message: impl Into<String>) -> Self {
        RuntimeError::AnswerRejected {
            reason,
            message: message.into(),
            violations: Vec::new(),
        }
    }
}
