//! Row shapes and conversions shared by the SQL stores: both keep the same tables, with JSON text
//! for nested values.

use std::collections::HashMap;
use std::sync::LazyLock;

use super::{
    ApiKeyRecord, CallStatus, Decision, ExecutingCall, NewRun, PendingCounts, RunPendingCall,
    StepState, StoreError, StoreResult, ToolCallRecord,
};
use crate::domain::{
    AnswerInput, ApprovalDecision, Message, ModelToolCall, PendingCall, RunRecord, RunStatus,
    Scope, SettledBy, SettledCall, SuspendKind, Suspension, ToolResultKind, Usage,
};

pub(super) fn to_json<T: serde::Serialize>(value: &T) -> StoreResult<String> {
    serde_json::to_string(value).map_err(|e| StoreError::Corrupt(e.to_string()))
}

pub(super) fn from_json<T: serde::de::DeserializeOwned>(text: &str) -> StoreResult<T> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(e.to_string()))
}

/// The items of `made`, or its first error, in a vector allocated once for all of them: a page of
/// calls collected through `Result` grew by doubling, copying the calls made so far each time
/// (about 5 % of the server's CPU time in a snapshot's profile on PostgreSQL).
pub(super) fn collect_exact<T>(
    made: impl ExactSizeIterator<Item = StoreResult<T>>,
) -> StoreResult<Vec<T>> {
    let mut items = Vec::with_capacity(made.len());
    for item in made {
        items.push(item?);
    }
    Ok(items)
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
     error_message, last_sequence, turns, question_ttl_ms, created_ms, updated_ms, run_tools, \
     input_tokens, output_tokens";

/// The index of the first column after [`RUN_COLUMNS`] in a query that starts with them.
pub(super) const AFTER_RUN_COLUMNS: usize = 15;

/// A run's row as a step reads it: [`RUN_COLUMNS`], then its step attempt, step starts and the
/// trace context it started in.
pub(super) static STEP_RUN_QUERY: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {RUN_COLUMNS}, step_attempt, step_starts, trace_context, request FROM runs \
         WHERE run_id = $1"
    )
});

/// Whether run `$1` belongs to tenant `$2` (to any tenant when `$2` is NULL): see [`Tenancy`].
macro_rules! in_tenant {
    ($column:literal) => {
        concat!("(CAST($2 AS TEXT) IS NULL OR ", $column, " = $2)")
    };
}

/// Selects run `$1` if it belongs to tenant `$2` ([`in_tenant!`]): the first statement of every
/// change a caller asks for by run id, so that nothing of another tenant's run is read or changed.
pub(super) const RUN_IN_TENANT: &str = concat!(
    "SELECT 1 FROM runs WHERE run_id = $1 AND ",
    in_tenant!("tenant")
);

/// The head of run `$1` ([`RunHead`]) if it belongs to tenant `$2` ([`in_tenant!`]): what decides
/// whether a change may happen. PostgreSQL reads it `FOR UPDATE` ([`LOCK_RUN`]).
macro_rules! run_head_query {
    ($suffix:literal) => {
        concat!(
            "SELECT status, last_sequence, turns, lease_owner, webhooks, agent_id, tenant FROM runs \
             WHERE run_id = $1 AND ",
            in_tenant!("tenant"),
            $suffix
        )
    };
}

pub(super) const RUN_HEAD_QUERY: &str = run_head_query!("");
/// [`RUN_HEAD_QUERY`], locking the run's row: changes of one run are serialized across replicas.
pub(super) const LOCK_RUN: &str = run_head_query!(" FOR UPDATE");

/// Runs not finished, by status.
pub(super) const UNFINISHED_RUNS_COUNT_QUERY: &str = "SELECT status, COUNT(*) FROM runs \
     WHERE status IN ('running', 'suspended') GROUP BY status";
/// Calls waiting for someone, by kind: found through the unfinished runs (indexed by status), so
/// the settled calls of finished runs are not scanned.
pub(super) const PENDING_CALLS_COUNT_QUERY: &str = "SELECT c.suspend_kind, COUNT(*) FROM runs r \
     JOIN tool_calls c ON c.run_id = r.run_id \
     WHERE r.status IN ('running', 'suspended') AND c.status = 'pending' GROUP BY c.suspend_kind";
/// When the call waiting longest started waiting, by kind (calls suspended before schema v8 have no
/// such time and are left out).
pub(super) const OLDEST_PENDING_CALLS_QUERY: &str = "SELECT c.suspend_kind, MIN(c.suspended_ms) \
     FROM runs r JOIN tool_calls c ON c.run_id = r.run_id \
     WHERE r.status IN ('running', 'suspended') AND c.status = 'pending' \
     AND c.suspended_ms IS NOT NULL GROUP BY c.suspend_kind";

/// Webhook deliveries due at `$1` and not delivered yet.
pub(super) const WEBHOOKS_DUE_QUERY: &str = "SELECT COUNT(*) FROM webhook_deliveries \
     WHERE status = 'pending' AND next_attempt_ms <= $1";

/// [`PendingCounts`] from the rows of the four queries above.
pub(super) fn pending_counts(
    runs: Vec<(String, i64)>,
    calls: Vec<(String, i64)>,
    oldest_calls: Vec<(String, i64)>,
    webhooks_due: i64,
) -> StoreResult<PendingCounts> {
    let by_kind = |rows: Vec<(String, i64)>| {
        rows.into_iter()
            .map(|(kind, value)| {
                let kind = SuspendKind::parse(&kind)
                    .ok_or_else(|| StoreError::Corrupt(format!("suspend kind {kind}")))?;
                Ok((kind, value))
            })
            .collect::<StoreResult<HashMap<_, _>>>()
    };
    Ok(PendingCounts {
        runs: runs
            .into_iter()
            .map(|(status, count)| Ok((parse_status(&status)?, unsigned(count))))
            .collect::<StoreResult<_>>()?,
        calls: by_kind(calls)?
            .into_iter()
            .map(|(kind, count)| (kind, unsigned(count)))
            .collect(),
        oldest_call_ms: by_kind(oldest_calls)?,
        webhooks_due: unsigned(webhooks_due),
    })
}

/// The status and last sequence of run `$1` if it belongs to tenant `$2`.
pub(super) const RUN_STATE_QUERY: &str = concat!(
    "SELECT status, last_sequence FROM runs WHERE run_id = $1 AND ",
    in_tenant!("tenant")
);

/// Pending calls ([`PendingRow`]) of run `$1` if it belongs to tenant `$2`, in the order made.
/// The calls are found by their tenant (the run's, which the subquery reads) and run: see
/// `settle::UPDATE_CALL`.
pub(super) static PENDING_IN_TENANT_QUERY: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {PENDING_COLUMNS} FROM tool_calls \
         WHERE tenant = (SELECT tenant FROM runs WHERE run_id = $1 AND {}) \
         AND run_id = $1 AND status = 'pending' ORDER BY turn, position",
        in_tenant!("tenant")
    )
});

/// The settled calls ([`SettledRow`]) of run `$1` if it belongs to tenant `$2`, in the order of
/// their results.
pub(super) const SETTLED_QUERY: &str = concat!(
    "SELECT tool_call_id, tool_name, result_kind, settled_by, settled_ms, result_sequence, ",
    "suspended_ms, result_content, answer, decision ",
    "FROM tool_calls WHERE run_id = $1 AND result_kind IS NOT NULL AND EXISTS ",
    "(SELECT 1 FROM runs WHERE runs.run_id = $1 AND ",
    in_tenant!("runs.tenant"),
    ") ORDER BY result_sequence"
);

/// A settled `tool_calls` row as [`SETTLED_QUERY`] reads it.
pub(super) struct SettledRow {
    pub tool_call_id: String,
    pub tool_name: String,
    pub result_kind: String,
    pub settled_by: Option<String>,
    pub settled_ms: Option<i64>,
    pub result_sequence: i64,
    pub suspended_ms: Option<i64>,
    pub result_content: Option<String>,
    pub answer: Option<String>,
    pub decision: Option<String>,
}

impl SettledRow {
    pub fn into_settled(self) -> StoreResult<SettledCall> {
        // An approval that let the call go on keeps its decision apart from answers.
        let answer = match (self.answer.as_deref(), self.decision.as_deref()) {
            (Some(answer), _) => Some(from_json::<AnswerInput>(answer)?),
            (None, Some(decision)) => Some(AnswerInput::Approval(
                from_json::<crate::store::Decision>(decision)?.decision,
            )),
            (None, None) => None,
        };
        Ok(SettledCall {
            content: self.result_content.unwrap_or_default(),
            answer,
            tool_call_id: self.tool_call_id,
            tool_name: self.tool_name,
            kind: parse_kind(&self.result_kind)?,
            settled_by: self.settled_by.as_deref().map(from_json).transpose()?,
            settled_ms: self.settled_ms,
            result_sequence: unsigned(self.result_sequence),
            suspended_ms: self.suspended_ms,
        })
    }
}

/// Run `$1` ([`RUN_COLUMNS`]) if it belongs to tenant `$2`.
pub(super) static RUN_QUERY: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {RUN_COLUMNS} FROM runs WHERE run_id = $1 AND {}",
        in_tenant!("tenant")
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
    pub run_tools: Option<String>,
    pub input_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
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
            settled: Vec::new(),
            run_tools: self
                .run_tools
                .as_deref()
                .map(from_json)
                .transpose()?
                .unwrap_or_default(),
            usage: usage_from_columns(self.input_tokens, self.output_tokens),
        })
    }
}

/// Inserts a new, running run: its id, agent, prompt, metadata, question TTL, time (created and
/// updated), run tools, lease owner, lease expiry, request id, tenant, webhooks and trace context,
/// in that order.
pub(super) const INSERT_RUN: &str = "INSERT INTO runs (run_id, agent_id, status, prompt, metadata, \
     output_text, error_message, last_sequence, turns, question_ttl_ms, created_ms, updated_ms, \
     run_tools, lease_owner, lease_expires_ms, request_id, tenant, step_starts, webhooks, \
     trace_context, request) VALUES ($1, $2, 'running', $3, $4, '', '', 1, 0, $5, $6, $6, $7, $8, \
     $9, $10, $11, CASE WHEN CAST($8 AS TEXT) IS NULL THEN 0 ELSE 1 END, $12, $13, $14)";

/// A lease-taking statement (its `SET` names `lease_expires_ms = $3`/`?3`) that also counts a
/// start of the run's current step: the step's executor takes the lease to run it.
pub(super) fn counting_step_start(take_lease: &str) -> String {
    let (set, counted) = if take_lease.contains("= $3") {
        (
            "lease_expires_ms = $3",
            "lease_expires_ms = $3, step_starts = step_starts + 1",
        )
    } else {
        (
            "lease_expires_ms = ?3",
            "lease_expires_ms = ?3, step_starts = step_starts + 1",
        )
    };
    take_lease.replacen(set, counted, 1)
}

/// The run a start of tenant `$1` with request id `$2` created.
pub(super) const RUN_OF_REQUEST_QUERY: &str =
    "SELECT run_id FROM runs WHERE tenant = $1 AND request_id = $2";

/// The `runs.run_tools` value of a new run: NULL when it has none.
pub(super) fn run_tools_column(run: &NewRun) -> StoreResult<Option<String>> {
    (!run.run_tools.is_empty())
        .then(|| to_json(&run.run_tools))
        .transpose()
}

/// The columns of a waiting call ([`PendingRow`]), in this order.
pub(super) const PENDING_COLUMNS: &str = "tool_call_id, tool_name, payload, expire_ms, suspend_kind, \
     run_arguments, approval_reason, claimant, claim_expires_ms, assignees, suspended_ms";

/// The query that reads pending calls ([`PendingRow`]) of run `$1`/`?1`, in the order made.
pub(super) static PENDING_QUERY: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {PENDING_COLUMNS} FROM tool_calls WHERE run_id = $1 AND status = 'pending' \
         ORDER BY turn, position"
    )
});

/// Pending calls of every run of tenant `$3` after (`$1`, `$2`) in (run id, call id) order, at
/// most `$4`: the run's id and agent, then [`PENDING_COLUMNS`]. Each call carries its run's tenant
/// and agent (schema v15), so a page is one range of `tool_calls_pending` (tenant, run id, call
/// id) and reads no run: before, each call's run was looked up in `runs_owner`, a second B-tree
/// search per call.
///
/// The bound is one row comparison, which both stores take as an index condition (PostgreSQL made
/// an `OR` of two bounds a bitmap of every later call, then sorted it). On tables filled and not
/// yet analyzed PostgreSQL's planner would still sort a bitmap of every later call, so its store
/// plans the query by the index whatever the statistics (`PLAN_BY_INDEX`). (SQLite numbers `$n`
/// parameters in the order they first appear: keep them in order.)
pub(super) static PENDING_FEED_QUERY: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT run_id, agent_id, {PENDING_COLUMNS} FROM tool_calls \
         WHERE status = 'pending' AND (run_id, tool_call_id) > ($1, $2) AND tenant = $3 \
         ORDER BY run_id, tool_call_id LIMIT $4"
    )
});

/// A pending `tool_calls` row, its text columns as `S`: owned strings, or borrowed from a reader's
/// buffer (whence a call copies only what it keeps, and not its payload's JSON or its kind's name).
pub(super) struct PendingRow<S = String> {
    pub tool_call_id: S,
    pub tool_name: S,
    pub payload: Option<S>,
    pub expire_ms: Option<i64>,
    pub suspend_kind: S,
    pub run_arguments: S,
    pub approval_reason: S,
    pub claimant: Option<S>,
    pub claim_expires_ms: Option<i64>,
    pub assignees: Option<S>,
    pub suspended_ms: Option<i64>,
}

/// The `tool_calls.assignees` value of a suspension: NULL when it names nobody.
pub(super) fn assignees_column(assignees: &[String]) -> StoreResult<Option<String>> {
    (!assignees.is_empty())
        .then(|| to_json(&assignees))
        .transpose()
}

fn assignees_from(column: Option<&str>) -> StoreResult<Vec<String>> {
    Ok(column.map(from_json).transpose()?.unwrap_or_default())
}

/// The `tool_calls.payload` value of a suspension: its question's JSON, or its form's for a form.
pub(in crate::store) fn payload_column(suspension: &Suspension) -> StoreResult<Option<String>> {
    match suspension.kind {
        SuspendKind::Form => suspension.form.as_ref().map(to_json).transpose(),
        _ => suspension.payload.as_ref().map(to_json).transpose(),
    }
}

/// A suspension read from its columns: the payload column holds a question or a form, by kind.
fn suspension_from(
    kind: &str,
    payload: Option<&str>,
    arguments_json: String,
    approval_reason: String,
    assignees: Option<&str>,
) -> StoreResult<Suspension> {
    let kind = parse_suspend_kind(kind)?;
    let (payload, form) = match kind {
        SuspendKind::Form => (None, payload.map(from_json).transpose()?),
        _ => (payload.map(from_json).transpose()?, None),
    };
    Ok(Suspension {
        kind,
        payload,
        form,
        arguments_json,
        approval_reason,
        assignees: assignees_from(assignees)?,
    })
}

fn parse_suspend_kind(name: &str) -> StoreResult<SuspendKind> {
    SuspendKind::parse(name).ok_or_else(|| StoreError::Corrupt(format!("suspend kind {name}")))
}

impl<S: AsRef<str> + Into<String>> PendingRow<S> {
    pub fn into_pending(self) -> StoreResult<PendingCall> {
        Ok(PendingCall {
            suspension: suspension_from(
                self.suspend_kind.as_ref(),
                self.payload.as_ref().map(AsRef::as_ref),
                self.run_arguments.into(),
                self.approval_reason.into(),
                self.assignees.as_ref().map(AsRef::as_ref),
            )?,
            tool_call_id: self.tool_call_id.into(),
            tool_name: self.tool_name.into(),
            expire_ms: self.expire_ms,
            claim: self.claimant.map(Into::into).zip(self.claim_expires_ms),
            suspended_ms: self.suspended_ms,
        })
    }

    pub fn into_run_pending(self, run_id: String, agent_id: String) -> StoreResult<RunPendingCall> {
        Ok(RunPendingCall {
            run_id,
            agent_id,
            call: self.into_pending()?,
        })
    }
}

impl<S> PendingRow<S> {
    /// The same row with each text column made into a `T` by `text`.
    pub fn map<T>(self, mut text: impl FnMut(S) -> T) -> PendingRow<T> {
        PendingRow {
            tool_call_id: text(self.tool_call_id),
            tool_name: text(self.tool_name),
            payload: self.payload.map(&mut text),
            expire_ms: self.expire_ms,
            suspend_kind: text(self.suspend_kind),
            run_arguments: text(self.run_arguments),
            approval_reason: text(self.approval_reason),
            claimant: self.claimant.map(&mut text),
            claim_expires_ms: self.claim_expires_ms,
            assignees: self.assignees.map(&mut text),
            suspended_ms: self.suspended_ms,
        }
    }
}

/// The columns of one call ([`ToolCallRow`]), in this order.
macro_rules! tool_call_columns {
    () => {
        "tool_name, status, payload, expire_ms, answer, answer_id, result_sequence, suspend_kind, \
         run_arguments, approval_reason, decision, assignees, suspended_ms, continuation"
    };
}

/// The query that reads one call ([`ToolCallRow`]) by run `$1` and id `$2`.
pub(super) const TOOL_CALL_QUERY: &str = concat!(
    "SELECT ",
    tool_call_columns!(),
    " FROM tool_calls WHERE run_id = $1 AND tool_call_id = $2"
);

/// What a settle reads of call `$2` of run `$1`, in one statement: the call ([`ToolCallRow`], its
/// columns first), then how many of the run's calls wait for someone and how many the server
/// runs (the last two columns, as [`CALL_COUNTS_QUERY`]). No row when there is no such call.
pub(super) static SETTLE_CALL_QUERY: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {}, counts.* FROM tool_calls, ({CALL_COUNTS_QUERY}) AS counts \
         WHERE run_id = $1 AND tool_call_id = $2",
        tool_call_columns!()
    )
});

/// The first of [`SETTLE_CALL_QUERY`]'s two counts: the calls that wait, then those the server
/// runs.
pub(super) const SETTLE_CALL_COUNTS: usize = 14;

/// A `tool_calls` row as [`TOOL_CALL_QUERY`] reads it.
pub(super) struct ToolCallRow {
    pub tool_name: String,
    pub status: String,
    pub payload: Option<String>,
    pub expire_ms: Option<i64>,
    pub answer: Option<String>,
    pub answer_id: String,
    pub result_sequence: i64,
    pub suspend_kind: String,
    pub run_arguments: String,
    pub approval_reason: String,
    pub decision: Option<String>,
    pub assignees: Option<String>,
    pub suspended_ms: Option<i64>,
    pub continuation: Option<String>,
}

impl ToolCallRow {
    pub fn into_record(self, run_id: &str, tool_call_id: &str) -> StoreResult<ToolCallRecord> {
        Ok(ToolCallRecord {
            run_id: run_id.to_owned(),
            tool_call_id: tool_call_id.to_owned(),
            tool_name: self.tool_name,
            status: CallStatus::parse(&self.status)
                .ok_or_else(|| StoreError::Corrupt(format!("call status {}", self.status)))?,
            suspension: suspension_from(
                &self.suspend_kind,
                self.payload.as_deref(),
                self.run_arguments,
                self.approval_reason,
                self.assignees.as_deref(),
            )?,
            expire_ms: self.expire_ms,
            answer: self
                .answer
                .as_deref()
                .map(from_json::<AnswerInput>)
                .transpose()?,
            answer_id: self.answer_id,
            result_sequence: unsigned(self.result_sequence),
            decision: self.decision.as_deref().map(from_json).transpose()?,
            suspended_ms: self.suspended_ms,
            continuation: self.continuation,
        })
    }
}

/// An executing call from its id, tool, arguments, decision and continuation.
pub(super) fn executing_call(
    tool_call_id: String,
    tool_name: String,
    arguments_json: String,
    decision: Option<String>,
    continuation: Option<String>,
) -> StoreResult<ExecutingCall> {
    let decision: Option<Decision> = decision.as_deref().map(from_json).transpose()?;
    Ok(ExecutingCall {
        tool_call_id,
        tool_name,
        arguments_json,
        edited: matches!(
            decision,
            Some(Decision {
                decision: ApprovalDecision::Edit { .. },
                ..
            })
        ),
        approved_by: decision.and_then(|decision| decision.by),
        continuation,
    })
}

/// How many calls of run `$1` wait for someone, and how many the server is running.
pub(super) const CALL_COUNTS_QUERY: &str = "SELECT \
     COALESCE(SUM(CASE WHEN status = 'pending' THEN 1 ELSE 0 END), 0), \
     COALESCE(SUM(CASE WHEN status = 'executing' THEN 1 ELSE 0 END), 0) \
     FROM tool_calls WHERE run_id = $1 AND status IN ('pending', 'executing')";

/// The calls of run `$1` without a result (waiting or executing), in the order made.
pub(super) const UNSETTLED_QUERY: &str = "SELECT tool_call_id FROM tool_calls \
     WHERE run_id = $1 AND status IN ('pending', 'executing') ORDER BY turn, position";

/// Settles an executing call with its result; parameters in order of appearance.
pub(super) const EXECUTED_UPDATE: &str = "UPDATE tool_calls SET status = 'executed', \
     result_content = $1, result_is_error = $2, result_kind = 'executed', result_sequence = $3, \
     settled_by = $4, settled_ms = $5 WHERE run_id = $6 AND tool_call_id = $7 \
     AND status = 'executing'";

/// An executing call `$7`/`$8` made to wait for a person (its tool asked for input), with what it
/// goes on with once answered.
pub(super) const SUSPEND_EXECUTING_UPDATE: &str = "UPDATE tool_calls SET status = 'pending', \
     suspend_kind = $1, payload = $2, expire_ms = $3, assignees = $4, suspended_ms = $5, \
     continuation = $6, answer = NULL, answer_id = '' WHERE run_id = $7 AND tool_call_id = $8 \
     AND status = 'executing'";

/// The `tool_calls.settled_by` value of a settle: who, as JSON; NULL for nobody.
pub(super) fn settled_by_column(settled_by: Option<&SettledBy>) -> StoreResult<Option<String>> {
    settled_by.map(to_json).transpose()
}

/// Claims a pending call unless another claimant, or the same claimant name of another principal,
/// holds an unexpired claim; parameters in order of appearance: claimant, subject, until, run,
/// call, now. The call's tenant (its run's) is in the condition: see `settle::UPDATE_CALL`.
pub(super) const CLAIM_UPDATE: &str = "UPDATE tool_calls SET claimant = $1, claim_subject = $2, \
     claim_expires_ms = $3 WHERE run_id = $4 AND tool_call_id = $5 AND status = 'pending' \
     AND (claimant IS NULL OR (claimant = $1 AND claim_subject = $2) OR claim_expires_ms <= $6) \
     AND tenant = (SELECT tenant FROM runs WHERE run_id = $4)";

/// The claim of a call (`claimant`, `claim_expires_ms`) by run `$1` and id `$2`.
pub(super) const CLAIM_QUERY: &str =
    "SELECT claimant, claim_expires_ms FROM tool_calls WHERE run_id = $1 AND tool_call_id = $2";

/// Finished runs last updated before `$1`, at most `$2`: one batch of a prune.
pub(super) const PRUNABLE_RUNS_QUERY: &str = "SELECT run_id FROM runs \
     WHERE status IN ('completed', 'failed', 'cancelled') AND updated_ms < $1 LIMIT $2";

/// The tables a pruned run is deleted from, the runs last, after what refers to them.
pub(super) const PRUNED_TABLES: [&str; 5] = [
    "webhook_deliveries",
    "events",
    "tool_calls",
    "turns",
    "runs",
];

/// Runs still running or suspended that were created before `$1`, oldest first, at most `$2`.
pub(super) const UNFINISHED_BEFORE_QUERY: &str = "SELECT run_id FROM runs \
     WHERE status IN ('running', 'suspended') AND created_ms < $1 ORDER BY created_ms LIMIT $2";

/// The query that reads a run's turns for its transcript.
pub(super) const TURNS_QUERY: &str = "SELECT turn, text FROM turns WHERE run_id = $1 ORDER BY turn";

/// Every call of run `$1`, in the order made, with all a step reads of it: its part of the
/// transcript ([`TranscriptCall`], the first seven columns), whether it waits and whether the
/// server runs it ([`STEP_CALL_WAITS`], [`STEP_CALL_EXECUTES`]), the decision and continuation of
/// one the server runs, then [`PENDING_COLUMNS`] from [`STEP_CALL_PENDING`] on (the payload only
/// of a waiting call). One statement where a step read three: the transcript's calls, the
/// waiting ones and the executing ones (two statements fewer per round trip; on PostgreSQL, each
/// is a message, a plan's start and a reply).
pub(super) const STEP_CALLS_QUERY: &str = "SELECT turn, tool_call_id, tool_name, arguments_json, \
     result_content, result_kind, result_is_error, status = 'pending', status = 'executing', \
     decision, continuation, tool_call_id, tool_name, \
     CASE WHEN status = 'pending' THEN payload END, expire_ms, suspend_kind, run_arguments, \
     approval_reason, claimant, claim_expires_ms, assignees, suspended_ms \
     FROM tool_calls WHERE run_id = $1 ORDER BY turn, position";

/// Columns of [`STEP_CALLS_QUERY`]: whether the call waits, whether the server runs it, its
/// decision and continuation (read for one the server runs), and the first of the
/// [`PENDING_COLUMNS`] (read for one that waits; its arguments are the sixth of them).
pub(super) const STEP_CALL_WAITS: usize = 7;
pub(super) const STEP_CALL_EXECUTES: usize = 8;
pub(super) const STEP_CALL_DECISION: usize = 9;
pub(super) const STEP_CALL_CONTINUATION: usize = 10;
pub(super) const STEP_CALL_PENDING: usize = 11;
pub(super) const STEP_CALL_ARGUMENTS: usize = STEP_CALL_PENDING + 5;

/// A step's calls as [`STEP_CALLS_QUERY`] reads them, each in the order made.
#[derive(Default)]
pub(super) struct StepCalls {
    /// Every call, for the transcript.
    pub transcript: Vec<TranscriptCall>,
    /// The calls that wait for someone.
    pub pending: Vec<PendingCall>,
    /// The calls the server runs.
    pub executing: Vec<ExecutingCall>,
}

/// A `tool_calls` row as the transcript reads it (the first columns of [`STEP_CALLS_QUERY`]).
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
            settled: Vec::new(),
            run_tools: run.run_tools,
            usage: None,
        },
        step_attempt: 0,
        // The creator takes the lease to run the first step.
        step_starts: 1,
        executing: Vec::new(),
        trace_context: run.trace_context,
        request: run.request,
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
    /// Its webhook plan (`runs.webhooks`), which decides the deliveries its events make.
    pub webhooks: Option<String>,
    pub agent_id: String,
    pub tenant: String,
}

impl RunHead {
    /// The head from the columns of [`RUN_HEAD_QUERY`], in order.
    pub fn from_columns(
        status: &str,
        last_sequence: i64,
        turns: i64,
        lease_owner: Option<String>,
        webhooks: Option<String>,
        (agent_id, tenant): (String, String),
    ) -> StoreResult<Self> {
        Ok(RunHead {
            status: parse_status(status)?,
            last_sequence: unsigned(last_sequence),
            turns: u32::try_from(turns).unwrap_or(u32::MAX),
            lease_owner,
            webhooks,
            agent_id,
            tenant,
        })
    }

    /// Whether a step of `owner` that started at `expected_turns` may still write: the run is
    /// still running at that turn and `owner` still holds its lease.
    pub fn admits_step(&self, owner: &str, expected_turns: u32) -> bool {
        self.status == RunStatus::Running
            && self.turns == expected_turns
            && self.lease_owner.as_deref() == Some(owner)
    }
}

/// The columns of `api_keys` that make an [`ApiKeyRecord`], in this order.
const KEY_COLUMNS: &str = "key_id, tenant, name, scopes, created_ms, revoked_ms";

pub(super) const INSERT_KEY: &str = "INSERT INTO api_keys \
     (key_id, tenant, name, scopes, secret_hash, created_ms) VALUES ($1, $2, $3, $4, $5, $6)";
/// The keys of tenant `$1` (every tenant's when NULL).
pub(super) static LIST_KEYS_QUERY: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {KEY_COLUMNS} FROM api_keys WHERE (CAST($1 AS TEXT) IS NULL OR tenant = $1) \
         ORDER BY created_ms, key_id"
    )
});
pub(super) static KEY_BY_HASH_QUERY: LazyLock<String> =
    LazyLock::new(|| format!("SELECT {KEY_COLUMNS} FROM api_keys WHERE secret_hash = $1"));
/// `$1` the time, `$2` the key, `$3` its tenant (any when NULL); SQLite numbers parameters in the
/// order they first appear.
pub(super) const REVOKE_KEY: &str = "UPDATE api_keys SET revoked_ms = $1 WHERE key_id = $2 \
     AND revoked_ms IS NULL AND (CAST($3 AS TEXT) IS NULL OR tenant = $3)";

/// How many runs tenant `$1` holds.
pub(super) const COUNT_TENANT_RUNS: &str = "SELECT COUNT(*) FROM runs WHERE tenant = $1";
/// The runs of tenant `$2` that move to tenant `$1`: all but those whose start's request id `$1`
/// uses already (a request id is unique within its tenant). (`$1` first: SQLite numbers
/// parameters in the order they first appear.)
macro_rules! moving_runs {
    () => {
        "tenant = $2 AND (request_id IS NULL OR request_id NOT IN \
         (SELECT request_id FROM runs WHERE tenant = $1 AND request_id IS NOT NULL))"
    };
}

/// Moves the calls of the runs that [`MOVE_TENANT_RUNS`] moves, before it (each call carries its
/// run's tenant): the same statement on both stores, in the same transaction as the runs'.
pub(super) const MOVE_TENANT_CALLS: &str = concat!(
    "UPDATE tool_calls SET tenant = $1 WHERE run_id IN (SELECT run_id FROM runs WHERE ",
    moving_runs!(),
    ")"
);

/// Moves the runs of tenant `$2` to tenant `$1` (after their calls: [`MOVE_TENANT_CALLS`]).
pub(super) const MOVE_TENANT_RUNS: &str =
    concat!("UPDATE runs SET tenant = $1 WHERE ", moving_runs!());

/// Scopes as `api_keys.scopes` keeps them: their names, space-separated.
pub(super) fn scopes_text(scopes: &[Scope]) -> String {
    scopes
        .iter()
        .map(|scope| scope.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A row of [`KEY_COLUMNS`], as either store reads it.
pub(super) struct KeyRow {
    pub key_id: String,
    pub tenant: String,
    pub name: String,
    pub scopes: String,
    pub created_ms: i64,
    pub revoked_ms: Option<i64>,
}

impl KeyRow {
    pub fn into_record(self) -> StoreResult<ApiKeyRecord> {
        let scopes = self
            .scopes
            .split_whitespace()
            .map(|name| {
                Scope::parse(name).ok_or_else(|| StoreError::Corrupt(format!("key scope {name}")))
            })
            .collect::<StoreResult<_>>()?;
        Ok(ApiKeyRecord {
            key_id: self.key_id,
            tenant: self.tenant,
            name: self.name,
            scopes,
            created_ms: self.created_ms,
            revoked_ms: self.revoked_ms,
        })
    }
}
