use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::principal::SettledBy;
use super::{AnswerInput, Form, SuspendPayload};

/// Milliseconds since the Unix epoch, the time unit of every stored timestamp.
pub fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// The lifecycle state of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Running,
    Suspended,
    Completed,
    Failed,
    Cancelled,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Suspended => "suspended",
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        [
            RunStatus::Running,
            RunStatus::Suspended,
            RunStatus::Completed,
            RunStatus::Failed,
            RunStatus::Cancelled,
        ]
        .into_iter()
        .find(|status| status.as_str() == name)
    }

    /// Completed, failed and cancelled runs never change again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            RunStatus::Completed | RunStatus::Failed | RunStatus::Cancelled
        )
    }
}

/// How a tool call was settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolResultKind {
    Answered,
    Declined,
    Expired,
    Cancelled,
    InvalidCall,
    /// A client tool's output.
    Output,
    /// The server ran the tool.
    Executed,
    /// A person rejected the call; the tool never ran.
    Rejected,
    /// The person replied in prose instead of answering.
    Replied,
}

/// What a pending tool call waits for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SuspendKind {
    /// A person's answer to an `ask_user` question.
    #[default]
    Question,
    /// A person's decision before the tool runs.
    Approval,
    /// The output of a tool the caller runs.
    ClientTool,
    /// A person's answer to a form.
    Form,
}

impl SuspendKind {
    /// The name stored in the `tool_calls.suspend_kind` column.
    pub fn as_str(self) -> &'static str {
        match self {
            SuspendKind::Question => "question",
            SuspendKind::Approval => "approval",
            SuspendKind::ClientTool => "client_tool",
            SuspendKind::Form => "form",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        [
            SuspendKind::Question,
            SuspendKind::Approval,
            SuspendKind::ClientTool,
            SuspendKind::Form,
        ]
        .into_iter()
        .find(|kind| kind.as_str() == name)
    }
}

/// What a suspended call shows whoever settles it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Suspension {
    pub kind: SuspendKind,
    /// The question, for [`SuspendKind::Question`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<SuspendPayload>,
    /// The form, for [`SuspendKind::Form`] (boxed: most suspensions have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<Box<Form>>,
    /// The validated arguments the tool runs with (approval and client tool).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub arguments_json: String,
    /// Why approval is needed (approval only).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub approval_reason: String,
    /// Who may settle it (subjects, and groups as `group:NAME`), decided when it is asked; empty:
    /// anyone allowed to answer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub assignees: Vec<String>,
}

/// Token counts reported by a model provider.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl Usage {
    /// `a` and `b` added up; `None` only when neither is known.
    pub fn sum(a: Option<Usage>, b: Option<Usage>) -> Option<Usage> {
        match (a, b) {
            (Some(a), Some(b)) => Some(Usage {
                input_tokens: a.input_tokens.saturating_add(b.input_tokens),
                output_tokens: a.output_tokens.saturating_add(b.output_tokens),
            }),
            (a, b) => a.or(b),
        }
    }
}

/// What happened in a run; every kind is stored in the run's event log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    RunStarted {
        agent_id: String,
        prompt: String,
        metadata: BTreeMap<String, String>,
    },
    TextDelta {
        text: String,
    },
    ToolCall {
        tool_call_id: String,
        tool_name: String,
        arguments_json: String,
    },
    ToolCallSuspended {
        tool_call_id: String,
        tool_name: String,
        /// The question; absent for approvals and client tools.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        payload: Option<SuspendPayload>,
        /// The form, for a form.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        form: Option<Box<Form>>,
        expire_ms: Option<i64>,
        #[serde(default)]
        kind: SuspendKind,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        arguments_json: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        approval_reason: String,
        /// Who may settle the call; empty: anyone allowed to answer.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        assignees: Vec<String>,
    },
    ToolResult {
        tool_call_id: String,
        content: String,
        is_error: bool,
        kind: ToolResultKind,
        /// Who settled the call; `None` when nobody did (an invalid call, a tool the server ran).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        settled_by: Option<SettledBy>,
    },
    RunCompleted {
        output_text: String,
        usage: Option<Usage>,
    },
    RunFailed {
        message: String,
    },
    RunCancelled {
        reason: String,
    },
    StepRestarted {
        reason: String,
        attempt: u32,
    },
}

impl EventKind {
    /// Whether this event ends the run.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            EventKind::RunCompleted { .. }
                | EventKind::RunFailed { .. }
                | EventKind::RunCancelled { .. }
        )
    }
}

/// A stored event: its kind with its place in the run's log.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub run_id: String,
    pub sequence: u64,
    pub time_ms: i64,
    pub kind: EventKind,
}

/// A call waiting to be settled.
#[derive(Clone, Debug, PartialEq)]
pub struct PendingCall {
    pub tool_call_id: String,
    pub tool_name: String,
    pub suspension: Suspension,
    pub expire_ms: Option<i64>,
    /// Who claimed the call, and until when, while the claim lasts.
    pub claim: Option<(String, i64)>,
    /// When it started waiting (absent for calls stored before this was recorded).
    pub suspended_ms: Option<i64>,
}

/// A run as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct RunRecord {
    pub run_id: String,
    pub agent_id: String,
    pub status: RunStatus,
    pub prompt: String,
    pub metadata: BTreeMap<String, String>,
    pub output_text: String,
    pub error_message: String,
    pub last_sequence: u64,
    /// Model turns committed so far.
    pub turns: u32,
    /// Time to live of this run's questions, when they expire.
    pub question_ttl_ms: Option<i64>,
    pub created_ms: i64,
    pub updated_ms: i64,
    /// Pending calls in the order they were made.
    pub pending: Vec<PendingCall>,
    /// Calls settled so far, in the order of their results; read by a run's own read only (a
    /// listing leaves it empty).
    pub settled: Vec<SettledCall>,
    /// The client tools given for this run only.
    pub run_tools: Vec<ToolDefinition>,
    /// The tokens its committed turns used, summed, when their provider reported any.
    pub usage: Option<Usage>,
}

/// A settled call of a run: how, by whom and when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettledCall {
    pub tool_call_id: String,
    pub tool_name: String,
    pub kind: ToolResultKind,
    /// Who settled it; `None` when nobody did (an invalid call), or when it was settled before
    /// settlers were recorded.
    pub settled_by: Option<SettledBy>,
    pub settled_ms: Option<i64>,
    /// The sequence of its `tool_result` event.
    pub result_sequence: u64,
    /// When it started waiting; `None` for a call that never waited (or was stored before this
    /// was recorded).
    pub suspended_ms: Option<i64>,
    /// The result the model (or a request's asker) got.
    pub content: String,
    /// The answer or decision that settled it, as given; `None` when none did (an expiry, a
    /// cancellation, an invalid call, a tool the server ran unasked).
    pub answer: Option<AnswerInput>,
}

/// A client tool declared for one run (`StartRun.tools`), stored with the run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolDefinition {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// JSON Schema of the arguments, as JSON text.
    pub parameters_json_schema: String,
    /// Whether every call waits for approval.
    #[serde(default)]
    pub approval_always: bool,
}

/// A tool call as the model made it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelToolCall {
    pub id: String,
    pub name: String,
    pub arguments_json: String,
}

/// One message of a run's transcript, as a model receives it.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    User {
        text: String,
    },
    Assistant {
        text: String,
        tool_calls: Vec<ModelToolCall>,
    },
    Tool {
        tool_call_id: String,
        content: String,
        is_error: bool,
        kind: ToolResultKind,
    },
}

#[cfg(test)]
mod tests {
    use super::Usage;

    #[test]
    fn usage_sums_what_is_known() {
        let tokens = |input_tokens, output_tokens| {
            Some(Usage {
                input_tokens,
                output_tokens,
            })
        };
        assert_eq!(Usage::sum(tokens(212, 27), tokens(301, 9)), tokens(513, 36));
        assert_eq!(Usage::sum(None, tokens(301, 9)), tokens(301, 9));
        assert_eq!(Usage::sum(tokens(212, 27), None), tokens(212, 27));
        assert_eq!(Usage::sum(None, None), None);
        assert_eq!(
            Usage::sum(tokens(u64::MAX, 1), tokens(1, 1)),
            tokens(u64::MAX, 2)
        );
    }
}
