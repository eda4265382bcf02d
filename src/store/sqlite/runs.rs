//! SQLite's runs: creating, reading, listing, stepping, cancelling and pruning them, and their leases ([`RunTable`]).

use async_trait::async_trait;

use super::*;

#[async_trait]
impl RunTable for SqliteStore {
    async fn create_run(&self, run: NewRun, by: Option<Lease<'_>>) -> StoreResult<CreateOutcome> {
        let lease = by.map(|lease| (lease.owner.to_owned(), lease.until_ms));
        self.db
            .commit("create_run", move |conn| {
                if let Some(request_id) = &run.request_id {
                    let existing: Option<String> = conn
                        .statement(RUN_OF_REQUEST_QUERY)?
                        .query_row([&run.tenant, request_id], |row| row.get(0))
                        .optional()?;
                    if let Some(run_id) = existing {
                        return Ok(CreateOutcome::Existing { run_id });
                    }
                }
                let lease = lease.as_ref().map(|(owner, until_ms)| Lease {
                    owner,
                    until_ms: *until_ms,
                });
                let plan = create::plan(run, lease, now_millis())?;
                execute(conn, &plan.run_insert)?;
                insert_events(conn, plan.webhooks.as_deref(), &plan.events)?;
                Ok(plan.outcome())
            })
            .await
    }

    async fn get_run(&self, run_id: &str, tenancy: Tenancy<'_>) -> StoreResult<Option<RunRecord>> {
        let (run_id, tenant) = (run_id.to_owned(), tenancy.param());
        self.readers
            .run(move |conn| load_run(conn, &run_id, tenant.as_deref()))
            .await
    }

    async fn list_runs(&self, query: RunQuery) -> StoreResult<Vec<RunRecord>> {
        self.readers
            .run(move |conn| {
                let (sql, args) = list_runs_query(&query, Dialect::Sqlite)?;
                let raws: Vec<RunRow> = conn
                    .prepare_cached(&sql)?
                    .query_map(rusqlite::params_from_iter(args.iter()), read_run_row)?
                    .collect::<Result<_, _>>()?;
                if raws.is_empty() {
                    return Ok(Vec::new());
                }
                // The pending calls of every run listed, with one query; [`PENDING_COLUMNS`] first.
                let run_ids = to_json(&raws.iter().map(|raw| &raw.run_id).collect::<Vec<_>>())?;
                let rows: Vec<(String, PendingRow)> = conn
                    .statement(&LISTED_PENDING_QUERY)?
                    .query_map([run_ids], |row| {
                        Ok((row.get(11)?, read_pending_row(row, 0)?))
                    })?
                    .collect::<Result<_, _>>()?;
                let mut pending: HashMap<String, Vec<PendingCall>> = HashMap::new();
                for (run_id, row) in rows {
                    pending.entry(run_id).or_default().push(row.into_pending()?);
                }
                raws.into_iter()
                    .map(|raw| {
                        let calls = pending.remove(&raw.run_id).unwrap_or_default();
                        raw.into_record(calls)
                    })
                    .collect()
            })
            .await
    }

    async fn load_step(
        &self,
        run_id: &str,
        lease: Option<Lease<'_>>,
    ) -> StoreResult<Option<StepState>> {
        let run_id = run_id.to_owned();
        let lease = lease.map(|lease| (lease.owner.to_owned(), lease.until_ms));
        self.db
            .commit("load_step", move |conn| match lease {
                Some((owner, until_ms)) if !take_step_lease(conn, &run_id, &owner, until_ms)? => {
                    Ok(None)
                }
                _ => read_step(conn, &run_id),
            })
            .await
    }

    async fn commit_turn(&self, step: Step<'_>, commit: TurnCommit) -> StoreResult<TurnOutcome> {
        let mut commit = commit;
        let (run_id, owner) = (step.run_id.to_owned(), step.owner.to_owned());
        let expected_turns = step.expected_turns;
        self.db
            .commit("commit_turn", move |conn| {
                let head = run_head(conn, &run_id, None)?;
                let step = (owner.as_str(), expected_turns);
                let Some(plan) = commit_turn::plan(&run_id, head, step, &mut commit, now_millis())?
                else {
                    return Ok(TurnOutcome::Stale);
                };
                if let Some(turn_insert) = &plan.turn_insert {
                    execute(conn, turn_insert)?;
                }
                insert_events(conn, plan.webhooks.as_deref(), &plan.events)?;
                let mut insert = conn.statement(
                    "INSERT INTO tool_calls (run_id, tool_call_id, turn, position, tool_name, \
                     arguments_json, status, payload, expire_ms, result_content, result_is_error, \
                     result_kind, result_sequence, suspend_kind, run_arguments, approval_reason, \
                     assignees, suspended_ms, tenant, agent_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, \
                     ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)",
                )?;
                let (tenant, agent_id) = &plan.owner;
                for row in &plan.calls {
                    insert.execute(params![
                        run_id,
                        row.call.tool_call_id,
                        plan.turn,
                        row.position,
                        row.call.tool_name,
                        row.call.arguments_json,
                        row.status.as_str(),
                        row.payload,
                        row.expire_ms,
                        row.content,
                        row.is_error,
                        row.kind,
                        row.result_sequence,
                        row.suspend_kind,
                        row.run_arguments,
                        row.approval_reason,
                        row.assignees,
                        row.suspended_ms,
                        tenant,
                        agent_id
                    ])?;
                }
                execute(conn, &plan.run_update)?;
                Ok(plan.outcome())
            })
            .await
    }

    async fn cancel_run(&self, cancellation: Cancellation<'_>) -> StoreResult<CancelOutcome> {
        let cancelled_by = cancellation.cancelled_by.clone();
        let (run_id, tenant, reason, call_content) = (
            cancellation.run_id.to_owned(),
            cancellation.tenancy.param(),
            cancellation.reason.to_owned(),
            cancellation.call_content.to_owned(),
        );
        self.db
            .commit("cancel_run", move |conn| {
                let head = run_head(conn, &run_id, tenant.as_deref())?;
                let unsettled: Vec<String> = conn
                    .statement(UNSETTLED_QUERY)?
                    .query_map([&run_id], |row| row.get(0))?
                    .collect::<Result<_, _>>()?;
                let plan = match cancel::plan(
                    &run_id,
                    head,
                    unsettled,
                    &reason,
                    &call_content,
                    &cancelled_by,
                    now_millis(),
                )? {
                    Ok(plan) => plan,
                    Err(outcome) => return Ok(outcome),
                };
                insert_events(conn, plan.webhooks.as_deref(), &plan.events)?;
                let calls = &plan.calls;
                let mut settle = conn.statement(
                    "UPDATE tool_calls SET status = 'cancelled', result_content = ?3, \
                     result_kind = ?4, result_sequence = ?5, settled_by = ?6, settled_ms = ?7 \
                     WHERE run_id = ?1 AND tool_call_id = ?2",
                )?;
                for (tool_call_id, sequence) in calls.tool_call_ids.iter().zip(&calls.sequences) {
                    settle.execute(params![
                        run_id,
                        tool_call_id,
                        calls.content,
                        calls.kind,
                        sequence,
                        calls.settled_by,
                        calls.settled_ms
                    ])?;
                }
                execute(conn, &plan.run_update)?;
                Ok(plan.outcome())
            })
            .await
    }

    async fn prune_finished(&self, before_ms: i64, limit: usize) -> StoreResult<u64> {
        self.db
            .commit_large("prune_finished", move |conn| {
                let runs: Vec<String> = conn
                    .statement(PRUNABLE_RUNS_QUERY)?
                    .query_map(params![before_ms, limit as i64], |row| row.get(0))?
                    .collect::<Result<_, _>>()?;
                let mut deletes = PRUNED_TABLES
                    .map(|table| format!("DELETE FROM {table} WHERE run_id = ?1"))
                    .into_iter()
                    .map(|sql| conn.prepare(&sql))
                    .collect::<Result<Vec<_>, _>>()?;
                for run_id in &runs {
                    for delete in &mut deletes {
                        delete.execute([run_id])?;
                    }
                }
                Ok(runs.len() as u64)
            })
            .await
    }

    async fn unfinished_before(&self, before_ms: i64, limit: usize) -> StoreResult<Vec<String>> {
        self.readers
            .run(move |conn| {
                Ok(conn
                    .statement(UNFINISHED_BEFORE_QUERY)?
                    .query_map(params![before_ms, limit as i64], |row| row.get(0))?
                    .collect::<Result<_, _>>()?)
            })
            .await
    }

    async fn acquire_lease(&self, run_id: &str, owner: &str, until_ms: i64) -> StoreResult<bool> {
        let (run_id, owner) = (run_id.to_owned(), owner.to_owned());
        self.db
            .commit("acquire_lease", move |conn| {
                take_lease(conn, &run_id, &owner, until_ms)
            })
            .await
    }

    async fn release_lease(&self, run_id: &str, owner: &str) -> StoreResult<()> {
        let (run_id, owner) = (run_id.to_owned(), owner.to_owned());
        self.db
            .commit("release_lease", move |conn| {
                conn.statement(
                    "UPDATE runs SET lease_owner = NULL, lease_expires_ms = NULL \
                 WHERE run_id = ?1 AND lease_owner = ?2",
                )?
                .execute(params![run_id, owner])?;
                Ok(())
            })
            .await
    }

    async fn unleased_runs(&self, now_ms: i64, limit: usize) -> StoreResult<Vec<String>> {
        self.readers.run(move |conn| {
            Ok(conn
                .statement(
                    "SELECT run_id FROM runs WHERE status = 'running' \
                     AND (lease_owner IS NULL OR lease_expires_ms < ?1) ORDER BY updated_ms LIMIT ?2",
                )?
                .query_map(params![now_ms, limit as i64], |row| row.get(0))?
                .collect::<Result<_, _>>()?)
        })
        .await
    }
}
