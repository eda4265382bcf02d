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

/// `CODE: message (REASON) [flag: what is wrong; ...]`, from a status and its rich details, in the
/// command line's words: the flags that carry an answer rather than the request's field paths, and
/// each sentence once (a violation that only repeats the message replaces it).
fn describe_status(status: &tonic::Status) -> String {
    let reason = status.get_details_error_info().map(|info| info.reason);
    let mut message = in_cli_words(status.message());
    if status.code() == tonic::Code::Unauthenticated
        && !message.contains("--api-key")
        && reason.as_deref() != Some("MISSING_CREDENTIALS")
    {
        message.push_str(": check --api-key (or ASKUSER_API_KEY)");
    }
    let violations: Vec<(String, String)> = status
        .get_details_bad_request()
        .map(|bad_request| {
            bad_request
                .field_violations
                .into_iter()
                .map(|violation| {
                    (
                        field_flag(&violation.field),
                        in_cli_words(&violation.description),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let reason = reason
        .map(|reason| format!(" ({reason})"))
        .unwrap_or_default();
    let code = code_name(status.code());
    let repeated = !violations.is_empty()
        && violations
            .iter()
            .all(|(_, description)| message.contains(description.as_str()));
    if repeated {
        let each: Vec<String> = violations
            .iter()
            .map(|(field, description)| format!("{field}: {description}"))
            .collect();
        return format!("{code}: {}{reason}", each.join("; "));
    }
    format!(
        "{code}: {message}{reason}{}",
        describe_violations(&violations)
    )
}

/// The server's words for the ways to answer, replaced by the flags that give them.
fn in_cli_words(text: &str) -> String {
    const QUESTION: &str = "--text, --select, --none, --reply or --decline";
    const FORM: &str = "--field NAME=VALUE, --reply or --decline";
    let replacements = [
        (
            "answer it with text, selections or decline",
            format!("answer it with {QUESTION}"),
        ),
        (
            "settle it with text, selections or decline",
            format!("answer it with {QUESTION}"),
        ),
        (
            "answer it with form values, a reply or decline",
            format!("answer it with {FORM}"),
        ),
        (
            "settle it with form, reply or decline",
            format!("answer it with {FORM}"),
        ),
        (
            "settle it with approval (approve, reject or edit) or decline",
            "answer it with --approve, --reject [REASON] or --edit JSON".to_owned(),
        ),
        (
            "settle it with tool_output",
            "answer it with --output TEXT [--error]".to_owned(),
        ),
        (
            "send `authorization: Bearer <API key or token>`",
            "give an API key with --api-key KEY (or ASKUSER_API_KEY)".to_owned(),
        ),
    ];
    let mut text = text.to_owned();
    for (from, to) in replacements {
        text = text.replace(from, &to);
    }
    text
}

/// The flag (or argument) of an answer's field path: `answer.selections.labels[0]` → `--select`,
/// `answer.form.values["version"]` → `--field version`; other paths as they are.
pub fn field_flag(field: &str) -> String {
    if let Some(rest) = field.strip_prefix("answer.form.values[\"") {
        let name = rest.split('"').next().unwrap_or(rest);
        return format!("--field {name}");
    }
    let flags = [
        ("answer.text", "--text"),
        ("answer.selections", "--select"),
        ("answer.decline", "--decline"),
        ("answer.reply", "--reply"),
        ("answer.approval.edit", "--edit"),
        ("answer.approval.reject", "--reject"),
        ("answer.approval", "--approve/--reject/--edit"),
        ("answer.tool_output", "--output"),
        ("answer.form", "--field"),
        ("answer.answer_id", "--answer-id"),
        ("answer.run_id", "RUN"),
        ("answer.tool_call_id", "CALL"),
        ("run_id", "RUN"),
        ("tool_call_id", "CALL"),
    ];
    flags
        .iter()
        .find(|(path, _)| {
            field == *path
                || field
                    .strip_prefix(path)
                    .is_some_and(|rest| rest.starts_with(['.', '[']))
        })
        .map(|(_, flag)| (*flag).to_owned())
        .unwrap_or_else(|| field.to_owned())
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
    fn field_paths_become_flags() {
        assert_eq!(field_flag("answer.selections.labels[0]"), "--select");
        assert_eq!(
            field_flag("answer.form.values[\"version\"]"),
            "--field version"
        );
        assert_eq!(field_flag("answer.approval.edit.arguments_json"), "--edit");
        assert_eq!(field_flag("answer.approval"), "--approve/--reject/--edit");
        assert_eq!(field_flag("answer.textual"), "answer.textual");
    }

    #[test]
    fn code_names_are_canonical() {
        assert_eq!(code_name(tonic::Code::InvalidArgument), "INVALID_ARGUMENT");
        assert_eq!(code_name(tonic::Code::Ok), "OK");
        assert_eq!(code_name(tonic::Code::NotFound), "NOT_FOUND");
    }
}
