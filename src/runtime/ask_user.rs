//! The `ask_user` tool: input validation, the fallback text, answer checks and result texts.
//!
//! One definition serves every path: the model's JSON arguments, `ToolService.AskUser`, the JSON
//! schema models are given, and the checks applied to answers.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::domain::{AnswerInput, AskUserInput, AskUserOption, SelectionMode, SuspendPayload};

/// The tool's name, as models call it.
pub const TOOL_NAME: &str = "ask_user";

/// The tool's description, as models see it.
pub const TOOL_DESCRIPTION: &str = "Ask the user a question and wait for the answer. Use it to \
clarify an ambiguous request, validate an assumption or let the user make a decision. Provide \
options for structured choices (2-4 options), or omit them for an open-ended question. Use \
selectionMode multi_select when several options may be chosen.";

/// Size limits of a question; beyond them the input is invalid.
#[derive(Clone, Copy, Debug)]
pub struct AskUserLimits {
    pub max_options: usize,
    pub max_label_bytes: usize,
    pub max_question_bytes: usize,
    pub max_description_bytes: usize,
    pub max_answer_bytes: usize,
    /// Most fields one form may have.
    pub max_form_fields: usize,
    /// Longest preview of a form's choice, in bytes.
    pub max_preview_bytes: usize,
    /// Longest pattern of a form's text field, in bytes.
    pub max_pattern_bytes: usize,
}

impl Default for AskUserLimits {
    fn default() -> Self {
        Self {
            max_options: 64,
            max_label_bytes: 1024,
            max_question_bytes: 16 * 1024,
            max_description_bytes: 4 * 1024,
            max_answer_bytes: 64 * 1024,
            max_form_fields: 32,
            max_preview_bytes: 16 * 1024,
            max_pattern_bytes: 1024,
        }
    }
}

/// One thing wrong with a tool input or an answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Path of the field, relative to the input or the answer (e.g. `options[1].label`).
    pub field: String,
    /// A self-contained sentence saying what is wrong.
    pub description: String,
}

impl Violation {
    pub(crate) fn new(field: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            description: description.into(),
        }
    }
}

/// The most violations one input or answer gets back: past it, checking stops, so a huge input
/// costs no more than a small one to refuse.
pub const MAX_VIOLATIONS: usize = 20;

/// Validates a tool input and resolves its selection mode. Counts are checked before items, and
/// checking stops at [`MAX_VIOLATIONS`].
pub fn validate(
    input: &AskUserInput,
    limits: &AskUserLimits,
) -> Result<SuspendPayload, Vec<Violation>> {
    let mut violations = Vec::new();
    if input.question.trim().is_empty() {
        violations.push(Violation::new("question", "question must not be empty"));
    } else if input.question.len() > limits.max_question_bytes {
        violations.push(Violation::new(
            "question",
            format!(
                "question is {} bytes; the limit is {}",
                input.question.len(),
                limits.max_question_bytes
            ),
        ));
    }
    if input.options.len() > limits.max_options {
        violations.push(Violation::new(
            "options",
            format!(
                "{} options given; the limit is {}",
                input.options.len(),
                limits.max_options
            ),
        ));
        // Too many to look at one by one.
        return Err(violations);
    }
    let mut first_use: HashMap<&str, usize> = HashMap::new();
    for (index, option) in input.options.iter().enumerate() {
        if violations.len() >= MAX_VIOLATIONS {
            break;
        }
        let field = format!("options[{index}].label");
        if option.label.trim().is_empty() {
            violations.push(Violation::new(&field, format!("{field} must not be empty")));
        } else if option.label.len() > limits.max_label_bytes {
            violations.push(Violation::new(
                &field,
                format!(
                    "{field} is {} bytes; the limit is {}",
                    option.label.len(),
                    limits.max_label_bytes
                ),
            ));
        } else if let Some(first) = first_use.insert(option.label.as_str(), index) {
            first_use.insert(option.label.as_str(), first);
            violations.push(Violation::new(
                &field,
                format!(
                    "{field} \"{}\" repeats options[{first}].label; labels must be unique",
                    option.label
                ),
            ));
        }
        if option.description.len() > limits.max_description_bytes {
            violations.push(Violation::new(
                format!("options[{index}].description"),
                format!(
                    "options[{index}].description is {} bytes; the limit is {}",
                    option.description.len(),
                    limits.max_description_bytes
                ),
            ));
        }
    }
    if input.selection_mode.is_some() && input.options.is_empty() {
        violations.push(Violation::new(
            "selection_mode",
            "selectionMode requires options",
        ));
    }
    if !violations.is_empty() {
        return Err(violations);
    }
    let selection_mode = if input.options.is_empty() {
        None
    } else {
        Some(input.selection_mode.unwrap_or(SelectionMode::SingleSelect))
    };
    Ok(SuspendPayload {
        question: input.question.clone(),
        options: input.options.clone(),
        selection_mode,
    })
}

/// Parses a model's JSON arguments (`question`, `options`, `selectionMode`); `null` stands for absent,
/// as OpenAI's strict mode writes it.
pub fn parse_arguments(arguments_json: &str) -> Result<AskUserInput, Vec<Violation>> {
    let value: Value = serde_json::from_str(arguments_json).map_err(|e| {
        vec![Violation::new(
            "",
            format!("arguments are not valid JSON: {e}"),
        )]
    })?;
    let Value::Object(args) = value else {
        return Err(vec![Violation::new("", "arguments must be a JSON object")]);
    };
    let mut violations = Vec::new();
    let mut input = AskUserInput::default();
    match args.get("question") {
        Some(Value::String(question)) => input.question = question.clone(),
        None | Some(Value::Null) => {}
        Some(_) => violations.push(Violation::new("question", "question must be a string")),
    }
    match args.get("options") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for (index, item) in items.iter().enumerate() {
                let label = item.get("label");
                let description = item.get("description");
                match (label, description) {
                    (Some(Value::String(label)), None | Some(Value::Null)) => {
                        input.options.push(AskUserOption {
                            label: label.clone(),
                            description: String::new(),
                        })
                    }
                    (Some(Value::String(label)), Some(Value::String(description))) => {
                        input.options.push(AskUserOption {
                            label: label.clone(),
                            description: description.clone(),
                        })
                    }
                    _ => violations.push(Violation::new(
                        format!("options[{index}]"),
                        format!(
                            "options[{index}] must be an object with a string label and an optional string description"
                        ),
                    )),
                }
            }
        }
        Some(_) => violations.push(Violation::new("options", "options must be an array")),
    }
    match args
        .get("selectionMode")
        .or_else(|| args.get("selection_mode"))
    {
        None | Some(Value::Null) => {}
        Some(Value::String(mode)) => match SelectionMode::parse(mode) {
            Some(mode) => input.selection_mode = Some(mode),
            None => violations.push(Violation::new(
                "selection_mode",
                format!("selectionMode must be single_select or multi_select, not \"{mode}\""),
            )),
        },
        Some(_) => violations.push(Violation::new(
            "selection_mode",
            "selectionMode must be single_select or multi_select",
        )),
    }
    if violations.is_empty() {
        Ok(input)
    } else {
        Err(violations)
    }
}

/// The JSON schema of the tool's arguments, accepted by OpenAI's strict mode (every property
/// required, optional ones nullable, no additional properties).
pub fn arguments_schema(limits: &AskUserLimits) -> Value {
    json!({
        "type": "object",
        "properties": {
            "question": {
                "type": "string",
                "description": "The question to ask the user. Should be clear and specific."
            },
            "options": {
                "type": ["array", "null"],
                "description": "Structured choices for the user; null for a free-text question.",
                "maxItems": limits.max_options,
                "items": {
                    "type": "object",
                    "properties": {
                        "label": {
                            "type": "string",
                            "description": "Short display text for this option (1-5 words); returned to you when selected. Unique within the question."
                        },
                        "description": {
                            "type": ["string", "null"],
                            "description": "Explanation of what this option means."
                        }
                    },
                    "required": ["label", "description"],
                    "additionalProperties": false
                }
            },
            "selectionMode": {
                "type": ["string", "null"],
                "enum": ["single_select", "multi_select", null],
                "description": "How many options the user may select. Defaults to single_select when options are given. Requires options."
            }
        },
        "required": ["question", "options", "selectionMode"],
        "additionalProperties": false
    })
}

/// The text `ask_user` returns when there is no run to suspend.
pub fn fallback_text(payload: &SuspendPayload) -> String {
    let mut text = format!("[Question for user]: {}", payload.question);
    if let Some(mode) = payload.selection_mode {
        let labels: Vec<&str> = payload.options.iter().map(|o| o.label.as_str()).collect();
        text.push_str("\nOptions: ");
        text.push_str(&labels.join(", "));
        text.push_str("\nSelection mode: ");
        text.push_str(mode.as_str());
    }
    text
}

/// Checks an answer against the question it answers.
pub fn check_answer(
    payload: &SuspendPayload,
    answer: &AnswerInput,
    limits: &AskUserLimits,
) -> Result<(), Vec<Violation>> {
    let offered = |label: &str| payload.options.iter().any(|o| o.label == label);
    let mut violations = Vec::new();
    match (payload.selection_mode, answer) {
        (_, AnswerInput::Decline(_)) => {}
        (_, AnswerInput::Reply(reply)) => return check_reply(reply, limits),
        (_, AnswerInput::Form(_)) => violations.push(Violation::new(
            "answer.form",
            "this call is a question: answer it with text, selections or decline",
        )),
        (_, AnswerInput::ToolOutput { .. }) => violations.push(Violation::new(
            "answer.tool_output",
            "this call is a question: answer it with text, selections or decline",
        )),
        (_, AnswerInput::Approval(_)) => violations.push(Violation::new(
            "answer.approval",
            "this call is a question: answer it with text, selections or decline",
        )),
        (_, AnswerInput::Text(text)) if text.len() > limits.max_answer_bytes => {
            violations.push(Violation::new(
                "answer.text",
                format!(
                    "the answer is {} bytes; the limit is {}",
                    text.len(),
                    limits.max_answer_bytes
                ),
            ));
        }
        (None, AnswerInput::Text(text)) => {
            if text.trim().is_empty() {
                violations.push(Violation::new(
                    "answer.text",
                    "a free-text answer must not be blank",
                ));
            }
        }
        (None, AnswerInput::Selections(_)) => violations.push(Violation::new(
            "answer.selections",
            "this question takes a free-text answer (text), not selections",
        )),
        (Some(SelectionMode::SingleSelect), AnswerInput::Text(text)) => {
            if !offered(text) {
                violations.push(Violation::new(
                    "answer.text",
                    format!("\"{text}\" is not one of the offered labels"),
                ));
            }
        }
        (Some(SelectionMode::SingleSelect), AnswerInput::Selections(labels)) => {
            if labels.len() != 1 {
                violations.push(Violation::new(
                    "answer.selections.labels",
                    format!(
                        "a single-select question takes exactly one label, not {}",
                        labels.len()
                    ),
                ));
            } else if !offered(&labels[0]) {
                violations.push(Violation::new(
                    "answer.selections.labels[0]",
                    format!("\"{}\" is not one of the offered labels", labels[0]),
                ));
            }
        }
        (Some(SelectionMode::MultiSelect), AnswerInput::Text(_)) => {
            violations.push(Violation::new(
                "answer.text",
                "a multi-select question takes selections, not text",
            ))
        }
        (Some(SelectionMode::MultiSelect), AnswerInput::Selections(labels))
            if labels.len() > limits.max_options =>
        {
            // More labels than any question may offer: refused by their count, unread.
            violations.push(Violation::new(
                "answer.selections.labels",
                format!(
                    "{} labels selected; no question offers more than {}",
                    labels.len(),
                    limits.max_options
                ),
            ));
        }
        (Some(SelectionMode::MultiSelect), AnswerInput::Selections(labels)) => {
            for (index, label) in labels.iter().enumerate() {
                if violations.len() >= MAX_VIOLATIONS {
                    break;
                }
                let field = format!("answer.selections.labels[{index}]");
                if !offered(label) {
                    violations.push(Violation::new(
                        field,
                        format!("\"{label}\" is not one of the offered labels"),
                    ));
                } else if let Some(first) = labels[..index].iter().position(|l| l == label) {
                    violations.push(Violation::new(
                        field,
                        format!("\"{label}\" is selected twice (also labels[{first}])"),
                    ));
                }
            }
        }
    }
    if violations.is_empty() {
        Ok(())
    } else {
        Err(violations)
    }
}

/// Checks a reply in prose (valid instead of an answer to any question or form).
pub fn check_reply(reply: &str, limits: &AskUserLimits) -> Result<(), Vec<Violation>> {
    let problem = if reply.trim().is_empty() {
        "a reply must not be blank".to_owned()
    } else if reply.len() > limits.max_answer_bytes {
        format!(
            "the reply is {} bytes; the limit is {}",
            reply.len(),
            limits.max_answer_bytes
        )
    } else {
        return Ok(());
    };
    Err(vec![Violation::new("answer.reply", problem)])
}

/// The tool result the model gets for an accepted answer.
pub fn answer_result(answer: &AnswerInput) -> String {
    match answer {
        AnswerInput::Reply(reply) => format!("User replied instead of answering: {reply}"),
        AnswerInput::Text(text) => format!("User answered: {text}"),
        AnswerInput::Selections(labels) => format!("User answered: {}", labels.join(", ")),
        AnswerInput::Decline(reason) if reason.is_empty() => "User declined to answer".to_owned(),
        AnswerInput::Decline(reason) => format!("User declined to answer: {reason}"),
        // Not answers to a question; a question never settles with them.
        AnswerInput::ToolOutput { content, .. } => content.clone(),
        AnswerInput::Approval(_) | AnswerInput::Form(_) => String::new(),
    }
}

/// The tool result of a question that expired unanswered.
pub const EXPIRED_RESULT: &str = "No answer: the question expired";

/// The tool result of a question whose run was cancelled.
pub const CANCELLED_RESULT: &str = "No answer: the run was cancelled";

/// The violations' descriptions in one sentence.
pub fn describe(violations: &[Violation]) -> String {
    violations
        .iter()
        .map(|v| v.description.as_str())
        .collect::<Vec<_>>()
        .join("; ")
}

/// The tool result the model gets for invalid arguments.
pub fn invalid_call_result(violations: &[Violation]) -> String {
    format!("Failed to ask user: {}", describe(violations))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn option(label: &str) -> AskUserOption {
        AskUserOption {
            label: label.into(),
            description: String::new(),
        }
    }

    fn payload(mode: Option<SelectionMode>, labels: &[&str]) -> SuspendPayload {
        SuspendPayload {
            question: "Q?".into(),
            options: labels.iter().map(|l| option(l)).collect(),
            selection_mode: mode,
        }
    }

    #[test]
    fn empty_options_array_with_no_mode_is_free_text() {
        let input = AskUserInput {
            question: "Name?".into(),
            options: vec![],
            selection_mode: None,
        };
        let payload = validate(&input, &AskUserLimits::default()).expect("valid");
        assert_eq!(payload.selection_mode, None);
        assert_eq!(fallback_text(&payload), "[Question for user]: Name?");
    }

    #[test]
    fn model_arguments_accept_nulls_and_reject_wrong_types() {
        let input = parse_arguments(r#"{"question":"Q","options":null,"selectionMode":null}"#)
            .expect("valid");
        assert_eq!(input.question, "Q");
        let errors = parse_arguments(r#"{"question":1,"options":"a","selectionMode":"many"}"#)
            .expect_err("invalid");
        let fields: Vec<&str> = errors.iter().map(|v| v.field.as_str()).collect();
        assert_eq!(fields, ["question", "options", "selection_mode"]);
        assert!(parse_arguments("[1]").is_err());
        assert!(parse_arguments("{not json").is_err());
    }

    #[test]
    fn multi_select_reports_each_bad_label() {
        let p = payload(Some(SelectionMode::MultiSelect), &["a", "b", "c"]);
        let limits = AskUserLimits::default();
        let answer = AnswerInput::Selections(vec!["a".into(), "x".into(), "a".into()]);
        let errors = check_answer(&p, &answer, &limits).expect_err("invalid");
        let fields: Vec<&str> = errors.iter().map(|v| v.field.as_str()).collect();
        assert_eq!(
            fields,
            ["answer.selections.labels[1]", "answer.selections.labels[2]"]
        );
        assert!(check_answer(&p, &AnswerInput::Selections(vec![]), &limits).is_ok());
        // More labels than any question may offer: refused by their count alone.
        let too_many = AnswerInput::Selections(vec!["a".into(); limits.max_options + 1]);
        let errors = check_answer(&p, &too_many, &limits).expect_err("invalid");
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].field, "answer.selections.labels");
    }

    #[test]
    fn schema_is_strict_mode_shaped() {
        let schema = arguments_schema(&AskUserLimits::default());
        let properties = schema["properties"].as_object().expect("properties");
        let required: Vec<&str> = schema["required"]
            .as_array()
            .expect("required")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(properties.len(), required.len());
        assert_eq!(schema["additionalProperties"], json!(false));
        assert_eq!(
            schema["properties"]["options"]["items"]["additionalProperties"],
            json!(false)
        );
    }
}
