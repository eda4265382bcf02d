//! PostgreSQL's tool calls: settling, claiming, listing and expiring them ([`ToolCallTable`]).

use async_trait::async_trait;

use super::*;

impl PostgresStore {
    /// The rows of [`PENDING_FEED_QUERY`] for `query`: one flight, whose transaction plans the
    /// page by the index ([`PLAN_BY_INDEX`]).
    async fn pending_feed_rows(&self, query: PendingQuery<'_>) -> StoreResult<Vec<Row>> {
        let PendingQuery {
            tenant,
            after,
            limit,
        } = query;
        let (run_id, call_id) = after.unwrap_or_default();
        let params: [&(dyn ToSql + Sync); 4] = [&run_id, &call_id, &tenant, &(limit as i64)];
        TxClient::get(&self.pool, BEGIN)
            .await?
            .select_by_index(&PENDING_FEED_QUERY, &params, limit)
            .await
    }
}

/// The calls of [`PENDING_FEED_QUERY`]'s rows: the run's id and agent, then [`PENDING_COLUMNS`].
fn pending_feed_calls(rows: &[Row]) -> StoreResult<Vec<RunPendingCall>> {
    collect_exact(
        rows.iter()
            .map(|row| pending_row(row, 2).into_run_pending(row.get(0), row.get(1))),
    )
}

#[async_trait]
impl ToolCallTable for PostgresStore {
    async fn get_tool_call(&self, call: CallOfRun<'_>) -> StoreResult<Option<ToolCallRecord>> {
        let (run_id, tool_call_id) = (call.run_id, call.tool_call_id);
        let client = self.pool.get().await?;
        if !run_in_tenant(&client, run_id, call.tenancy).await? {
            return Ok(None);
        }
        let [query] = prepare(&client, [TOOL_CALL_QUERY]).await?;
        fetch_tool_call(&client, &query, run_id, tool_call_id)
            .await?
            .map(|row| tool_call_record(&row, run_id, tool_call_id))
            .transpose()
    }

    async fn settle_tool_call(&self, settlement: CallSettlement<'_>) -> StoreResult<SettleOutcome> {
        let CallSettlement {
            run_id,
            tenancy,
            tool_call_id,
            decide,
            lease,
        } = settlement;
        timed("settle_tool_call", async {
            let tx = TxClient::get(&self.pool, BEGIN).await?;
            let client = tx.client()?;
            let now = self.now_ms();
            let [
                lock,
                call_query,
                events_insert,
                deliveries_insert,
                call_update,
                run_update,
                notice,
            ] = prepare(
                client,
                [
                    LOCK_RUN,
                    SETTLE_CALL_QUERY.as_str(),
                    INSERT_EVENTS,
                    INSERT_DELIVERIES,
                    settle::UPDATE_CALL,
                    settle::UPDATE_RUN,
                    NOTIFY,
                ],
            )
            .await?;
            // Lock the run first: settles of one run are serialized across replicas, and the reads
            // after the lock in this flight see the run as locked. The lock is what checks the
            // tenant: the call read in the same flight is not used unless it passed.
            let tenant = tenancy.param();
            let ((), head, call) = try_join!(
                tx.begin(),
                lock_run(client, &lock, run_id, tenant.as_deref()),
                fetch_tool_call(client, &call_query, run_id, tool_call_id),
            )?;
            let (call, counts) = match (&head, call) {
                (Some(_), Some(call)) => (
                    Some(tool_call_record(&call, run_id, tool_call_id)?),
                    (
                        call.get(SETTLE_CALL_COUNTS),
                        call.get(SETTLE_CALL_COUNTS + 1),
                    ),
                ),
                // No such call (of the tenant's run): a settle of it changes nothing.
                _ => (None, (0, 0)),
            };
            let reads = SettleReads { head, call, counts };
            let plan = match settle::plan(run_id, tool_call_id, reads, decide, now)? {
                Settling::Unchanged(outcome) => return Ok(tx.rollback(outcome).await),
                Settling::Write(plan) => plan,
            };
            let next_step = match lease {
                Some(lease) if plan.runs_again() => {
                    Some((lease, StepStatements::prepare(client).await?))
                }
                _ => None,
            };
            let (_, changed, _, step, ()) = try_join!(
                insert_events(
                    client,
                    [&events_insert, &deliveries_insert],
                    plan.webhooks.as_deref(),
                    &plan.events,
                ),
                exec_write(client, &call_update, &plan.call_update),
                exec_write(client, &run_update, &plan.run_update),
                async {
                    match &next_step {
                        Some((lease, statements)) => {
                            read_step(client, statements, run_id, Some(*lease)).await
                        }
                        None => Ok(None),
                    }
                },
                tx.commit_announcing(
                    &notice,
                    self.notice(run_id, plan.last_sequence, plan.status)
                ),
            )?;
            // Cannot happen (every writer of a call locks its run first); the flight has committed
            // by now, so this only reports it.
            if changed != 1 {
                return Err(StoreError::Corrupt(format!(
                    "tool call {tool_call_id} changed under its run's lock"
                )));
            }
            Ok(plan.outcome(step))
        })
        .await
    }

    async fn commit_executed(&self, executed: ExecutedResults<'_>) -> StoreResult<TurnOutcome> {
        let (step, results, suspended) = (executed.step, executed.results, executed.suspended);
        let step_goes_on = executed.step_goes_on;
        let Step {
            run_id,
            owner,
            expected_turns,
        } = step;
        timed("commit_executed", async {
            let tx = TxClient::get(&self.pool, BEGIN).await?;
            let client = tx.client()?;
            let now = self.now_ms();
            let [
                lock,
                events_insert,
                deliveries_insert,
                call_update,
                suspend_update,
                count,
                run_update,
                notice,
            ] = prepare(
                client,
                [
                    LOCK_RUN,
                    INSERT_EVENTS,
                    INSERT_DELIVERIES,
                    EXECUTED_UPDATE,
                    SUSPEND_EXECUTING_UPDATE,
                    CALL_COUNTS_QUERY,
                    commit_executed::UPDATE_RUN,
                    NOTIFY,
                ],
            )
            .await?;
            let ((), head, counts) = try_join!(
                tx.begin(),
                lock_run(client, &lock, run_id, None),
                call_counts(client, &count, run_id),
            )?;
            let reads = ExecutedReads { head, counts };
            let step = (owner, expected_turns);
            let Some(plan) = commit_executed::plan(
                run_id,
                reads,
                step,
                (&results, &suspended, step_goes_on),
                now,
            )?
            else {
                return Ok(tx.rollback(TurnOutcome::Stale).await);
            };
            let executed = plan.call_updates.iter().map(|write| (&call_update, write));
            let waiting = plan
                .suspend_updates
                .iter()
                .map(|write| (&suspend_update, write));
            let updates = executed
                .chain(waiting)
                .map(|(statement, write)| async move {
                    match exec_write(client, statement, write).await? {
                        1 => Ok(()),
                        _ => Err(commit_executed::not_executing(write)),
                    }
                });
            try_join!(
                insert_events(
                    client,
                    [&events_insert, &deliveries_insert],
                    plan.webhooks.as_deref(),
                    &plan.events,
                ),
                futures::future::try_join_all(updates),
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

    async fn claim_call(&self, claim: Claim<'_>) -> StoreResult<ClaimOutcome> {
        let Claim {
            run_id,
            tenancy,
            tool_call_id,
            claimant,
            subject,
            until_ms,
        } = claim;
        timed("claim_call", async {
            let client = self.pool.get().await?;
            if !run_in_tenant(&client, run_id, tenancy).await? {
                return Ok(ClaimOutcome::NotFound);
            }
            let [claim, call_query, claim_query] =
                prepare(&client, [CLAIM_UPDATE, TOOL_CALL_QUERY, CLAIM_QUERY]).await?;
            let claimed = exec(
                &client,
                &claim,
                &[
                    &claimant,
                    &subject,
                    &until_ms,
                    &run_id,
                    &tool_call_id,
                    &self.now_ms(),
                ],
            )
            .await?;
            if claimed == 1 {
                return Ok(ClaimOutcome::Claimed { until_ms });
            }
            let (call, holder) = try_join!(
                fetch_tool_call(&client, &call_query, run_id, tool_call_id),
                fetch_tool_call(&client, &claim_query, run_id, tool_call_id),
            )?;
            let (Some(call), Some(holder)) = (call, holder) else {
                return Ok(ClaimOutcome::NotFound);
            };
            let call = tool_call_record(&call, run_id, tool_call_id)?;
            if call.status != CallStatus::Pending {
                return Ok(ClaimOutcome::NotPending(Box::new(call)));
            }
            Ok(ClaimOutcome::Held {
                claimant: holder.get::<_, Option<String>>(0).unwrap_or_default(),
                until_ms: holder.get::<_, Option<i64>>(1).unwrap_or(0),
            })
        })
        .await
    }

    async fn pending_calls(&self, query: PendingQuery<'_>) -> StoreResult<Vec<RunPendingCall>> {
        pending_feed_calls(&self.pending_feed_rows(query).await?)
    }

    /// A page costs a flight of four statements whatever its length: at 512 calls a page, a
    /// snapshot of 100,000 spent about a third of its time on them (296 ms; 208 ms at 2,048, and
    /// 8,192 did no better). Its rows are made on the runtime's workers, which give memory back
    /// when they go idle.
    fn snapshot_page(&self) -> usize {
        2048
    }

    async fn pending_page(
        &self,
        query: PendingQuery<'_>,
    ) -> StoreResult<(PendingPage, Option<(String, String)>)> {
        let limit = query.limit;
        let rows = self.pending_feed_rows(query).await?;
        // The page after starts after the last row: (run id, call id) are its columns 0 and 2.
        let next = rows
            .last()
            .filter(|_| rows.len() == limit)
            .map(|last| (last.get(0), last.get(2)));
        // The feed makes the rows into calls, while the reader goes on to the next page.
        Ok((
            PendingPage::deferred(move || pending_feed_calls(&rows)),
            next,
        ))
    }

    async fn pending_counts(&self, now_ms: i64) -> StoreResult<PendingCounts> {
        let client = self.pool.get().await?;
        let counts = |rows: Vec<Row>| -> Vec<(String, i64)> {
            rows.iter().map(|row| (row.get(0), row.get(1))).collect()
        };
        let now_ms = [&now_ms as &(dyn ToSql + Sync)];
        let (runs, calls, oldest, webhooks_due) = try_join!(
            select(&client, UNFINISHED_RUNS_COUNT_QUERY, &[]),
            select(&client, PENDING_CALLS_COUNT_QUERY, &[]),
            select(&client, OLDEST_PENDING_CALLS_QUERY, &[]),
            select_one(&client, WEBHOOKS_DUE_QUERY, &now_ms),
        )?;
        pending_counts(
            counts(runs),
            counts(calls),
            counts(oldest),
            webhooks_due.get(0),
        )
    }

    async fn due_expiries(&self, now_ms: i64, limit: usize) -> StoreResult<Vec<(String, String)>> {
        let client = self.pool.get().await?;
        Ok(select(
            &client,
            "SELECT run_id, tool_call_id FROM tool_calls WHERE status = 'pending' \
                 AND expire_ms IS NOT NULL AND expire_ms <= $1 ORDER BY expire_ms LIMIT $2",
            &[&now_ms, &(limit as i64)],
        )
        .await?
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect())
    }

    async fn next_expiry(&self) -> StoreResult<Option<i64>> {
        let client = self.pool.get().await?;
        Ok(select_one(&client, "SELECT MIN(expire_ms) FROM tool_calls WHERE status = 'pending' AND expire_ms IS NOT NULL",
                &[],
            )
            .await?
            .get(0))
    }
}
