//! What SQLite's operations read and write row by row: the readers of runs, calls, transcripts
//! and steps, the writers of events and plan statements, and the lease statements.

use super::*;

pub(super) fn read_run_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<RunRow> {
    Ok(RunRow {
        run_id: row.get(0)?,
        agent_id: row.get(1)?,
        status: row.get(2)?,
        prompt: row.get(3)?,
        metadata: row.get(4)?,
        output_text: row.get(5)?,
        error_message: row.get(6)?,
        last_sequence: row.get(7)?,
        turns: row.get(8)?,
        question_ttl_ms: row.get(9)?,
        created_ms: row.get(10)?,
        updated_ms: row.get(11)?,
        run_tools: row.get(12)?,
        input_tokens: row.get(13)?,
        output_tokens: row.get(14)?,
    })
}

/// Run `run_id` if it belongs to `tenant` (to any tenant when `None`).
pub(super) fn load_run(
    conn: &Db<'_>,
    run_id: &str,
    tenant: Option<&str>,
) -> StoreResult<Option<RunRecord>> {
    let raw = conn
        .statement(&RUN_QUERY)?
        .query_row(params![run_id, tenant], read_run_row)
        .optional()?;
    let Some(raw) = raw else {
        return Ok(None);
    };
    let pending = load_pending(conn, run_id)?;
    let settled: Vec<SettledRow> = conn
        .statement(SETTLED_QUERY)?
        .query_map(params![run_id, tenant], |row| {
            Ok(SettledRow {
                tool_call_id: row.get(0)?,
                tool_name: row.get(1)?,
                result_kind: row.get(2)?,
                settled_by: row.get(3)?,
                settled_ms: row.get(4)?,
                result_sequence: row.get(5)?,
                suspended_ms: row.get(6)?,
                result_content: row.get(7)?,
                answer: row.get(8)?,
                decision: row.get(9)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    let mut run = raw.into_record(pending)?;
    run.settled = settled
        .into_iter()
        .map(SettledRow::into_settled)
        .collect::<StoreResult<_>>()?;
    Ok(Some(run))
}

/// A [`PendingRow`] from its columns, starting at `first`.
pub(super) fn read_pending_row(
    row: &rusqlite::Row<'_>,
    first: usize,
) -> rusqlite::Result<PendingRow> {
    Ok(PendingRow {
        tool_call_id: row.get(first)?,
        tool_name: row.get(first + 1)?,
        payload: row.get(first + 2)?,
        expire_ms: row.get(first + 3)?,
        suspend_kind: row.get(first + 4)?,
        run_arguments: row.get(first + 5)?,
        approval_reason: row.get(first + 6)?,
        claimant: row.get(first + 7)?,
        claim_expires_ms: row.get(first + 8)?,
        assignees: row.get(first + 9)?,
        suspended_ms: row.get(first + 10)?,
    })
}

/// Whether the run belongs to `tenant` ([`RUN_IN_TENANT`]); any run does when `None`.
pub(super) fn run_in_tenant(
    conn: &Db<'_>,
    run_id: &str,
    tenant: Option<&str>,
) -> StoreResult<bool> {
    if tenant.is_none() {
        return Ok(true);
    }
    Ok(conn
        .statement(RUN_IN_TENANT)?
        .query_row(params![run_id, tenant], |_| Ok(()))
        .optional()?
        .is_some())
}

pub(super) fn load_pending(conn: &Db<'_>, run_id: &str) -> StoreResult<Vec<PendingCall>> {
    let rows: Vec<PendingRow> = conn
        .statement(&PENDING_QUERY)?
        .query_map([run_id], |row| read_pending_row(row, 0))?
        .collect::<Result<_, _>>()?;
    rows.into_iter().map(PendingRow::into_pending).collect()
}

/// The run's head ([`RUN_HEAD_QUERY`]); `None` when there is no such run (of `tenant`, when
/// given).
pub(super) fn run_head(
    conn: &Db<'_>,
    run_id: &str,
    tenant: Option<&str>,
) -> StoreResult<Option<RunHead>> {
    let row = conn
        .statement(RUN_HEAD_QUERY)?
        .query_row(params![run_id, tenant], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, i64>(1)?,
                row.get::<_, i64>(2)?,
                row.get::<_, Option<String>>(3)?,
                row.get::<_, Option<String>>(4)?,
                (row.get::<_, String>(5)?, row.get::<_, String>(6)?),
            ))
        })
        .optional()?;
    row.map(|(status, last, turns, lease_owner, webhooks, owner)| {
        RunHead::from_columns(&status, last, turns, lease_owner, webhooks, owner)
    })
    .transpose()
}

/// The pending calls ([`PENDING_COLUMNS`], then the run's id) of the runs whose ids are in the
/// JSON array `$1`, in the order made.
pub(super) static LISTED_PENDING_QUERY: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {PENDING_COLUMNS}, run_id FROM tool_calls \
         WHERE run_id IN (SELECT value FROM json_each($1)) AND status = 'pending' \
         ORDER BY turn, position"
    )
});

/// Runs a write of a plan.
pub(super) fn execute(conn: &Db<'_>, write: &Write) -> StoreResult<usize> {
    Ok(conn
        .statement(write.sql)?
        .execute(rusqlite::params_from_iter(&write.params))?)
}

/// Inserts events of one run, with the webhook deliveries they make for a run whose plan is
/// `webhooks` (`runs.webhooks`).
pub(super) fn insert_events(
    conn: &Db<'_>,
    webhooks: Option<&str>,
    events: &[Event],
) -> StoreResult<()> {
    let Some(first) = events.first() else {
        return Ok(());
    };
    let mut stmt = conn.statement(
        "INSERT INTO events (run_id, sequence, time_ms, body) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for event in events {
        stmt.execute(params![
            event.run_id,
            event.sequence as i64,
            event.time_ms,
            to_json(&event.kind)?
        ])?;
    }
    let mut insert = conn.statement(INSERT_DELIVERY)?;
    for delivery in deliveries_of(webhooks, events)? {
        let d = DeliveryInsert::new(&delivery);
        insert.execute(params![
            d.webhook_id,
            d.run_id,
            d.sequence,
            d.event_type,
            d.subscription,
            d.tool_call_id,
            d.reminder_permille,
            first.time_ms,
            d.due_ms
        ])?;
    }
    Ok(())
}

/// How many of the run's calls wait for someone, and how many the server runs.
pub(super) fn call_counts(conn: &Db<'_>, run_id: &str) -> StoreResult<(i64, i64)> {
    Ok(conn
        .statement(CALL_COUNTS_QUERY)?
        .query_row([run_id], |row| Ok((row.get(0)?, row.get(1)?)))?)
}

/// A call's columns ([`TOOL_CALL_QUERY`]'s), the first of `row`.
fn read_tool_call_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<ToolCallRow> {
    Ok(ToolCallRow {
        tool_name: row.get(0)?,
        status: row.get(1)?,
        payload: row.get(2)?,
        expire_ms: row.get(3)?,
        answer: row.get(4)?,
        answer_id: row.get(5)?,
        result_sequence: row.get(6)?,
        suspend_kind: row.get(7)?,
        run_arguments: row.get(8)?,
        approval_reason: row.get(9)?,
        decision: row.get(10)?,
        assignees: row.get(11)?,
        suspended_ms: row.get(12)?,
        continuation: row.get(13)?,
    })
}

pub(super) fn load_tool_call(
    conn: &Db<'_>,
    run_id: &str,
    tool_call_id: &str,
) -> StoreResult<Option<ToolCallRecord>> {
    conn.statement(TOOL_CALL_QUERY)?
        .query_row([run_id, tool_call_id], read_tool_call_row)
        .optional()?
        .map(|row| row.into_record(run_id, tool_call_id))
        .transpose()
}

/// What a settle reads of its call ([`SETTLE_CALL_QUERY`]): the call (`None`: no such call), and
/// how many of the run's calls wait for someone and how many the server runs (none when there is
/// no such call: a settle of it changes nothing).
pub(super) fn load_settled_call(
    conn: &Db<'_>,
    run_id: &str,
    tool_call_id: &str,
) -> StoreResult<(Option<ToolCallRecord>, (i64, i64))> {
    let Some((row, counts)) = conn
        .statement(&SETTLE_CALL_QUERY)?
        .query_row([run_id, tool_call_id], |row| {
            Ok((
                read_tool_call_row(row)?,
                (
                    row.get(SETTLE_CALL_COUNTS)?,
                    row.get(SETTLE_CALL_COUNTS + 1)?,
                ),
            ))
        })
        .optional()?
    else {
        return Ok((None, (0, 0)));
    };
    Ok((Some(row.into_record(run_id, tool_call_id)?), counts))
}

/// A step's calls ([`STEP_CALLS_QUERY`]): the transcript's, the waiting ones and the executing
/// ones, in the order made.
fn read_step_calls(conn: &Db<'_>, run_id: &str) -> StoreResult<StepCalls> {
    let mut calls = StepCalls::default();
    let mut statement = conn.statement(STEP_CALLS_QUERY)?;
    let mut rows = statement.query([run_id])?;
    while let Some(row) = rows.next()? {
        if row.get(STEP_CALL_WAITS)? {
            calls
                .pending
                .push(read_pending_row(row, STEP_CALL_PENDING)?.into_pending()?);
        } else if row.get(STEP_CALL_EXECUTES)? {
            calls.executing.push(executing_call(
                row.get(1)?,
                row.get(2)?,
                row.get(STEP_CALL_ARGUMENTS)?,
                row.get(STEP_CALL_DECISION)?,
                row.get(STEP_CALL_CONTINUATION)?,
            )?);
        }
        calls.transcript.push(TranscriptCall {
            turn: row.get(0)?,
            tool_call_id: row.get(1)?,
            tool_name: row.get(2)?,
            arguments_json: row.get(3)?,
            result_content: row.get(4)?,
            result_kind: row.get(5)?,
            result_is_error: row.get(6)?,
        });
    }
    Ok(calls)
}

/// The state a step of a run starts from; `None` when there is no such run.
pub(super) fn read_step(conn: &Db<'_>, run_id: &str) -> StoreResult<Option<StepState>> {
    let row = conn
        .statement(&STEP_RUN_QUERY)?
        .query_row([run_id], |row| {
            Ok((
                read_run_row(row)?,
                row.get::<_, i64>(AFTER_RUN_COLUMNS)?,
                row.get::<_, i64>(AFTER_RUN_COLUMNS + 1)?,
                row.get(AFTER_RUN_COLUMNS + 2)?,
                row.get(AFTER_RUN_COLUMNS + 3)?,
            ))
        })
        .optional()?;
    let Some((raw, step_attempt, step_starts, trace_context, request)) = row else {
        return Ok(None);
    };
    let calls = read_step_calls(conn, run_id)?;
    let run = raw.into_record(calls.pending)?;
    let turns: Vec<(i64, String)> = conn
        .statement(TURNS_QUERY)?
        .query_map([run_id], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let transcript = assemble_transcript(&run.prompt, turns, &calls.transcript)?;
    Ok(Some(StepState {
        run,
        transcript,
        step_attempt: u32::try_from(step_attempt).unwrap_or(0),
        step_starts: u32::try_from(step_starts).unwrap_or(u32::MAX),
        executing: calls.executing,
        trace_context,
        request,
    }))
}

/// Takes or renews the lease of a running run unless another owner holds an unexpired one.
pub(super) const TAKE_LEASE: &str = "UPDATE runs SET lease_owner = ?2, lease_expires_ms = ?3 WHERE run_id = ?1 \
     AND status = 'running' AND (lease_owner IS NULL OR lease_owner = ?2 OR lease_expires_ms < ?4)";

pub(super) static TAKE_STEP_LEASE: LazyLock<String> =
    LazyLock::new(|| counting_step_start(TAKE_LEASE));

/// Takes or renews the lease of a running run unless another owner holds an unexpired one.
pub(super) fn take_lease(
    conn: &Db<'_>,
    run_id: &str,
    owner: &str,
    until_ms: i64,
) -> StoreResult<bool> {
    lease_statement(conn, TAKE_LEASE, run_id, owner, until_ms)
}

/// [`take_lease`] to start the run's next step: counts the start.
pub(super) fn take_step_lease(
    conn: &Db<'_>,
    run_id: &str,
    owner: &str,
    until_ms: i64,
) -> StoreResult<bool> {
    lease_statement(conn, &TAKE_STEP_LEASE, run_id, owner, until_ms)
}

pub(super) fn lease_statement(
    conn: &Db<'_>,
    sql: &'static str,
    run_id: &str,
    owner: &str,
    until_ms: i64,
) -> StoreResult<bool> {
    let taken = conn
        .statement(sql)?
        .execute(params![run_id, owner, until_ms, now_millis()])?;
    Ok(taken == 1)
}
