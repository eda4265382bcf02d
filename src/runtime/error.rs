use std::borrow::Cow;

use crate::domain::Scope;
use crate::model::ModelError;
use crate::runtime::ask_user::{Violation, describe};
use crate::store::StoreError;

/// Why an answer was not accepted. The API layer gives each its `ErrorReason` on the wire.
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
    /// The call names assignees, and the caller is none of them.
    NotAssignee,
    /// The caller lacks the scope that settles a call of this kind.
    MissingScope(Scope),
    /// An answer link's call no longer waits: the link opens nothing more.
    AnswerLinkUsed,
    /// An answer link was used for another call, run or RPC than its own.
    AnswerLinkOtherCall,
}

/// The most characters of an id an error message quotes.
const SHOWN_ID_CHARS: usize = 64;

/// An id as error messages quote it: cut short, so that an error never echoes a huge id back.
pub fn short_id(id: &str) -> Cow<'_, str> {
    match id.char_indices().nth(SHOWN_ID_CHARS) {
        Some((end, _)) => Cow::Owned(format!("{}…", &id[..end])),
        None => Cow::Borrowed(id),
    }
}

/// Errors of the runtime layer; the API maps each to a gRPC status in one place.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("invalid argument: {}", describe(.0))]
    InvalidArgument(Vec<Violation>),
    #[error("agent \"{}\" not found", short_id(.0))]
    AgentNotFound(String),
    #[error("run \"{}\" not found", short_id(.0))]
    RunNotFound(String),
    #[error("{message}")]
    AnswerRejected {
        reason: RejectReason,
        message: String,
        violations: Vec<Violation>,
    },
    #[error("run \"{}\" already {status}", short_id(run_id))]
    RunFinished {
        run_id: String,
        status: &'static str,
    },
    #[error("the server is shutting down")]
    ShuttingDown,
    /// A start asks for its own webhooks, and its tenant has no secret to sign them with.
    #[error(
        "tenant \"{}\" has no webhook secret to sign its runs' own webhooks: make one with \
         AdminService.RotateWebhookSecret",
        short_id(.0)
    )]
    WebhookSecretRequired(String),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_ids_are_cut_in_messages() {
        let message = RuntimeError::RunNotFound("é".repeat(1000)).to_string();
        assert_eq!(message, format!("run \"{}…\" not found", "é".repeat(64)));
        assert_eq!(short_id("run-1"), "run-1");
    }
}
