//! Webhook subscriptions of a run, and the deliveries its events make: decided here once, from the
//! committed events, and written by each store in the transaction that commits them.

use serde::{Deserialize, Serialize};

use super::run::{Event, EventKind, ToolResultKind};

/// What a subscription may be told of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum WebhookEvent {
    /// A call waits for someone: a question, an approval or a client tool's output.
    #[serde(rename = "call.suspended")]
    CallSuspended,
    /// A call still waits at a fraction of its time to live.
    #[serde(rename = "call.reminder")]
    CallReminder,
    /// A call that waited was settled (answered, declined, expired, ...).
    #[serde(rename = "call.settled")]
    CallSettled,
    #[serde(rename = "run.completed")]
    RunCompleted,
    #[serde(rename = "run.failed")]
    RunFailed,
    #[serde(rename = "run.cancelled")]
    RunCancelled,
}

impl WebhookEvent {
    pub const ALL: [WebhookEvent; 6] = [
        WebhookEvent::CallSuspended,
        WebhookEvent::CallReminder,
        WebhookEvent::CallSettled,
        WebhookEvent::RunCompleted,
        WebhookEvent::RunFailed,
        WebhookEvent::RunCancelled,
    ];

    /// The event's type, as deliveries name it.
    pub fn as_str(self) -> &'static str {
        match self {
            WebhookEvent::CallSuspended => "call.suspended",
            WebhookEvent::CallReminder => "call.reminder",
            WebhookEvent::CallSettled => "call.settled",
            WebhookEvent::RunCompleted => "run.completed",
            WebhookEvent::RunFailed => "run.failed",
            WebhookEvent::RunCancelled => "run.cancelled",
        }
    }

    pub fn parse(name: &str) -> Option<WebhookEvent> {
        Self::ALL.into_iter().find(|event| event.as_str() == name)
    }

    /// The webhook event a stored event makes, if any. A result nobody waited for (an invalid
    /// call, a tool the server ran without approval) settles nothing anyone was told of.
    fn of(kind: &EventKind) -> Option<WebhookEvent> {
        match kind {
            EventKind::ToolCallSuspended { .. } => Some(WebhookEvent::CallSuspended),
            EventKind::ToolResult {
                kind: ToolResultKind::InvalidCall,
                ..
            }
            | EventKind::ToolResult {
                kind: ToolResultKind::Executed,
                settled_by: None,
                ..
            } => None,
            EventKind::ToolResult { .. } => Some(WebhookEvent::CallSettled),
            EventKind::RunCompleted { .. } => Some(WebhookEvent::RunCompleted),
            EventKind::RunFailed { .. } => Some(WebhookEvent::RunFailed),
            EventKind::RunCancelled { .. } => Some(WebhookEvent::RunCancelled),
            _ => None,
        }
    }
}

/// Where one subscription's deliveries go.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WebhookTarget {
    pub url: String,
    /// The events it wants; empty: every one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<WebhookEvent>,
    /// The environment variable holding its signing secret (`whsec_…`); `None`: signed with the
    /// secrets of the run's tenant (a start's own subscriptions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_env: Option<String>,
    /// Written by the operator (the agents file): exempt from `--webhook-deny-private`. Absent
    /// (as in plans stored before it existed): the private-address rule applies.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub operator: bool,
}

impl WebhookTarget {
    pub fn wants(&self, event: WebhookEvent) -> bool {
        self.events.is_empty() || self.events.contains(&event)
    }
}

/// A run's subscriptions, fixed when it starts (the agents file's and the start's own), and the
/// fractions of a call's time to live at which a call still waiting is reminded of.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WebhookPlan {
    pub targets: Vec<WebhookTarget>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reminders: Vec<f64>,
}

/// A delivery to make: one row of the outbox.
#[derive(Clone, Debug, PartialEq)]
pub struct NewDelivery {
    /// The `webhook-id` header, stable across retries and restarts.
    pub webhook_id: String,
    pub run_id: String,
    pub sequence: u64,
    pub event: WebhookEvent,
    /// The index of its subscription in the run's plan (`runs.webhooks`).
    pub subscription: usize,
    /// A reminder's call and fraction of its TTL, in per mille.
    pub reminder: Option<(String, i64)>,
    /// When it is first due.
    pub due_ms: i64,
}

impl WebhookPlan {
    /// The deliveries `events` (just committed, in order) make.
    pub fn deliveries(&self, events: &[Event]) -> Vec<NewDelivery> {
        let mut deliveries = Vec::new();
        for event in events {
            let Some(kind) = WebhookEvent::of(&event.kind) else {
                continue;
            };
            for (index, target) in self.targets.iter().enumerate() {
                let delivery = |event_type, suffix: String, reminder, due_ms| NewDelivery {
                    webhook_id: format!("{}:{}:{index}{suffix}", event.run_id, event.sequence),
                    run_id: event.run_id.clone(),
                    sequence: event.sequence,
                    event: event_type,
                    subscription: index,
                    reminder,
                    due_ms,
                };
                if target.wants(kind) {
                    deliveries.push(delivery(kind, String::new(), None, event.time_ms));
                }
                let EventKind::ToolCallSuspended {
                    tool_call_id,
                    expire_ms: Some(expire_ms),
                    ..
                } = &event.kind
                else {
                    continue;
                };
                if !target.wants(WebhookEvent::CallReminder) {
                    continue;
                }
                let ttl = expire_ms - event.time_ms;
                for fraction in &self.reminders {
                    let permille = (fraction * 1000.0).round() as i64;
                    deliveries.push(delivery(
                        WebhookEvent::CallReminder,
                        format!(":r{permille}"),
                        Some((tool_call_id.clone(), permille)),
                        event.time_ms + ttl * permille / 1000,
                    ));
                }
            }
        }
        deliveries
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::SuspendKind;

    fn event(sequence: u64, kind: EventKind) -> Event {
        Event {
            run_id: "r".into(),
            sequence,
            time_ms: 1000,
            kind,
        }
    }

    fn suspended(expire_ms: Option<i64>) -> EventKind {
        EventKind::ToolCallSuspended {
            tool_call_id: "c".into(),
            tool_name: "ask_user".into(),
            payload: None,
            form: None,
            expire_ms,
            kind: SuspendKind::Question,
            arguments_json: String::new(),
            approval_reason: String::new(),
            assignees: Vec::new(),
        }
    }

    fn target(events: Vec<WebhookEvent>) -> WebhookTarget {
        WebhookTarget {
            url: "https://hooks.example.com/".into(),
            events,
            secret_env: Some("S".into()),
            operator: true,
        }
    }

    #[test]
    fn each_subscription_gets_its_own_id_and_reminders_fall_at_fractions_of_the_ttl() {
        let plan = WebhookPlan {
            targets: vec![target(Vec::new()), target(vec![WebhookEvent::RunCompleted])],
            reminders: vec![0.5, 0.9],
        };
        let events = [
            event(2, EventKind::TextDelta { text: "x".into() }),
            event(3, suspended(Some(11_000))),
            event(
                4,
                EventKind::RunCompleted {
                    output_text: String::new(),
                    usage: None,
                },
            ),
        ];
        let made: Vec<(String, i64)> = plan
            .deliveries(&events)
            .into_iter()
            .map(|d| (d.webhook_id, d.due_ms))
            .collect();
        assert_eq!(
            made,
            vec![
                ("r:3:0".to_owned(), 1000),
                ("r:3:0:r500".to_owned(), 6000),
                ("r:3:0:r900".to_owned(), 10_000),
                ("r:4:0".to_owned(), 1000),
                ("r:4:1".to_owned(), 1000),
            ]
        );
    }

    #[test]
    fn a_call_without_expiry_has_no_reminder() {
        let plan = WebhookPlan {
            targets: vec![target(Vec::new())],
            reminders: vec![0.5],
        };
        assert_eq!(plan.deliveries(&[event(3, suspended(None))]).len(), 1);
    }
}
