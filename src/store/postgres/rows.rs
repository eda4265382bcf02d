//! What PostgreSQL's operations read and write: row mappers, the reads under a run's lock, and
//! the batch inserts (`UNNEST`) of events, deliveries and calls, and a step's state.

use super::*;
use crate::domain::SettledCall;
use crate::store::ops::calls::CallRow;

/// The row of a prepared query whose one parameter is a run's id, if any.
pub(super) async fn row_of_run(
    client: &impl GenericClient,
    statement: &Statement,
    run_id: &str,
) -> StoreResult<Option<Row>> {
    Ok(client.query_opt(statement, &[&run_id]).await?)
}

/// The rows of a prepared query whose one parameter is a run's id.
pub(super) async fn rows_of_run(
    client: &impl GenericClient,
    statement: &Statement,
    run_id: &str,
) -> StoreResult<Vec<Row>> {
    Ok(client.query(statement, &[&run_id]).await?)
}

/// Inserts a run's events of one time, their sequences and JSON bodies as two arrays.
pub(super) const INSERT_EVENTS: &str = "INSERT INTO events (run_id, sequence, time_ms, body) \
     SELECT $1::TEXT, sequence, $2::BIGINT, body FROM UNNEST($3::BIGINT[], $4::TEXT[]) \
     AS event (sequence, body)";

/// Inserts webhook deliveries ([`DeliveryInsert`]) of one time (`$1`) as arrays, one per column.
pub(super) const INSERT_DELIVERIES: &str = "INSERT INTO webhook_deliveries (webhook_id, run_id, sequence, \
     event_type, subscription, tool_call_id, reminder_permille, status, created_ms, \
     pending_since_ms, next_attempt_ms) SELECT webhook_id, run_id, sequence, event_type, \
     subscription, tool_call_id, reminder_permille, 'pending', $1::BIGINT, $1::BIGINT, due_ms \
     FROM UNNEST($2::TEXT[], $3::TEXT[], $4::BIGINT[], $5::TEXT[], $6::BIGINT[], $7::TEXT[], \
     $8::BIGINT[], $9::BIGINT[]) AS delivery (webhook_id, run_id, sequence, event_type, \
     subscription, tool_call_id, reminder_permille, due_ms)";

/// Takes or renews the lease of a running run unless another owner holds an unexpired one.
/// Expiry is judged by the database's clock.
pub(super) const TAKE_LEASE: &str = "UPDATE runs SET lease_owner = $2, lease_expires_ms = $3 \
     WHERE run_id = $1 AND status = 'running' AND (lease_owner IS NULL OR lease_owner = $2 \
     OR lease_expires_ms < (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT)";

/// [`TAKE_LEASE`] to start the run's next step: counts the start.
pub(super) static TAKE_STEP_LEASE: LazyLock<String> =
    LazyLock::new(|| counting_step_start(TAKE_LEASE));

/// Sends a commit's notice on channel `$1` with payload `$2` if run `$3` has reached sequence `$4`
/// (its commit went through), as a transaction of its own: see [`TxClient::commit_announcing`].
/// PostgreSQL 15 writes nothing to flush for a transaction that only notifies; `set_config` makes
/// sure its commit waits for no flush should a version write one.
pub(super) const NOTIFY: &str = "SELECT pg_notify($1, $2), \
     set_config('synchronous_commit', 'off', true) \
     FROM runs WHERE run_id = $3 AND last_sequence >= $4";

pub(super) fn run_row(row: &Row) -> RunRow {
    RunRow {
        run_id: row.get(0),
        agent_id: row.get(1),
        status: row.get(2),
        prompt: row.get(3),
        metadata: row.get(4),
        output_text: row.get(5),
        error_message: row.get(6),
        last_sequence: row.get(7),
        turns: row.get(8),
        question_ttl_ms: row.get(9),
        created_ms: row.get(10),
        updated_ms: row.get(11),
        run_tools: row.get(12),
        input_tokens: row.get(13),
        output_tokens: row.get(14),
    }
}

/// A [`PendingRow`] from its columns ([`PENDING_COLUMNS`]), starting at `first`, its text
/// borrowed from the row: a call copies only the strings it keeps.
pub(super) fn pending_row(row: &Row, first: usize) -> PendingRow<&str> {
    PendingRow {
        tool_call_id: row.get(first),
        tool_name: row.get(first + 1),
        payload: row.get(first + 2),
        expire_ms: row.get(first + 3),
        suspend_kind: row.get(first + 4),
        run_arguments: row.get(first + 5),
        approval_reason: row.get(first + 6),
        claimant: row.get(first + 7),
        claim_expires_ms: row.get(first + 8),
        assignees: row.get(first + 9),
        suspended_ms: row.get(first + 10),
    }
}

pub(super) fn pending_calls(rows: &[Row]) -> StoreResult<Vec<PendingCall>> {
    rows.iter()
        .map(|row| pending_row(row, 0).into_pending())
        .collect()
}

/// A call as [`TOOL_CALL_QUERY`] reads it.
pub(super) fn tool_call_record(
    row: &Row,
    run_id: &str,
    tool_call_id: &str,
) -> StoreResult<ToolCallRecord> {
    ToolCallRow {
        tool_name: row.get(0),
        status: row.get(1),
        payload: row.get(2),
        expire_ms: row.get(3),
        answer: row.get(4),
        answer_id: row.get(5),
        result_sequence: row.get(6),
        suspend_kind: row.get(7),
        run_arguments: row.get(8),
        approval_reason: row.get(9),
        decision: row.get(10),
        assignees: row.get(11),
        suspended_ms: row.get(12),
        continuation: row.get(13),
    }
    .into_record(run_id, tool_call_id)
}

pub(super) async fn fetch_tool_call(
    client: &impl GenericClient,
    statement: &Statement,
    run_id: &str,
    tool_call_id: &str,
) -> StoreResult<Option<Row>> {
    Ok(client
        .query_opt(statement, &[&run_id, &tool_call_id])
        .await?)
}

/// Locks a run's row ([`LOCK_RUN`]) and reads its head; `None` when there is no such run (of
/// `tenant`, when given).
pub(super) async fn lock_run(
    client: &impl GenericClient,
    statement: &Statement,
    run_id: &str,
    tenant: Option<&str>,
) -> StoreResult<Option<RunHead>> {
    client
        .query_opt(statement, &[&run_id, &tenant])
        .await?
        .map(|row| {
            RunHead::from_columns(
                row.get(0),
                row.get(1),
                row.get(2),
                row.get(3),
                row.get(4),
                (row.get(5), row.get(6)),
            )
        })
        .transpose()
}

/// Whether the run belongs to the tenant ([`RUN_IN_TENANT`]); any run does for [`Tenancy::Any`].
pub(super) async fn run_in_tenant(
    client: &impl GenericClient,
    run_id: &str,
    tenancy: Tenancy<'_>,
) -> StoreResult<bool> {
    if tenancy == Tenancy::Any {
        return Ok(true);
    }
    let [query] = prepare(client, [RUN_IN_TENANT]).await?;
    Ok(client
        .query_opt(&query, &[&run_id, &tenancy.param()])
        .await?
        .is_some())
}

/// How many of the run's calls wait for someone, and how many the server runs.
pub(super) async fn call_counts(
    client: &impl GenericClient,
    statement: &Statement,
    run_id: &str,
) -> StoreResult<(i64, i64)> {
    let row = client.query_one(statement, &[&run_id]).await?;
    Ok((row.get(0), row.get(1)))
}

/// Inserts events of one run and time ([`new_events`]) with one statement ([`INSERT_EVENTS`]),
/// and the webhook deliveries they make for a run whose plan is `webhooks` (`runs.webhooks`) with
/// another ([`INSERT_DELIVERIES`]): both are sent at once, in the flight of the transaction.
pub(super) async fn insert_events(
    client: &impl GenericClient,
    [events_insert, deliveries_insert]: [&Statement; 2],
    webhooks: Option<&str>,
    events: &[Event],
) -> StoreResult<()> {
    let Some(first) = events.first() else {
        return Ok(());
    };
    let sequences: Vec<i64> = events.iter().map(|e| e.sequence as i64).collect();
    let bodies = events
        .iter()
        .map(|e| to_json(&e.kind))
        .collect::<StoreResult<Vec<_>>>()?;
    let deliveries = deliveries_of(webhooks, events)?;
    let rows: Vec<DeliveryInsert<'_>> = deliveries.iter().map(DeliveryInsert::new).collect();
    let column = |value: fn(&DeliveryInsert<'_>) -> Option<String>| -> Vec<Option<String>> {
        rows.iter().map(value).collect()
    };
    let number = |value: fn(&DeliveryInsert<'_>) -> Option<i64>| -> Vec<Option<i64>> {
        rows.iter().map(value).collect()
    };
    let event_params: [&(dyn ToSql + Sync); 4] =
        [&first.run_id, &first.time_ms, &sequences, &bodies];
    let columns = (
        column(|d| Some(d.webhook_id.to_owned())),
        column(|d| Some(d.run_id.to_owned())),
        number(|d| Some(d.sequence)),
        column(|d| Some(d.event_type.to_owned())),
        number(|d| Some(d.subscription)),
        column(|d| d.tool_call_id.map(str::to_owned)),
        number(|d| d.reminder_permille),
        number(|d| Some(d.due_ms)),
    );
    let delivery_params: [&(dyn ToSql + Sync); 9] = [
        &first.time_ms,
        &columns.0,
        &columns.1,
        &columns.2,
        &columns.3,
        &columns.4,
        &columns.5,
        &columns.6,
        &columns.7,
    ];
    try_join!(exec(client, events_insert, &event_params), async {
        match rows.is_empty() {
            true => Ok(0),
            false => exec(client, deliveries_insert, &delivery_params).await,
        }
    },)?;
    Ok(())
}

/// [`TAKE_LEASE`]: whether `lease.owner` holds the lease now.
pub(super) async fn take_lease(
    client: &impl GenericClient,
    statement: &Statement,
    run_id: &str,
    lease: Lease<'_>,
) -> StoreResult<bool> {
    let taken = exec(client, statement, &[&run_id, &lease.owner, &lease.until_ms]).await?;
    Ok(taken == 1)
}

/// The statements that read a step's state, and take the run's lease first when asked to.
pub(super) struct StepStatements {
    take_lease: Statement,
    run: Statement,
    turns: Statement,
    calls: Statement,
}

impl StepStatements {
    pub(super) async fn prepare(client: &impl GenericClient) -> StoreResult<Self> {
        let [take_lease, run, turns, calls] = prepare(
            client,
            [
                TAKE_STEP_LEASE.as_str(),
                STEP_RUN_QUERY.as_str(),
                TURNS_QUERY,
                STEP_CALLS_QUERY,
            ],
        )
        .await?;
        Ok(Self {
            take_lease,
            run,
            turns,
            calls,
        })
    }
}

/// The rows a step's state is made of.
pub(super) struct StepRows {
    run: Option<Row>,
    turns: Vec<Row>,
    calls: Vec<Row>,
}

/// Reads a step's rows in one flight; within a transaction, so that its statements agree.
pub(super) async fn fetch_step(
    client: &impl GenericClient,
    statements: &StepStatements,
    run_id: &str,
) -> StoreResult<StepRows> {
    let (run, turns, calls) = try_join!(
        row_of_run(client, &statements.run, run_id),
        rows_of_run(client, &statements.turns, run_id),
        rows_of_run(client, &statements.calls, run_id),
    )?;
    Ok(StepRows { run, turns, calls })
}

/// A step's calls from the rows of [`STEP_CALLS_QUERY`].
fn step_calls(rows: &[Row]) -> StoreResult<StepCalls> {
    let mut calls = StepCalls::default();
    for row in rows {
        if row.get(STEP_CALL_WAITS) {
            calls
                .pending
                .push(pending_row(row, STEP_CALL_PENDING).into_pending()?);
        } else if row.get(STEP_CALL_EXECUTES) {
            calls.executing.push(executing_call(
                row.get(1),
                row.get(2),
                row.get(STEP_CALL_ARGUMENTS),
                row.get(STEP_CALL_DECISION),
                row.get(STEP_CALL_CONTINUATION),
            )?);
        }
        calls.transcript.push(TranscriptCall {
            turn: row.get(0),
            tool_call_id: row.get(1),
            tool_name: row.get(2),
            arguments_json: row.get(3),
            result_content: row.get(4),
            result_kind: row.get(5),
            result_is_error: row.get(6),
        });
    }
    Ok(calls)
}

impl StepRows {
    /// The state a step of the run starts from; `None` when there is no such run.
    pub(super) fn into_step(self) -> StoreResult<Option<StepState>> {
        let Some(row) = self.run else {
            return Ok(None);
        };
        let step_attempt: i64 = row.get(AFTER_RUN_COLUMNS);
        let calls = step_calls(&self.calls)?;
        let run = run_row(&row).into_record(calls.pending)?;
        let turns: Vec<(i64, String)> = self
            .turns
            .iter()
            .map(|row| (row.get(0), row.get(1)))
            .collect();
        let transcript = assemble_transcript(&run.prompt, turns, &calls.transcript)?;
        Ok(Some(StepState {
            run,
            transcript,
            step_attempt: u32::try_from(step_attempt).unwrap_or(0),
            step_starts: u32::try_from(row.get::<_, i64>(AFTER_RUN_COLUMNS + 1))
                .unwrap_or(u32::MAX),
            trace_context: row.get(AFTER_RUN_COLUMNS + 2),
            request: row.get(AFTER_RUN_COLUMNS + 3),
            executing: calls.executing,
        }))
    }
}

/// The state a step of a run starts from; `None` when there is no such run. With `lease`, takes
/// it first and reads nothing (`None`) unless that succeeded: the reads go in the same flight,
/// after it, and are dropped when the lease was not taken.
pub(super) async fn read_step(
    client: &impl GenericClient,
    statements: &StepStatements,
    run_id: &str,
    lease: Option<Lease<'_>>,
) -> StoreResult<Option<StepState>> {
    let Some(lease) = lease else {
        return fetch_step(client, statements, run_id).await?.into_step();
    };
    let (taken, rows) = try_join!(
        take_lease(client, &statements.take_lease, run_id, lease),
        fetch_step(client, statements, run_id),
    )?;
    if taken { rows.into_step() } else { Ok(None) }
}

/// Inserts a turn's calls, each column but the run's, the turn's and the run's owner's (tenant and
/// agent) as an array.
pub(super) const INSERT_CALLS: &str = "INSERT INTO tool_calls (run_id, turn, tool_call_id, position, \
     tool_name, arguments_json, status, payload, expire_ms, result_content, result_is_error, \
     result_kind, result_sequence, suspend_kind, run_arguments, approval_reason, assignees, \
     suspended_ms, tenant, agent_id) SELECT $1::TEXT, $2::BIGINT, *, $19::TEXT, $20::TEXT \
     FROM UNNEST($3::TEXT[], $4::BIGINT[], $5::TEXT[], $6::TEXT[], $7::TEXT[], $8::TEXT[], \
     $9::BIGINT[], $10::TEXT[], $11::BOOLEAN[], $12::TEXT[], $13::BIGINT[], $14::TEXT[], \
     $15::TEXT[], $16::TEXT[], $17::TEXT[], $18::BIGINT[])";

/// Inserts a turn's calls ([`CallRow`]) with one statement ([`INSERT_CALLS`]).
pub(super) async fn insert_calls(
    client: &impl GenericClient,
    statement: &Statement,
    run_id: &str,
    turn: i64,
    (tenant, agent_id): &(String, String),
    calls: &[CallRow<'_>],
) -> StoreResult<()> {
    if calls.is_empty() {
        return Ok(());
    }
    /// One column of the calls, as an array.
    fn column<'c, 'a, T>(calls: &'c [CallRow<'a>], value: impl Fn(&'c CallRow<'a>) -> T) -> Vec<T> {
        calls.iter().map(value).collect()
    }
    exec(
        client,
        statement,
        &[
            &run_id,
            &turn,
            &column(calls, |c| c.call.tool_call_id.as_str()),
            &column(calls, |c| c.position),
            &column(calls, |c| c.call.tool_name.as_str()),
            &column(calls, |c| c.call.arguments_json.as_str()),
            &column(calls, |c| c.status.as_str()),
            &column(calls, |c| c.payload.as_deref()),
            &column(calls, |c| c.expire_ms),
            &column(calls, |c| c.content),
            &column(calls, |c| c.is_error),
            &column(calls, |c| c.kind.as_deref()),
            &column(calls, |c| c.result_sequence),
            &column(calls, |c| c.suspend_kind),
            &column(calls, |c| c.run_arguments),
            &column(calls, |c| c.approval_reason),
            &column(calls, |c| c.assignees.as_deref()),
            &column(calls, |c| c.suspended_ms),
            tenant,
            agent_id,
        ],
    )
    .await?;
    Ok(())
}

/// The settled calls of a run, as [`SETTLED_QUERY`] reads them.
pub(super) fn settled_calls(rows: &[Row]) -> StoreResult<Vec<SettledCall>> {
    rows.iter()
        .map(|row| {
            SettledRow {
                tool_call_id: row.get(0),
                tool_name: row.get(1),
                result_kind: row.get(2),
                settled_by: row.get(3),
                settled_ms: row.get(4),
                result_sequence: row.get(5),
                suspended_ms: row.get(6),
                result_content: row.get(7),
                answer: row.get(8),
                decision: row.get(9),
            }
            .into_settled()
        })
        .collect()
}

/// The pending calls of the runs `run_ids`, whose tenants are `tenants`, by run, with one query.
///
/// Each run's calls are one range of `tool_calls_pending` (tenant, run id), looked up run by run
/// whatever the statistics. (As `run_id = ANY($1) AND status = 'pending'`, the planner of tables
/// not yet analyzed read every pending call of the tenant for each page of a listing.)
pub(super) async fn pending_of_runs(
    client: &impl GenericClient,
    run_ids: &[String],
    tenants: &[String],
) -> StoreResult<HashMap<String, Vec<PendingCall>>> {
    let mut pending: HashMap<String, Vec<PendingCall>> = HashMap::new();
    // [`PENDING_COLUMNS`] first, then the run's id.
    for row in select(client, &PENDING_OF_RUNS_QUERY, &[&run_ids, &tenants]).await? {
        pending
            .entry(row.get(11))
            .or_default()
            .push(pending_row(&row, 0).into_pending()?);
    }
    Ok(pending)
}

/// The query of [`pending_of_runs`]. `OFFSET 0` keeps the lookup of each run's calls a subquery
/// of its own, an index search by (tenant, run), rather than one join the planner might make a
/// hash of every pending call.
static PENDING_OF_RUNS_QUERY: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {PENDING_COLUMNS}, run_id FROM unnest($1::TEXT[], $2::TEXT[]) \
         AS owner(owner_run, owner_tenant) CROSS JOIN LATERAL \
         (SELECT {PENDING_COLUMNS}, run_id, turn, position FROM tool_calls \
         WHERE tenant = owner_tenant AND run_id = owner_run AND status = 'pending' OFFSET 0) calls \
         ORDER BY turn, position"
    )
});
