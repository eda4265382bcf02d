//! The webhook outbox: deliveries written with the events that make them, claimed by a deliverer
//! of one replica at a time, and listed or redelivered by operators.

use std::collections::BTreeMap;

use async_trait::async_trait;

use super::{StoreResult, Tenancy};
use crate::domain::{Event, RunStatus, WebhookEvent, WebhookTarget};

/// Where a delivery stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeliveryStatus {
    /// To be attempted (again) at its next attempt time.
    Pending,
    /// A receiver answered 2xx.
    Delivered,
    /// Given up: it still failed at its maximum age, or its receiver answered 410 Gone.
    Dead,
    /// No longer worth sending: a reminder whose call no longer waits, or its run was deleted.
    Obsolete,
}

impl DeliveryStatus {
    const ALL: [DeliveryStatus; 4] = [
        DeliveryStatus::Pending,
        DeliveryStatus::Delivered,
        DeliveryStatus::Dead,
        DeliveryStatus::Obsolete,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryStatus::Pending => "pending",
            DeliveryStatus::Delivered => "delivered",
            DeliveryStatus::Dead => "dead",
            DeliveryStatus::Obsolete => "obsolete",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|status| status.as_str() == name)
    }
}

/// A delivery as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct DeliveryRecord {
    pub webhook_id: String,
    pub run_id: String,
    pub sequence: u64,
    pub event: WebhookEvent,
    /// Its subscription's index in the run's plan.
    pub subscription: usize,
    /// That subscription (URL, signing); `None` when its run was deleted.
    pub target: Option<WebhookTarget>,
    /// A reminder's call and fraction of the call's TTL, in per mille.
    pub reminder: Option<(String, i64)>,
    pub status: DeliveryStatus,
    pub attempts: u32,
    pub created_ms: i64,
    /// When it last became pending: its maximum age counts from here.
    pub pending_since_ms: i64,
    /// When it is next attempted; meaningful while pending.
    pub next_attempt_ms: i64,
    pub last_attempt_ms: Option<i64>,
    /// Why the last attempt failed; empty when it did not.
    pub last_error: String,
}

/// The run a delivery is about, as its body summarises it.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSummary {
    pub run_id: String,
    pub agent_id: String,
    pub status: RunStatus,
    pub tenant: String,
    pub metadata: BTreeMap<String, String>,
}

/// A delivery claimed for an attempt, with what its body is made of.
#[derive(Clone, Debug)]
pub struct DueDelivery {
    pub delivery: DeliveryRecord,
    /// The event it tells of; `None` when its run was deleted.
    pub event: Option<Event>,
    pub run: Option<RunSummary>,
    /// For a reminder: whether its call still waits.
    pub call_waits: bool,
}

/// How an attempt ended.
#[derive(Clone, Debug, PartialEq)]
pub enum AttemptOutcome {
    Delivered,
    /// Failed; tried again at `at_ms`.
    Retry {
        at_ms: i64,
        error: String,
    },
    /// Failed for the last time.
    Dead {
        error: String,
    },
    /// Not attempted: its tenant or destination had its share of the deliverer. Pending again
    /// from `at_ms`, with no attempt counted.
    Deferred {
        at_ms: i64,
    },
    /// Not sent: nothing is left to tell.
    Obsolete {
        reason: String,
    },
}

/// Filter and position of a listing of deliveries, oldest first.
#[derive(Clone, Debug, Default)]
pub struct DeliveryQuery {
    /// Only deliveries of runs of this tenant; `None`: every tenant's.
    pub tenant: Option<String>,
    pub run_id: Option<String>,
    pub status: Option<DeliveryStatus>,
    /// Only deliveries after this (creation time, id): the previous page's last.
    pub after: Option<(i64, String)>,
    pub limit: usize,
}

/// Outcome of [`DeliveryStore::redeliver`].
#[derive(Clone, Debug)]
pub enum RedeliverOutcome {
    /// Pending again, due now.
    Redelivered(DeliveryRecord),
    /// Pending or obsolete: not redelivered; as it is.
    Unchanged(DeliveryRecord),
    NotFound,
}

/// A tenant's sealed webhook secrets: the current one, and the one it replaced with when that
/// stops signing.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredWebhookSecrets {
    pub sealed: String,
    pub created_ms: i64,
    pub previous: Option<(String, i64)>,
}

/// A deliverer's claim, for [`DeliveryStore::claim_deliveries`]: leases to `owner` until
/// `lease_until_ms` at most `limit` pending deliveries due at `now_ms`, of runs of tenants not in
/// `skip_tenants` (those at their share of the deliverer). One value, so that each store's
/// signature stays short.
#[derive(Clone, Copy, Debug)]
pub struct DeliveryClaim<'a> {
    pub owner: &'a str,
    pub now_ms: i64,
    pub lease_until_ms: i64,
    pub limit: usize,
    pub skip_tenants: &'a [String],
}

/// An attempt of delivery `webhook_id` by `owner` that ended at `now_ms`, for
/// [`DeliveryStore::finish_delivery`].
#[derive(Clone, Debug)]
pub struct FinishedAttempt<'a> {
    pub webhook_id: &'a str,
    pub owner: &'a str,
    pub now_ms: i64,
    pub outcome: AttemptOutcome,
}

/// A new webhook secret, for [`DeliveryStore::rotate_webhook_secret`]: `sealed` signs `tenant`'s
/// deliveries from `now_ms`, and the one it replaces until `previous_until_ms`.
#[derive(Clone, Copy, Debug)]
pub struct SecretRotation<'a> {
    pub tenant: &'a str,
    pub sealed: &'a str,
    pub now_ms: i64,
    pub previous_until_ms: i64,
}

/// A redelivery, for [`DeliveryStore::redeliver`]: delivery `webhook_id` (of a run of `tenancy`)
/// due again at `now_ms`.
#[derive(Clone, Copy, Debug)]
pub struct Redelivery<'a> {
    pub webhook_id: &'a str,
    pub tenancy: Tenancy<'a>,
    pub now_ms: i64,
}

/// The outbox's operations besides the writes that fill it (see [`crate::domain::WebhookPlan`]),
/// and the tenants' secrets that sign it.
#[async_trait]
pub trait DeliveryStore: Send + Sync {
    /// Takes `claim` on pending deliveries that no other deliverer holds an unexpired lease on,
    /// and returns them.
    async fn claim_deliveries(&self, claim: DeliveryClaim<'_>) -> StoreResult<Vec<DueDelivery>>;
    /// Records an attempt's outcome and ends the lease, if its `owner` still holds it; whether it
    /// did.
    async fn finish_delivery(&self, attempt: FinishedAttempt<'_>) -> StoreResult<bool>;
    async fn list_deliveries(&self, query: DeliveryQuery) -> StoreResult<Vec<DeliveryRecord>>;
    /// Makes the `rotation`'s secret the tenant's; the one it replaces (if any) still signs until
    /// `previous_until_ms`. An earlier previous one stops at once.
    async fn rotate_webhook_secret(&self, rotation: SecretRotation<'_>) -> StoreResult<()>;
    async fn webhook_secrets(&self, tenant: &str) -> StoreResult<Option<StoredWebhookSecrets>>;
    /// Makes a delivered or dead delivery (of a run of the tenant) pending again, as `redelivery`
    /// says.
    async fn redeliver(&self, redelivery: Redelivery<'_>) -> StoreResult<RedeliverOutcome>;
}
