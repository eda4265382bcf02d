//! The webhook outbox's SQL and rows, shared by the SQL stores. (SQLite numbers `$n` parameters
//! in the order they first appear: every statement here keeps them in order.)

use std::sync::LazyLock;

use super::deliveries::{
    AttemptOutcome, DeliveryRecord, DeliveryStatus, DueDelivery, RunSummary, StoredWebhookSecrets,
};
use super::records::{from_json, parse_status, to_json, unsigned};
use super::{StoreError, StoreResult};
use crate::domain::{Event, NewDelivery, WebhookEvent, WebhookPlan};

/// The `runs.webhooks` value of a run's plan: NULL when it has no subscription.
pub(super) fn webhooks_column(plan: Option<&WebhookPlan>) -> StoreResult<Option<String>> {
    plan.filter(|plan| !plan.targets.is_empty())
        .map(to_json)
        .transpose()
}

/// The deliveries `events` of a run with the plan `webhooks` (its `runs.webhooks` value) make:
/// written in the transaction that appends them.
pub(super) fn deliveries_of(
    webhooks: Option<&str>,
    events: &[Event],
) -> StoreResult<Vec<NewDelivery>> {
    match webhooks {
        None => Ok(Vec::new()),
        Some(text) => Ok(from_json::<WebhookPlan>(text)?.deliveries(events)),
    }
}

/// Inserts one delivery: id, run, sequence, type, subscription's index in the run's plan,
/// reminder's call and per mille, creation time, due time.
pub(super) const INSERT_DELIVERY: &str = "INSERT INTO webhook_deliveries (webhook_id, run_id, \
     sequence, event_type, subscription, tool_call_id, reminder_permille, status, created_ms, \
     pending_since_ms, next_attempt_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, $8, \
     $9)";

/// A delivery's values as [`INSERT_DELIVERY`] takes them (in order).
pub(super) struct DeliveryInsert<'a> {
    pub webhook_id: &'a str,
    pub run_id: &'a str,
    pub sequence: i64,
    pub event_type: &'static str,
    pub subscription: i64,
    pub tool_call_id: Option<&'a str>,
    pub reminder_permille: Option<i64>,
    pub due_ms: i64,
}

impl<'a> DeliveryInsert<'a> {
    pub fn new(delivery: &'a NewDelivery) -> Self {
        DeliveryInsert {
            webhook_id: &delivery.webhook_id,
            run_id: &delivery.run_id,
            sequence: delivery.sequence as i64,
            event_type: delivery.event.as_str(),
            subscription: i64::try_from(delivery.subscription).unwrap_or(i64::MAX),
            tool_call_id: delivery.reminder.as_ref().map(|(call, _)| call.as_str()),
            reminder_permille: delivery.reminder.as_ref().map(|(_, permille)| *permille),
            due_ms: delivery.due_ms,
        }
    }
}

/// The columns of `webhook_deliveries` that make a [`DeliveryRecord`], in this order.
const DELIVERY_COLUMNS: &str = "webhook_id, run_id, sequence, event_type, subscription, \
     tool_call_id, reminder_permille, status, attempts, created_ms, pending_since_ms, \
     next_attempt_ms, last_attempt_ms, last_error";

/// How many columns [`DELIVERY_COLUMNS_OF_D`] has.
pub(super) const DELIVERY_COLUMN_COUNT: usize = 15;

/// [`DELIVERY_COLUMNS`] of the table aliased `d`, then the plan (`webhooks`) of its run aliased
/// `r`, which holds the subscription.
static DELIVERY_COLUMNS_OF_D: LazyLock<String> = LazyLock::new(|| {
    let mut columns: Vec<String> = DELIVERY_COLUMNS
        .split(", ")
        .map(|column| format!("d.{column}"))
        .collect();
    columns.push("r.webhooks".into());
    columns.join(", ")
});

/// A `webhook_deliveries` row as read ([`DELIVERY_COLUMNS_OF_D`]).
pub(super) struct DeliveryRow {
    pub webhook_id: String,
    pub run_id: String,
    pub sequence: i64,
    pub event_type: String,
    pub subscription: i64,
    pub tool_call_id: Option<String>,
    pub reminder_permille: Option<i64>,
    pub status: String,
    pub attempts: i64,
    pub created_ms: i64,
    pub pending_since_ms: i64,
    pub next_attempt_ms: i64,
    pub last_attempt_ms: Option<i64>,
    pub last_error: String,
    /// The run's plan; `None` when the run was deleted.
    pub plan: Option<String>,
}

impl DeliveryRow {
    pub fn into_record(self) -> StoreResult<DeliveryRecord> {
        let subscription = usize::try_from(self.subscription).unwrap_or(usize::MAX);
        let target = match self.plan.as_deref() {
            None => None,
            Some(plan) => from_json::<WebhookPlan>(plan)?
                .targets
                .into_iter()
                .nth(subscription),
        };
        Ok(DeliveryRecord {
            subscription,
            target,
            event: WebhookEvent::parse(&self.event_type).ok_or_else(|| {
                StoreError::Corrupt(format!("webhook event type {}", self.event_type))
            })?,
            status: DeliveryStatus::parse(&self.status).ok_or_else(|| {
                StoreError::Corrupt(format!("webhook delivery status {}", self.status))
            })?,
            reminder: self.tool_call_id.zip(self.reminder_permille),
            webhook_id: self.webhook_id,
            run_id: self.run_id,
            sequence: unsigned(self.sequence),
            attempts: u32::try_from(self.attempts).unwrap_or(u32::MAX),
            created_ms: self.created_ms,
            pending_since_ms: self.pending_since_ms,
            next_attempt_ms: self.next_attempt_ms,
            last_attempt_ms: self.last_attempt_ms,
            last_error: self.last_error,
        })
    }
}

/// Leases (owner `$1`, until `$2`) at most `$5` pending deliveries due at `$3` that nobody holds
/// an unexpired lease on, of runs whose tenant `r.tenant` is not one of `$4` (`skipped` says how,
/// per store); `lock` locks the chosen rows on a shared store (PostgreSQL's
/// `FOR UPDATE SKIP LOCKED`, so that two replicas never choose the same row), and is empty on a
/// store one process uses.
pub(super) fn claim_deliveries_sql(skipped: &str, lock: &str) -> String {
    format!(
        "UPDATE webhook_deliveries SET lease_owner = $1, lease_expires_ms = $2 WHERE webhook_id IN \
         (SELECT d.webhook_id FROM webhook_deliveries d WHERE d.status = 'pending' \
         AND d.next_attempt_ms <= $3 AND (d.lease_expires_ms IS NULL OR d.lease_expires_ms <= $3) \
         AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.run_id = d.run_id AND {skipped}) \
         ORDER BY d.next_attempt_ms LIMIT $5 {lock}) RETURNING webhook_id"
    )
}

/// Delivery `$1` ([`DELIVERY_COLUMNS`]), then its event's time and body, its run's agent, status,
/// tenant and metadata, and its reminder's call's status ([`DueRow`]).
pub(super) static DUE_DELIVERY_QUERY: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {}, e.time_ms, e.body, r.agent_id, r.status, r.tenant, r.metadata, c.status \
         FROM webhook_deliveries d \
         LEFT JOIN events e ON e.run_id = d.run_id AND e.sequence = d.sequence \
         LEFT JOIN runs r ON r.run_id = d.run_id \
         LEFT JOIN tool_calls c ON c.run_id = d.run_id AND c.tool_call_id = d.tool_call_id \
         WHERE d.webhook_id = $1",
        *DELIVERY_COLUMNS_OF_D
    )
});

/// A row of [`DUE_DELIVERY_QUERY`].
pub(super) struct DueRow {
    pub delivery: DeliveryRow,
    pub event_time_ms: Option<i64>,
    pub event_body: Option<String>,
    pub agent_id: Option<String>,
    pub run_status: Option<String>,
    pub tenant: Option<String>,
    pub metadata: Option<String>,
    pub call_status: Option<String>,
}

impl DueRow {
    pub fn into_due(self) -> StoreResult<DueDelivery> {
        let delivery = self.delivery.into_record()?;
        let event = match (self.event_time_ms, self.event_body) {
            (Some(time_ms), Some(body)) => Some(Event {
                run_id: delivery.run_id.clone(),
                sequence: delivery.sequence,
                time_ms,
                kind: from_json(&body)?,
            }),
            _ => None,
        };
        let run = match (self.agent_id, self.run_status, self.tenant, self.metadata) {
            (Some(agent_id), Some(status), Some(tenant), Some(metadata)) => Some(RunSummary {
                run_id: delivery.run_id.clone(),
                agent_id,
                status: parse_status(&status)?,
                tenant,
                metadata: from_json(&metadata)?,
            }),
            _ => None,
        };
        Ok(DueDelivery {
            call_waits: self.call_status.as_deref() == Some("pending"),
            delivery,
            event,
            run,
        })
    }
}

/// Records an attempt and ends the lease if `$7` holds it: status, attempts added, next attempt
/// time, last attempt time (NULL keeps it), last error (NULL keeps it), delivery.
pub(super) const FINISH_DELIVERY: &str = "UPDATE webhook_deliveries SET status = $1, \
     attempts = attempts + $2, next_attempt_ms = $3, \
     last_attempt_ms = COALESCE($4, last_attempt_ms), last_error = COALESCE($5, last_error), \
     lease_owner = NULL, lease_expires_ms = NULL WHERE webhook_id = $6 AND lease_owner = $7";

/// What [`FINISH_DELIVERY`] writes for an attempt at `now_ms` that ended with `outcome`, in its
/// parameters' order up to the last error.
pub(super) fn finish_values(
    outcome: AttemptOutcome,
    now_ms: i64,
) -> (&'static str, i64, i64, Option<i64>, Option<String>) {
    match outcome {
        AttemptOutcome::Delivered => (
            DeliveryStatus::Delivered.as_str(),
            1,
            now_ms,
            Some(now_ms),
            Some(String::new()),
        ),
        AttemptOutcome::Retry { at_ms, error } => (
            DeliveryStatus::Pending.as_str(),
            1,
            at_ms,
            Some(now_ms),
            Some(error),
        ),
        AttemptOutcome::Dead { error } => (
            DeliveryStatus::Dead.as_str(),
            1,
            now_ms,
            Some(now_ms),
            Some(error),
        ),
        AttemptOutcome::Obsolete { reason } => (
            DeliveryStatus::Obsolete.as_str(),
            0,
            now_ms,
            None,
            Some(reason),
        ),
        AttemptOutcome::Deferred { at_ms } => {
            (DeliveryStatus::Pending.as_str(), 0, at_ms, None, None)
        }
    }
}

/// Deliveries of runs of tenant `$1` (any when NULL), of run `$2` and status `$3` when not NULL,
/// after (`$4` creation time, `$5` id), at most `$6`, oldest first.
pub(super) static LIST_DELIVERIES_QUERY: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {} FROM webhook_deliveries d JOIN runs r ON r.run_id = d.run_id \
         WHERE (CAST($1 AS TEXT) IS NULL OR r.tenant = $1) \
         AND (CAST($2 AS TEXT) IS NULL OR d.run_id = $2) \
         AND (CAST($3 AS TEXT) IS NULL OR d.status = $3) \
         AND (d.created_ms > $4 OR (d.created_ms = $4 AND d.webhook_id > $5)) \
         ORDER BY d.created_ms, d.webhook_id LIMIT $6",
        *DELIVERY_COLUMNS_OF_D
    )
});

/// Delivery `$1` if its run belongs to tenant `$2` (any when NULL).
pub(super) static DELIVERY_IN_TENANT_QUERY: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {} FROM webhook_deliveries d JOIN runs r ON r.run_id = d.run_id \
         WHERE d.webhook_id = $1 AND (CAST($2 AS TEXT) IS NULL OR r.tenant = $2)",
        *DELIVERY_COLUMNS_OF_D
    )
});

/// Makes delivery `$2` of a run of tenant `$3` pending again from `$1`, if it was delivered or
/// dead.
pub(super) const REDELIVER: &str = "UPDATE webhook_deliveries SET status = 'pending', \
     pending_since_ms = $1, next_attempt_ms = $1, lease_owner = NULL, lease_expires_ms = NULL \
     WHERE webhook_id = $2 AND status IN ('delivered', 'dead') AND EXISTS (SELECT 1 FROM runs r \
     WHERE r.run_id = webhook_deliveries.run_id AND (CAST($3 AS TEXT) IS NULL OR r.tenant = $3))";

/// Makes `$2` tenant `$1`'s secret from `$3`, keeping the one it replaces until `$4`.
pub(super) const ROTATE_WEBHOOK_SECRET: &str = "INSERT INTO webhook_secrets (tenant, secret, \
     created_ms) VALUES ($1, $2, $3) ON CONFLICT (tenant) DO UPDATE SET \
     previous_secret = webhook_secrets.secret, previous_until_ms = $4, secret = excluded.secret, \
     created_ms = excluded.created_ms";

/// Tenant `$1`'s secrets: sealed secret, its creation, the previous one and until when it signs.
pub(super) const WEBHOOK_SECRETS_QUERY: &str = "SELECT secret, created_ms, previous_secret, \
     previous_until_ms FROM webhook_secrets WHERE tenant = $1";

/// A row of [`WEBHOOK_SECRETS_QUERY`] as a record.
pub(super) fn webhook_secrets_record(
    sealed: String,
    created_ms: i64,
    previous: Option<String>,
    previous_until_ms: Option<i64>,
) -> StoredWebhookSecrets {
    StoredWebhookSecrets {
        sealed,
        created_ms,
        previous: previous.zip(previous_until_ms),
    }
}
