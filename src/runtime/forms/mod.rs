//! Forms: several typed questions asked in one call (`SUSPEND_KIND_FORM`). Two tools ask them, each
//! in the shape models know: `ask_user_questions` (Claude Code's `AskUserQuestion` input, also
//! offered under that name) and `ask_user_form` (an MCP form-mode elicitation). One validation
//! serves every form, whichever tool built it, and one check serves every answer.

mod answer;
mod elicitation;
mod fallback;
mod patterns;
mod questions;
mod text_formats;
mod validate;

use serde_json::Value;

pub use answer::{answer_result, check_answer, expired_result};
pub use fallback::fallback_text;
pub use validate::validate;

use super::ask_user::{AskUserLimits, Violation};
use crate::domain::Form;

/// `ask_user_questions`: 1–4 multiple-choice questions at once.
pub const QUESTIONS_TOOL: &str = "ask_user_questions";
/// The same tool under Claude Code's name, for agents whose models were trained on it.
pub const QUESTIONS_TOOL_ALIAS: &str = "AskUserQuestion";
/// `ask_user_form`: a flat form of typed fields, as MCP elicits it.
pub const FORM_TOOL: &str = "ask_user_form";

/// Which of the form tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FormTool {
    Questions,
    Elicitation,
}

impl FormTool {
    /// The form tool named `name`, if it is one.
    pub fn named(name: &str) -> Option<Self> {
        match name {
            QUESTIONS_TOOL | QUESTIONS_TOOL_ALIAS => Some(FormTool::Questions),
            FORM_TOOL => Some(FormTool::Elicitation),
            _ => None,
        }
    }

    /// What the model is told the tool does.
    pub fn description(self) -> &'static str {
        match self {
            FormTool::Questions => questions::DESCRIPTION,
            FormTool::Elicitation => elicitation::DESCRIPTION,
        }
    }

    /// The JSON Schema of its arguments.
    pub fn arguments_schema(self, limits: &AskUserLimits) -> Value {
        match self {
            FormTool::Questions => questions::arguments_schema(),
            FormTool::Elicitation => elicitation::arguments_schema(limits),
        }
    }

    /// The form a model's arguments ask, validated; the violations name what is wrong.
    pub fn form(
        self,
        arguments_json: &str,
        limits: &AskUserLimits,
    ) -> Result<Form, Vec<Violation>> {
        let form = match self {
            FormTool::Questions => questions::parse(arguments_json)?,
            FormTool::Elicitation => elicitation::parse(arguments_json)?,
        };
        validate(&form, limits)?;
        Ok(form)
    }
}

/// The JSON a model's arguments hold, or why they are not an object.
fn arguments_object(
    arguments_json: &str,
) -> Result<serde_json::Map<String, Value>, Vec<Violation>> {
    match serde_json::from_str(arguments_json) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(vec![Violation::new("", "arguments must be a JSON object")]),
        Err(error) => Err(vec![Violation::new(
            "",
            format!("arguments are not valid JSON: {error}"),
        )]),
    }
}
