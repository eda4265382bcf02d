//! Errors of the terminal client, each shown as one line on stderr.

use std::time::Duration;

use tonic_types::StatusExt;

/// Errors of the terminal client's subcommands.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Flags or input that make no request (a bad address, a missing answer).
    #[error("{0}")]
    Usage(String),
    #[error("cannot connect to {addr}: {reason}")]
    Connect { addr: String, reason: String },
    #[error("cannot read {path}: {source}")]
    ReadFile {
        path: String,
        source: std::io::Error,
    },
    /// The server refused a request (boxed: a status is large, and errors travel by value).
    #[error("{}", describe_status(.0))]
    Status(Box<tonic::Status>),
    #[error("no answer from the server within {0:?} (--timeout)")]
    Timeout(Duration),
    #[error("run {run_id} failed: {message}")]
    RunFailed { run_id: String, message: String },
    #[error("prompt: {0}")]
    Prompt(#[from] inquire::InquireError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
    /// Ctrl-C: nothing more is done, and the run (if any) goes on without this client.
    #[error("interrupted{}", reattach_hint(.run_id, .calls))]
    Interrupted {
        run_id: Option<String>,
        calls: Vec<String>,
    },
}

impl CliError {
    /// Ctrl-C, which exits with its own status.
    pub fn is_interruption(&self) -> bool {
        matches!(self, CliError::Interrupted { .. })
    }

    /// Ctrl-C with nothing to reattach to.
    pub fn interrupted() -> CliError {
        CliError::Interrupted {
            run_id: None,
            calls: Vec::new(),
        }
    }
}

impl From<tonic::Status> for CliError {
    fn from(status: tonic::Status) -> Self {
        CliError::Status(Box::new(status))
    }
}

/// How to pick a run up again after leaving it.
fn reattach_hint(run_id: &Option<String>, calls: &[String]) -> String {
    let Some(run_id) = run_id else {
        return String::new();
    };
    let mut hint = format!("; run {run_id} goes on: follow it with `askuser watch {run_id}`");
    for call in calls {
        hint.push_str(&format!(", answer with `askuser answer {run_id} {call}`"));
    }
    hint
}

/// `CODE: message (REASON) [field: what is wrong; ...]`, from a status and its rich details.
fn describe_status(status: &tonic::Status) -> String {
    let mut line = format!("{}: {}", code_name(status.code()), status.message());
    if let Some(info) = status.get_details_error_info() {
        line.push_str(&format!(" ({})", info.reason));
    }
    if let Some(bad_request) = status.get_details_bad_request() {
        let violations: Vec<(String, String)> = bad_request
            .field_violations
            .into_iter()
            .map(|violation| (violation.field, violation.description))
            .collect();
        line.push_str(&describe_violations(&violations));
    }
    line
}

/// ` [field: what is wrong; ...]`, or nothing without violations.
pub fn describe_violations(violations: &[(String, String)]) -> String {
    if violations.is_empty() {
        return String::new();
    }
    let each: Vec<String> = violations
        .iter()
        .map(|(field, description)| format!("{field}: {description}"))
        .collect();
    format!(" [{}]", each.join("; "))
}

/// The canonical name of a gRPC code, e.g. `INVALID_ARGUMENT`.
fn code_name(code: tonic::Code) -> String {
    // `Debug` gives the variant, e.g. `InvalidArgument`; the canonical names are its words upper-cased.
    let mut name = String::new();
    for (index, character) in format!("{code:?}").chars().enumerate() {
        if character.is_uppercase() && index > 0 {
            name.push('_');
        }
        name.push(character.to_ascii_uppercase());
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_names_are_canonical() {
        assert_eq!(code_name(tonic::Code::InvalidArgument), "INVALID_ARGUMENT");
        assert_eq!(code_name(tonic::Code::Ok), "OK");
        assert_eq!(code_name(tonic::Code::NotFound), "NOT_FOUND");
    }
}
