//! Row shapes and conversions shared by the SQL stores: both keep the same tables, with JSON text
//! for nested values.

use std::sync::LazyLock;

use super::{CallStatus, NewRun, StepState, StoreError, StoreResult, ToolCallRecord};
use crate::domain::{
    AnswerInput, Message, ModelToolCall, PendingCall, RunRecord, RunStatus, ToolResultKind, Usage,
};

pub(super) fn to_json<T: serde::Serialize>(value: &T) -> StoreResult<String> {
    serde_json::to_string(value).map_err(|e| StoreError::Corrupt(e.to_string()))
}

pub(super) fn from_json<T: serde::de::DeserializeOwned>(text: &str) -> StoreResult<T> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(e.to_string()))
}

pub(super) fn parse_status(name: &str) -> StoreResult<RunStatus> {
    RunStatus::parse(name).ok_or_else(|| StoreError::Corrupt(format!("run status {name}")))
}

pub(super) fn kind_name(kind: ToolResultKind) -> StoreResult<String> {
    Ok(to_json(&kind)?.trim_matches('"').to_owned())
}

fn parse_kind(name: &str) -> StoreResult<ToolResultKind> {
    from_json(&format!("\"{name}\""))
}

/// Stored sequences and counters are non-negative; a negative one is read as 0.
pub(super) fn unsigned(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// The columns of `runs` that make a [`RunRecord`], in this order.
pub(super) const RUN_COLUMNS: &str = "run_id, agent_id, status, prompt, metadata, output_text, \
     error_message, last_sequence, turns, question_ttl_ms, created_ms, updated_ms";

/// A run's row as a step reads it: [`RUN_COLUMNS`], then its step attempt and token usage.
pub(super) static STEP_RUN_QUERY: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {RUN_COLUMNS}, step_attempt, input_tokens, output_tokens FROM runs \
         WHERE run_id = $1"
    )
});

/// A `runs` row as read, before its pending calls are attached.
pub(super) struct RunRow {
    pub run_id: String,
    pub agent_id: String,
    pub status: String,
    pub prompt: String,
    pub metadata: String,
    pub output_text: String,
    pub error_message: String,
    pub last_sequence: i64,
    pub turns: i64,
    pub question_ttl_ms: Option<i64>,
    pub created_ms: i64,
    pub updated_ms: i64,
}

impl RunRow {
    pub fn into_record(self, pending: Vec<PendingCall>) -> StoreResult<RunRecord> {
        Ok(RunRecord {
            status: parse_status(&self.status)?,
            metadata: from_json(&self.metadata)?,
            run_id: self.run_id,
            agent_id: self.agent_id,
            prompt: self.prompt,
            output_text: self.output_text,
            error_message: self.error_message,
            last_sequence: unsigned(self.last_sequence),
            turns: u32::try_from(self.turns).unwrap_or(u32::MAX),
            question_ttl_ms: self.question_ttl_ms,
            created_ms: self.created_ms,
            updated_ms: self.updated_ms,
            pending,
        })
    }
}

/// The query that reads pending calls ([`PendingRow`]) of run `$1`/`?1`, in the order asked.
pub(super) const PENDING_QUERY: &str = "SELECT tool_call_id, tool_name, payload, expire_ms \
     FROM tool_calls WHERE run_id = $1 AND status = 'pending' ORDER BY turn, position";

/// A pending `tool_calls` row.
pub(super) struct PendingRow {
    pub tool_call_id: String,
    pub tool_name: String,
    pub payload: Option<String>,
    pub expire_ms: Option<i64>,
}

impl PendingRow {
    pub fn into_pending(self) -> StoreResult<PendingCall> {
        Ok(PendingCall {
            payload: from_json(self.payload.as_deref().unwrap_or("null"))?,
            tool_call_id: self.tool_call_id,
            tool_name: self.tool_name,
            expire_ms: self.expire_ms,
        })
    }
}

/// The query that reads one call ([`ToolCallRow`]) by run `$1` and id `$2`.
pub(super) const TOOL_CALL_QUERY: &str = "SELECT tool_name, status, payload, expire_ms, answer, \
     answer_id, result_sequence FROM tool_calls WHERE run_id = $1 AND tool_call_id = $2";

/// A `tool_calls` row as [`TOOL_CALL_QUERY`] reads it.
pub(super) struct ToolCallRow {
    pub tool_name: String,
    pub status: String,
    pub payload: Option<String>,
    pub expire_ms: Option<i64>,
    pub answer: Option<String>,
    pub answer_id: String,
    pub result_sequence: i64,
}

impl ToolCallRow {
    pub fn into_record(self, run_id: &str, tool_call_id: &str) -> StoreResult<ToolCallRecord> {
        Ok(ToolCallRecord {
            run_id: run_id.to_owned(),
            tool_call_id: tool_call_id.to_owned(),
            tool_name: self.tool_name,
            status: CallStatus::parse(&self.status)
                .ok_or_else(|| StoreError::Corrupt(format!("call status {}", self.status)))?,
            payload: self.payload.as_deref().map(from_json).transpose()?,
            expire_ms: self.expire_ms,
            answer: self
                .answer
                .as_deref()
                .map(from_json::<AnswerInput>)
                .transpose()?,
            answer_id: self.answer_id,
            result_sequence: unsigned(self.result_sequence),
        })
    }
}

/// The queries that read a run's turns and calls for its transcript.
pub(super) const TURNS_QUERY: &str = "SELECT turn, text FROM turns WHERE run_id = $1 ORDER BY turn";
pub(super) const TRANSCRIPT_CALLS_QUERY: &str = "SELECT turn, tool_call_id, tool_name, \
     arguments_json, result_content, result_kind, result_is_error FROM tool_calls \
     WHERE run_id = $1 ORDER BY turn, position";

/// A `tool_calls` row as [`TRANSCRIPT_CALLS_QUERY`] reads it.
pub(super) struct TranscriptCall {
    pub turn: i64,
    pub tool_call_id: String,
    pub tool_name: String,
    pub arguments_json: String,
    pub result_content: Option<String>,
    pub result_kind: Option<String>,
    pub result_is_error: bool,
}

/// The transcript a model sees: the prompt, then each assistant turn followed by the results of
/// its settled calls, in the order the calls were made.
pub(super) fn assemble_transcript(
    prompt: &str,
    turns: Vec<(i64, String)>,
    calls: &[TranscriptCall],
) -> StoreResult<Vec<Message>> {
    let mut transcript = vec![Message::User {
        text: prompt.to_owned(),
    }];
    for (turn, text) in turns {
        let of_turn: Vec<&TranscriptCall> = calls.iter().filter(|c| c.turn == turn).collect();
        transcript.push(Message::Assistant {
            text,
            tool_calls: of_turn
                .iter()
                .map(|c| ModelToolCall {
                    id: c.tool_call_id.clone(),
                    name: c.tool_name.clone(),
                    arguments_json: c.arguments_json.clone(),
                })
                .collect(),
        });
        for call in of_turn {
            let (Some(content), Some(kind)) = (&call.result_content, &call.result_kind) else {
                continue;
            };
            transcript.push(Message::Tool {
                tool_call_id: call.tool_call_id.clone(),
                content: content.clone(),
                is_error: call.result_is_error,
                kind: parse_kind(kind)?,
            });
        }
    }
    Ok(transcript)
}

/// The state of a new run's first step, as the store would read it back: no turn yet, and the
/// prompt is the whole transcript.
pub(super) fn first_step(run: NewRun, now_ms: i64) -> StoreResult<StepState> {
    Ok(StepState {
        transcript: assemble_transcript(&run.prompt, Vec::new(), &[])?,
        run: RunRecord {
            run_id: run.run_id,
            agent_id: run.agent_id,
            status: RunStatus::Running,
            prompt: run.prompt,
            metadata: run.metadata,
            output_text: String::new(),
            error_message: String::new(),
            last_sequence: 1,
            turns: 0,
            question_ttl_ms: run.question_ttl_ms,
            created_ms: now_ms,
            updated_ms: now_ms,
            pending: Vec::new(),
        },
        step_attempt: 0,
        usage: None,
    })
}

/// A run's token usage from its two nullable columns (`input_tokens`, `output_tokens`).
pub(super) fn usage_from_columns(input: Option<i64>, output: Option<i64>) -> Option<Usage> {
    let tokens = |count: i64| u64::try_from(count).unwrap_or(0);
    match (input, output) {
        (None, None) => None,
        (input, output) => Some(Usage {
            input_tokens: input.map_or(0, tokens),
            output_tokens: output.map_or(0, tokens),
        }),
    }
}

/// A run's token usage as its two nullable columns.
pub(super) fn usage_columns(usage: Option<Usage>) -> (Option<i64>, Option<i64>) {
    let count = |tokens: u64| i64::try_from(tokens).unwrap_or(i64::MAX);
    match usage {
        Some(usage) => (
            Some(count(usage.input_tokens)),
            Some(count(usage.output_tokens)),
        ),
        None => (None, None),
    }
}

/// The part of a run's row that decides whether a write may happen, read inside the write's
/// transaction.
pub(super) struct RunHead {
    pub status: RunStatus,
    pub last_sequence: u64,
    pub turns: u32,
    pub lease_owner: Option<String>,
}

impl RunHead {
    /// Whether a step of `owner` that started at `expected_turns` may still write: the run is
    /// still running at that turn and `owner` still holds its lease.
    pub fn admits_step(&self, owner: &str, expected_turns: u32) -> bool {
        self.status == RunStatus::Running
            && self.turns == expected_turns
            && self.lease_owner.as_deref() == Some(owner)
    }
}
