//! The one place where errors become gRPC statuses.

use std::collections::HashMap;

use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};
use tracing::error;

use super::reason::reject_code;
use crate::auth::{AuthError, LinkError};
use crate::domain::Scope;
use crate::proto::v1::ErrorReason;
use crate::runtime::ask_user::describe;
use crate::runtime::{RejectReason, RuntimeError, Violation};
use crate::store::StoreError;
use crate::web::GuardError;

/// The `ErrorInfo.domain` of every askuser error.
pub const ERROR_DOMAIN: &str = "askuser.dev";

/// Errors of the API layer: requests that do not decode into something the runtime can take, and
/// whatever the runtime reports.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("invalid request")]
    InvalidRequest(Vec<Violation>),
    /// An answer that does not decode, or is over a limit: the same `INVALID_ANSWER` as an answer
    /// the runtime refuses.
    #[error("{}", describe(.0))]
    InvalidAnswer(Vec<Violation>),
    #[error("{0}")]
    Protocol(String),
    #[error("the server has as many streams open as it allows; try again later or elsewhere")]
    TooManyStreams,
    #[error("this tenant has {0} streams open, as many as it may; close one first")]
    TooManyTenantStreams(usize),
    #[error("this caller has {0} streams open, as many as it may; close one first")]
    TooManyPrincipalStreams(usize),
    #[error("no first frame (start or attach) within {}", humantime::format_duration(*.0))]
    NoFirstFrame(std::time::Duration),
    #[error("no API key {0} (or it is revoked already)")]
    KeyNotFound(String),
    #[error("no webhook delivery {0}")]
    DeliveryNotFound(String),
    #[error("webhook delivery {0} is {1}: only a delivered or dead one is redelivered")]
    NotRedeliverable(String, &'static str),
    #[error("this server has no key to seal webhook secrets with (see --webhook-secrets-key-env)")]
    NoWebhookSecretsKey,
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
}

impl ApiError {
    /// One bad field.
    pub fn field(field: impl Into<String>, description: impl Into<String>) -> Self {
        ApiError::InvalidRequest(vec![Violation {
            field: field.into(),
            description: description.into(),
        }])
    }
}

fn bad_request(message: String, violations: &[Violation], reason: Option<ErrorReason>) -> Status {
    let mut details = ErrorDetails::new();
    for violation in violations {
        details.add_bad_request_violation(violation.field.clone(), violation.description.clone());
    }
    if let Some(reason) = reason {
        details.set_error_info(reason.wire_name(), ERROR_DOMAIN, HashMap::new());
    }
    Status::with_error_details(Code::InvalidArgument, message, details)
}

fn with_reason(code: Code, reason: ErrorReason, message: String) -> Status {
    Status::with_error_details(
        code,
        message,
        ErrorDetails::with_error_info(reason.wire_name(), ERROR_DOMAIN, HashMap::new()),
    )
}

impl From<ApiError> for Status {
    fn from(error: ApiError) -> Self {
        match error {
            ApiError::InvalidRequest(violations) => {
                bad_request(describe(&violations), &violations, None)
            }
            ApiError::InvalidAnswer(violations) => {
                crate::metrics::answer_rejected(ErrorReason::InvalidAnswer.wire_name());
                bad_request(
                    describe(&violations),
                    &violations,
                    Some(ErrorReason::InvalidAnswer),
                )
            }
            ApiError::Protocol(message) => Status::invalid_argument(message),
            ApiError::TooManyStreams => with_reason(
                Code::ResourceExhausted,
                ErrorReason::TooManyStreams,
                error.to_string(),
            ),
            ApiError::TooManyTenantStreams(_) => with_reason(
                Code::ResourceExhausted,
                ErrorReason::TooManyTenantStreams,
                error.to_string(),
            ),
            ApiError::TooManyPrincipalStreams(_) => with_reason(
                Code::ResourceExhausted,
                ErrorReason::TooManyPrincipalStreams,
                error.to_string(),
            ),
            ApiError::NoFirstFrame(_) => with_reason(
                Code::DeadlineExceeded,
                ErrorReason::NoFirstFrame,
                error.to_string(),
            ),
            ApiError::KeyNotFound(_) => {
                with_reason(Code::NotFound, ErrorReason::KeyNotFound, error.to_string())
            }
            ApiError::DeliveryNotFound(_) => with_reason(
                Code::NotFound,
                ErrorReason::DeliveryNotFound,
                error.to_string(),
            ),
            ApiError::NotRedeliverable(..) => with_reason(
                Code::FailedPrecondition,
                ErrorReason::NotRedeliverable,
                error.to_string(),
            ),
            ApiError::NoWebhookSecretsKey => with_reason(
                Code::FailedPrecondition,
                ErrorReason::NoWebhookSecretsKey,
                error.to_string(),
            ),
            ApiError::Runtime(error) => runtime_status(error),
        }
    }
}

/// A request the guard in front of every route refuses (`crate::web`): a host or origin an
/// unauthenticated server does not answer. (A content type that is not gRPC is answered with HTTP
/// 415 before any gRPC status.)
impl From<GuardError> for Status {
    fn from(error: GuardError) -> Self {
        let message = error.to_string();
        match error {
            GuardError::NotGrpc(_) => {
                with_reason(Code::InvalidArgument, ErrorReason::NotGrpc, message)
            }
            GuardError::HostNotAllowed(_) => {
                with_reason(Code::PermissionDenied, ErrorReason::HostNotAllowed, message)
            }
            GuardError::OriginNotAllowed(_) => with_reason(
                Code::PermissionDenied,
                ErrorReason::OriginNotAllowed,
                message,
            ),
        }
    }
}

/// Refused credentials say why (a client fixes its own key or token); a missing scope names the
/// scope in `ErrorInfo.metadata["scope"]`.
impl From<AuthError> for Status {
    fn from(error: AuthError) -> Self {
        let message = error.to_string();
        match error {
            AuthError::MissingCredentials => with_reason(
                Code::Unauthenticated,
                ErrorReason::MissingCredentials,
                message,
            ),
            AuthError::InvalidCredentials(_) => with_reason(
                Code::Unauthenticated,
                ErrorReason::InvalidCredentials,
                message,
            ),
            AuthError::MissingScope(scope) => missing_scope(scope, message),
            AuthError::AnswerLink(LinkError::Invalid) => with_reason(
                Code::Unauthenticated,
                ErrorReason::AnswerLinkInvalid,
                message,
            ),
            AuthError::AnswerLink(LinkError::Expired) => with_reason(
                Code::Unauthenticated,
                ErrorReason::AnswerLinkExpired,
                message,
            ),
            AuthError::AnswerLinkOtherRpc => with_reason(
                Code::PermissionDenied,
                ErrorReason::AnswerLinkOtherCall,
                message,
            ),
            AuthError::Jwks(_) | AuthError::Store(StoreError::Unavailable(_)) => {
                let correlation_id = logged(&message);
                Status::unavailable(format!(
                    "cannot check credentials now; try again later (the server's log has it \
                     under correlation id {correlation_id})"
                ))
            }
            AuthError::Store(_) => {
                let correlation_id = logged(&message);
                Status::internal(format!(
                    "internal error; the server's log has it under correlation id {correlation_id}"
                ))
            }
        }
    }
}

/// PERMISSION_DENIED, reason `MISSING_SCOPE`, naming the scope in `ErrorInfo.metadata["scope"]`.
fn missing_scope(scope: Scope, message: String) -> Status {
    Status::with_error_details(
        Code::PermissionDenied,
        message,
        ErrorDetails::with_error_info(
            ErrorReason::MissingScope.wire_name(),
            ERROR_DOMAIN,
            HashMap::from([("scope".to_owned(), scope.as_str().to_owned())]),
        ),
    )
}

fn runtime_status(error: RuntimeError) -> Status {
    if let RuntimeError::AnswerRejected { reason, .. } = &error {
        crate::metrics::answer_rejected(reject_code(*reason));
    }
    let message = error.to_string();
    match error {
        RuntimeError::InvalidArgument(violations) => {
            bad_request(describe(&violations), &violations, None)
        }
        RuntimeError::AgentNotFound(_) => {
            with_reason(Code::NotFound, ErrorReason::AgentNotFound, message)
        }
        RuntimeError::RunNotFound(_) => {
            with_reason(Code::NotFound, ErrorReason::RunNotFound, message)
        }
        RuntimeError::AnswerRejected {
            reason: RejectReason::InvalidAnswer,
            message,
            violations,
        } => bad_request(message, &violations, Some(ErrorReason::InvalidAnswer)),
        // The same status as a scope the RPC itself needs: the call's kind needs this one.
        RuntimeError::AnswerRejected {
            reason: RejectReason::MissingScope(scope),
            message,
            ..
        } => missing_scope(scope, message),
        RuntimeError::AnswerRejected {
            reason:
                reason @ (RejectReason::NotAssignee
                | RejectReason::AnswerLinkUsed
                | RejectReason::AnswerLinkOtherCall),
            message,
            ..
        } => with_reason(Code::PermissionDenied, reason.into(), message),
        RuntimeError::AnswerRejected {
            reason, message, ..
        } => with_reason(Code::FailedPrecondition, reason.into(), message),
        RuntimeError::RunFinished { .. } => {
            with_reason(Code::FailedPrecondition, ErrorReason::RunFinished, message)
        }
        RuntimeError::WebhookSecretRequired(_) => with_reason(
            Code::FailedPrecondition,
            ErrorReason::WebhookSecretRequired,
            message,
        ),
        RuntimeError::ShuttingDown => with_reason(
            Code::Unavailable,
            ErrorReason::ShuttingDown,
            format!("{message}; reattach to the run on another connection"),
        ),
        // The store's and the providers' own words stay in the log: they may name tables, hosts
        // or bodies a client has no business seeing. The client gets an id to quote.
        RuntimeError::Store(StoreError::Unavailable(_)) => {
            let correlation_id = logged(&message);
            Status::unavailable(format!(
                "the store is unavailable; try again later (the server's log has it under \
                 correlation id {correlation_id})"
            ))
        }
        RuntimeError::Store(_) | RuntimeError::Model(_) | RuntimeError::Internal(_) => {
            let correlation_id = logged(&message);
            Status::internal(format!(
                "internal error; the server's log has it under correlation id {correlation_id}"
            ))
        }
    }
}

/// Logs an error a client gets no details of; returns the id that finds it in the log.
fn logged(message: &str) -> String {
    let correlation_id = uuid::Uuid::now_v7().simple().to_string();
    error!(%message, correlation_id, "internal error");
    correlation_id
}

#[cfg(test)]
mod internal_tests {
    use super::*;

    #[test]
    fn internal_errors_keep_their_details_out_of_the_status() {
        let status = Status::from(ApiError::from(RuntimeError::Store(StoreError::Postgres(
            "relation \"runs\" on db.internal:5432 does not exist".into(),
        ))));
        assert_eq!(status.code(), Code::Internal);
        assert!(!status.message().contains("db.internal"), "{status:?}");
        assert!(status.message().contains("correlation id"), "{status:?}");
    }

    fn reason(status: &Status) -> (Code, String) {
        let info = status.get_details_error_info().expect("an ErrorInfo");
        assert_eq!(info.domain, ERROR_DOMAIN);
        (status.code(), info.reason)
    }

    /// Every status the server gives a reason keeps the code and the string it had before the
    /// reasons became an enum: clients match on these.
    #[test]
    fn every_status_keeps_its_code_and_reason_string() {
        let rejected = |reason| RuntimeError::rejected(reason, "refused");
        let runtime = |error: RuntimeError| Status::from(ApiError::from(error));
        let api = [
            (
                ApiError::TooManyStreams,
                Code::ResourceExhausted,
                "TOO_MANY_STREAMS",
            ),
            (
                ApiError::TooManyTenantStreams(1),
                Code::ResourceExhausted,
                "TOO_MANY_TENANT_STREAMS",
            ),
            (
                ApiError::TooManyPrincipalStreams(1),
                Code::ResourceExhausted,
                "TOO_MANY_PRINCIPAL_STREAMS",
            ),
            (
                ApiError::NoFirstFrame(std::time::Duration::from_secs(1)),
                Code::DeadlineExceeded,
                "NO_FIRST_FRAME",
            ),
            (
                ApiError::KeyNotFound("k".into()),
                Code::NotFound,
                "KEY_NOT_FOUND",
            ),
            (
                ApiError::DeliveryNotFound("d".into()),
                Code::NotFound,
                "DELIVERY_NOT_FOUND",
            ),
            (
                ApiError::NotRedeliverable("d".into(), "pending"),
                Code::FailedPrecondition,
                "NOT_REDELIVERABLE",
            ),
            (
                ApiError::NoWebhookSecretsKey,
                Code::FailedPrecondition,
                "NO_WEBHOOK_SECRETS_KEY",
            ),
            (
                ApiError::InvalidAnswer(Vec::new()),
                Code::InvalidArgument,
                "INVALID_ANSWER",
            ),
        ]
        .map(|(error, code, reason)| (Status::from(error), code, reason));
        let runtime_errors = [
            (
                RuntimeError::AgentNotFound("a".into()),
                Code::NotFound,
                "AGENT_NOT_FOUND",
            ),
            (
                RuntimeError::RunNotFound("r".into()),
                Code::NotFound,
                "RUN_NOT_FOUND",
            ),
            (
                RuntimeError::RunFinished {
                    run_id: "r".into(),
                    status: "completed",
                },
                Code::FailedPrecondition,
                "RUN_FINISHED",
            ),
            (
                RuntimeError::WebhookSecretRequired("acme".into()),
                Code::FailedPrecondition,
                "WEBHOOK_SECRET_REQUIRED",
            ),
            (
                RuntimeError::ShuttingDown,
                Code::Unavailable,
                "SHUTTING_DOWN",
            ),
            (
                rejected(RejectReason::InvalidAnswer),
                Code::InvalidArgument,
                "INVALID_ANSWER",
            ),
            (
                rejected(RejectReason::ToolCallNotPending),
                Code::FailedPrecondition,
                "TOOL_CALL_NOT_PENDING",
            ),
            (
                rejected(RejectReason::AlreadyAnswered),
                Code::FailedPrecondition,
                "ALREADY_ANSWERED",
            ),
            (
                rejected(RejectReason::QuestionExpired),
                Code::FailedPrecondition,
                "QUESTION_EXPIRED",
            ),
            (
                rejected(RejectReason::RunMismatch),
                Code::FailedPrecondition,
                "RUN_MISMATCH",
            ),
            (
                rejected(RejectReason::RunNotSuspended),
                Code::FailedPrecondition,
                "RUN_NOT_SUSPENDED",
            ),
            (
                rejected(RejectReason::AlreadyClaimed),
                Code::FailedPrecondition,
                "ALREADY_CLAIMED",
            ),
            (
                rejected(RejectReason::AnswerIdReused),
                Code::FailedPrecondition,
                "ANSWER_ID_REUSED",
            ),
            (
                rejected(RejectReason::NotAssignee),
                Code::PermissionDenied,
                "NOT_ASSIGNEE",
            ),
            (
                rejected(RejectReason::MissingScope(Scope::RunsAnswer)),
                Code::PermissionDenied,
                "MISSING_SCOPE",
            ),
            (
                rejected(RejectReason::AnswerLinkUsed),
                Code::PermissionDenied,
                "ANSWER_LINK_USED",
            ),
            (
                rejected(RejectReason::AnswerLinkOtherCall),
                Code::PermissionDenied,
                "ANSWER_LINK_OTHER_CALL",
            ),
        ]
        .map(|(error, code, reason)| (runtime(error), code, reason));
        let guard = [
            (
                GuardError::NotGrpc("text/plain".into()),
                Code::InvalidArgument,
                "NOT_GRPC",
            ),
            (
                GuardError::HostNotAllowed("evil.example".into()),
                Code::PermissionDenied,
                "HOST_NOT_ALLOWED",
            ),
            (
                GuardError::OriginNotAllowed("null".into()),
                Code::PermissionDenied,
                "ORIGIN_NOT_ALLOWED",
            ),
        ]
        .map(|(error, code, reason)| (Status::from(error), code, reason));
        let auth = [
            (
                AuthError::MissingCredentials,
                Code::Unauthenticated,
                "MISSING_CREDENTIALS",
            ),
            (
                AuthError::InvalidCredentials("bad".into()),
                Code::Unauthenticated,
                "INVALID_CREDENTIALS",
            ),
            (
                AuthError::MissingScope(Scope::Admin),
                Code::PermissionDenied,
                "MISSING_SCOPE",
            ),
            (
                AuthError::AnswerLink(LinkError::Invalid),
                Code::Unauthenticated,
                "ANSWER_LINK_INVALID",
            ),
            (
                AuthError::AnswerLink(LinkError::Expired),
                Code::Unauthenticated,
                "ANSWER_LINK_EXPIRED",
            ),
            (
                AuthError::AnswerLinkOtherRpc,
                Code::PermissionDenied,
                "ANSWER_LINK_OTHER_CALL",
            ),
        ]
        .map(|(error, code, reason)| (Status::from(error), code, reason));
        let all: Vec<_> = [api.as_slice(), &runtime_errors, &guard, &auth].concat();
        for (status, code, expected) in &all {
            assert_eq!(
                reason(status),
                (*code, (*expected).to_owned()),
                "{status:?}"
            );
        }
        // Every reason of the enum is one of these (UNSPECIFIED aside): none is declared unsent.
        let sent: std::collections::HashSet<_> = all.iter().map(|(_, _, r)| *r).collect();
        let declared = (0..=i32::from(u8::MAX))
            .filter_map(|n| ErrorReason::try_from(n).ok())
            .filter(|r| *r != ErrorReason::Unspecified);
        for reason in declared {
            assert!(
                sent.contains(reason.wire_name()),
                "{reason:?} is sent nowhere here"
            );
        }
    }
}
