use serde::{Deserialize, Serialize};

use super::FormAnswer;

/// How many options an answer may select.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SelectionMode {
    SingleSelect,
    MultiSelect,
}

impl SelectionMode {
    /// The name used in tool arguments, fallback text and config files.
    pub fn as_str(self) -> &'static str {
        match self {
            SelectionMode::SingleSelect => "single_select",
            SelectionMode::MultiSelect => "multi_select",
        }
    }

    /// Parses the name used in tool arguments and config files.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "single_select" => Some(SelectionMode::SingleSelect),
            "multi_select" => Some(SelectionMode::MultiSelect),
            _ => None,
        }
    }
}

/// One offered choice.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AskUserOption {
    pub label: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
}

/// The `ask_user` tool input as given, before validation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AskUserInput {
    pub question: String,
    pub options: Vec<AskUserOption>,
    pub selection_mode: Option<SelectionMode>,
}

/// A validated question with its selection mode resolved (absent for free text).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SuspendPayload {
    pub question: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<AskUserOption>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selection_mode: Option<SelectionMode>,
}

/// How a pending call is settled: a person's answer to a question or a form (or a reply in prose
/// instead), a decision on an approval, or the output of a client tool.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerInput {
    Text(String),
    Selections(Vec<String>),
    Decline(String),
    ToolOutput {
        content: String,
        is_error: bool,
    },
    Approval(ApprovalDecision),
    Form(FormAnswer),
    /// Prose instead of an answer, to a question or a form.
    Reply(String),
}

/// A person's decision on a tool call that waits for approval.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    Approve,
    Reject {
        reason: String,
    },
    /// Run the tool with these arguments (a JSON object, as text) instead.
    Edit {
        arguments_json: String,
    },
}
