//! The commit feed of replicas sharing one database: each commit NOTIFYs its run, newest
//! sequence and status on one channel; a dedicated connection LISTENs and hands the notices on.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_postgres::AsyncMessage;
use tracing::warn;

use super::{FeedState, NOTIFY_CHANNEL};
use crate::domain::RunStatus;
use crate::store::CommitNotice;
use crate::store::postgres_connect::Connection;

/// A notice's payload: the commit, and the store that made it when the payload names one.
fn parse_notice(payload: &str) -> Option<(CommitNotice, Option<&str>)> {
    let mut parts = payload.split(' ');
    let run_id = parts.next()?.to_owned();
    let last_sequence = parts.next()?.parse().ok()?;
    let status = RunStatus::parse(parts.next()?)?;
    let notice = CommitNotice::Committed {
        run_id,
        last_sequence,
        status,
    };
    Some((notice, parts.next()))
}

/// Listens for commit notices on a dedicated connection, reconnecting when it drops. Notices sent
/// while it was down are lost, so after every reconnect it reports [`CommitNotice::Missed`].
pub(super) async fn listen(
    database: Connection,
    origin: String,
    notices: mpsc::Sender<CommitNotice>,
    feed: Arc<FeedState>,
) {
    let mut backoff = Duration::from_millis(100);
    let mut connected_before = false;
    loop {
        match database.config.connect(database.tls.clone()).await {
            Ok((client, mut connection)) => {
                backoff = Duration::from_millis(100);
                let (messages_tx, mut messages) = mpsc::unbounded_channel();
                let driver = tokio::spawn(async move {
                    let mut stream =
                        futures::stream::poll_fn(move |cx| connection.poll_message(cx));
                    while let Some(message) = stream.next().await {
                        match message {
                            Ok(message) => {
                                if messages_tx.send(message).is_err() {
                                    return;
                                }
                            }
                            Err(error) => {
                                warn!(%error, "commit notice connection failed");
                                return;
                            }
                        }
                    }
                });
                match client
                    .batch_execute(&format!("LISTEN {NOTIFY_CHANNEL}"))
                    .await
                {
                    Err(error) => warn!(%error, "LISTEN for commit notices failed"),
                    Ok(()) => {
                        if connected_before && notices.send(CommitNotice::Missed).await.is_err() {
                            driver.abort();
                            return;
                        }
                        connected_before = true;
                        feed.listening.store(true, Ordering::Relaxed);
                        while let Some(message) = messages.recv().await {
                            if let AsyncMessage::Notification(notification) = message
                                && let Some((notice, from)) = parse_notice(notification.payload())
                                && from != Some(origin.as_str())
                                && notices.send(notice).await.is_err()
                            {
                                driver.abort();
                                return;
                            }
                        }
                    }
                }
                feed.listening.store(false, Ordering::Relaxed);
                driver.abort();
            }
            Err(error) => warn!(%error, "connecting for commit notices failed"),
        }
        if notices.is_closed() {
            return;
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(5));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_round_trip_their_payload() {
        let committed = CommitNotice::Committed {
            run_id: "run-1".into(),
            last_sequence: 42,
            status: RunStatus::Suspended,
        };
        assert_eq!(
            parse_notice("run-1 42 suspended 0190abc"),
            Some((committed.clone(), Some("0190abc")))
        );
        assert_eq!(parse_notice("run-1 42 suspended"), Some((committed, None)));
        assert!(parse_notice("run-1 x running").is_none());
        assert!(parse_notice("run-1 3 asleep").is_none());
    }
}
