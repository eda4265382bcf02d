//! PostgreSQL's event logs: appending a step's events, reading them, and the commit feed ([`EventTable`]).

use async_trait::async_trait;

use super::*;

#[async_trait]
impl EventTable for PostgresStore {
    async fn append_step_events(&self, step: StepEvents<'_>) -> StoreResult<TurnOutcome> {
        let StepEvents {
            run_id,
            owner,
            expected_turns,
            attempt,
            events,
        } = step;
        timed("append_step_events", async {
            let tx = TxClient::get(&self.pool, BEGIN).await?;
            let client = tx.client()?;
            let now = self.now_ms();
            let [lock, events_insert, deliveries_insert, run_update, notice] = prepare(
                client,
                [
                    LOCK_RUN,
                    INSERT_EVENTS,
                    INSERT_DELIVERIES,
                    step_events::UPDATE_RUN,
                    NOTIFY,
                ],
            )
            .await?;
            let ((), head) = try_join!(tx.begin(), lock_run(client, &lock, run_id, None))?;
            let step = (owner, expected_turns);
            let Some(plan) = step_events::plan(run_id, head, step, attempt, events, now)? else {
                return Ok(tx.rollback(TurnOutcome::Stale).await);
            };
            try_join!(
                insert_events(
                    client,
                    [&events_insert, &deliveries_insert],
                    plan.webhooks.as_deref(),
                    &plan.events,
                ),
                exec_write(client, &run_update, &plan.run_update),
                tx.commit_announcing(
                    &notice,
                    self.notice(run_id, plan.last_sequence, RunStatus::Running)
                ),
            )?;
            Ok(plan.outcome())
        })
        .await
    }

    async fn read_events(&self, query: EventQuery<'_>) -> StoreResult<Option<EventPage>> {
        let EventQuery {
            run_id,
            tenancy,
            after_sequence,
            limit,
        } = query;
        let client = self.pool.get().await?;
        // One statement, so the run's state and its events come from one snapshot: one row per
        // event, or one without an event (NULLs) when there is none.
        let rows = select(
            &client,
            "SELECT run.status, run.last_sequence, event.sequence, event.time_ms, event.body \
             FROM runs AS run LEFT JOIN LATERAL (SELECT sequence, time_ms, body FROM events \
             WHERE events.run_id = run.run_id AND sequence > $2 ORDER BY sequence LIMIT $3) \
             AS event ON TRUE WHERE run.run_id = $1 \
             AND (CAST($4 AS TEXT) IS NULL OR run.tenant = $4) ORDER BY event.sequence",
            &[
                &run_id,
                &(after_sequence as i64),
                &i64::try_from(limit).unwrap_or(i64::MAX),
                &tenancy.param(),
            ],
        )
        .await?;
        let Some(head) = rows.first() else {
            return Ok(None);
        };
        let events = rows
            .iter()
            .filter_map(|row| {
                let sequence: Option<i64> = row.get(2);
                sequence.map(|sequence| {
                    Ok(Event {
                        run_id: run_id.to_owned(),
                        sequence: unsigned(sequence),
                        time_ms: row.get(3),
                        kind: from_json(row.get(4))?,
                    })
                })
            })
            .collect::<StoreResult<Vec<_>>>()?;
        Ok(Some(EventPage {
            events,
            status: parse_status(head.get(0))?,
            last_sequence: unsigned(head.get(1)),
        }))
    }

    async fn commit_feed(&self) -> StoreResult<Option<mpsc::Receiver<CommitNotice>>> {
        let (notices, feed) = mpsc::channel(1024);
        self.feed.started.store(true, Ordering::Relaxed);
        tokio::spawn(commit_feed::listen(
            self.connection.clone(),
            self.origin.clone(),
            notices,
            Arc::clone(&self.feed),
        ));
        Ok(Some(feed))
    }
}
