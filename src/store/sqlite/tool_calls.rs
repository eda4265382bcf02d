//! SQLite's tool calls: settling, claiming, listing and expiring them ([`ToolCallTable`]).

use async_trait::async_trait;
use tokio::sync::mpsc::error::TrySendError;

use crate::store::PendingPages;

use super::pending_rows::read_pending_page;

use super::*;

#[async_trait]
impl ToolCallTable for SqliteStore {
    async fn get_tool_call(&self, call: CallOfRun<'_>) -> StoreResult<Option<ToolCallRecord>> {
        let tenant = call.tenancy.param();
        let (run_id, tool_call_id) = (call.run_id.to_owned(), call.tool_call_id.to_owned());
        self.db
            .run(move |conn| {
                if !run_in_tenant(conn, &run_id, tenant.as_deref())? {
                    return Ok(None);
                }
                load_tool_call(conn, &run_id, &tool_call_id)
            })
            .await
    }

    async fn settle_tool_call(&self, settlement: CallSettlement<'_>) -> StoreResult<SettleOutcome> {
        let (run_id, tenant, tool_call_id) = (
            settlement.run_id.to_owned(),
            settlement.tenancy.param(),
            settlement.tool_call_id.to_owned(),
        );
        let decide = settlement.decide;
        let lease = settlement
            .lease
            .map(|lease| (lease.owner.to_owned(), lease.until_ms));
        self.db
            .commit("settle_tool_call", move |conn| {
                let head = run_head(conn, &run_id, tenant.as_deref())?;
                let (call, counts) = load_settled_call(conn, &run_id, &tool_call_id)?;
                let reads = SettleReads { head, call, counts };
                let plan = match settle::plan(&run_id, &tool_call_id, reads, decide, now_millis())?
                {
                    Settling::Unchanged(outcome) => return Ok(outcome),
                    Settling::Write(plan) => plan,
                };
                insert_events(conn, plan.webhooks.as_deref(), &plan.events)?;
                if execute(conn, &plan.call_update)? != 1 {
                    return Err(StoreError::Corrupt(format!(
                        "tool call {tool_call_id} changed inside its own transaction"
                    )));
                }
                execute(conn, &plan.run_update)?;
                let step = match lease {
                    Some((owner, until_ms))
                        if plan.runs_again()
                            && take_step_lease(conn, &run_id, &owner, until_ms)? =>
                    {
                        read_step(conn, &run_id)?
                    }
                    _ => None,
                };
                Ok(plan.outcome(step))
            })
            .await
    }

    async fn commit_executed(&self, executed: ExecutedResults<'_>) -> StoreResult<TurnOutcome> {
        let (step, results, suspended) = (executed.step, executed.results, executed.suspended);
        let step_goes_on = executed.step_goes_on;
        let (run_id, owner) = (step.run_id.to_owned(), step.owner.to_owned());
        let expected_turns = step.expected_turns;
        self.db
            .commit("commit_executed", move |conn| {
                let reads = ExecutedReads {
                    head: run_head(conn, &run_id, None)?,
                    counts: call_counts(conn, &run_id)?,
                };
                let step = (owner.as_str(), expected_turns);
                let Some(plan) = commit_executed::plan(
                    &run_id,
                    reads,
                    step,
                    (&results, &suspended, step_goes_on),
                    now_millis(),
                )?
                else {
                    return Ok(TurnOutcome::Stale);
                };
                insert_events(conn, plan.webhooks.as_deref(), &plan.events)?;
                for call_update in plan.call_updates.iter().chain(&plan.suspend_updates) {
                    if execute(conn, call_update)? != 1 {
                        return Err(commit_executed::not_executing(call_update));
                    }
                }
                execute(conn, &plan.run_update)?;
                Ok(plan.outcome())
            })
            .await
    }

    async fn claim_call(&self, claim: Claim<'_>) -> StoreResult<ClaimOutcome> {
        let until_ms = claim.until_ms;
        let (run_id, tenant, tool_call_id, claimant, subject) = (
            claim.run_id.to_owned(),
            claim.tenancy.param(),
            claim.tool_call_id.to_owned(),
            claim.claimant.to_owned(),
            claim.subject.to_owned(),
        );
        self.db
            .commit("claim_call", move |conn| {
                if !run_in_tenant(conn, &run_id, tenant.as_deref())? {
                    return Ok(ClaimOutcome::NotFound);
                }
                let claimed = conn.statement(CLAIM_UPDATE)?.execute(params![
                    claimant,
                    subject,
                    until_ms,
                    run_id,
                    tool_call_id,
                    now_millis()
                ])?;
                if claimed == 1 {
                    return Ok(ClaimOutcome::Claimed { until_ms });
                }
                let Some(call) = load_tool_call(conn, &run_id, &tool_call_id)? else {
                    return Ok(ClaimOutcome::NotFound);
                };
                if call.status != CallStatus::Pending {
                    return Ok(ClaimOutcome::NotPending(Box::new(call)));
                }
                let (holder, until): (Option<String>, Option<i64>) =
                    conn.statement(CLAIM_QUERY)?
                        .query_row([&run_id, &tool_call_id], |row| {
                            Ok((row.get(0)?, row.get(1)?))
                        })?;
                Ok(ClaimOutcome::Held {
                    claimant: holder.unwrap_or_default(),
                    until_ms: until.unwrap_or(0),
                })
            })
            .await
    }

    async fn pending_calls(&self, query: PendingQuery<'_>) -> StoreResult<Vec<RunPendingCall>> {
        let (tenant, after, limit) = (query.tenant.to_owned(), query.after, query.limit);
        self.readers
            .run(move |conn| read_pending_page(conn, &tenant, after, limit)?.calls())
            .await
    }

    /// 512: pages of 2,048 read no faster here, and a page's buffers are made on a reader thread,
    /// which keeps what is freed of them until it allocates again (with 1,000,000 runs suspended
    /// after snapshots of 100,000: anonymous RSS about 25 MiB with pages of 2,048, 20 MiB with 512).
    fn snapshot_page(&self) -> usize {
        512
    }

    async fn send_pending_pages(&self, tenant: &str, limit: usize, pages: PendingPages) {
        let mut after = None;
        loop {
            // One blocking thread reads page after page while the channel has room: no hop back
            // to the runtime between pages. A page it has no room for comes back here to wait,
            // so a slow receiver holds no thread.
            let (tenant, sender) = (tenant.to_owned(), pages.clone());
            let read = self
                .readers
                .run_each(move |conn| {
                    let mut after = after;
                    loop {
                        let page = read_pending_page(conn, &tenant, after.take(), limit)?;
                        let next = page.after(limit);
                        match sender.try_send(Ok(page.deferred())) {
                            Ok(()) => {}
                            Err(TrySendError::Full(Ok(page))) => return Ok(Some((page, next))),
                            Err(_) => return Ok(None),
                        }
                        match next {
                            Some(next) => after = Some(next),
                            None => return Ok(None),
                        }
                    }
                })
                .await;
            let (page, next) = match read {
                Ok(Some(waiting)) => waiting,
                Ok(None) => return,
                Err(error) => {
                    let _ = pages.send(Err(error)).await;
                    return;
                }
            };
            if pages.send(Ok(page)).await.is_err() {
                return;
            }
            match next {
                Some(next) => after = Some(next),
                None => return,
            }
        }
    }

    async fn pending_counts(&self, now_ms: i64) -> StoreResult<PendingCounts> {
        self.readers
            .run(move |conn| {
                let counts = |sql| -> StoreResult<Vec<(String, i64)>> {
                    Ok(conn
                        .statement(sql)?
                        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
                        .collect::<Result<_, _>>()?)
                };
                let runs = counts(UNFINISHED_RUNS_COUNT_QUERY)?;
                let calls = counts(PENDING_CALLS_COUNT_QUERY)?;
                let oldest = counts(OLDEST_PENDING_CALLS_QUERY)?;
                let webhooks_due = conn
                    .statement(WEBHOOKS_DUE_QUERY)?
                    .query_row([now_ms], |row| row.get(0))?;
                pending_counts(runs, calls, oldest, webhooks_due)
            })
            .await
    }

    async fn due_expiries(&self, now_ms: i64, limit: usize) -> StoreResult<Vec<(String, String)>> {
        self.readers
            .run(move |conn| {
                Ok(conn
                    .statement(
                        "SELECT run_id, tool_call_id FROM tool_calls WHERE status = 'pending' \
                     AND expire_ms IS NOT NULL AND expire_ms <= ?1 ORDER BY expire_ms LIMIT ?2",
                    )?
                    .query_map(params![now_ms, limit as i64], |row| {
                        Ok((row.get(0)?, row.get(1)?))
                    })?
                    .collect::<Result<_, _>>()?)
            })
            .await
    }

    async fn next_expiry(&self) -> StoreResult<Option<i64>> {
        self.readers.run(|conn| {
            Ok(conn
                .statement(
                    "SELECT MIN(expire_ms) FROM tool_calls WHERE status = 'pending' AND expire_ms IS NOT NULL",
                )?
                .query_row([], |row| row.get(0))?)
        })
        .await
    }
}
