//! The webhook outbox on SQLite: one process uses the file, so a claim needs no row locks.

use std::sync::LazyLock;

use async_trait::async_trait;
use rusqlite::{OptionalExtension, params};

use super::SqliteStore;
use super::statements::Db;
use crate::store::deliveries::{
    DeliveryClaim, DeliveryQuery, DeliveryRecord, DeliveryStore, DueDelivery, FinishedAttempt,
    RedeliverOutcome, Redelivery, SecretRotation, StoredWebhookSecrets,
};
// The outbox's statements and rows, which both stores share.
use crate::store::StoreResult;
use crate::store::webhook_records::*;

/// The tenants skipped are a JSON array.
static CLAIM_DELIVERIES: LazyLock<String> =
    LazyLock::new(|| claim_deliveries_sql("r.tenant IN (SELECT value FROM json_each($4))", ""));

fn delivery_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<DeliveryRow> {
    Ok(DeliveryRow {
        webhook_id: row.get(0)?,
        run_id: row.get(1)?,
        sequence: row.get(2)?,
        event_type: row.get(3)?,
        subscription: row.get(4)?,
        tool_call_id: row.get(5)?,
        reminder_permille: row.get(6)?,
        status: row.get(7)?,
        attempts: row.get(8)?,
        created_ms: row.get(9)?,
        pending_since_ms: row.get(10)?,
        next_attempt_ms: row.get(11)?,
        last_attempt_ms: row.get(12)?,
        last_error: row.get(13)?,
        plan: row.get(14)?,
    })
}

fn delivery_in_tenant(
    conn: &Db<'_>,
    webhook_id: &str,
    tenant: Option<&str>,
) -> StoreResult<Option<DeliveryRecord>> {
    conn.statement(&DELIVERY_IN_TENANT_QUERY)?
        .query_row(params![webhook_id, tenant], delivery_row)
        .optional()?
        .map(DeliveryRow::into_record)
        .transpose()
}

#[async_trait]
impl DeliveryStore for SqliteStore {
    async fn claim_deliveries(&self, claim: DeliveryClaim<'_>) -> StoreResult<Vec<DueDelivery>> {
        let (owner, now_ms, lease_until_ms, limit) = (
            claim.owner.to_owned(),
            claim.now_ms,
            claim.lease_until_ms,
            claim.limit,
        );
        let skip = crate::store::records::to_json(&claim.skip_tenants)?;
        self.db
            .commit("claim_deliveries", move |conn| {
                let claimed: Vec<String> = conn
                    .statement(&CLAIM_DELIVERIES)?
                    .query_map(
                        params![owner, lease_until_ms, now_ms, skip, limit as i64],
                        |row| row.get(0),
                    )?
                    .collect::<Result<_, _>>()?;
                let mut read = conn.statement(&DUE_DELIVERY_QUERY)?;
                claimed
                    .iter()
                    .map(|webhook_id| {
                        let first = DELIVERY_COLUMN_COUNT;
                        read.query_row([webhook_id], |row| {
                            Ok(DueRow {
                                delivery: delivery_row(row)?,
                                event_time_ms: row.get(first)?,
                                event_body: row.get(first + 1)?,
                                agent_id: row.get(first + 2)?,
                                run_status: row.get(first + 3)?,
                                tenant: row.get(first + 4)?,
                                metadata: row.get(first + 5)?,
                                call_status: row.get(first + 6)?,
                            })
                        })?
                        .into_due()
                    })
                    .collect()
            })
            .await
    }

    async fn finish_delivery(&self, attempt: FinishedAttempt<'_>) -> StoreResult<bool> {
        let (webhook_id, owner) = (attempt.webhook_id.to_owned(), attempt.owner.to_owned());
        let (now_ms, outcome) = (attempt.now_ms, attempt.outcome);
        self.db
            .commit("finish_delivery", move |conn| {
                let (status, attempts, next_ms, attempt_ms, error) = finish_values(outcome, now_ms);
                let changed = conn.statement(FINISH_DELIVERY)?.execute(params![
                    status, attempts, next_ms, attempt_ms, error, webhook_id, owner
                ])?;
                Ok(changed == 1)
            })
            .await
    }

    async fn list_deliveries(&self, query: DeliveryQuery) -> StoreResult<Vec<DeliveryRecord>> {
        self.readers
            .run(move |conn| {
                let (after_ms, after_id) = query.after.unwrap_or((i64::MIN, String::new()));
                let rows: Vec<DeliveryRow> = conn
                    .statement(&LIST_DELIVERIES_QUERY)?
                    .query_map(
                        params![
                            query.tenant,
                            query.run_id,
                            query.status.map(|status| status.as_str()),
                            after_ms,
                            after_id,
                            query.limit as i64
                        ],
                        delivery_row,
                    )?
                    .collect::<Result<_, _>>()?;
                rows.into_iter().map(DeliveryRow::into_record).collect()
            })
            .await
    }

    async fn rotate_webhook_secret(&self, rotation: SecretRotation<'_>) -> StoreResult<()> {
        let (tenant, sealed) = (rotation.tenant.to_owned(), rotation.sealed.to_owned());
        let (now_ms, previous_until_ms) = (rotation.now_ms, rotation.previous_until_ms);
        self.db
            .commit("rotate_webhook_secret", move |conn| {
                conn.statement(ROTATE_WEBHOOK_SECRET)?.execute(params![
                    tenant,
                    sealed,
                    now_ms,
                    previous_until_ms
                ])?;
                Ok(())
            })
            .await
    }

    async fn webhook_secrets(&self, tenant: &str) -> StoreResult<Option<StoredWebhookSecrets>> {
        let tenant = tenant.to_owned();
        self.readers
            .run(move |conn| {
                Ok(conn
                    .statement(WEBHOOK_SECRETS_QUERY)?
                    .query_row([tenant], |row| {
                        Ok(webhook_secrets_record(
                            row.get(0)?,
                            row.get(1)?,
                            row.get(2)?,
                            row.get(3)?,
                        ))
                    })
                    .optional()?)
            })
            .await
    }

    async fn redeliver(&self, redelivery: Redelivery<'_>) -> StoreResult<RedeliverOutcome> {
        let (webhook_id, tenant) = (redelivery.webhook_id.to_owned(), redelivery.tenancy.param());
        let now_ms = redelivery.now_ms;
        self.db
            .commit("redeliver", move |conn| {
                let changed = conn
                    .statement(REDELIVER)?
                    .execute(params![now_ms, webhook_id, tenant])?;
                Ok(
                    match delivery_in_tenant(conn, &webhook_id, tenant.as_deref())? {
                        None => RedeliverOutcome::NotFound,
                        Some(delivery) if changed == 1 => RedeliverOutcome::Redelivered(delivery),
                        Some(delivery) => RedeliverOutcome::Unchanged(delivery),
                    },
                )
            })
            .await
    }
}
