//! Live fan-out of committed events to the streams following a run.
//!
//! Only committed events are published, so a subscriber can always fill a gap from the store: the
//! hub is an accelerator, never the source of truth.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::broadcast;

use crate::domain::{Event, RunStatus};
use crate::store::Committed;

/// Events committed together, with the run's last sequence and status after the commit. A
/// notice of a commit made elsewhere carries no events (and no meaningful status): followers read
/// the store.
#[derive(Debug)]
pub struct Batch {
    pub events: Vec<Event>,
    pub status: RunStatus,
    pub last_sequence: u64,
}

impl From<Committed> for Batch {
    fn from(committed: Committed) -> Self {
        Batch {
            last_sequence: committed.events.last().map_or(0, |e| e.sequence),
            events: committed.events,
            status: committed.status,
        }
    }
}

/// How many batches a slow subscriber may fall behind before it catches up from the store.
const CHANNEL_CAPACITY: usize = 16;
/// The same for a subscriber to every run's commits, which sees many more.
const ALL_RUNS_CAPACITY: usize = 1024;

/// A commit to some run, as subscribers to every run see it.
#[derive(Clone, Debug)]
pub enum RunChange {
    Committed {
        run_id: String,
        batch: Arc<Batch>,
    },
    /// Notices of other replicas' commits were lost: look at the store again.
    Missed,
}

/// Per-run broadcast channels, created on first subscription and dropped with the last one, and
/// one channel of every run's commits (the pending-calls feed).
pub struct Hub {
    channels: Mutex<HashMap<String, broadcast::Sender<Arc<Batch>>>>,
    all: broadcast::Sender<RunChange>,
}

impl Default for Hub {
    fn default() -> Self {
        Self {
            channels: Mutex::default(),
            all: broadcast::channel(ALL_RUNS_CAPACITY).0,
        }
    }
}

impl Hub {
    pub fn publish(&self, run_id: &str, batch: Batch) {
        super::run_log::log_events(run_id, &batch.events);
        let batch = Arc::new(batch);
        if self.all.receiver_count() > 0 {
            let _ = self.all.send(RunChange::Committed {
                run_id: run_id.to_owned(),
                batch: Arc::clone(&batch),
            });
        }
        let Ok(channels) = self.channels.lock() else {
            return;
        };
        if let Some(sender) = channels.get(run_id) {
            // An error only means nobody listens right now.
            let _ = sender.send(batch);
        }
    }

    /// Every run's commits from now on.
    pub fn subscribe_all(&self) -> broadcast::Receiver<RunChange> {
        self.all.subscribe()
    }

    /// Tells a run's followers that its log grew to `last_sequence` elsewhere (another replica).
    pub fn notify(&self, run_id: &str, last_sequence: u64) {
        self.publish(
            run_id,
            Batch {
                events: Vec::new(),
                status: RunStatus::Running,
                last_sequence,
            },
        );
    }

    /// Tells every follower to look at the store: notices of other replicas' commits were lost.
    pub fn notify_all(&self) {
        let _ = self.all.send(RunChange::Missed);
        let Ok(channels) = self.channels.lock() else {
            return;
        };
        for sender in channels.values() {
            let _ = sender.send(Arc::new(Batch {
                events: Vec::new(),
                status: RunStatus::Running,
                last_sequence: u64::MAX,
            }));
        }
    }

    pub fn subscribe(self: &Arc<Self>, run_id: &str) -> Subscription {
        let receiver = match self.channels.lock() {
            Ok(mut channels) => channels
                .entry(run_id.to_owned())
                .or_insert_with(|| broadcast::channel(CHANNEL_CAPACITY).0)
                .subscribe(),
            // A poisoned map cannot deliver live events; the subscriber then reads the store only.
            Err(_) => broadcast::channel(1).1,
        };
        Subscription {
            hub: Arc::clone(self),
            run_id: run_id.to_owned(),
            receiver: Some(receiver),
        }
    }

    fn release(&self, run_id: &str) {
        if let Ok(mut channels) = self.channels.lock()
            && channels
                .get(run_id)
                .is_some_and(|sender| sender.receiver_count() == 0)
        {
            channels.remove(run_id);
        }
    }
}

/// A live subscription to one run's batches.
pub struct Subscription {
    hub: Arc<Hub>,
    run_id: String,
    receiver: Option<broadcast::Receiver<Arc<Batch>>>,
}

impl Subscription {
    pub async fn recv(&mut self) -> Result<Arc<Batch>, broadcast::error::RecvError> {
        match self.receiver.as_mut() {
            Some(receiver) => receiver.recv().await,
            None => Err(broadcast::error::RecvError::Closed),
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.receiver.take();
        self.hub.release(&self.run_id);
    }
}

#[cfg(test)]
mod tests {
    use tokio::sync::broadcast::error::TryRecvError;

    use super::*;
    use crate::domain::{EventKind, now_millis};

    fn batch(run_id: &str, sequence: u64, status: RunStatus) -> Batch {
        Batch {
            events: vec![Event {
                run_id: run_id.to_owned(),
                sequence,
                time_ms: now_millis(),
                kind: EventKind::TextDelta { text: "hi".into() },
            }],
            status,
            last_sequence: sequence,
        }
    }

    fn try_recv(subscription: &mut Subscription) -> Result<Arc<Batch>, TryRecvError> {
        subscription
            .receiver
            .as_mut()
            .map_or(Err(TryRecvError::Closed), |r| r.try_recv())
    }

    #[test]
    fn a_commit_reaches_its_runs_followers_and_every_run_subscriber_only() {
        let hub = Arc::new(Hub::default());
        let mut mine = hub.subscribe("run-1");
        let mut theirs = hub.subscribe("run-2");
        let mut all = hub.subscribe_all();
        hub.publish("run-1", batch("run-1", 3, RunStatus::Suspended));

        let seen = try_recv(&mut mine).expect("the run's follower sees it");
        assert_eq!(seen.last_sequence, 3);
        assert_eq!(seen.status, RunStatus::Suspended);
        assert!(matches!(try_recv(&mut theirs), Err(TryRecvError::Empty)));
        match all.try_recv() {
            Ok(RunChange::Committed { run_id, batch }) => {
                assert_eq!(run_id, "run-1");
                assert!(Arc::ptr_eq(&batch, &seen), "one batch, shared");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn notices_carry_no_events_and_send_followers_to_the_store() {
        let hub = Arc::new(Hub::default());
        let mut one = hub.subscribe("run-1");
        let mut two = hub.subscribe("run-2");
        let mut all = hub.subscribe_all();
        hub.notify("run-1", 7);
        let notice = try_recv(&mut one).expect("a notice");
        assert!(notice.events.is_empty());
        assert_eq!(notice.last_sequence, 7);
        assert!(matches!(try_recv(&mut two), Err(TryRecvError::Empty)));
        assert!(matches!(all.try_recv(), Ok(RunChange::Committed { .. })));

        hub.notify_all();
        for subscription in [&mut one, &mut two] {
            let notice = try_recv(subscription).expect("every follower hears it");
            assert!(notice.events.is_empty());
            assert_eq!(notice.last_sequence, u64::MAX);
        }
        assert!(matches!(all.try_recv(), Ok(RunChange::Missed)));
    }

    #[test]
    fn a_runs_channel_goes_with_its_last_follower() {
        let hub = Arc::new(Hub::default());
        let first = hub.subscribe("run-1");
        let second = hub.subscribe("run-1");
        let channels = |hub: &Hub| hub.channels.lock().map(|c| c.len()).unwrap_or(usize::MAX);
        assert_eq!(channels(&hub), 1);
        drop(first);
        assert_eq!(channels(&hub), 1, "a follower is left");
        drop(second);
        assert_eq!(channels(&hub), 0);
        // Publishing to a run nobody follows is fine, and creates nothing.
        hub.publish("run-1", batch("run-1", 1, RunStatus::Running));
        assert_eq!(channels(&hub), 0);
    }
}
