//! A call that waits to be settled, as both a run's stream (`tool_call_suspended`) and `GetRun` or
//! the pending-calls feed (`PendingToolCall`) describe it: what prompts and listings show.

use std::collections::BTreeMap;

use crate::proto::v1 as pb;
use crate::proto::v1::run_agent_response::Event;

#[derive(Clone, Debug)]
pub struct WaitingCall {
    pub tool_call_id: String,
    pub tool_name: String,
    pub kind: pb::SuspendKind,
    /// The question, for a question.
    pub payload: pb::SuspendPayload,
    /// For an approval or a client tool: the arguments, as JSON text.
    pub arguments_json: String,
    /// For an approval: why it is needed.
    pub approval_reason: String,
    /// For a form: its fields.
    pub form: pb::Form,
    /// When it expires unanswered, if ever.
    pub expire_time: Option<prost_types::Timestamp>,
}

impl WaitingCall {
    /// Whether a person answers it here (a client tool's output comes from whoever runs the tool).
    pub fn is_for_a_person(&self) -> bool {
        matches!(
            self.kind,
            pb::SuspendKind::Question | pb::SuspendKind::Approval | pb::SuspendKind::Form
        )
    }

    /// Its question's selection mode; unspecified for free text.
    pub fn selection_mode(&self) -> pb::SelectionMode {
        self.payload.selection_mode()
    }

    /// The arguments as indented JSON, or as given when they are not JSON.
    pub fn pretty_arguments(&self) -> String {
        serde_json::from_str::<serde_json::Value>(&self.arguments_json)
            .and_then(|value| serde_json::to_string_pretty(&value))
            .unwrap_or_else(|_| self.arguments_json.clone())
    }
}

impl From<&pb::ToolCallSuspended> for WaitingCall {
    fn from(call: &pb::ToolCallSuspended) -> Self {
        WaitingCall {
            tool_call_id: call.tool_call_id.clone(),
            tool_name: call.tool_name.clone(),
            kind: call.kind(),
            payload: call.suspend_payload.clone().unwrap_or_default(),
            arguments_json: call.arguments_json.clone(),
            approval_reason: call.approval_reason.clone(),
            form: call.form.clone().unwrap_or_default(),
            expire_time: call.expire_time,
        }
    }
}

impl From<&pb::PendingToolCall> for WaitingCall {
    fn from(call: &pb::PendingToolCall) -> Self {
        WaitingCall {
            tool_call_id: call.tool_call_id.clone(),
            tool_name: call.tool_name.clone(),
            kind: call.kind(),
            payload: call.suspend_payload.clone().unwrap_or_default(),
            arguments_json: call.arguments_json.clone(),
            approval_reason: call.approval_reason.clone(),
            form: call.form.clone().unwrap_or_default(),
            expire_time: call.expire_time,
        }
    }
}

/// The calls of one run that wait, as its frames tell.
#[derive(Debug, Default)]
pub struct WaitingCalls {
    calls: BTreeMap<String, WaitingCall>,
}

impl WaitingCalls {
    /// Takes a frame into account: a suspension adds its call, a result removes it.
    pub fn note(&mut self, frame: &pb::RunAgentResponse) {
        match &frame.event {
            Some(Event::ToolCallSuspended(suspended)) => {
                self.calls
                    .insert(suspended.tool_call_id.clone(), WaitingCall::from(suspended));
            }
            Some(Event::ToolResult(result)) => {
                self.calls.remove(&result.tool_call_id);
            }
            _ => {}
        }
    }

    pub fn get(&self, tool_call_id: &str) -> Option<&WaitingCall> {
        self.calls.get(tool_call_id)
    }

    /// Forgets a call no answer from here can settle.
    pub fn forget(&mut self, tool_call_id: &str) {
        self.calls.remove(tool_call_id);
    }

    pub fn ids(&self) -> Vec<String> {
        self.calls.keys().cloned().collect()
    }

    /// On stderr: how to answer each call that still waits, once this client stops following.
    pub fn print_hints(&self, run_id: &str) {
        for call in self.calls.keys() {
            eprintln!("run {run_id} waits: answer with `askuser answer {run_id} {call}`");
        }
    }
}
