//! PostgreSQL's runs: creating, reading, listing, stepping, cancelling and pruning them, and their leases ([`RunTable`]).

use async_trait::async_trait;

use super::*;

#[async_trait]
impl RunTable for PostgresStore {
    async fn create_run(&self, run: NewRun, by: Option<Lease<'_>>) -> StoreResult<CreateOutcome> {
        timed("create_run", async {
            let tx = TxClient::get(&self.pool, BEGIN).await?;
            let client = tx.client()?;
            let now = self.now_ms();
            // A run's creation is announced to no other replica: nothing there can follow it yet
            // (it has no id before this commit), and it waits for nobody. Its first notice is its
            // next commit's. (A notice is a statement and a transaction of its own, and a read
            // of the run by each replica with a pending-calls feed open.)
            let [insert_run, events_insert, deliveries_insert, existing] = prepare(
                client,
                [
                    INSERT_RUN,
                    INSERT_EVENTS,
                    INSERT_DELIVERIES,
                    RUN_OF_REQUEST_QUERY,
                ],
            )
            .await?;
            let (tenant, request_id) = (run.tenant.clone(), run.request_id.clone());
            let plan = create::plan(run, by, now)?;
            let insert = exec_write(client, &insert_run, &plan.run_insert);
            if let Some(request_id) = &request_id {
                // A start that may repeat an earlier one: look for the earlier run first. Two starts
                // of one key at once both find none; the unique index makes the second insert wait
                // for the first and fail once it commits, and the second then returns its run.
                let ((), found) = try_join!(tx.begin(), async {
                    Ok::<_, StoreError>(client.query_opt(&existing, &[&tenant, request_id]).await?)
                })?;
                if let Some(row) = found {
                    let run_id = row.get(0);
                    return Ok(tx.rollback(CreateOutcome::Existing { run_id }).await);
                }
                match insert.await {
                    Ok(_) => {}
                    // A concurrent start of the same key committed first.
                    Err(StoreError::UniqueViolation) => {
                        drop(tx);
                        let client = self.pool.get().await?;
                        let [existing] = prepare(&client, [RUN_OF_REQUEST_QUERY]).await?;
                        let row = client
                            .query_opt(&existing, &[&tenant, request_id])
                            .await?
                            .ok_or_else(|| {
                                StoreError::Corrupt("a request id without its run".into())
                            })?;
                        return Ok(CreateOutcome::Existing { run_id: row.get(0) });
                    }
                    Err(error) => return Err(error),
                }
                try_join!(
                    insert_events(
                        client,
                        [&events_insert, &deliveries_insert],
                        plan.webhooks.as_deref(),
                        &plan.events,
                    ),
                    tx.commit(),
                )?;
            } else {
                try_join!(
                    tx.begin(),
                    insert,
                    insert_events(
                        client,
                        [&events_insert, &deliveries_insert],
                        plan.webhooks.as_deref(),
                        &plan.events,
                    ),
                    tx.commit(),
                )?;
            }
            Ok(plan.outcome())
        })
        .await
    }

    async fn get_run(&self, run_id: &str, tenancy: Tenancy<'_>) -> StoreResult<Option<RunRecord>> {
        // No transaction: its reads were never one snapshot (read committed) anyway. Each is
        // scoped to the tenant by itself.
        let client = self.pool.get().await?;
        let [run, pending, settled] = prepare(
            &client,
            [
                RUN_QUERY.as_str(),
                PENDING_IN_TENANT_QUERY.as_str(),
                SETTLED_QUERY,
            ],
        )
        .await?;
        let tenant = tenancy.param();
        let read = |statement| {
            let tenant = &tenant;
            let client = &client;
            async move { Ok::<_, StoreError>(client.query(statement, &[&run_id, tenant]).await?) }
        };
        let (rows, pending, settled) = try_join!(read(&run), read(&pending), read(&settled))?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let mut run = run_row(row).into_record(pending_calls(&pending)?)?;
        run.settled = settled_calls(&settled)?;
        Ok(Some(run))
    }

    async fn list_runs(&self, query: RunQuery) -> StoreResult<Vec<RunRecord>> {
        let (sql, params) = list_runs_query(&query, Dialect::Postgres)?;
        let params: Vec<_> = params.iter().map(SqlValue::as_postgres).collect();
        // Planned by the index: a page is the first runs of an index in the listing's order
        // rather than every run of the tenant, sorted, while the tables have no statistics.
        let tx = TxClient::get(&self.pool, BEGIN).await?;
        let rows = tx.select_by_index(&sql, &params, query.limit).await?;
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let (run_ids, tenants): (Vec<String>, Vec<String>) = rows
            .iter()
            .map(|row| (row.get(0), row.get(AFTER_RUN_COLUMNS)))
            .unzip();
        let mut pending = pending_of_runs(tx.client()?, &run_ids, &tenants).await?;
        rows.iter()
            .map(|row| {
                let raw = run_row(row);
                let calls = pending.remove(&raw.run_id).unwrap_or_default();
                raw.into_record(calls)
            })
            .collect()
    }

    async fn load_step(
        &self,
        run_id: &str,
        lease: Option<Lease<'_>>,
    ) -> StoreResult<Option<StepState>> {
        timed("load_step", async {
            // Taking the lease locks the run's row, and every writer of a run locks it first: the
            // reads after it see one state of the run at any isolation level. A plain read takes a
            // snapshot instead.
            let begin = if lease.is_some() {
                BEGIN
            } else {
                BEGIN_SNAPSHOT
            };
            let tx = TxClient::get(&self.pool, begin).await?;
            let client = tx.client()?;
            let statements = StepStatements::prepare(client).await?;
            let ((), step, ()) = try_join!(
                tx.begin(),
                read_step(client, &statements, run_id, lease),
                tx.commit(),
            )?;
            Ok(step)
        })
        .await
    }

    async fn commit_turn(&self, step: Step<'_>, commit: TurnCommit) -> StoreResult<TurnOutcome> {
        let mut commit = commit;
        let Step {
            run_id,
            owner,
            expected_turns,
        } = step;
        timed("commit_turn", async {
            let tx = TxClient::get(&self.pool, BEGIN).await?;
            let client = tx.client()?;
            let now = self.now_ms();
            let [
                lock,
                turn_insert,
                events_insert,
                deliveries_insert,
                call_insert,
                run_update,
                notice,
            ] = prepare(
                client,
                [
                    LOCK_RUN,
                    commit_turn::INSERT_TURN,
                    INSERT_EVENTS,
                    INSERT_DELIVERIES,
                    INSERT_CALLS,
                    commit_turn::UPDATE_RUN,
                    NOTIFY,
                ],
            )
            .await?;
            let ((), head) = try_join!(tx.begin(), lock_run(client, &lock, run_id, None))?;
            let step = (owner, expected_turns);
            let Some(plan) = commit_turn::plan(run_id, head, step, &mut commit, now)? else {
                return Ok(tx.rollback(TurnOutcome::Stale).await);
            };
            try_join!(
                async {
                    match &plan.turn_insert {
                        Some(write) => exec_write(client, &turn_insert, write).await,
                        None => Ok(0),
                    }
                },
                insert_events(
                    client,
                    [&events_insert, &deliveries_insert],
                    plan.webhooks.as_deref(),
                    &plan.events,
                ),
                insert_calls(
                    client,
                    &call_insert,
                    run_id,
                    plan.turn,
                    &plan.owner,
                    &plan.calls,
                ),
                exec_write(client, &run_update, &plan.run_update),
                tx.commit_announcing(
                    &notice,
                    self.notice(run_id, plan.last_sequence, plan.status)
                ),
            )?;
            Ok(plan.outcome())
        })
        .await
    }

    async fn cancel_run(&self, cancellation: Cancellation<'_>) -> StoreResult<CancelOutcome> {
        let Cancellation {
            run_id,
            tenancy,
            reason,
            call_content,
            cancelled_by,
        } = cancellation;
        timed("cancel_run", async {
            let tx = TxClient::get(&self.pool, BEGIN).await?;
            let client = tx.client()?;
            let now = self.now_ms();
            let [
                lock,
                pending_query,
                events_insert,
                deliveries_insert,
                calls_update,
                run_update,
                notice,
            ] = prepare(
                client,
                [
                    LOCK_RUN,
                    UNSETTLED_QUERY,
                    INSERT_EVENTS,
                    INSERT_DELIVERIES,
                    // Every call with the sequence of its result, as two arrays: one statement.
                    "UPDATE tool_calls SET status = 'cancelled', result_content = $2, \
                 result_kind = $3, result_sequence = settled.sequence, settled_by = $6, \
                 settled_ms = $7 \
                 FROM UNNEST($4::TEXT[], $5::BIGINT[]) AS settled (tool_call_id, sequence) \
                 WHERE run_id = $1 AND tool_calls.tool_call_id = settled.tool_call_id",
                    cancel::UPDATE_RUN,
                    NOTIFY,
                ],
            )
            .await?;
            let tenant = tenancy.param();
            let ((), head, unsettled) = try_join!(
                tx.begin(),
                lock_run(client, &lock, run_id, tenant.as_deref()),
                rows_of_run(client, &pending_query, run_id),
            )?;
            let unsettled = unsettled.iter().map(|row| row.get(0)).collect();
            let plan = match cancel::plan(
                run_id,
                head,
                unsettled,
                reason,
                call_content,
                cancelled_by,
                now,
            )? {
                Ok(plan) => plan,
                Err(outcome) => return Ok(tx.rollback(outcome).await),
            };
            let calls = &plan.calls;
            let calls_params: [&(dyn ToSql + Sync); 7] = [
                &run_id,
                &calls.content,
                &calls.kind,
                &calls.tool_call_ids,
                &calls.sequences,
                &calls.settled_by,
                &calls.settled_ms,
            ];
            try_join!(
                insert_events(
                    client,
                    [&events_insert, &deliveries_insert],
                    plan.webhooks.as_deref(),
                    &plan.events,
                ),
                exec(client, &calls_update, &calls_params),
                exec_write(client, &run_update, &plan.run_update),
                tx.commit_announcing(
                    &notice,
                    self.notice(run_id, plan.last_sequence, RunStatus::Cancelled)
                ),
            )?;
            Ok(plan.outcome())
        })
        .await
    }

    async fn prune_finished(&self, before_ms: i64, limit: usize) -> StoreResult<u64> {
        timed("prune_finished", async {
            let tx = TxClient::get(&self.pool, BEGIN).await?;
            let client = tx.client()?;
            let [lock, prunable] = prepare(
                client,
                ["SELECT pg_try_advisory_xact_lock($1)", PRUNABLE_RUNS_QUERY],
            )
            .await?;
            let deletes =
                PRUNED_TABLES.map(|table| format!("DELETE FROM {table} WHERE run_id = ANY($1)"));
            let deletes = prepare(client, deletes.each_ref().map(String::as_str)).await?;
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let ((), locked, runs) = try_join!(
                tx.begin(),
                async {
                    Ok(client
                        .query_one(&lock, &[&PRUNE_LOCK])
                        .await?
                        .get::<_, bool>(0))
                },
                async { Ok(client.query(&prunable, &[&before_ms, &limit]).await?) },
            )?;
            // Another replica prunes now; it goes on until nothing is left.
            if !locked || runs.is_empty() {
                return Ok(tx.rollback(0).await);
            }
            let runs: Vec<String> = runs.iter().map(|row| row.get(0)).collect();
            let by_id: &[&(dyn ToSql + Sync)] = &[&runs];
            try_join!(
                try_join_all(deletes.iter().map(|delete| exec(client, delete, by_id))),
                tx.commit(),
            )?;
            Ok(runs.len() as u64)
        })
        .await
    }

    async fn unfinished_before(&self, before_ms: i64, limit: usize) -> StoreResult<Vec<String>> {
        let client = self.pool.get().await?;
        Ok(select(
            &client,
            UNFINISHED_BEFORE_QUERY,
            &[&before_ms, &i64::try_from(limit).unwrap_or(i64::MAX)],
        )
        .await?
        .iter()
        .map(|row| row.get(0))
        .collect())
    }

    async fn acquire_lease(&self, run_id: &str, owner: &str, until_ms: i64) -> StoreResult<bool> {
        timed("acquire_lease", async {
            let client = self.pool.get().await?;
            let [statement] = prepare(&client, [TAKE_LEASE]).await?;
            take_lease(&client, &statement, run_id, Lease { owner, until_ms }).await
        })
        .await
    }

    async fn release_lease(&self, run_id: &str, owner: &str) -> StoreResult<()> {
        timed("release_lease", async {
            let client = self.pool.get().await?;
            execute(
                &client,
                "UPDATE runs SET lease_owner = NULL, lease_expires_ms = NULL \
                 WHERE run_id = $1 AND lease_owner = $2",
                &[&run_id, &owner],
            )
            .await?;
            Ok(())
        })
        .await
    }

    async fn unleased_runs(&self, now_ms: i64, limit: usize) -> StoreResult<Vec<String>> {
        let client = self.pool.get().await?;
        Ok(select(
            &client,
            "SELECT run_id FROM runs WHERE status = 'running' \
                 AND (lease_owner IS NULL OR lease_expires_ms < $1) ORDER BY updated_ms LIMIT $2",
            &[&now_ms, &(limit as i64)],
        )
        .await?
        .iter()
        .map(|row| row.get(0))
        .collect())
    }
}
