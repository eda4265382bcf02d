//! The agent runtime: runs agents turn by turn, suspends them on `ask_user`, applies answers
//! exactly once, and streams every committed event to whoever follows a run.
//!
//! A suspended run holds no task and no transcript in memory: everything lives in the store, and
//! a step starts from there. The runtime knows nothing of gRPC.

mod admission;
mod agents;
pub mod ask_user;
mod assignees;
mod claims;
mod error;
mod executor;
mod hub;
mod observed;
mod page_token;
mod pending_fanout;
mod pending_feed;
mod retention;
mod settle;
mod settle_access;
mod store_gauges;
pub mod tools;
mod webhook_allow;
mod webhooks;
mod writes;

use std::collections::{BTreeMap, HashMap};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use tokio::sync::Notify;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::warn;

use crate::domain::{
    AnswerInput, ApprovalDecision, AskUserInput, Event, Principal, RunRecord, RunStatus, SettledBy,
    SuspendKind, ToolDefinition,
};
use crate::store::{
    Approved, CallChange, CancelOutcome, CommitNotice, Decide, NewRun, Refusal, RunFilter,
    RunQuery, RunStore, StoreError, Tenancy,
};

pub use agents::AgentDefinition;
pub use ask_user::{AskUserLimits, Violation};
pub use error::{RejectReason, RuntimeError, short_id};
pub use hub::Batch;
pub use pending_feed::{PendingEvent, PendingFilter, PendingStream};
pub use settle_access::ANY_SCOPE_TO_SETTLE;
pub use store_gauges::refresh_store_gauges;
pub use webhook_allow::AllowPattern;
pub use webhooks::{RunWebhook, WebhookSettings};

use ask_user::CANCELLED_RESULT;
use executor::Executing;
use hub::{Hub, Subscription};
use tools::{CallPlan, RunTools, Tool, run_plan};
use writes::Settled;

/// Settings of the runtime.
#[derive(Clone, Debug)]
pub struct RuntimeConfig {
    pub limits: AskUserLimits,
    /// The longest a question may wait; longer TTLs are capped to it.
    pub max_question_ttl: Duration,
    /// How long finished runs are kept.
    pub retention: Duration,
    /// How often finished runs past retention are pruned.
    pub prune_interval: Duration,
    /// Runs still unfinished this long after they started are cancelled; `None`: never.
    pub max_run_age: Option<Duration>,
    /// How long an executor's claim on a working run lasts unless renewed; a run whose executor
    /// died is taken over after it.
    pub lease_ttl: Duration,
    /// The most of an HTTP tool's response kept, in bytes.
    pub max_tool_output_bytes: usize,
    /// Starts of one step after which its run fails.
    pub max_step_attempts: u32,
    /// Steps worked on at once, over all runs.
    pub max_running_steps: usize,
    /// Requests in flight at once to one model endpoint.
    pub max_model_requests: usize,
    /// Which webhooks runs may get.
    pub webhooks: WebhookSettings,
    /// Metrics are kept (`--metrics-listen`): the figures that take a read of the store are read.
    pub metrics: bool,
}

/// A request to start a run.
#[derive(Clone, Debug)]
pub struct StartRunRequest {
    pub agent_id: String,
    pub prompt: String,
    pub metadata: BTreeMap<String, String>,
    pub question_ttl: Option<Duration>,
    /// Client tools for this run only.
    pub tools: Vec<ToolDefinition>,
    /// The start's idempotency key; empty for none.
    pub request_id: String,
    /// Who starts the run: it belongs to their tenant.
    pub principal: Principal,
    /// Webhook subscriptions for this run only.
    pub webhooks: Vec<RunWebhook>,
}

/// An answer to a pending question.
#[derive(Clone, Debug)]
pub struct AnswerRequest {
    pub run_id: String,
    pub tool_call_id: String,
    pub answer: AnswerInput,
    pub answer_id: String,
    /// Who answers.
    pub principal: Principal,
}

/// An accepted answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnswerAck {
    pub tool_call_id: String,
    pub answer_id: String,
    /// A retry of an answer accepted before; nothing was applied again.
    pub duplicate: bool,
    /// Sequence of the `tool_result` event of the answer.
    pub result_sequence: u64,
}

/// How long [`Runtime::follow`] follows a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FollowUntil {
    /// Until the run ends.
    End,
    /// Until the run stops working (waits for answers, or ends).
    Idle,
}

/// A page of runs.
#[derive(Clone, Debug)]
pub struct RunPage {
    pub runs: Vec<RunRecord>,
    pub next_page_token: String,
}

/// The stream of a followed run's events.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<Event, RuntimeError>> + Send>>;

pub(crate) struct Inner {
    /// This process's name in run leases.
    owner: String,
    store: Arc<dyn RunStore>,
    agents: HashMap<String, AgentDefinition>,
    config: RuntimeConfig,
    hub: Arc<Hub>,
    /// Reads commits once for the pending-calls feeds of their run's tenant.
    pending_fanout: Arc<pending_fanout::PendingFanout>,
    executing: Executing,
    admission: admission::Admission,
    shutdown: CancellationToken,
    tasks: TaskTracker,
    expiry_wake: Notify,
}

/// Handle to the runtime; cheap to clone.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

/// Events read from the store per round trip while replaying.
const REPLAY_PAGE: usize = 512;
const DEFAULT_PAGE_SIZE: usize = 50;
const MAX_PAGE_SIZE: usize = 1000;

pub(crate) fn new_tool_call_id() -> String {
    format!("call_{}", uuid::Uuid::now_v7().simple())
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// When a call suspended at `now_ms` (the store's clock) expires: after the tool's own timeout if
/// it has one, otherwise the run's question TTL (if any).
pub(crate) fn expire_at(
    now_ms: i64,
    timeout: Option<Duration>,
    question_ttl_ms: Option<i64>,
) -> Option<i64> {
    timeout
        .map(millis)
        .or(question_ttl_ms)
        .map(|ttl| now_ms.saturating_add(ttl))
}

/// Checks the client tools given for one run: each compiles, and no two (nor one and an agent's
/// tool) share a name.
fn check_run_tools(agent: &AgentDefinition, tools: &[ToolDefinition]) -> Result<(), RuntimeError> {
    let mut violations = Vec::new();
    let mut names = std::collections::HashSet::new();
    for (index, definition) in tools.iter().enumerate() {
        let field = |name: &str| format!("tools[{index}].{name}");
        if let Err(violation) = Tool::for_run(definition) {
            violations.push(Violation {
                field: field(&violation.field),
                description: violation.description,
            });
            continue;
        }
        if agent.tools.iter().any(|t| t.name == definition.name) {
            violations.push(Violation {
                field: field("name"),
                description: format!(
                    "agent \"{}\" already has a tool named \"{}\"",
                    agent.id, definition.name
                ),
            });
        } else if !names.insert(definition.name.as_str()) {
            violations.push(Violation {
                field: field("name"),
                description: format!("\"{}\" is given twice", definition.name),
            });
        }
    }
    if violations.is_empty() {
        Ok(())
    } else {
        Err(RuntimeError::InvalidArgument(violations))
    }
}

impl Runtime {
    pub fn new(
        store: Arc<dyn RunStore>,
        agents: Vec<AgentDefinition>,
        config: RuntimeConfig,
    ) -> Self {
        let admission = admission::Admission::new(
            config.max_running_steps,
            config.max_model_requests,
            agents.iter(),
        );
        let agents = agents.into_iter().map(|a| (a.id.clone(), a)).collect();
        Self {
            inner: Arc::new(Inner {
                owner: format!("{}-{}", std::process::id(), uuid::Uuid::now_v7().simple()),
                store,
                agents,
                config,
                hub: Arc::new(Hub::default()),
                pending_fanout: Arc::default(),
                executing: Executing::default(),
                admission,
                shutdown: CancellationToken::new(),
                tasks: TaskTracker::new(),
                expiry_wake: Notify::new(),
            }),
        }
    }

    /// Starts the background loops: taking over working runs nobody executes (at start: those
    /// that were working when the server stopped), live commit notices from other replicas,
    /// question expiry and retention.
    pub async fn start(&self) -> Result<(), RuntimeError> {
        if let Some(feed) = self.inner.store.commit_feed().await? {
            let inner = Arc::clone(&self.inner);
            self.inner.tasks.spawn(commit_feed_loop(inner, feed));
        }
        // Subscribed before the first request can commit anything.
        let changes = self.inner.hub.subscribe_all();
        let inner = Arc::clone(&self.inner);
        self.inner
            .tasks
            .spawn(pending_fanout::fanout_loop(inner, changes));
        let inner = Arc::clone(&self.inner);
        self.inner.tasks.spawn(executor::takeover_loop(inner));
        let inner = Arc::clone(&self.inner);
        self.inner.tasks.spawn(expiry_loop(inner));
        let inner = Arc::clone(&self.inner);
        self.inner.tasks.spawn(retention::retention_loop(inner));
        Ok(())
    }

    /// Stops starting work and ends every follower (their streams end with "shutting down").
    pub fn begin_shutdown(&self) {
        self.inner.shutdown.cancel();
    }

    /// Completes once the runtime begins to shut down.
    pub async fn stopping(&self) {
        self.inner.shutdown.cancelled().await;
    }

    /// Stops starting work, ends followers, waits up to `timeout` for steps in flight, then
    /// flushes the store. A step still running then is redone at the next start.
    pub async fn shutdown(&self, timeout: Duration) {
        self.begin_shutdown();
        self.inner.tasks.close();
        if tokio::time::timeout(timeout, self.inner.tasks.wait())
            .await
            .is_err()
        {
            warn!("steps still running at shutdown; they run again at the next start");
        }
        if let Err(error) = self.inner.store.close().await {
            warn!(%error, "store flush at shutdown failed");
        }
    }

    /// The agents `principal`'s tenant may see, ordered by id.
    pub fn agents(&self, principal: &Principal) -> Vec<&AgentDefinition> {
        let mut agents: Vec<&AgentDefinition> = self
            .inner
            .agents
            .values()
            .filter(|agent| agent.serves(&principal.tenant))
            .collect();
        agents.sort_by(|a, b| a.id.cmp(&b.id));
        agents
    }

    /// Runs `ask_user` outside a run: validates and returns the fallback text.
    pub fn ask_user_fallback(&self, input: &AskUserInput) -> Result<String, RuntimeError> {
        ask_user::validate(input, &self.inner.config.limits)
            .map(|payload| ask_user::fallback_text(&payload))
            .map_err(RuntimeError::InvalidArgument)
    }

    /// Creates a run and starts working on it; returns its id and the stream of its events until
    /// it ends, as [`Runtime::follow`] from the start would, without reading the store: the stream
    /// subscribes before the run exists, so every commit of the run reaches it live.
    pub async fn start_run(
        &self,
        request: StartRunRequest,
    ) -> Result<(String, EventStream), RuntimeError> {
        if self.inner.shutdown.is_cancelled() {
            return Err(RuntimeError::ShuttingDown);
        }
        if request.agent_id.is_empty() {
            return Err(RuntimeError::InvalidArgument(vec![Violation {
                field: "agent_id".into(),
                description: "agent_id must not be empty".into(),
            }]));
        }
        // An agent kept from the caller's tenant is, to it, no agent at all.
        let agent = self
            .inner
            .agents
            .get(&request.agent_id)
            .filter(|agent| agent.serves(&request.principal.tenant))
            .ok_or_else(|| RuntimeError::AgentNotFound(request.agent_id.clone()))?;
        check_run_tools(agent, &request.tools)?;
        let tenant = &request.principal.tenant;
        let tenant_has_secret = !request.webhooks.is_empty()
            && self.inner.store.webhook_secrets(tenant).await?.is_some();
        let webhooks = self.inner.config.webhooks.plan(
            &agent.webhooks,
            request.webhooks,
            tenant,
            tenant_has_secret,
        )?;
        let ttl = request
            .question_ttl
            .or(agent.question_ttl)
            .map(|ttl| ttl.min(self.inner.config.max_question_ttl));
        let run_id = uuid::Uuid::now_v7().to_string();
        let live = self.inner.hub.subscribe(&run_id);
        // Its commits then reach only its tenant's pending-calls feeds, with no read to find it.
        self.inner
            .pending_fanout
            .remember(&run_id, &request.principal.tenant);
        let existing = writes::create(
            &self.inner,
            NewRun {
                run_id: run_id.clone(),
                tenant: request.principal.tenant.clone(),
                agent_id: request.agent_id,
                prompt: request.prompt,
                metadata: request.metadata,
                question_ttl_ms: ttl.map(millis),
                run_tools: request.tools,
                request_id: (!request.request_id.is_empty()).then_some(request.request_id),
                webhooks,
                // The start's RPC span: the run's steps, wherever they run, join its trace.
                trace_context: crate::telemetry::current_context(),
            },
        )
        .await?;
        if let Some(run_id) = existing {
            // A retried start: follow the run the first one made, from its beginning.
            let events = self.follow(&run_id, &request.principal, 0, FollowUntil::End);
            return Ok((run_id, events));
        }
        let events = self.follow_subscribed(
            live,
            &run_id,
            Some(request.principal.tenant),
            0,
            FollowUntil::End,
            false,
        );
        Ok((run_id, events))
    }

    /// A run of `principal`'s tenant (another tenant's is not found).
    pub async fn get_run(
        &self,
        run_id: &str,
        principal: &Principal,
    ) -> Result<RunRecord, RuntimeError> {
        self.inner
            .store
            .get_run(run_id, Tenancy::Only(&principal.tenant))
            .await?
            .ok_or_else(|| RuntimeError::RunNotFound(run_id.to_owned()))
    }

    /// Lists `principal`'s tenant's runs newest first; the page token (see [`page_token`]) says
    /// where the previous page of the same listing ended.
    pub async fn list_runs(
        &self,
        principal: &Principal,
        filter: RunFilter,
        page_size: i32,
        page_token: &str,
    ) -> Result<RunPage, RuntimeError> {
        let limit = match usize::try_from(page_size) {
            Ok(0) => DEFAULT_PAGE_SIZE,
            Ok(size) if size <= MAX_PAGE_SIZE => size,
            _ => {
                return Err(RuntimeError::InvalidArgument(vec![Violation {
                    field: "page_size".into(),
                    description: format!("page_size must be between 0 and {MAX_PAGE_SIZE}"),
                }]));
            }
        };
        let before_run_id = (!page_token.is_empty())
            .then(|| page_token::decode(page_token, &filter))
            .transpose()
            .map_err(|violation| RuntimeError::InvalidArgument(vec![violation]))?;
        let mut runs = self
            .inner
            .store
            .list_runs(RunQuery {
                tenant: Some(principal.tenant.clone()),
                filter: filter.clone(),
                before_run_id,
                limit: limit + 1,
            })
            .await?;
        let next_page_token = if runs.len() > limit {
            runs.truncate(limit);
            runs.last()
                .map(|r| page_token::encode(&filter, &r.run_id))
                .unwrap_or_default()
        } else {
            String::new()
        };
        Ok(RunPage {
            runs,
            next_page_token,
        })
    }

    /// Applies an answer (to a question, an approval or a client tool call) exactly once: checks it
    /// against the call, then changes the pending call with a compare-and-set in the store. A retry
    /// of an accepted answer (same `answer_id`, or the same content) is acknowledged as a duplicate.
    pub async fn answer(&self, request: AnswerRequest) -> Result<AnswerAck, RuntimeError> {
        if request.tool_call_id.is_empty() {
            return Err(RuntimeError::AnswerRejected {
                reason: RejectReason::InvalidAnswer,
                message: "tool_call_id must not be empty".into(),
                violations: vec![Violation {
                    field: "answer.tool_call_id".into(),
                    description: "tool_call_id must not be empty".into(),
                }],
            });
        }
        let approved = match &request.answer {
            AnswerInput::Approval(ApprovalDecision::Approve | ApprovalDecision::Edit { .. }) => {
                self.approved_call(&request).await?
            }
            _ => None,
        };
        // The answer is checked against the call inside the changing transaction, so reading the
        // call takes no round trip of its own.
        let limits = self.inner.config.limits;
        let (answer, answer_id) = (request.answer.clone(), request.answer_id.clone());
        let store = Arc::clone(&self.inner.store);
        let principal = request.principal.clone();
        let decide: Decide = Box::new(move |call| {
            let now_ms = store.now_ms();
            settle::decide(
                call,
                &answer,
                &answer_id,
                approved.as_ref(),
                &limits,
                now_ms,
                &principal,
            )
            .map_err(Refusal::from)
        });
        let outcome = writes::settle(
            &self.inner,
            request.run_id.clone(),
            Some(request.principal.tenant.clone()),
            request.tool_call_id.clone(),
            decide,
            // A draining server starts no executor: it leaves the run's lease to others.
            !self.inner.shutdown.is_cancelled(),
        )
        .await?;
        let ack = |duplicate, result_sequence, answer_id: &str| AnswerAck {
            tool_call_id: request.tool_call_id.clone(),
            answer_id: answer_id.to_owned(),
            duplicate,
            result_sequence,
        };
        match outcome {
            Settled::Applied {
                first_sequence,
                call,
            } => {
                observed::settled_by_someone(&self.inner, &call);
                Ok(ack(false, first_sequence, &request.answer_id))
            }
            Settled::Unchanged { call, refusal } => {
                // Even a retry of an earlier answer is acknowledged only to who may settle it.
                settle_access::check(&call.suspension, &call.tool_call_id, &request.principal)?;
                if let Some(earlier) = settle::repeated(&call, &request.answer) {
                    return Ok(ack(true, earlier.sequence, earlier.answer_id));
                }
                if settle::key_reused(&call, &request.answer_id) {
                    return Err(RuntimeError::rejected(
                        RejectReason::AnswerIdReused,
                        format!(
                            "answer_id \"{}\" was accepted for another answer to tool call \"{}\"",
                            request.answer_id, request.tool_call_id
                        ),
                    ));
                }
                let decided_again =
                    call.decision.is_some() && matches!(request.answer, AnswerInput::Approval(_));
                if call.status != crate::store::CallStatus::Pending || decided_again {
                    return Err(settle::not_pending(&call));
                }
                // Refused in the transaction: why, as `decide` said.
                Err(refusal.map_or_else(|| settle::not_pending(&call), settle::refused))
            }
            Settled::NotFound => Err(self
                .unknown_call(&request.run_id, &request.principal, &request.tool_call_id)
                .await),
        }
    }

    /// What a call waiting for approval becomes when approved (as called, or with edited
    /// arguments, checked here against the tool's schema); `None` when it no longer waits for
    /// approval.
    async fn approved_call(
        &self,
        request: &AnswerRequest,
    ) -> Result<Option<Approved>, RuntimeError> {
        let run = self.get_run(&request.run_id, &request.principal).await?;
        let Some(call) = run.pending.iter().find(|c| {
            c.tool_call_id == request.tool_call_id && c.suspension.kind == SuspendKind::Approval
        }) else {
            return Ok(None);
        };
        if settle_access::check(&call.suspension, &call.tool_call_id, &request.principal).is_err() {
            // The settle refuses it, before the edit is looked at.
            return Ok(None);
        }
        let not_runnable =
            |why: String| RuntimeError::rejected(RejectReason::ToolCallNotPending, why);
        let agent = self.inner.agents.get(&run.agent_id).ok_or_else(|| {
            not_runnable(format!(
                "agent \"{}\" is not configured on this server",
                run.agent_id
            ))
        })?;
        let tools = RunTools::new(&agent.tools, &run.run_tools).map_err(StoreError::Corrupt)?;
        let tool = tools.get(&call.tool_name).ok_or_else(|| {
            not_runnable(format!(
                "tool \"{}\" is not configured on this server",
                call.tool_name
            ))
        })?;
        let arguments_json = match &request.answer {
            AnswerInput::Approval(ApprovalDecision::Edit { arguments_json }) => tool
                .schema
                .check(arguments_json)
                .map(|(_, canonical)| canonical)
                .map_err(|error| {
                    let description =
                        format!("the edited arguments do not fit {}: {error}", tool.name);
                    RuntimeError::AnswerRejected {
                        reason: RejectReason::InvalidAnswer,
                        message: description.clone(),
                        violations: vec![Violation {
                            field: "answer.approval.edit.arguments_json".into(),
                            description,
                        }],
                    }
                })?,
            _ => call.suspension.arguments_json.clone(),
        };
        Ok(Some(match run_plan(tool, arguments_json) {
            CallPlan::Execute { arguments_json } => Approved::Execute { arguments_json },
            CallPlan::Suspend {
                suspension,
                timeout,
            } => Approved::Suspend {
                suspension,
                expire_ms: expire_at(self.inner.store.now_ms(), timeout, run.question_ttl_ms),
            },
            CallPlan::Invalid(why) => return Err(not_runnable(why)),
        }))
    }

    async fn unknown_call(
        &self,
        run_id: &str,
        principal: &Principal,
        tool_call_id: &str,
    ) -> RuntimeError {
        match self
            .inner
            .store
            .get_run(run_id, Tenancy::Only(&principal.tenant))
            .await
        {
            Ok(Some(_)) => RuntimeError::rejected(
                RejectReason::ToolCallNotPending,
                format!(
                    "run \"{}\" has no tool call \"{}\"",
                    short_id(run_id),
                    short_id(tool_call_id)
                ),
            ),
            Ok(None) => RuntimeError::RunNotFound(run_id.to_owned()),
            Err(error) => error.into(),
        }
    }

    /// The calls that wait for someone across `principal`'s tenant's runs: a snapshot, then
    /// changes live.
    pub fn watch_pending(&self, filter: PendingFilter, principal: Principal) -> PendingStream {
        pending_feed::watch(Arc::clone(&self.inner), filter, principal)
    }

    /// The `ListRuns` page token of the page after `last_run_id` (for a page cut short).
    pub fn page_token_after(&self, filter: &RunFilter, last_run_id: &str) -> String {
        page_token::encode(filter, last_run_id)
    }

    /// Cancels a working or suspended run; idempotent for a cancelled one.
    pub async fn cancel_run(
        &self,
        run_id: &str,
        reason: &str,
        principal: &Principal,
    ) -> Result<RunRecord, RuntimeError> {
        match writes::cancel(
            &self.inner,
            run_id.to_owned(),
            Some(principal.tenant.clone()),
            reason.to_owned(),
            CANCELLED_RESULT,
            SettledBy::from(principal),
        )
        .await?
        {
            CancelOutcome::Cancelled { .. } | CancelOutcome::AlreadyCancelled => {}
            CancelOutcome::Finished(status) => {
                return Err(RuntimeError::RunFinished {
                    run_id: run_id.to_owned(),
                    status: status.as_str(),
                });
            }
            CancelOutcome::NotFound => return Err(RuntimeError::RunNotFound(run_id.to_owned())),
        }
        self.get_run(run_id, principal).await
    }

    /// Replays the stored events of a run of `principal`'s tenant after `after_sequence`, then
    /// follows it live, in order and without gaps or doubles, until it ends (or, with
    /// [`FollowUntil::Idle`], stops working).
    pub fn follow(
        &self,
        run_id: &str,
        principal: &Principal,
        after_sequence: u64,
        until: FollowUntil,
    ) -> EventStream {
        // Subscribe before reading the store, so nothing committed in between is missed.
        let live = self.inner.hub.subscribe(run_id);
        let tenant = Some(principal.tenant.clone());
        self.follow_subscribed(live, run_id, tenant, after_sequence, until, true)
    }

    /// [`Runtime::follow`] on a subscription taken by the caller; `read_store` false skips the
    /// first read of the store when the subscription saw every commit of the run.
    fn follow_subscribed(
        &self,
        mut live: Subscription,
        run_id: &str,
        tenant: Option<String>,
        after_sequence: u64,
        until: FollowUntil,
        mut read_store: bool,
    ) -> EventStream {
        let inner = Arc::clone(&self.inner);
        let run_id = run_id.to_owned();
        Box::pin(async_stream::try_stream! {
            let mut delivered = after_sequence;
            let mut known_last = 0;
            let mut status = RunStatus::Running;
            loop {
                if read_store {
                    let page = inner
                        .store
                        .read_events(&run_id, tenant.as_deref().into(), delivered, REPLAY_PAGE)
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
                    () = inner.shutdown.cancelled() => Err(RecvError::Closed),
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

/// Settles questions as they expire, including those that expired while the server was down.
async fn expiry_loop(inner: Arc<Inner>) {
    const IDLE_CHECK: i64 = 60_000;
    loop {
        let wait_ms = match inner.store.next_expiry().await {
            Ok(Some(at)) => (at - inner.store.now_ms()).clamp(0, IDLE_CHECK),
            Ok(None) => IDLE_CHECK,
            Err(error) => {
                warn!(%error, "reading the next question expiry failed");
                IDLE_CHECK / 10
            }
        };
        if wait_ms > 0 {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(wait_ms.unsigned_abs())) => {}
                () = inner.expiry_wake.notified() => continue,
                () = inner.shutdown.cancelled() => return,
            }
        }
        if inner.shutdown.is_cancelled() {
            return;
        }
        let due = match inner.store.due_expiries(inner.store.now_ms(), 256).await {
            Ok(due) => due,
            Err(error) => {
                warn!(%error, "reading expired questions failed");
                continue;
            }
        };
        for (run_id, tool_call_id) in due {
            let expired: Decide = Box::new(|call| Ok(CallChange::Settle(settle::expired(call))));
            let settled = writes::settle(
                &inner,
                run_id.clone(),
                None,
                tool_call_id.clone(),
                expired,
                true,
            );
            match settled.await {
                Ok(Settled::Applied { call, .. }) => {
                    crate::metrics::call_expired(call.suspension.kind);
                }
                // Answered or cancelled in the meantime.
                Ok(_) => {}
                Err(error) => warn!(%error, run_id, tool_call_id, "expiring a question failed"),
            }
        }
    }
}

/// Wakes local followers of runs that other replicas committed to.
async fn commit_feed_loop(
    inner: Arc<Inner>,
    mut feed: tokio::sync::mpsc::Receiver<crate::store::CommitNotice>,
) {
    loop {
        let notice = tokio::select! {
            notice = feed.recv() => notice,
            () = inner.shutdown.cancelled() => return,
        };
        match notice {
            Some(CommitNotice::Committed {
                run_id,
                last_sequence,
                status,
            }) => {
                inner.hub.notify(&run_id, last_sequence);
                // A question asked on another replica may expire before the next local check.
                if status == RunStatus::Suspended {
                    inner.expiry_wake.notify_one();
                }
            }
            Some(CommitNotice::Missed) => {
                inner.hub.notify_all();
                inner.expiry_wake.notify_one();
            }
            None => {
                warn!("the store's commit feed ended; followers see other replicas' events late");
                return;
            }
        }
    }
}
