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
use tracing::{Instrument, debug, error, warn};

use super::agents::AgentDefinition;
use super::effects::{Effects, Metric};
use super::shared::Shared;
use super::tools::{CallPlan, RunTools, plan_call};
use crate::domain::{EventKind, Message, ModelToolCall, RunStatus, SuspendKind, Usage};
use crate::model::{ModelError, ModelEvent, ModelRequest};
use crate::store::{
    NewCallState, NewToolCall, RunEnd, Step, StepEvents, StepState, StoreError, TurnCommit,
    TurnOutcome,
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

pub(super) enum StepOutcome {
    /// The run is still running: take the next step.
    Continue,
    /// The run waits or is not ours to run; this process may still hold its lease.
    Idle,
    /// The step's commit left the run waiting or ended, which ended the lease, or no lease was
    /// taken: nothing to give up.
    Released,
}

impl StepOutcome {
    /// What follows a commit that left the run `status`.
    pub(super) fn after(status: RunStatus) -> Self {
        if status == RunStatus::Running {
            StepOutcome::Continue
        } else {
            StepOutcome::Released
        }
    }
}

/// A commit that fails for a reason that may pass is tried this many times, with the same content.
const COMMIT_TRIES: u32 = 5;

impl Shared {
    /// Makes sure an executor works on the run (starting one unless one is running). `leased` is
    /// the state of the run's next step when the caller took its lease along with a commit: the
    /// first step then starts without a store round trip. A running executor looks at the run
    /// again instead.
    pub(super) fn kick(self: &Arc<Self>, run_id: &str, leased: Option<StepState>) {
        if self.shutdown.is_cancelled() || !self.executing.claim(run_id) {
            return;
        }
        let shared = Arc::clone(self);
        let run_id = run_id.to_owned();
        // What asked for the work (an answer's RPC), which its steps link to.
        let cause = telemetry::current_span_context();
        // Boxed: the steps' future is about 5.8 KB, which Tokio would copy into the task at the
        // spawn and write over again as the task ends.
        self.tasks
            .spawn(Box::pin(shared.drive(run_id, leased, cause)));
    }

    async fn drive(
        self: Arc<Self>,
        run_id: String,
        mut leased: Option<StepState>,
        cause: Option<SpanContext>,
    ) {
        loop {
            let outcome = if self.shutdown.is_cancelled() {
                // Draining: leave the run to another replica, or to the next start.
                Ok(StepOutcome::Idle)
            } else {
                self.leased_step(&run_id, leased.take(), cause.as_ref())
                    .await
            };
            match outcome {
                Ok(StepOutcome::Continue) => continue,
                Ok(StepOutcome::Idle) => self.release_lease(&run_id).await,
                Ok(StepOutcome::Released) => {}
                Err(error) => {
                    // Its commits were tried again already: the run is left to the takeover loop,
                    // which starts the step again later (counted, so a step that never finishes
                    // ends).
                    warn!(run_id, %error, "run step failed; it is taken up again later");
                    self.release_lease(&run_id).await;
                }
            }
            if self.executing.finish(&run_id) {
                return;
            }
        }
    }

    /// One step under the run's lease, renewed while the step works; a step whose lease is lost
    /// (another replica took the run over) is abandoned, and its commits would be refused anyway.
    /// `leased` is the step's state when the lease was taken already.
    async fn leased_step(
        self: &Arc<Self>,
        run_id: &str,
        leased: Option<StepState>,
        cause: Option<&SpanContext>,
    ) -> Result<StepOutcome, StoreError> {
        let state = match leased {
            Some(state) => state,
            None => match self.store.load_step(run_id, Some(self.lease())).await? {
                Some(state) => state,
                // Not running, or another executor holds it.
                None => return Ok(StepOutcome::Released),
            },
        };
        let renew = async {
            loop {
                tokio::time::sleep(self.config.lease_ttl / 3).await;
                let lease = self.lease();
                match self
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
            let _room = self.admission.step(&agent_id).await;
            self.step(run_id, state).await
        }
        .instrument(span);
        tokio::select! {
            outcome = work => outcome,
            lost = renew => lost,
        }
    }

    async fn step(
        self: &Arc<Self>,
        run_id: &str,
        state: StepState,
    ) -> Result<StepOutcome, StoreError> {
        if state.run.status != RunStatus::Running {
            return Ok(StepOutcome::Idle);
        }
        let expected_turns = state.run.turns;
        let max_attempts = self.config.max_step_attempts;
        if state.step_starts > max_attempts {
            let mut commit = failure(format!(
                "step {} of this run was tried {max_attempts} times without finishing (the server \
             stopped during it, or its result could not be stored); it is not tried again",
                expected_turns + 1
            ));
            commit.usage = state.run.usage;
            return self
                .commit_retrying(&state.run.agent_id, run_id, expected_turns, commit)
                .await;
        }
        if let Some(spec) = &state.request {
            return self.request_step(run_id, &state, spec).await;
        }
        if !state.executing.is_empty() {
            return self.execute_calls(run_id, &state).await;
        }
        if !state.run.pending.is_empty() {
            // A running run whose calls wait while none executes was left by a process holding
            // live MCP calls: they are made again.
            if self.remake_live_calls(run_id, &state).await {
                return Ok(StepOutcome::Continue);
            }
            // Calls still wait for someone: nothing for the model to do yet.
            return Ok(StepOutcome::Idle);
        }
        // The run's total: this turn's tokens once they are known.
        let mut usage = state.run.usage;
        if let Some(agent) = self.agents.get(&state.run.agent_id) {
            for offer in &agent.mcp {
                offer.server.ready().await;
            }
        }
        let tools = self.agents.get(&state.run.agent_id).map(|agent| {
            RunTools::new(agent.tools_now(), &state.run.run_tools).map(|tools| (agent, tools))
        });
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
                // Starts are counted as the lease is taken; provider retries within a start count
                // too.
                let attempt = state.step_starts.max(state.step_attempt + 1);
                let mut turn = TurnInProgress {
                    shared: self,
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
                let _request_room = self.admission.model_request(agent.model.endpoint()).await;
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
                        self.turn_commit(&tools, &state, turn.unflushed, output, usage)
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
        self.commit_retrying(&state.run.agent_id, run_id, expected_turns, commit)
            .await
    }

    /// Runs `write` until it succeeds, fails for good, or [`COMMIT_TRIES`] transient failures:
    /// always with the same content, so a model is never asked again only because a write failed.
    /// After a failure the write may still have been made (its reply was lost): this replica's
    /// followers are told to read the store, since the store's notice of the commit, if any, is
    /// this replica's own.
    pub(super) async fn retrying<T, F, Fut>(
        self: &Arc<Self>,
        run_id: &str,
        mut write: F,
    ) -> Result<T, StoreError>
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
            self.apply(run_id, Effects::unknown_outcome());
            tries += 1;
            if !error.is_transient() || tries >= COMMIT_TRIES {
                return Err(error);
            }
            warn!(run_id, %error, tries, "a commit failed; trying it again with the same content");
            tokio::time::sleep(Duration::from_millis(100 << tries)).await;
        }
    }

    /// Commits a turn with [`Self::retrying`]; a turn the store refuses for good fails its run
    /// instead (with its reason in the log only), rather than being computed again and again.
    pub(super) async fn commit_retrying(
        self: &Arc<Self>,
        agent_id: &str,
        run_id: &str,
        expected_turns: u32,
        mut commit: TurnCommit,
    ) -> Result<StepOutcome, StoreError> {
        let mut failing = false;
        loop {
            let committed = self
                .retrying(run_id, || {
                    self.commit_turn(agent_id, run_id, expected_turns, commit.clone())
                })
                .await;
            match committed {
                Err(error) if !error.is_transient() && !failing => {
                    let correlation_id = uuid::Uuid::now_v7().simple().to_string();
                    error!(run_id, %error, correlation_id, "the store refused a step's result; the run fails");
                    let mut failed = failure(format!(
                        "the step's result could not be stored (the server's log has it under \
                         correlation id {correlation_id})"
                    ));
                    failed.usage = commit.usage;
                    commit = failed;
                    failing = true;
                }
                other => return other,
            }
        }
    }

    /// Commits a turn of a run of agent `agent_id` and publishes it; the run goes on when it is
    /// still running.
    async fn commit_turn(
        self: &Arc<Self>,
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
        match self
            .store
            .commit_turn(
                Step {
                    run_id,
                    owner: &self.owner,
                    expected_turns,
                },
                commit,
            )
            .await?
        {
            TurnOutcome::Committed(committed) => {
                let status = committed.status;
                let agent_id = agent_id.to_owned();
                self.apply(
                    run_id,
                    Effects::publish(committed)
                        .wake_expiry(expires)
                        .metric(Metric::StepCommitted { agent_id, status }),
                );
                debug!(run_id, status = status.as_str(), "turn committed");
                Ok(StepOutcome::after(status))
            }
            // Moved on: cancelled, taken over, or this very commit made already (its reply was lost
            // and it was tried again). Looking again sorts out which.
            TurnOutcome::Stale => Ok(StepOutcome::Continue),
        }
    }

    fn turn_commit(
        &self,
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
            let plan = plan_call(tools, &call, &state.run.metadata, &self.config.limits);
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
                        self.agents.get(&state.run.agent_id),
                        tools.get(&call.name),
                        suspension.kind,
                    );
                    let timeout = (suspension.kind == SuspendKind::ClientTool)
                        .then_some(timeout)
                        .flatten();
                    let expire_ms =
                        super::expire_at(self.store.now_ms(), timeout, state.run.question_ttl_ms);
                    events.push(EventKind::ToolCallSuspended {
                        tool_call_id: call.id.clone(),
                        tool_name: call.name.clone(),
                        payload: suspension.payload.clone(),
                        form: suspension.form.clone(),
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

/// Whether the run's tokens so far are past its agent's budget.
fn over_budget(agent: &AgentDefinition, usage: Option<Usage>) -> bool {
    match (agent.max_tokens_per_run, usage) {
        (Some(budget), Some(used)) => used.input_tokens + used.output_tokens >= budget,
        _ => false,
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
    shared: &'a Arc<Shared>,
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
            .shared
            .store
            .append_step_events(StepEvents {
                run_id: self.run_id,
                owner: &self.shared.owner,
                expected_turns: self.expected_turns,
                attempt: self.attempt,
                events: events.clone(),
            })
            .await
        {
            Ok(TurnOutcome::Committed(committed)) => {
                self.shared.apply(self.run_id, Effects::publish(committed));
                Ok(())
            }
            Ok(TurnOutcome::Stale) => Err(StepError::Stale),
            Err(error) => {
                // Live text is a courtesy; the model's output is not lost for it.
                warn!(run_id = self.run_id, %error, "streamed events wait for the turn's commit");
                self.shared.apply(self.run_id, Effects::unknown_outcome());
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

fn settled_invalid(content: String) -> NewCallState {
    NewCallState::Settled {
        content,
        is_error: true,
        kind: crate::domain::ToolResultKind::InvalidCall,
    }
}
