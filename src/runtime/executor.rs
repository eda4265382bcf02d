//! Executes runs step by step: load the committed state, call the model, commit the turn.
//!
//! A step is re-runnable: it starts from the store, and its commit is conditional on the run still
//! being at the same turn, so a step cut short by a crash simply runs again.

use std::collections::HashMap;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{FutureExt, StreamExt};
use opentelemetry::trace::SpanContext;
use tracing::{Instrument, debug, error, info, warn};

use super::Inner;
use super::agents::AgentDefinition;
use super::hub::Batch;
use super::settle::edited_result;
use super::tools::{CallPlan, RunTools, ToolKind, plan_call};
use crate::domain::{EventKind, Message, ModelToolCall, RunStatus, SuspendKind, Usage};
use crate::model::{ModelError, ModelEvent, ModelRequest};
use crate::store::{
    ExecutedResult, ExecutingCall, Lease, NewCallState, NewToolCall, RunEnd, StepState, StoreError,
    TurnCommit, TurnOutcome,
};
use crate::telemetry;

/// The runs this process is executing, each with a flag set when it was asked to look again.
#[derive(Default)]
pub(crate) struct Executing(Mutex<HashMap<String, bool>>);

impl Executing {
    /// Returns true when the caller must start an executor; otherwise the running one is told to
    /// look at the run again before it stops.
    fn claim(&self, run_id: &str) -> bool {
        let Ok(mut runs) = self.0.lock() else {
            return false;
        };
        match runs.get_mut(run_id) {
            Some(again) => {
                *again = true;
                false
            }
            None => {
                runs.insert(run_id.to_owned(), false);
                true
            }
        }
    }

    /// Returns true when the executor may stop; false when it was asked to look again.
    fn finish(&self, run_id: &str) -> bool {
        let Ok(mut runs) = self.0.lock() else {
            return true;
        };
        match runs.get_mut(run_id) {
            Some(again) if *again => {
                *again = false;
                false
            }
            _ => {
                runs.remove(run_id);
                true
            }
        }
    }
}

/// Makes sure an executor works on the run (starting one unless one is running). `leased` is the
/// state of the run's next step when the caller took its lease along with a commit: the first step
/// then starts without a store round trip. A running executor looks at the run again instead.
pub(crate) fn kick(inner: &Arc<Inner>, run_id: &str, leased: Option<StepState>) {
    if inner.shutdown.is_cancelled() || !inner.executing.claim(run_id) {
        return;
    }
    let task_inner = Arc::clone(inner);
    let run_id = run_id.to_owned();
    // What asked for the work (an answer's RPC), which its steps link to.
    let cause = telemetry::current_span_context();
    inner
        .tasks
        .spawn(async move { drive(task_inner, run_id, leased, cause).await });
}

/// The lease to take or renew now.
pub(crate) fn lease(inner: &Inner) -> Lease<'_> {
    let ttl = i64::try_from(inner.config.lease_ttl.as_millis()).unwrap_or(i64::MAX);
    Lease {
        owner: &inner.owner,
        until_ms: inner.store.now_ms().saturating_add(ttl),
    }
}

enum StepOutcome {
    /// The run is still running: take the next step.
    Continue,
    /// The run waits or is not ours to run; this process may still hold its lease.
    Idle,
    /// The step's commit left the run waiting or ended, which ended the lease, or no lease was
    /// taken: nothing to give up.
    Released,
}

/// A commit that fails for a reason that may pass is tried this many times, with the same content.
const COMMIT_TRIES: u32 = 5;

async fn drive(
    inner: Arc<Inner>,
    run_id: String,
    mut leased: Option<StepState>,
    cause: Option<SpanContext>,
) {
    loop {
        let outcome = if inner.shutdown.is_cancelled() {
            // Draining: leave the run to another replica, or to the next start.
            Ok(StepOutcome::Idle)
        } else {
            leased_step(&inner, &run_id, leased.take(), cause.as_ref()).await
        };
        match outcome {
            Ok(StepOutcome::Continue) => continue,
            Ok(StepOutcome::Idle) => release_lease(&inner, &run_id).await,
            Ok(StepOutcome::Released) => {}
            Err(error) => {
                // Its commits were tried again already: the run is left to the takeover loop, which
                // starts the step again later (counted, so a step that never finishes ends).
                warn!(run_id, %error, "run step failed; it is taken up again later");
                release_lease(&inner, &run_id).await;
            }
        }
        if inner.executing.finish(&run_id) {
            return;
        }
    }
}

async fn release_lease(inner: &Inner, run_id: &str) {
    if let Err(error) = inner.store.release_lease(run_id, &inner.owner).await {
        // The lease then simply expires and the run is taken over.
        warn!(run_id, %error, "releasing a run lease failed");
    }
}

/// One step under the run's lease, renewed while the step works; a step whose lease is lost
/// (another replica took the run over) is abandoned, and its commits would be refused anyway.
/// `leased` is the step's state when the lease was taken already.
async fn leased_step(
    inner: &Arc<Inner>,
    run_id: &str,
    leased: Option<StepState>,
    cause: Option<&SpanContext>,
) -> Result<StepOutcome, StoreError> {
    let state = match leased {
        Some(state) => state,
        None => match inner.store.load_step(run_id, Some(lease(inner))).await? {
            Some(state) => state,
            // Not running, or another executor holds it.
            None => return Ok(StepOutcome::Released),
        },
    };
    let renew = async {
        loop {
            tokio::time::sleep(inner.config.lease_ttl / 3).await;
            let lease = lease(inner);
            match inner
                .store
                .acquire_lease(run_id, lease.owner, lease.until_ms)
                .await
            {
                Ok(true) => {}
                Ok(false) => return Ok(StepOutcome::Idle),
                Err(error) => return Err(error),
            }
        }
    };
    let agent_id = state.run.agent_id.clone();
    let span = telemetry::step_span(
        run_id,
        &agent_id,
        state.run.turns,
        state.trace_context.as_deref(),
        cause,
    );
    let work = async {
        // Waiting for room keeps the lease: the run stays this executor's, running.
        let _room = inner.admission.step(&agent_id).await;
        step(inner, run_id, state).await
    }
    .instrument(span);
    tokio::select! {
        outcome = work => outcome,
        lost = renew => lost,
    }
}

/// Takes over working runs that no executor holds: at start, the runs that were working when
/// the server stopped; later, runs whose executor (on any replica) died and whose lease expired.
pub(crate) async fn takeover_loop(inner: Arc<Inner>) {
    const BATCH: usize = 256;
    let period = (inner.config.lease_ttl / 4).max(Duration::from_millis(100));
    loop {
        match inner.store.unleased_runs(inner.store.now_ms(), BATCH).await {
            Ok(runs) => {
                if !runs.is_empty() {
                    crate::metrics::lease_takeovers(runs.len());
                    info!(
                        runs = runs.len(),
                        "taking over working runs without an executor"
                    );
                }
                let gap = takeover_gap(period, runs.len());
                for run_id in runs {
                    kick(&inner, &run_id, None);
                    tokio::select! {
                        () = tokio::time::sleep(gap) => {}
                        () = inner.shutdown.cancelled() => return,
                    }
                }
            }
            Err(error) => warn!(%error, "looking for runs to take over failed"),
        }
        tokio::select! {
            () = tokio::time::sleep(period) => {}
            () = inner.shutdown.cancelled() => return,
        }
    }
}

/// The pause between two takeovers of one batch of `runs`: spread over the period, so that after a
/// restart with many working runs their steps (and model requests) do not all start at once.
fn takeover_gap(period: Duration, runs: usize) -> Duration {
    period / u32::try_from(runs).unwrap_or(u32::MAX).max(1)
}

/// Why a step stopped short.
enum StepError {
    Store(StoreError),
    /// The run moved on (cancelled, or advanced elsewhere): drop the step.
    Stale,
}

impl From<StoreError> for StepError {
    fn from(error: StoreError) -> Self {
        StepError::Store(error)
    }
}

async fn step(
    inner: &Arc<Inner>,
    run_id: &str,
    state: StepState,
) -> Result<StepOutcome, StoreError> {
    if state.run.status != RunStatus::Running {
        return Ok(StepOutcome::Idle);
    }
    let expected_turns = state.run.turns;
    let max_attempts = inner.config.max_step_attempts;
    if state.step_starts > max_attempts {
        let mut commit = failure(format!(
            "step {} of this run was tried {max_attempts} times without finishing (the server \
             stopped during it, or its result could not be stored); it is not tried again",
            expected_turns + 1
        ));
        commit.usage = state.run.usage;
        return commit_retrying(inner, &state.run.agent_id, run_id, expected_turns, commit).await;
    }
    if !state.executing.is_empty() {
        return execute_calls(inner, run_id, &state).await;
    }
    if !state.run.pending.is_empty() {
        // Calls still wait for someone: nothing for the model to do yet.
        return Ok(StepOutcome::Idle);
    }
    // The run's total: this turn's tokens once they are known.
    let mut usage = state.run.usage;
    let tools = inner
        .agents
        .get(&state.run.agent_id)
        .map(|agent| RunTools::new(&agent.tools, &state.run.run_tools).map(|tools| (agent, tools)));
    let mut commit = match tools {
        None => failure(format!(
            "agent \"{}\" is not configured on this server",
            state.run.agent_id
        )),
        Some(Err(error)) => failure(format!("the run's tools cannot be used: {error}")),
        Some(Ok((agent, _))) if expected_turns >= agent.max_steps => failure(format!(
            "the run reached max_steps ({}) without finishing",
            agent.max_steps
        )),
        Some(Ok((agent, _))) if over_budget(agent, usage) => failure(format!(
            "the run used {} tokens; agent \"{}\" allows {} per run (max_tokens_per_run)",
            usage.map_or(0, |u| u.input_tokens + u.output_tokens),
            agent.id,
            agent.max_tokens_per_run.unwrap_or(0)
        )),
        Some(Ok((agent, tools))) => {
            let specs = tools.specs();
            let request = ModelRequest {
                instructions: &agent.instructions,
                transcript: &state.transcript,
                tools: &specs,
            };
            // Starts are counted as the lease is taken; provider retries within a start count too.
            let attempt = state.step_starts.max(state.step_attempt + 1);
            let mut turn = TurnInProgress {
                inner,
                run_id,
                expected_turns,
                attempt,
                unflushed: Vec::new(),
                flush_failed: false,
            };
            if state.step_attempt > 0 {
                turn.restart(
                    "an earlier attempt of this step did not finish".into(),
                    attempt,
                );
            }
            let _request_room = inner.admission.model_request(agent.model.endpoint()).await;
            let model_span = telemetry::model_span(agent.model.provider(), agent.model.model());
            let started = Instant::now();
            let ran = turn
                .run(agent, request)
                .instrument(model_span.clone())
                .await;
            if let Ok(result) = &ran {
                crate::metrics::model_request(
                    agent.model.provider(),
                    agent.model.model(),
                    started.elapsed(),
                    result.is_err(),
                    result.as_ref().ok().and_then(|output| output.usage),
                );
            }
            if let Ok(Ok(output)) = &ran {
                telemetry::record_usage(&model_span, output.usage);
            }
            match ran {
                Ok(Ok(output)) => {
                    usage = Usage::sum(usage, output.usage);
                    turn_commit(inner, &tools, &state, turn.unflushed, output, usage)
                }
                Ok(Err(error)) => {
                    let mut commit = failure(crate::model::failure_message(
                        agent.model.provider(),
                        &error,
                    ));
                    turn.unflushed.append(&mut commit.events);
                    commit.events = turn.unflushed;
                    commit
                }
                Err(StepError::Stale) => return Ok(StepOutcome::Idle),
                Err(StepError::Store(error)) => return Err(error),
            }
        }
    };
    commit.usage = usage;
    commit_retrying(inner, &state.run.agent_id, run_id, expected_turns, commit).await
}

/// Whether the run's tokens so far are past its agent's budget.
fn over_budget(agent: &AgentDefinition, usage: Option<Usage>) -> bool {
    match (agent.max_tokens_per_run, usage) {
        (Some(budget), Some(used)) => used.input_tokens + used.output_tokens >= budget,
        _ => false,
    }
}

/// Runs `write` until it succeeds, fails for good, or [`COMMIT_TRIES`] transient failures: always
/// with the same content, so a model is never asked again only because a write failed. After a
/// failure the write may still have been made (its reply was lost): this replica's followers are
/// told to read the store, since the store's notice of the commit, if any, is this replica's own.
async fn retrying<T, F, Fut>(inner: &Inner, run_id: &str, mut write: F) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, StoreError>>,
{
    let mut tries = 0;
    loop {
        let error = match write().await {
            Ok(value) => return Ok(value),
            Err(error) => error,
        };
        inner.hub.notify(run_id, u64::MAX);
        tries += 1;
        if !error.is_transient() || tries >= COMMIT_TRIES {
            return Err(error);
        }
        warn!(run_id, %error, tries, "a commit failed; trying it again with the same content");
        tokio::time::sleep(Duration::from_millis(100 << tries)).await;
    }
}

/// Commits a turn with [`retrying`]; a turn the store refuses for good fails its run instead
/// (with its reason in the log only), rather than being computed again and again.
async fn commit_retrying(
    inner: &Arc<Inner>,
    agent_id: &str,
    run_id: &str,
    expected_turns: u32,
    commit: TurnCommit,
) -> Result<StepOutcome, StoreError> {
    let committed = retrying(inner, run_id, || {
        commit_turn(inner, agent_id, run_id, expected_turns, commit.clone())
    })
    .await;
    match committed {
        Err(error) if !error.is_transient() => {
            let correlation_id = uuid::Uuid::now_v7().simple().to_string();
            error!(run_id, %error, correlation_id, "the store refused a step's result; the run fails");
            let mut failed = failure(format!(
                "the step's result could not be stored (the server's log has it under \
                 correlation id {correlation_id})"
            ));
            failed.usage = commit.usage;
            retrying(inner, run_id, || {
                commit_turn(inner, agent_id, run_id, expected_turns, failed.clone())
            })
            .await
        }
        other => other,
    }
}

/// Commits a turn of a run of agent `agent_id` and publishes it; the run goes on when it is still
/// running.
async fn commit_turn(
    inner: &Arc<Inner>,
    agent_id: &str,
    run_id: &str,
    expected_turns: u32,
    commit: TurnCommit,
) -> Result<StepOutcome, StoreError> {
    let expires = commit.tool_calls.iter().any(|c| {
        matches!(
            c.state,
            NewCallState::Pending {
                expire_ms: Some(_),
                ..
            }
        )
    });
    match inner
        .store
        .commit_turn(run_id, &inner.owner, expected_turns, commit)
        .await?
    {
        TurnOutcome::Committed(committed) => {
            if expires {
                inner.expiry_wake.notify_one();
            }
            let status = committed.status;
            inner.hub.publish(run_id, Batch::from(committed));
            crate::metrics::run_finished(agent_id, status);
            debug!(run_id, status = status.as_str(), "turn committed");
            Ok(if status == RunStatus::Running {
                StepOutcome::Continue
            } else {
                StepOutcome::Released
            })
        }
        // Moved on: cancelled, taken over, or this very commit made already (its reply was lost and
        // it was tried again). Looking again sorts out which.
        TurnOutcome::Stale => Ok(StepOutcome::Continue),
    }
}

/// What a model turn produced, once it finished.
struct ModelOutput {
    text: String,
    tool_calls: Vec<ModelToolCall>,
    usage: Option<Usage>,
}

/// A model turn being streamed: text deltas are committed and published as they arrive, in
/// batches of whatever is ready, so followers see them live and a crash loses none of them.
struct TurnInProgress<'a> {
    inner: &'a Arc<Inner>,
    run_id: &'a str,
    expected_turns: u32,
    attempt: u32,
    /// Events not yet committed; the turn's final commit takes the rest.
    unflushed: Vec<EventKind>,
    /// A commit of streamed events failed: the rest of the turn's events wait for its final commit.
    flush_failed: bool,
}

impl TurnInProgress<'_> {
    fn restart(&mut self, reason: String, attempt: u32) {
        self.attempt = attempt;
        self.unflushed
            .retain(|event| !matches!(event, EventKind::TextDelta { .. }));
        self.unflushed
            .push(EventKind::StepRestarted { reason, attempt });
    }

    async fn flush(&mut self) -> Result<(), StepError> {
        if self.unflushed.is_empty() || self.flush_failed {
            return Ok(());
        }
        let events = std::mem::take(&mut self.unflushed);
        match self
            .inner
            .store
            .append_step_events(
                self.run_id,
                &self.inner.owner,
                self.expected_turns,
                self.attempt,
                events.clone(),
            )
            .await
        {
            Ok(TurnOutcome::Committed(committed)) => {
                self.inner.hub.publish(self.run_id, Batch::from(committed));
                Ok(())
            }
            Ok(TurnOutcome::Stale) => Err(StepError::Stale),
            Err(error) => {
                // Live text is a courtesy; the model's output is not lost for it.
                warn!(run_id = self.run_id, %error, "streamed events wait for the turn's commit");
                self.inner.hub.notify(self.run_id, u64::MAX);
                self.unflushed = events;
                self.flush_failed = true;
                Ok(())
            }
        }
    }

    /// Streams the turn; the outer error stops the step, the inner one is the model's failure.
    async fn run(
        &mut self,
        agent: &AgentDefinition,
        request: ModelRequest<'_>,
    ) -> Result<Result<ModelOutput, ModelError>, StepError> {
        let mut stream = match agent.model.stream_turn(request).await {
            Ok(stream) => stream,
            Err(error) => return Ok(Err(error)),
        };
        let mut output = ModelOutput {
            text: String::new(),
            tool_calls: Vec::new(),
            usage: None,
        };
        loop {
            let item = match stream.next().now_or_never() {
                Some(item) => item,
                None => {
                    // Nothing more is ready: commit what arrived so followers see it now.
                    self.flush().await?;
                    stream.next().await
                }
            };
            let Some(item) = item else {
                return Ok(Ok(output));
            };
            match item {
                Err(error) => return Ok(Err(error)),
                Ok(ModelEvent::TextDelta(text)) if text.is_empty() => {}
                Ok(ModelEvent::TextDelta(text)) => {
                    let text = without_nul(text);
                    output.text.push_str(&text);
                    self.unflushed.push(EventKind::TextDelta { text });
                }
                Ok(ModelEvent::ToolCall(call)) => output.tool_calls.push(ModelToolCall {
                    id: without_nul(call.id),
                    name: without_nul(call.name),
                    arguments_json: without_nul(call.arguments_json),
                }),
                Ok(ModelEvent::Restarted { reason }) => {
                    output.text.clear();
                    output.tool_calls.clear();
                    self.restart(reason, self.attempt + 1);
                }
                Ok(ModelEvent::Finished(usage)) => output.usage = usage,
            }
        }
    }
}

/// `text` with any NUL character replaced: a provider may send one, and no store takes it.
fn without_nul(text: String) -> String {
    if text.contains('\0') {
        text.replace('\0', "\u{FFFD}")
    } else {
        text
    }
}

fn failure(message: String) -> TurnCommit {
    TurnCommit {
        events: vec![EventKind::RunFailed {
            message: message.clone(),
        }],
        end: Some(RunEnd::Failed { message }),
        ..TurnCommit::default()
    }
}

fn turn_commit(
    inner: &Inner,
    tools: &RunTools<'_>,
    state: &StepState,
    mut events: Vec<EventKind>,
    turn: ModelOutput,
    run_usage: Option<Usage>,
) -> TurnCommit {
    let text = turn.text;
    // Ids are unique within the run: a provider that reuses one of an earlier turn gets a fresh
    // one too, or the turn could never be stored.
    let mut seen_ids: HashSet<String> = state
        .transcript
        .iter()
        .flat_map(|message| match message {
            Message::Assistant { tool_calls, .. } => {
                tool_calls.iter().map(|c| c.id.clone()).collect()
            }
            _ => Vec::new(),
        })
        .collect();
    let mut tool_calls = Vec::with_capacity(turn.tool_calls.len());
    for mut call in turn.tool_calls {
        // A provider that repeats or omits an id gets a fresh one.
        if call.id.is_empty() || !seen_ids.insert(call.id.clone()) {
            call.id = super::new_tool_call_id();
            seen_ids.insert(call.id.clone());
        }
        events.push(EventKind::ToolCall {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            arguments_json: call.arguments_json.clone(),
        });
        let plan = plan_call(tools, &call, &state.run.metadata, &inner.config.limits);
        let _tool_span = telemetry::tool_span(
            &call.name,
            tools
                .get(&call.name)
                .map_or("unknown", |tool| tool.kind.name()),
            &call.id,
            match &plan {
                CallPlan::Invalid(_) => "invalid",
                CallPlan::Suspend { .. } => "suspended",
                CallPlan::Execute { .. } => "executing",
            },
        )
        .entered();
        let state = match plan {
            CallPlan::Invalid(content) => {
                let state = settled_invalid(content);
                if let NewCallState::Settled {
                    content,
                    is_error,
                    kind,
                } = &state
                {
                    events.push(EventKind::ToolResult {
                        tool_call_id: call.id.clone(),
                        content: content.clone(),
                        is_error: *is_error,
                        kind: *kind,
                        settled_by: None,
                    });
                }
                state
            }
            CallPlan::Suspend {
                mut suspension,
                timeout,
            } => {
                suspension.assignees = super::assignees::of(
                    inner.agents.get(&state.run.agent_id),
                    tools.get(&call.name),
                    suspension.kind,
                );
                let timeout = (suspension.kind == SuspendKind::ClientTool)
                    .then_some(timeout)
                    .flatten();
                let expire_ms =
                    super::expire_at(inner.store.now_ms(), timeout, state.run.question_ttl_ms);
                events.push(EventKind::ToolCallSuspended {
                    tool_call_id: call.id.clone(),
                    tool_name: call.name.clone(),
                    payload: suspension.payload.clone(),
                    expire_ms,
                    kind: suspension.kind,
                    arguments_json: suspension.arguments_json.clone(),
                    approval_reason: suspension.approval_reason.clone(),
                    assignees: suspension.assignees.clone(),
                });
                NewCallState::Pending {
                    suspension,
                    expire_ms,
                }
            }
            CallPlan::Execute { arguments_json } => NewCallState::Executing { arguments_json },
        };
        tool_calls.push(NewToolCall {
            tool_call_id: call.id,
            tool_name: call.name,
            arguments_json: call.arguments_json,
            state,
        });
    }
    let end = tool_calls.is_empty().then(|| {
        events.push(EventKind::RunCompleted {
            output_text: text.clone(),
            usage: run_usage,
        });
        RunEnd::Completed {
            output_text: text.clone(),
        }
    });
    TurnCommit {
        assistant_text: Some(text),
        tool_calls,
        events,
        end,
        ..TurnCommit::default()
    }
}

/// Runs the calls the server executes (HTTP tools), all at once, and commits their results. Each
/// call was stored as executing before this, so a crash here sends its request again, with the
/// same idempotency key, when the run is taken over.
async fn execute_calls(
    inner: &Arc<Inner>,
    run_id: &str,
    state: &StepState,
) -> Result<StepOutcome, StoreError> {
    let agent = inner.agents.get(&state.run.agent_id);
    let max_body = inner.config.max_tool_output_bytes;
    let results = futures::future::join_all(state.executing.iter().map(|call| {
        let span = telemetry::tool_span(&call.tool_name, "http", &call.tool_call_id, "executed");
        async move {
            let tool =
                agent.and_then(|agent| agent.tools.iter().find(|t| t.name == call.tool_name));
            let (content, is_error) = match tool.map(|tool| &tool.kind) {
                Some(ToolKind::Http(http)) => {
                    let key = format!("{run_id}/{}", call.tool_call_id);
                    let outcome = http
                        .execute(&call.tool_name, &key, &call.arguments_json, max_body)
                        .await;
                    (outcome.content, outcome.is_error)
                }
                _ => (
                    format!(
                        "tool \"{}\" is not an HTTP tool configured on this server",
                        call.tool_name
                    ),
                    true,
                ),
            };
            executed_result(call, content, is_error)
        }
        .instrument(span)
    }))
    .await;
    let committed = retrying(inner, run_id, || {
        inner
            .store
            .commit_executed(run_id, &inner.owner, state.run.turns, results.clone())
    })
    .await?;
    match committed {
        TurnOutcome::Committed(committed) => {
            let status = committed.status;
            inner.hub.publish(run_id, Batch::from(committed));
            Ok(if status == RunStatus::Running {
                StepOutcome::Continue
            } else {
                StepOutcome::Released
            })
        }
        TurnOutcome::Stale => Ok(StepOutcome::Continue),
    }
}

fn executed_result(call: &ExecutingCall, content: String, is_error: bool) -> ExecutedResult {
    ExecutedResult {
        tool_call_id: call.tool_call_id.clone(),
        content: if call.edited {
            edited_result(&call.arguments_json, &content)
        } else {
            content
        },
        is_error,
        settled_by: call.approved_by.clone(),
    }
}

fn settled_invalid(content: String) -> NewCallState {
    NewCallState::Settled {
        content,
        is_error: true,
        kind: crate::domain::ToolResultKind::InvalidCall,
    }
}

#[cfg(test)]
mod internal_tests {
    use super::*;

    #[test]
    fn takeovers_of_a_batch_are_spread_over_the_period() {
        let period = Duration::from_secs(1);
        assert_eq!(takeover_gap(period, 4), Duration::from_millis(250));
        assert_eq!(takeover_gap(period, 1), period);
        // An empty batch takes nothing over; the gap must still be defined (no division by zero).
        assert_eq!(takeover_gap(period, 0), period);
        assert_eq!(takeover_gap(period, 1000), Duration::from_millis(1));
    }
}
