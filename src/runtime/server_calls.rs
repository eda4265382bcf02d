//! The calls the server runs itself (HTTP and MCP tools): all of a step's at once, their results
//! committed together. Each call was stored as executing before this, so a crash here makes it
//! again, with the same idempotency key, when the run is taken over. An MCP tool that asks a person
//! for input mid-call makes its call wait, as a form, instead of finishing it.

use std::sync::Arc;

use tracing::Instrument;

use std::sync::atomic::AtomicBool;

use super::executor::StepOutcome;
use super::live_input::LiveInput;
use super::mcp::{McpCall, McpOutcome, McpStep};
use super::settle::edited_result;
use super::shared::Shared;
use super::tools::ToolKind;
use crate::domain::{SuspendKind, Suspension};
use crate::store::{
    ExecutedResult, ExecutedResults, ExecutingCall, StepState, StoreError, SuspendedCall,
    TurnOutcome,
};
use crate::telemetry;

/// What running one call came to.
enum Ran {
    Finished(ExecutedResult),
    Waits(SuspendedCall),
}

impl Shared {
    /// Runs the step's executing calls and commits what they came to.
    pub(super) async fn execute_calls(
        self: &Arc<Self>,
        run_id: &str,
        state: &StepState,
    ) -> Result<StepOutcome, StoreError> {
        let ran = futures::future::join_all(
            state
                .executing
                .iter()
                .map(|call| self.run_call(run_id, state, call)),
        )
        .await;
        let (mut results, mut suspended) = (Vec::new(), Vec::new());
        for ran in ran {
            match ran {
                Ran::Finished(result) => results.push(result),
                Ran::Waits(call) => suspended.push(call),
            }
        }
        let committed = self
            .retrying(run_id, || {
                self.store.commit_executed(ExecutedResults {
                    step: crate::store::Step {
                        run_id,
                        owner: &self.owner,
                        expected_turns: state.run.turns,
                    },
                    results: results.clone(),
                    suspended: suspended.clone(),
                    step_goes_on: false,
                })
            })
            .await?;
        match committed {
            TurnOutcome::Committed(committed) => {
                let status = committed.status;
                if !suspended.is_empty() {
                    // An input request may expire before the expiry loop's next look.
                    self.expiry_wake.notify_one();
                }
                self.apply(run_id, super::effects::Effects::publish(committed));
                Ok(StepOutcome::after(status))
            }
            TurnOutcome::Stale => Ok(StepOutcome::Continue),
        }
    }

    async fn run_call(
        self: &Arc<Self>,
        run_id: &str,
        state: &StepState,
        call: &ExecutingCall,
    ) -> Ran {
        let agent = self.agents.get(&state.run.agent_id);
        let tool = agent.and_then(|agent| agent.tool_for_call(&call.tool_name));
        let kind = tool.as_deref().map_or("unknown", |tool| tool.kind.name());
        let span = telemetry::tool_span(&call.tool_name, kind, &call.tool_call_id, "executed");
        let key = format!("{run_id}/{}", call.tool_call_id);
        let max_output_bytes = self.config.max_tool_output_bytes;
        async {
            let outcome = match tool.as_deref().map(|tool| &tool.kind) {
                Some(ToolKind::Http(http)) => {
                    let outcome = http
                        .execute(
                            &call.tool_name,
                            &key,
                            &call.arguments_json,
                            max_output_bytes,
                        )
                        .await;
                    McpOutcome {
                        content: outcome.content,
                        is_error: outcome.is_error,
                    }
                }
                Some(ToolKind::Mcp(mcp)) => {
                    let Some(server) = mcp.server.upgrade() else {
                        return finished(
                            call,
                            McpOutcome::error(format!(
                                "MCP server {} is not configured on this server",
                                mcp.server_name
                            )),
                        );
                    };
                    let live = LiveInput {
                        shared: self,
                        run_id,
                        state,
                        call,
                        assignees: super::assignees::of(agent, tool.as_deref(), SuspendKind::Form),
                        wait: server.settings().elicitation_timeout,
                        asked: AtomicBool::new(false),
                    };
                    let mcp_call = McpCall {
                        tool: &mcp.name,
                        idempotency_key: &key,
                        arguments_json: &call.arguments_json,
                        continuation: call.continuation.as_deref(),
                        max_output_bytes,
                        asker: &live,
                    };
                    let step = server.call(mcp_call, &self.config.limits).await;
                    live.withdraw().await;
                    match step {
                        McpStep::Done(outcome) => outcome,
                        McpStep::Ask { form, continuation } => {
                            let assignees =
                                super::assignees::of(agent, tool.as_deref(), SuspendKind::Form);
                            let wait = server.settings().elicitation_timeout;
                            return Ran::Waits(SuspendedCall {
                                tool_call_id: call.tool_call_id.clone(),
                                tool_name: call.tool_name.clone(),
                                suspension: Suspension {
                                    kind: SuspendKind::Form,
                                    form: Some(form),
                                    assignees,
                                    ..Suspension::default()
                                },
                                expire_ms: super::expire_at(
                                    self.store.now_ms(),
                                    wait,
                                    state.run.question_ttl_ms,
                                ),
                                continuation,
                            });
                        }
                    }
                }
                _ => McpOutcome::error(format!(
                    "tool \"{}\" is not an HTTP or MCP tool configured on this server",
                    call.tool_name
                )),
            };
            finished(call, outcome)
        }
        .instrument(span)
        .await
    }
}

/// A call's result; an approver's edit of its arguments is told with it.
fn finished(call: &ExecutingCall, outcome: McpOutcome) -> Ran {
    Ran::Finished(ExecutedResult {
        tool_call_id: call.tool_call_id.clone(),
        content: if call.edited {
            edited_result(&call.arguments_json, &outcome.content)
        } else {
            outcome.content
        },
        is_error: outcome.is_error,
        settled_by: call.approved_by.clone(),
    })
}
