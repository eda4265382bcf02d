//! A store that times its writes for the metrics (`askuser_store_commit_duration_seconds`, by
//! operation) and otherwise passes every call through: the same for SQLite and PostgreSQL, and
//! measured as the server waits for a commit (a SQLite group commit's batching included).

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;

use super::{
    ApiKeyRecord, AttemptOutcome, CancelOutcome, ClaimOutcome, CommitNotice, CreateOutcome, Decide,
    DeliveryQuery, DeliveryRecord, DeliveryStore, DueDelivery, EventPage, ExecutedResult, KeyStore,
    Lease, NewApiKey, NewRun, PendingCounts, RedeliverOutcome, RunPendingCall, RunQuery, RunStore,
    SettleOutcome, StepState, StoreResult, StoredWebhookSecrets, Tenancy, ToolCallRecord,
    TurnCommit, TurnOutcome,
};
use crate::domain::{RunRecord, SettledBy};

/// [`RunStore`] `inner`, its writes timed.
pub struct MeteredStore {
    inner: Arc<dyn RunStore>,
}

impl MeteredStore {
    pub fn new(inner: Arc<dyn RunStore>) -> Self {
        Self { inner }
    }
}

/// Awaits `write`, recording how long it took (failed or not) under `operation`.
async fn timed<T>(operation: &'static str, write: impl Future<Output = T>) -> T {
    let started = Instant::now();
    let outcome = write.await;
    crate::metrics::store_commit(operation, started.elapsed());
    outcome
}

#[async_trait]
impl KeyStore for MeteredStore {
    async fn create_key(&self, key: NewApiKey) -> StoreResult<()> {
        timed("create_key", self.inner.create_key(key)).await
    }

    async fn list_keys(&self, tenancy: Tenancy<'_>) -> StoreResult<Vec<ApiKeyRecord>> {
        self.inner.list_keys(tenancy).await
    }

    async fn revoke_key(
        &self,
        key_id: &str,
        tenancy: Tenancy<'_>,
        now_ms: i64,
    ) -> StoreResult<bool> {
        timed("revoke_key", self.inner.revoke_key(key_id, tenancy, now_ms)).await
    }

    async fn tenant_runs(&self, tenant: &str) -> StoreResult<u64> {
        self.inner.tenant_runs(tenant).await
    }

    async fn move_runs(&self, from: &str, to: &str) -> StoreResult<u64> {
        timed("move_runs", self.inner.move_runs(from, to)).await
    }

    async fn key_by_hash(&self, secret_hash: &str) -> StoreResult<Option<ApiKeyRecord>> {
        self.inner.key_by_hash(secret_hash).await
    }
}

#[async_trait]
impl DeliveryStore for MeteredStore {
    async fn claim_deliveries(
        &self,
        owner: &str,
        now_ms: i64,
        lease_until_ms: i64,
        limit: usize,
        skip_tenants: &[String],
    ) -> StoreResult<Vec<DueDelivery>> {
        timed(
            "claim_deliveries",
            self.inner
                .claim_deliveries(owner, now_ms, lease_until_ms, limit, skip_tenants),
        )
        .await
    }

    async fn finish_delivery(
        &self,
        webhook_id: &str,
        owner: &str,
        now_ms: i64,
        outcome: AttemptOutcome,
    ) -> StoreResult<bool> {
        timed(
            "finish_delivery",
            self.inner
                .finish_delivery(webhook_id, owner, now_ms, outcome),
        )
        .await
    }

    async fn list_deliveries(&self, query: DeliveryQuery) -> StoreResult<Vec<DeliveryRecord>> {
        self.inner.list_deliveries(query).await
    }

    async fn rotate_webhook_secret(
        &self,
        tenant: &str,
        sealed: &str,
        now_ms: i64,
        previous_until_ms: i64,
    ) -> StoreResult<()> {
        timed(
            "rotate_webhook_secret",
            self.inner
                .rotate_webhook_secret(tenant, sealed, now_ms, previous_until_ms),
        )
        .await
    }

    async fn webhook_secrets(&self, tenant: &str) -> StoreResult<Option<StoredWebhookSecrets>> {
        self.inner.webhook_secrets(tenant).await
    }

    async fn redeliver(
        &self,
        webhook_id: &str,
        tenancy: Tenancy<'_>,
        now_ms: i64,
    ) -> StoreResult<RedeliverOutcome> {
        timed(
            "redeliver",
            self.inner.redeliver(webhook_id, tenancy, now_ms),
        )
        .await
    }
}

#[async_trait]
impl RunStore for MeteredStore {
    async fn create_run(
        &self,
        run: NewRun,
        lease: Option<Lease<'_>>,
    ) -> StoreResult<CreateOutcome> {
        timed("create_run", self.inner.create_run(run, lease)).await
    }

    async fn get_run(&self, run_id: &str, tenancy: Tenancy<'_>) -> StoreResult<Option<RunRecord>> {
        self.inner.get_run(run_id, tenancy).await
    }

    async fn list_runs(&self, query: RunQuery) -> StoreResult<Vec<RunRecord>> {
        self.inner.list_runs(query).await
    }

    async fn load_step(
        &self,
        run_id: &str,
        lease: Option<Lease<'_>>,
    ) -> StoreResult<Option<StepState>> {
        // With a lease it writes (takes the lease); without, it only reads.
        match lease {
            Some(_) => timed("load_step", self.inner.load_step(run_id, lease)).await,
            None => self.inner.load_step(run_id, lease).await,
        }
    }

    async fn commit_turn(
        &self,
        run_id: &str,
        owner: &str,
        expected_turns: u32,
        commit: TurnCommit,
    ) -> StoreResult<TurnOutcome> {
        let write = self
            .inner
            .commit_turn(run_id, owner, expected_turns, commit);
        timed("commit_turn", write).await
    }

    async fn append_step_events(
        &self,
        run_id: &str,
        owner: &str,
        expected_turns: u32,
        attempt: u32,
        events: Vec<crate::domain::EventKind>,
    ) -> StoreResult<TurnOutcome> {
        let write = self
            .inner
            .append_step_events(run_id, owner, expected_turns, attempt, events);
        timed("append_step_events", write).await
    }

    async fn get_tool_call(
        &self,
        run_id: &str,
        tenancy: Tenancy<'_>,
        tool_call_id: &str,
    ) -> StoreResult<Option<ToolCallRecord>> {
        self.inner
            .get_tool_call(run_id, tenancy, tool_call_id)
            .await
    }

    async fn settle_tool_call(
        &self,
        run_id: &str,
        tenancy: Tenancy<'_>,
        tool_call_id: &str,
        decide: Decide,
        lease: Option<Lease<'_>>,
    ) -> StoreResult<SettleOutcome> {
        let write = self
            .inner
            .settle_tool_call(run_id, tenancy, tool_call_id, decide, lease);
        timed("settle_tool_call", write).await
    }

    async fn commit_executed(
        &self,
        run_id: &str,
        owner: &str,
        expected_turns: u32,
        results: Vec<ExecutedResult>,
    ) -> StoreResult<TurnOutcome> {
        let write = self
            .inner
            .commit_executed(run_id, owner, expected_turns, results);
        timed("commit_executed", write).await
    }

    async fn claim_call(
        &self,
        run_id: &str,
        tenancy: Tenancy<'_>,
        tool_call_id: &str,
        claimant: &str,
        subject: &str,
        until_ms: i64,
    ) -> StoreResult<ClaimOutcome> {
        let write =
            self.inner
                .claim_call(run_id, tenancy, tool_call_id, claimant, subject, until_ms);
        timed("claim_call", write).await
    }

    async fn pending_calls(
        &self,
        tenancy: Tenancy<'_>,
        after: Option<(String, String)>,
        limit: usize,
    ) -> StoreResult<Vec<RunPendingCall>> {
        self.inner.pending_calls(tenancy, after, limit).await
    }

    async fn cancel_run(
        &self,
        run_id: &str,
        tenancy: Tenancy<'_>,
        reason: &str,
        call_content: &str,
        cancelled_by: &SettledBy,
    ) -> StoreResult<CancelOutcome> {
        let write = self
            .inner
            .cancel_run(run_id, tenancy, reason, call_content, cancelled_by);
        timed("cancel_run", write).await
    }

    async fn read_events(
        &self,
        run_id: &str,
        tenancy: Tenancy<'_>,
        after_sequence: u64,
        limit: usize,
    ) -> StoreResult<Option<EventPage>> {
        self.inner
            .read_events(run_id, tenancy, after_sequence, limit)
            .await
    }

    async fn pending_counts(&self, now_ms: i64) -> StoreResult<PendingCounts> {
        self.inner.pending_counts(now_ms).await
    }

    async fn due_expiries(&self, now_ms: i64, limit: usize) -> StoreResult<Vec<(String, String)>> {
        self.inner.due_expiries(now_ms, limit).await
    }

    async fn next_expiry(&self) -> StoreResult<Option<i64>> {
        self.inner.next_expiry().await
    }

    async fn prune_finished(&self, before_ms: i64, limit: usize) -> StoreResult<u64> {
        timed(
            "prune_finished",
            self.inner.prune_finished(before_ms, limit),
        )
        .await
    }

    async fn unfinished_before(&self, before_ms: i64, limit: usize) -> StoreResult<Vec<String>> {
        self.inner.unfinished_before(before_ms, limit).await
    }

    async fn acquire_lease(&self, run_id: &str, owner: &str, until_ms: i64) -> StoreResult<bool> {
        timed(
            "acquire_lease",
            self.inner.acquire_lease(run_id, owner, until_ms),
        )
        .await
    }

    async fn release_lease(&self, run_id: &str, owner: &str) -> StoreResult<()> {
        timed("release_lease", self.inner.release_lease(run_id, owner)).await
    }

    async fn unleased_runs(&self, now_ms: i64, limit: usize) -> StoreResult<Vec<String>> {
        self.inner.unleased_runs(now_ms, limit).await
    }

    async fn commit_feed(&self) -> StoreResult<Option<tokio::sync::mpsc::Receiver<CommitNotice>>> {
        self.inner.commit_feed().await
    }

    async fn close(&self) -> StoreResult<()> {
        self.inner.close().await
    }

    async fn ping(&self) -> StoreResult<()> {
        self.inner.ping().await
    }

    // The inner store's clock: on PostgreSQL the database's, which every replica agrees on.
    fn now_ms(&self) -> i64 {
        self.inner.now_ms()
    }
}
