//! What a client may send: one table of limits on every string, list and map of a request, checked
//! as the request is decoded, before the runtime sees it. Over a limit is INVALID_ARGUMENT naming
//! the field and the limit; counts are checked before the items they count.
//!
//! Text may not hold a NUL character either: PostgreSQL cannot store one in `TEXT` (it failed the
//! request with INTERNAL and dropped a pooled connection), SQLite would store what the other store
//! refuses, and no person or tool means one.

use std::collections::HashMap;

use super::error::ApiError;
use crate::proto::v1 as pb;
use crate::runtime::ask_user::MAX_VIOLATIONS;
use crate::runtime::{AskUserLimits, Violation};

/// Every limit on what a client sends, in bytes or entries.
#[derive(Clone, Copy, Debug)]
pub struct RequestLimits {
    /// Labels (and their count) of a selection, and the length of a free-text answer.
    pub ask_user: AskUserLimits,
    pub max_prompt_bytes: usize,
    /// A client tool's output.
    pub max_tool_output_bytes: usize,
    /// The arguments of an approval's edit.
    pub max_arguments_bytes: usize,
    pub max_metadata_entries: usize,
    /// Keys and values of a run's metadata together.
    pub max_metadata_bytes: usize,
    /// Decline, reject and cancel reasons.
    pub max_reason_bytes: usize,
    pub max_answer_id_bytes: usize,
    /// Run, tool call and agent ids, claimants, request ids and tool names.
    pub max_id_bytes: usize,
    /// Agent ids and tool names in a `WatchPendingCalls` filter.
    pub max_filter_entries: usize,
    /// Client tools a run may declare (`StartRun.tools`).
    pub max_run_tools: usize,
    /// A per-run tool's JSON Schema; its description takes `ask_user.max_description_bytes`.
    pub max_schema_bytes: usize,
}

impl Default for RequestLimits {
    fn default() -> Self {
        Self {
            ask_user: AskUserLimits::default(),
            max_prompt_bytes: 256 * 1024,
            max_tool_output_bytes: 256 * 1024,
            max_arguments_bytes: 64 * 1024,
            max_metadata_entries: 64,
            max_metadata_bytes: 16 * 1024,
            max_reason_bytes: 4 * 1024,
            max_answer_id_bytes: 256,
            max_id_bytes: 256,
            max_filter_entries: 64,
            max_run_tools: 64,
            max_schema_bytes: 64 * 1024,
        }
    }
}

impl RequestLimits {
    /// A page token holds two ids, JSON-escaped (at most six bytes a byte) and in base64.
    fn max_page_token_bytes(&self) -> usize {
        self.max_id_bytes.saturating_mul(16)
    }
}

/// Collects what is wrong with a request's fields, up to [`MAX_VIOLATIONS`].
#[derive(Default)]
struct Check {
    violations: Vec<Violation>,
}

impl Check {
    fn full(&self) -> bool {
        self.violations.len() >= MAX_VIOLATIONS
    }

    fn push(&mut self, field: String, description: String) {
        if !self.full() {
            self.violations.push(Violation { field, description });
        }
    }

    /// A text field: its length is checked first, as it costs nothing to read.
    fn text(&mut self, field: impl Into<String>, text: &str, limit: usize) {
        if self.full() {
            return;
        }
        let field = field.into();
        if text.len() > limit {
            let description = format!("{field} is {} bytes; the limit is {limit}", text.len());
            self.push(field, description);
        } else if text.contains('\0') {
            let description = format!("{field} holds a NUL character");
            self.push(field, description);
        }
    }

    /// A form's values: refused by their count alone when there are more than any form has
    /// fields, else each name and text checked (no NUL, bounded).
    fn form_answer(&mut self, form: &pb::FormAnswer, limits: &AskUserLimits) {
        use pb::field_value::Value;
        if form.values.len() > limits.max_form_fields {
            let description = format!(
                "{} values given; no form has more than {} fields",
                form.values.len(),
                limits.max_form_fields
            );
            self.push("answer.form.values".into(), description);
            return;
        }
        for (name, value) in &form.values {
            let field = format!("answer.form.values[\"{name}\"]");
            self.text(field.clone(), name, limits.max_label_bytes);
            match &value.value {
                Some(Value::Text(text)) => self.text(field, text, limits.max_answer_bytes),
                Some(Value::Choice(choice)) => {
                    self.text(field.clone(), &choice.other, limits.max_answer_bytes);
                    self.ids(
                        &format!("{field}.values"),
                        choice.values.iter().map(String::as_str),
                        limits.max_options,
                        limits.max_label_bytes,
                    );
                }
                Some(Value::Number(_) | Value::Boolean(_)) | None => {}
            }
        }
    }

    /// A list of ids: refused by its count alone when too long, else each id is checked.
    fn ids<'a>(
        &mut self,
        field: &str,
        ids: impl ExactSizeIterator<Item = &'a str>,
        max_entries: usize,
        max_bytes: usize,
    ) {
        if ids.len() > max_entries {
            let description = format!(
                "{field} has {} entries; the limit is {max_entries}",
                ids.len()
            );
            self.push(field.to_owned(), description);
            return;
        }
        for (index, id) in ids.enumerate() {
            self.text(format!("{field}[{index}]"), id, max_bytes);
        }
    }

    fn metadata(
        &mut self,
        field: &str,
        metadata: &HashMap<String, String>,
        limits: &RequestLimits,
    ) {
        if metadata.len() > limits.max_metadata_entries {
            let description = format!(
                "{field} has {} entries; the limit is {}",
                metadata.len(),
                limits.max_metadata_entries
            );
            self.push(field.to_owned(), description);
            return;
        }
        let bytes: usize = metadata.iter().map(|(k, v)| k.len() + v.len()).sum();
        if bytes > limits.max_metadata_bytes {
            let description = format!(
                "{field} is {bytes} bytes (keys and values); the limit is {}",
                limits.max_metadata_bytes
            );
            self.push(field.to_owned(), description);
            return;
        }
        for (key, value) in metadata {
            self.text(field, key, usize::MAX);
            self.text(field, value, usize::MAX);
        }
    }

    /// A run's client tools: refused by their count alone when too many.
    fn run_tools(&mut self, tools: &[pb::ToolDefinition], limits: &RequestLimits) {
        if tools.len() > limits.max_run_tools {
            let description = format!(
                "start.tools has {} entries; the limit is {}",
                tools.len(),
                limits.max_run_tools
            );
            self.push("start.tools".into(), description);
            return;
        }
        for (i, tool) in tools.iter().enumerate() {
            self.text(
                format!("start.tools[{i}].name"),
                &tool.name,
                limits.max_id_bytes,
            );
            self.text(
                format!("start.tools[{i}].description"),
                &tool.description,
                limits.ask_user.max_description_bytes,
            );
            self.text(
                format!("start.tools[{i}].parameters_json_schema"),
                &tool.parameters_json_schema,
                limits.max_schema_bytes,
            );
        }
    }

    fn done(self) -> Result<(), Vec<Violation>> {
        if self.violations.is_empty() {
            Ok(())
        } else {
            Err(self.violations)
        }
    }
}

/// The fields of an answer, as `answer.…` paths.
pub fn check_answer(answer: &pb::Answer, limits: &RequestLimits) -> Result<(), Vec<Violation>> {
    use pb::answer::Answer as Kind;
    use pb::approval_decision::Decision;
    let mut check = Check::default();
    check.text("answer.run_id", &answer.run_id, limits.max_id_bytes);
    check.text(
        "answer.tool_call_id",
        &answer.tool_call_id,
        limits.max_id_bytes,
    );
    check.text(
        "answer.answer_id",
        &answer.answer_id,
        limits.max_answer_id_bytes,
    );
    match &answer.answer {
        Some(Kind::Text(text)) => check.text("answer.text", text, limits.ask_user.max_answer_bytes),
        Some(Kind::Selections(selections)) => check.ids(
            "answer.selections.labels",
            selections.labels.iter().map(String::as_str),
            limits.ask_user.max_options,
            limits.ask_user.max_label_bytes,
        ),
        Some(Kind::Decline(decline)) => check.text(
            "answer.decline.reason",
            &decline.reason,
            limits.max_reason_bytes,
        ),
        Some(Kind::Form(form)) => check.form_answer(form, &limits.ask_user),
        Some(Kind::Reply(reply)) => {
            check.text("answer.reply", reply, limits.ask_user.max_answer_bytes)
        }
        Some(Kind::ToolOutput(output)) => check.text(
            "answer.tool_output.content",
            &output.content,
            limits.max_tool_output_bytes,
        ),
        Some(Kind::Approval(approval)) => match &approval.decision {
            Some(Decision::Reject(reject)) => check.text(
                "answer.approval.reject.reason",
                &reject.reason,
                limits.max_reason_bytes,
            ),
            Some(Decision::Edit(edit)) => check.text(
                "answer.approval.edit.arguments_json",
                &edit.arguments_json,
                limits.max_arguments_bytes,
            ),
            Some(Decision::Approve(_)) | None => {}
        },
        None => {}
    }
    check.done()
}

/// The fields of a run's start, as `start.…` paths.
pub fn check_start(start: &pb::StartRun, limits: &RequestLimits) -> Result<(), ApiError> {
    let mut check = Check::default();
    check.text("start.agent_id", &start.agent_id, limits.max_id_bytes);
    check.text("start.prompt", &start.prompt, limits.max_prompt_bytes);
    check.text("start.request_id", &start.request_id, limits.max_id_bytes);
    check.metadata("start.metadata", &start.metadata, limits);
    check.run_tools(&start.tools, limits);
    check.done().map_err(ApiError::InvalidRequest)
}

/// The sizes of an `Ask` (its context as a run's prompt).
pub fn check_ask(request: &pb::AskRequest, limits: &RequestLimits) -> Result<(), ApiError> {
    let mut check = Check::default();
    check.text("context", &request.context, limits.max_prompt_bytes);
    check.text("request_id", &request.request_id, limits.max_id_bytes);
    check.metadata("metadata", &request.metadata, limits);
    for (index, assignee) in request.assignees.iter().enumerate() {
        check.text(format!("assignees[{index}]"), assignee, limits.max_id_bytes);
    }
    check.done().map_err(ApiError::InvalidRequest)
}

/// What a request's field holds, for [`check`].
#[derive(Clone, Copy, Debug)]
pub enum Field<'a> {
    /// A run, tool call or agent id, or a claimant.
    Id(&'a str),
    /// A cancel reason.
    Reason(&'a str),
    PageToken(&'a str),
    /// A list of ids (agent ids, tool names) in a filter.
    Ids(&'a [String]),
    /// Metadata entries, as a run keeps them or a filter names them.
    Metadata(&'a HashMap<String, String>),
}

/// Other requests' fields, named as given.
pub fn check<'a>(
    fields: impl IntoIterator<Item = (&'a str, Field<'a>)>,
    limits: &RequestLimits,
) -> Result<(), ApiError> {
    let mut check = Check::default();
    for (name, field) in fields {
        match field {
            Field::Id(id) => check.text(name, id, limits.max_id_bytes),
            Field::Reason(reason) => check.text(name, reason, limits.max_reason_bytes),
            Field::PageToken(token) => check.text(name, token, limits.max_page_token_bytes()),
            Field::Ids(ids) => check.ids(
                name,
                ids.iter().map(String::as_str),
                limits.max_filter_entries,
                limits.max_id_bytes,
            ),
            Field::Metadata(metadata) => check.metadata(name, metadata, limits),
        }
    }
    check.done().map_err(ApiError::InvalidRequest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_checked_before_items() {
        let metadata = (0..80)
            .map(|i| (format!("k{i}"), "\0".to_owned()))
            .collect();
        let start = pb::StartRun {
            agent_id: "a".into(),
            metadata,
            ..Default::default()
        };
        let Err(ApiError::InvalidRequest(violations)) =
            check_start(&start, &RequestLimits::default())
        else {
            panic!("80 entries pass");
        };
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert_eq!(
            violations[0].description,
            "start.metadata has 80 entries; the limit is 64"
        );
    }

    #[test]
    fn every_answer_field_has_its_limit() {
        use pb::answer::Answer as Kind;
        use pb::approval_decision::Decision;
        let limits = RequestLimits::default();
        let long = |bytes: usize| "x".repeat(bytes + 1);
        let approval = |decision| {
            Kind::Approval(pb::ApprovalDecision {
                decision: Some(decision),
            })
        };
        let cases = [
            (
                approval(Decision::Edit(pb::approval_decision::Edit {
                    arguments_json: long(limits.max_arguments_bytes),
                })),
                "answer.approval.edit.arguments_json",
            ),
            (
                approval(Decision::Reject(pb::approval_decision::Reject {
                    reason: long(limits.max_reason_bytes),
                })),
                "answer.approval.reject.reason",
            ),
            (
                Kind::ToolOutput(pb::ToolOutput {
                    content: long(limits.max_tool_output_bytes),
                    is_error: false,
                }),
                "answer.tool_output.content",
            ),
            (
                Kind::Selections(pb::Selections {
                    labels: vec![long(limits.ask_user.max_label_bytes)],
                }),
                "answer.selections.labels[0]",
            ),
            (
                Kind::Selections(pb::Selections {
                    labels: vec![String::new(); limits.ask_user.max_options + 1],
                }),
                "answer.selections.labels",
            ),
        ];
        for (kind, field) in cases {
            let answer = pb::Answer {
                answer: Some(kind),
                ..Default::default()
            };
            let violations = check_answer(&answer, &limits).expect_err(field);
            assert_eq!(violations.len(), 1, "{violations:?}");
            assert_eq!(violations[0].field, field);
            assert!(
                violations[0].description.contains("the limit is"),
                "{violations:?}"
            );
        }
    }

    #[test]
    fn violations_stop_at_the_most_one_error_holds() {
        let ids = vec!["\0".to_owned(); 50];
        let limits = RequestLimits {
            max_filter_entries: 100,
            ..RequestLimits::default()
        };
        let Err(ApiError::InvalidRequest(violations)) =
            check([("agent_ids", Field::Ids(&ids))], &limits)
        else {
            panic!("NULs pass");
        };
        assert_eq!(violations.len(), MAX_VIOLATIONS);
    }
}
