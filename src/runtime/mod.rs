//! The agent runtime: runs agents turn by turn, suspends them on `ask_user`, applies answers
//! exactly once, and streams every committed event to whoever follows a run.
//!
//! A suspended run holds no task and no transcript in memory: everything lives in the store, and
//! a step starts from there. The runtime knows nothing of gRPC.

mod admission;
mod agents;
mod answer;
pub mod ask_user;
mod assignees;
mod background;
mod claims;
mod effects;
mod error;
mod executor;
mod feed_id;
mod follow;
pub mod forms;
mod hub;
mod live_input;
pub mod mcp;
mod page_token;
mod pending_fanout;
mod pending_feed;
pub mod requests;
mod run_log;
mod server_calls;
mod settle;
mod settle_access;
mod shared;
mod store_gauges;
#[cfg(test)]
mod testing;
#[cfg(test)]
mod tests;
pub mod tools;
mod webhook_allow;
mod webhooks;
mod writes;

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use tracing::warn;

use crate::domain::{
    AnswerInput, AskUserInput, Event, Principal, RunRecord, SettledBy, ToolDefinition,
};
use crate::store::{CancelOutcome, NewRun, RunFilter, RunQuery, RunStore, Tenancy};

pub use agents::{AgentDefinition, McpOffer};
pub use ask_user::{AskUserLimits, Violation};
pub use error::{RejectReason, RuntimeError, short_id};
pub use hub::Batch;
pub use pending_feed::{PendingEvent, PendingFilter, PendingStream};
pub use settle_access::ANY_SCOPE_TO_SETTLE;
pub use store_gauges::refresh_store_gauges;
pub use webhook_allow::AllowPattern;
pub use webhooks::{RunWebhook, WebhookSettings};

use ask_user::CANCELLED_RESULT;
use shared::Shared;
use tools::Tool;

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

/// Handle to the runtime; cheap to clone.
#[derive(Clone)]
pub struct Runtime {
    shared: Arc<Shared>,
}

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
        if agent.tool_for_call(&definition.name).is_some() {
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
        Self {
            shared: Arc::new(Shared::new(store, agents, config)),
        }
    }

    /// Starts the background loops: taking over working runs nobody executes (at start: those
    /// that were working when the server stopped), live commit notices from other replicas,
    /// question expiry and retention.
    pub async fn start(&self) -> Result<(), RuntimeError> {
        self.shared.start_background().await
    }

    /// Stops starting work and ends every follower (their streams end with "shutting down").
    pub fn begin_shutdown(&self) {
        self.shared.shutdown.cancel();
    }

    /// Completes once the runtime begins to shut down.
    pub async fn stopping(&self) {
        self.shared.shutdown.cancelled().await;
    }

    /// Stops starting work, ends followers, waits up to `timeout` for steps in flight, then
    /// flushes the store. A step still running then is redone at the next start.
    pub async fn shutdown(&self, timeout: Duration) {
        self.begin_shutdown();
        self.shared.tasks.close();
        if tokio::time::timeout(timeout, self.shared.tasks.wait())
            .await
            .is_err()
        {
            warn!("steps still running at shutdown; they run again at the next start");
        }
        self.shared.stop_mcp_servers().await;
        if let Err(error) = self.shared.store.close().await {
            warn!(%error, "store flush at shutdown failed");
        }
    }

    /// The agents `principal`'s tenant may see, ordered by id.
    pub fn agents(&self, principal: &Principal) -> Vec<&AgentDefinition> {
        let mut agents: Vec<&AgentDefinition> = self
            .shared
            .agents
            .values()
            .filter(|agent| agent.serves(&principal.tenant))
            .collect();
        agents.sort_by(|a, b| a.id.cmp(&b.id));
        agents
    }

    /// Runs `ask_user` outside a run: validates and returns the fallback text.
    pub fn ask_user_fallback(&self, input: &AskUserInput) -> Result<String, RuntimeError> {
        ask_user::validate(input, &self.shared.config.limits)
            .map(|payload| ask_user::fallback_text(&payload))
            .map_err(RuntimeError::InvalidArgument)
    }

    /// Validates a built-in question tool's JSON arguments as a run would and renders its
    /// fallback text: `ask_user`'s, or a form's.
    pub fn render_question(
        &self,
        tool_name: &str,
        arguments_json: &str,
    ) -> Result<String, RuntimeError> {
        let limits = &self.shared.config.limits;
        if tool_name == ask_user::TOOL_NAME {
            return ask_user::parse_arguments(arguments_json)
                .and_then(|input| ask_user::validate(&input, limits))
                .map(|payload| ask_user::fallback_text(&payload))
                .map_err(RuntimeError::InvalidArgument);
        }
        let Some(tool) = forms::FormTool::named(tool_name) else {
            return Err(RuntimeError::InvalidArgument(vec![Violation::new(
                "tool_name",
                format!(
                    "\"{tool_name}\" is not a built-in question tool: use ask_user, {}, {} or {}",
                    forms::QUESTIONS_TOOL,
                    forms::QUESTIONS_TOOL_ALIAS,
                    forms::FORM_TOOL
                ),
            )]));
        };
        tool.form(arguments_json, limits)
            .map(|form| forms::fallback_text(&form))
            .map_err(RuntimeError::InvalidArgument)
    }

    /// Creates a run and starts working on it; returns its id and the stream of its events until
    /// it ends, as [`Runtime::follow`] from the start would, without reading the store: the stream
    /// subscribes before the run exists, so every commit of the run reaches it live.
    pub async fn start_run(
        &self,
        request: StartRunRequest,
    ) -> Result<(String, EventStream), RuntimeError> {
        if self.shared.shutdown.is_cancelled() {
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
            .shared
            .agents
            .get(&request.agent_id)
            .filter(|agent| agent.serves(&request.principal.tenant))
            .ok_or_else(|| RuntimeError::AgentNotFound(request.agent_id.clone()))?;
        check_run_tools(agent, &request.tools)?;
        let tenant = &request.principal.tenant;
        let tenant_has_secret = !request.webhooks.is_empty()
            && self.shared.store.webhook_secrets(tenant).await?.is_some();
        let webhooks = self.shared.config.webhooks.plan(
            &agent.webhooks,
            request.webhooks,
            tenant,
            tenant_has_secret,
        )?;
        let ttl = request
            .question_ttl
            .or(agent.question_ttl)
            .map(|ttl| ttl.min(self.shared.config.max_question_ttl));
        let run = NewRun {
            run_id: uuid::Uuid::now_v7().to_string(),
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
            request: None,
        };
        self.create_and_follow(run, request.principal).await
    }

    /// Creates `run` (unless its request id made one before) and follows it from its beginning.
    async fn create_and_follow(
        &self,
        run: NewRun,
        principal: Principal,
    ) -> Result<(String, EventStream), RuntimeError> {
        let run_id = run.run_id.clone();
        let live = self.shared.hub.subscribe(&run_id);
        // Its commits then reach only its tenant's pending-calls feeds, with no read to find it.
        self.shared
            .pending_fanout
            .remember(&run_id, &principal.tenant);
        if let Some(run_id) = self.shared.create(run).await? {
            // A retried start: follow the run the first one made, from its beginning.
            let events = self.follow(&run_id, &principal, 0, FollowUntil::End);
            return Ok((run_id, events));
        }
        let events = self.shared.follow_subscribed(
            live,
            &run_id,
            Some(principal.tenant),
            0,
            FollowUntil::End,
            false,
        );
        Ok((run_id, events))
    }

    /// The ids of every agent the server runs, sorted.
    pub fn agent_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.shared.agents.keys().cloned().collect();
        ids.sort();
        ids
    }

    /// A run of `principal`'s tenant (another tenant's is not found); for an answer link, its own
    /// run while its call waits.
    pub async fn get_run(
        &self,
        run_id: &str,
        principal: &Principal,
    ) -> Result<RunRecord, RuntimeError> {
        settle_access::within_link(principal, run_id, None)?;
        let run = self
            .shared
            .store
            .get_run(run_id, Tenancy::Only(&principal.tenant))
            .await?
            .ok_or_else(|| RuntimeError::RunNotFound(run_id.to_owned()))?;
        settle_access::link_may_read(&run, principal)?;
        Ok(run)
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
            .shared
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
        self.shared.answer(request).await
    }

    /// The calls that wait for someone across `principal`'s tenant's runs: a snapshot, then
    /// changes live.
    pub fn watch_pending(&self, filter: PendingFilter, principal: Principal) -> PendingStream {
        self.shared.watch_pending(filter, principal)
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
        match self
            .shared
            .cancel(
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
        let live = self.shared.hub.subscribe(run_id);
        let tenant = Some(principal.tenant.clone());
        self.shared
            .follow_subscribed(live, run_id, tenant, after_sequence, until, true)
    }
}
