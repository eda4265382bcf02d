//! The webhook outbox on PostgreSQL: the same table and SQL as SQLite's (`webhook_records`), with
//! claims that skip rows another replica is claiming (`FOR UPDATE SKIP LOCKED`).

use std::sync::LazyLock;

use async_trait::async_trait;
use futures::future::try_join_all;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::PostgresStore;
use crate::store::deliveries::{
    DeliveryClaim, DeliveryQuery, DeliveryRecord, DeliveryStore, DueDelivery, FinishedAttempt,
    RedeliverOutcome, Redelivery, SecretRotation, StoredWebhookSecrets,
};
use crate::store::timed;
// The outbox's statements and rows, which both stores share.
use crate::store::StoreResult;
use crate::store::webhook_records::*;

/// Two replicas claiming at once choose different rows: each skips the rows the other locked.
static CLAIM_DELIVERIES: LazyLock<String> =
    LazyLock::new(|| claim_deliveries_sql("r.tenant = ANY($4::TEXT[])", "FOR UPDATE SKIP LOCKED"));

fn delivery_row(row: &Row) -> DeliveryRow {
    DeliveryRow {
        webhook_id: row.get(0),
        run_id: row.get(1),
        sequence: row.get(2),
        event_type: row.get(3),
        subscription: row.get(4),
        tool_call_id: row.get(5),
        reminder_permille: row.get(6),
        status: row.get(7),
        attempts: row.get(8),
        created_ms: row.get(9),
        pending_since_ms: row.get(10),
        next_attempt_ms: row.get(11),
        last_attempt_ms: row.get(12),
        last_error: row.get(13),
        plan: row.get(14),
    }
}

fn due_row(row: &Row) -> DueRow {
    let first = DELIVERY_COLUMN_COUNT;
    DueRow {
        delivery: delivery_row(row),
        event_time_ms: row.get(first),
        event_body: row.get(first + 1),
        agent_id: row.get(first + 2),
        run_status: row.get(first + 3),
        tenant: row.get(first + 4),
        metadata: row.get(first + 5),
        call_status: row.get(first + 6),
    }
}

#[async_trait]
impl DeliveryStore for PostgresStore {
    async fn claim_deliveries(&self, claim: DeliveryClaim<'_>) -> StoreResult<Vec<DueDelivery>> {
        let DeliveryClaim {
            owner,
            now_ms,
            lease_until_ms,
            limit,
            skip_tenants,
        } = claim;
        timed("claim_deliveries", async {
            let client = self.pool.get().await?;
            let claim = client.prepare_cached(&CLAIM_DELIVERIES).await?;
            let read = client.prepare_cached(&DUE_DELIVERY_QUERY).await?;
            let claimed = client
                .query(
                    &claim,
                    &[
                        &owner,
                        &lease_until_ms,
                        &now_ms,
                        &skip_tenants,
                        &(limit as i64),
                    ],
                )
                .await?;
            let ids: Vec<String> = claimed.iter().map(|row| row.get(0)).collect();
            let params: Vec<[&(dyn ToSql + Sync); 1]> = ids.iter().map(|id| [id as _]).collect();
            let rows =
                try_join_all(params.iter().map(|params| client.query_one(&read, params))).await?;
            rows.iter().map(|row| due_row(row).into_due()).collect()
        })
        .await
    }

    async fn finish_delivery(&self, attempt: FinishedAttempt<'_>) -> StoreResult<bool> {
        let FinishedAttempt {
            webhook_id,
            owner,
            now_ms,
            outcome,
        } = attempt;
        timed("finish_delivery", async {
            let client = self.pool.get().await?;
            let statement = client.prepare_cached(FINISH_DELIVERY).await?;
            let (status, attempts, next_ms, attempt_ms, error) = finish_values(outcome, now_ms);
            let changed = client
                .execute(
                    &statement,
                    &[
                        &status,
                        &attempts,
                        &next_ms,
                        &attempt_ms,
                        &error,
                        &webhook_id,
                        &owner,
                    ],
                )
                .await?;
            Ok(changed == 1)
        })
        .await
    }

    async fn list_deliveries(&self, query: DeliveryQuery) -> StoreResult<Vec<DeliveryRecord>> {
        let client = self.pool.get().await?;
        let statement = client.prepare_cached(&LIST_DELIVERIES_QUERY).await?;
        let (after_ms, after_id) = query.after.unwrap_or((i64::MIN, String::new()));
        let rows = client
            .query(
                &statement,
                &[
                    &query.tenant,
                    &query.run_id,
                    &query.status.map(|status| status.as_str()),
                    &after_ms,
                    &after_id,
                    &(query.limit as i64),
                ],
            )
            .await?;
        rows.iter()
            .map(|row| delivery_row(row).into_record())
            .collect()
    }

    async fn rotate_webhook_secret(&self, rotation: SecretRotation<'_>) -> StoreResult<()> {
        timed("rotate_webhook_secret", async {
            let client = self.pool.get().await?;
            let statement = client.prepare_cached(ROTATE_WEBHOOK_SECRET).await?;
            client
                .execute(
                    &statement,
                    &[
                        &rotation.tenant,
                        &rotation.sealed,
                        &rotation.now_ms,
                        &rotation.previous_until_ms,
                    ],
                )
                .await?;
            Ok(())
        })
        .await
    }

    async fn webhook_secrets(&self, tenant: &str) -> StoreResult<Option<StoredWebhookSecrets>> {
        let client = self.pool.get().await?;
        let statement = client.prepare_cached(WEBHOOK_SECRETS_QUERY).await?;
        Ok(client
            .query_opt(&statement, &[&tenant])
            .await?
            .map(|row| webhook_secrets_record(row.get(0), row.get(1), row.get(2), row.get(3))))
    }

    async fn redeliver(&self, redelivery: Redelivery<'_>) -> StoreResult<RedeliverOutcome> {
        let Redelivery {
            webhook_id,
            tenancy,
            now_ms,
        } = redelivery;
        timed("redeliver", async {
            let client = self.pool.get().await?;
            let redeliver = client.prepare_cached(REDELIVER).await?;
            let read = client.prepare_cached(&DELIVERY_IN_TENANT_QUERY).await?;
            let tenant = tenancy.param();
            let changed = client
                .execute(&redeliver, &[&now_ms, &webhook_id, &tenant])
                .await?;
            let row = client.query_opt(&read, &[&webhook_id, &tenant]).await?;
            Ok(match row {
                None => RedeliverOutcome::NotFound,
                Some(row) => {
                    let delivery = delivery_row(&row).into_record()?;
                    match changed {
                        1 => RedeliverOutcome::Redelivered(delivery),
                        _ => RedeliverOutcome::Unchanged(delivery),
                    }
                }
            })
        })
        .await
    }
}
