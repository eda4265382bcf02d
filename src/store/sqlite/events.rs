//! SQLite's event logs: appending a step's events, reading them, and the commit feed ([`EventTable`]).

use async_trait::async_trait;

use super::*;

#[async_trait]
impl EventTable for SqliteStore {
    async fn append_step_events(&self, step: StepEvents<'_>) -> StoreResult<TurnOutcome> {
        let (run_id, owner) = (step.run_id.to_owned(), step.owner.to_owned());
        let (expected_turns, attempt, events) = (step.expected_turns, step.attempt, step.events);
        self.db
            .commit("append_step_events", move |conn| {
                let head = run_head(conn, &run_id, None)?;
                let step = (owner.as_str(), expected_turns);
                let Some(plan) =
                    step_events::plan(&run_id, head, step, attempt, events, now_millis())?
                else {
                    return Ok(TurnOutcome::Stale);
                };
                insert_events(conn, plan.webhooks.as_deref(), &plan.events)?;
                execute(conn, &plan.run_update)?;
                Ok(plan.outcome())
            })
            .await
    }

    async fn read_events(&self, query: EventQuery<'_>) -> StoreResult<Option<EventPage>> {
        let (run_id, tenant) = (query.run_id.to_owned(), query.tenancy.param());
        let (after_sequence, limit) = (query.after_sequence, query.limit);
        self.readers.run(move |conn| {
            let Some((status, last_sequence)) = conn
                .statement(RUN_STATE_QUERY)?
                .query_row(params![&run_id, tenant], |row| Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?)))
                .optional()?
            else {
                return Ok(None);
            };
            let rows: Vec<(i64, i64, String)> = conn
                .statement(
                    "SELECT sequence, time_ms, body FROM events WHERE run_id = ?1 AND sequence > ?2 \
                     ORDER BY sequence LIMIT ?3",
                )?
                .query_map(
                    params![run_id, after_sequence as i64, limit as i64],
                    |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
                )?
                .collect::<Result<_, _>>()?;
            let events = rows
                .into_iter()
                .map(|(sequence, time_ms, body)| {
                    Ok(Event {
                        run_id: run_id.clone(),
                        sequence: u64::try_from(sequence).unwrap_or(0),
                        time_ms,
                        kind: from_json(&body)?,
                    })
                })
                .collect::<StoreResult<Vec<_>>>()?;
            Ok(Some(EventPage {
                events,
                status: parse_status(&status)?,
                last_sequence: u64::try_from(last_sequence).unwrap_or(0),
            }))
        })
        .await
    }

    async fn commit_feed(
        &self,
    ) -> StoreResult<Option<tokio::sync::mpsc::Receiver<crate::store::CommitNotice>>> {
        // A SQLite file belongs to this process alone: every commit is already published locally.
        Ok(None)
    }
}
