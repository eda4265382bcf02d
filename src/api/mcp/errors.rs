//! How the endpoint's refusals read to an MCP host: bad arguments are `invalid_params` errors that
//! name each argument (the API's field paths, renamed to the tool's arguments); a missing scope,
//! an unknown tool and the rest are errors with askuser's reason in their data.

use rmcp::ErrorData as McpError;
use rmcp::model::ErrorCode;
use serde_json::json;
use tonic_types::StatusExt;

use crate::api::error::ApiError;
use crate::domain::{Principal, Scope};
use crate::runtime::{RuntimeError, Violation};

/// An API field path as the tool's argument: the `AskRequest` call's prefix goes
/// (`question.question` is the argument `question`), and `arguments_json` is `arguments`.
fn argument(tool: &str, field: &str) -> String {
    let field = ["question.", "approval.", "form."]
        .iter()
        .find_map(|prefix| field.strip_prefix(prefix))
        .unwrap_or(field);
    match (tool, field) {
        (_, "arguments_json") => "arguments".into(),
        (_, "ttl") => "ttl_seconds".into(),
        (_, "") => "arguments".into(),
        (_, field) => field.to_owned(),
    }
}

/// Bad arguments of `tool`, each named.
pub(super) fn invalid(tool: &str, violations: Vec<Violation>) -> McpError {
    let named: Vec<(String, String)> = violations
        .into_iter()
        .map(|v| (argument(tool, &v.field), v.description))
        .collect();
    let message = named
        .iter()
        .map(|(argument, description)| format!("{argument}: {description}"))
        .collect::<Vec<_>>()
        .join("; ");
    let data = json!({
        "tool": tool,
        "violations": named
            .iter()
            .map(|(argument, description)| json!({"argument": argument, "description": description}))
            .collect::<Vec<_>>(),
    });
    McpError::invalid_params(
        format!("invalid arguments of {tool}: {message}"),
        Some(data),
    )
}

/// The tool needs `scope`, which the caller's credential lacks.
pub(super) fn need(principal: &Principal, scope: Scope) -> Result<(), McpError> {
    match principal.may(scope) {
        true => Ok(()),
        false => Err(McpError::new(
            ErrorCode::INVALID_REQUEST,
            format!("this tool needs the scope {}", scope.as_str()),
            Some(json!({"reason": "MISSING_SCOPE", "scope": scope.as_str()})),
        )),
    }
}

/// No such tool (or an agent the caller's tenant cannot run).
pub(super) fn unknown_tool(tool: &str) -> McpError {
    McpError::invalid_params(
        format!("no tool named {tool}"),
        Some(json!({"reason": "UNKNOWN_TOOL", "tool": tool})),
    )
}

/// An API error, as the gRPC status it would be.
pub(super) fn from_api(tool: &str, error: ApiError) -> McpError {
    match error {
        ApiError::InvalidRequest(violations) | ApiError::InvalidAnswer(violations) => {
            invalid(tool, violations)
        }
        other => from_status(tool, &tonic::Status::from(other)),
    }
}

/// A runtime error, as the API maps it.
pub(super) fn from_runtime(tool: &str, error: RuntimeError) -> McpError {
    match error {
        RuntimeError::InvalidArgument(violations) => invalid(tool, violations),
        other => from_api(tool, ApiError::Runtime(other)),
    }
}

/// A gRPC status (the API's one mapping of errors) as an MCP error, its reason kept.
pub(super) fn from_status(tool: &str, status: &tonic::Status) -> McpError {
    if let Some(bad) = status.get_details_bad_request() {
        let violations = bad
            .field_violations
            .into_iter()
            .map(|v| Violation::new(v.field, v.description))
            .collect();
        return invalid(tool, violations);
    }
    let reason = status
        .get_details_error_info()
        .map(|info| info.reason)
        .unwrap_or_default();
    let data = Some(json!({"code": format!("{:?}", status.code()), "reason": reason}));
    match status.code() {
        tonic::Code::InvalidArgument | tonic::Code::NotFound => {
            McpError::invalid_params(status.message().to_owned(), data)
        }
        tonic::Code::PermissionDenied
        | tonic::Code::FailedPrecondition
        | tonic::Code::ResourceExhausted
        | tonic::Code::Unauthenticated => McpError::new(
            ErrorCode::INVALID_REQUEST,
            status.message().to_owned(),
            data,
        ),
        _ => McpError::internal_error(status.message().to_owned(), data),
    }
}
