//! Text a client sends may not hold a NUL character: PostgreSQL cannot store one in `TEXT` (it
//! failed the request with INTERNAL and dropped a pooled connection), SQLite would store what the
//! other store refuses, and no person or tool means one. Refused as INVALID_ARGUMENT naming each
//! field, before anything reaches the store.

use super::error::ApiError;
use crate::proto::v1 as pb;
use crate::runtime::Violation;
use crate::runtime::ask_user::MAX_VIOLATIONS;

/// Refuses the request if any of `fields` (path, text) holds a NUL.
fn refuse_nul<'a>(fields: impl IntoIterator<Item = (String, &'a str)>) -> Result<(), ApiError> {
    let violations: Vec<Violation> = fields
        .into_iter()
        .filter(|(_, text)| text.contains('\0'))
        .take(MAX_VIOLATIONS)
        .map(|(field, _)| Violation {
            description: format!("{field} holds a NUL character"),
            field,
        })
        .collect();
    if violations.is_empty() {
        Ok(())
    } else {
        Err(ApiError::InvalidRequest(violations))
    }
}

/// The text fields of an answer, as `answer.…` paths.
pub fn check_answer(answer: &pb::Answer) -> Result<(), ApiError> {
    use pb::answer::Answer as Kind;
    use pb::approval_decision::Decision;
    let field = |name: &str| format!("answer.{name}");
    let mut fields = vec![
        (field("run_id"), answer.run_id.as_str()),
        (field("tool_call_id"), answer.tool_call_id.as_str()),
        (field("answer_id"), answer.answer_id.as_str()),
    ];
    match &answer.answer {
        Some(Kind::Text(text)) => fields.push((field("text"), text)),
        Some(Kind::Selections(selections)) => fields.extend(
            selections
                .labels
                .iter()
                .enumerate()
                .map(|(i, label)| (field(&format!("selections.labels[{i}]")), label.as_str())),
        ),
        Some(Kind::Decline(decline)) => fields.push((field("decline.reason"), &decline.reason)),
        Some(Kind::ToolOutput(output)) => {
            fields.push((field("tool_output.content"), &output.content))
        }
        Some(Kind::Approval(approval)) => match &approval.decision {
            Some(Decision::Reject(reject)) => {
                fields.push((field("approval.reject.reason"), &reject.reason))
            }
            Some(Decision::Edit(edit)) => {
                fields.push((field("approval.edit.arguments_json"), &edit.arguments_json))
            }
            Some(Decision::Approve(_)) | None => {}
        },
        None => {}
    }
    refuse_nul(fields)
}

/// The text fields of a run's start, as `start.…` paths.
pub fn check_start(start: &pb::StartRun) -> Result<(), ApiError> {
    let field = |name: String| format!("start.{name}");
    let metadata = start.metadata.iter().flat_map(|(key, value)| {
        [
            (field("metadata".into()), key.as_str()),
            (field("metadata".into()), value.as_str()),
        ]
    });
    let tools = start.tools.iter().enumerate().flat_map(|(i, tool)| {
        [
            (field(format!("tools[{i}].name")), tool.name.as_str()),
            (
                field(format!("tools[{i}].description")),
                tool.description.as_str(),
            ),
            (
                field(format!("tools[{i}].parameters_json_schema")),
                tool.parameters_json_schema.as_str(),
            ),
        ]
    });
    refuse_nul(
        [
            (field("agent_id".into()), start.agent_id.as_str()),
            (field("prompt".into()), start.prompt.as_str()),
            (field("request_id".into()), start.request_id.as_str()),
        ]
        .into_iter()
        .chain(metadata)
        .chain(tools),
    )
}

/// Other requests' text fields, named as given.
pub fn check<'a>(fields: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<(), ApiError> {
    refuse_nul(
        fields
            .into_iter()
            .map(|(name, text)| (name.to_owned(), text)),
    )
}
