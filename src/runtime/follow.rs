//! Following a run: its stored events replayed, then its commits live, in order and without gaps
//! or doubles. The hub only speeds this up: whenever a follower may have missed something (it fell
//! behind, a commit came from elsewhere, a write's outcome is unknown) it reads the store.

use std::sync::Arc;

use tokio::sync::broadcast::error::RecvError;

use super::hub::Subscription;
use super::shared::Shared;
use super::{EventStream, FollowUntil, RuntimeError};
use crate::domain::RunStatus;
use crate::store::EventQuery;

/// Events read from the store per round trip while replaying.
const REPLAY_PAGE: usize = 512;

impl Shared {
    /// [`Runtime::follow`] on a subscription taken by the caller; `read_store` false skips the
    /// first read of the store when the subscription saw every commit of the run.
    pub(super) fn follow_subscribed(
        self: &Arc<Self>,
        mut live: Subscription,
        run_id: &str,
        tenant: Option<String>,
        after_sequence: u64,
        until: FollowUntil,
        mut read_store: bool,
    ) -> EventStream {
        let shared = Arc::clone(self);
        let run_id = run_id.to_owned();
        Box::pin(async_stream::try_stream! {
            let mut delivered = after_sequence;
            let mut known_last = 0;
            let mut status = RunStatus::Running;
            loop {
                if read_store {
                    let page = shared
                        .store
                        .read_events(EventQuery {
                            run_id: &run_id,
                            tenancy: tenant.as_deref().into(),
                            after_sequence: delivered,
                            limit: REPLAY_PAGE,
                        })
                        .await?
                        .ok_or_else(|| RuntimeError::RunNotFound(run_id.clone()))?;
                    read_store = page.events.len() == REPLAY_PAGE;
                    for event in page.events {
                        delivered = event.sequence;
                        yield event;
                    }
                    known_last = page.last_sequence;
                    status = page.status;
                    continue;
                }
                if finished(until, status, delivered, known_last) {
                    break;
                }
                let batch = tokio::select! {
                    batch = live.recv() => batch,
                    () = shared.shutdown.cancelled() => Err(RecvError::Closed),
                };
                let batch = match batch {
                    Ok(batch) => batch,
                    // Fell behind the live channel: catch up from the store.
                    Err(RecvError::Lagged(_)) => {
                        read_store = true;
                        continue;
                    }
                    Err(RecvError::Closed) => Err(RuntimeError::ShuttingDown)?,
                };
                let Some(first) = batch.events.first().map(|e| e.sequence) else {
                    // A notice of a commit made elsewhere: its events are in the store.
                    read_store |= batch.last_sequence > delivered;
                    continue;
                };
                if first > delivered + 1 {
                    // Events this follower has not seen came another way (published out of
                    // order, or committed by another replica); they are in the store.
                    read_store = true;
                    continue;
                }
                for event in &batch.events {
                    if event.sequence == delivered + 1 {
                        delivered = event.sequence;
                        yield event.clone();
                    }
                }
                if batch.last_sequence >= known_last {
                    known_last = batch.last_sequence;
                    status = batch.status;
                }
            }
        })
    }
}

/// Whether a follower has seen all it waits for.
fn finished(until: FollowUntil, status: RunStatus, delivered: u64, known_last: u64) -> bool {
    if delivered < known_last {
        return false;
    }
    match until {
        FollowUntil::End => status.is_terminal(),
        FollowUntil::Idle => status != RunStatus::Running,
    }
}
