//! A person asked for the input an MCP server asks for within a live call (`elicitation/create`
//! while its `tools/call` is open, before the 2026-07-28 revision). The form is committed at once,
//! as any suspension, with the run kept running under the step's lease (the step holds the call);
//! the answer, given on any replica, is read back from the store. After a restart the form is
//! withdrawn and the call made again (see [`Shared::remake_live_calls`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tracing::warn;

use super::effects::Effects;
use super::mcp::{Continuation, LiveAsker, elicitation_form};
use super::shared::Shared;
use crate::domain::{SuspendKind, Suspension};
use crate::store::{
    CallChange, CallOfRun, CallSettlement, CallStatus, Decide, ExecutedResults, ExecutingCall,
    Step, StepState, SuspendedCall, Tenancy, TurnOutcome,
};

/// How often a waiting live call looks whether its form was answered.
const POLL: Duration = Duration::from_millis(250);

/// Asks for one executing call's live input.
pub(super) struct LiveInput<'a> {
    pub shared: &'a Arc<Shared>,
    pub run_id: &'a str,
    pub state: &'a StepState,
    pub call: &'a ExecutingCall,
    pub assignees: Vec<String>,
    /// The server's `elicitation_timeout`.
    pub wait: Option<Duration>,
    /// Whether a form was committed that may still wait.
    pub asked: AtomicBool,
}

fn cancel() -> Value {
    json!({ "action": "cancel" })
}

#[async_trait]
impl LiveAsker for LiveInput<'_> {
    async fn ask(&self, params: Value) -> Value {
        let shared = self.shared;
        let form = match elicitation_form(&params, &shared.config.limits) {
            Ok(form) => form,
            Err(why) => {
                warn!(run_id = self.run_id, tool = %self.call.tool_name, %why, "an MCP server asked for input askuser cannot show; it is told no");
                return json!({ "action": "decline" });
            }
        };
        let suspended = SuspendedCall {
            tool_call_id: self.call.tool_call_id.clone(),
            tool_name: self.call.tool_name.clone(),
            suspension: Suspension {
                kind: SuspendKind::Form,
                form: Some(Box::new(form)),
                assignees: self.assignees.clone(),
                ..Suspension::default()
            },
            expire_ms: super::expire_at(
                shared.store.now_ms(),
                self.wait,
                self.state.run.question_ttl_ms,
            ),
            continuation: Continuation::live(params).to_text(),
        };
        let committed = shared
            .retrying(self.run_id, || {
                shared.store.commit_executed(ExecutedResults {
                    step: Step {
                        run_id: self.run_id,
                        owner: &shared.owner,
                        expected_turns: self.state.run.turns,
                    },
                    results: Vec::new(),
                    suspended: vec![suspended.clone()],
                    step_goes_on: true,
                })
            })
            .await;
        match committed {
            Ok(TurnOutcome::Committed(committed)) => {
                self.asked.store(true, Ordering::SeqCst);
                shared.expiry_wake.notify_one();
                shared.apply(self.run_id, Effects::publish(committed));
            }
            _ => return cancel(),
        }
        loop {
            tokio::time::sleep(POLL).await;
            let call = shared
                .store
                .get_tool_call(CallOfRun {
                    run_id: self.run_id,
                    tenancy: Tenancy::Any,
                    tool_call_id: &self.call.tool_call_id,
                })
                .await;
            match call {
                Ok(Some(call)) if call.status == CallStatus::Pending => {}
                Err(_) => {}
                Ok(Some(call)) if call.status == CallStatus::Executing => {
                    self.asked.store(false, Ordering::SeqCst);
                    return call
                        .continuation
                        .as_deref()
                        .and_then(|text| Continuation::parse(text).ok())
                        .and_then(|continuation| continuation.live_answer().cloned())
                        .unwrap_or_else(cancel);
                }
                // Settled otherwise: the run was cancelled.
                Ok(_) => {
                    self.asked.store(false, Ordering::SeqCst);
                    return cancel();
                }
            }
        }
    }
}

impl LiveInput<'_> {
    /// After the call ended: a form it asked that still waits (the server stopped waiting for
    /// it) is withdrawn, so that the call's result can be committed.
    pub async fn withdraw(&self) {
        if self.asked.swap(false, Ordering::SeqCst) {
            self.shared
                .withdraw_live(self.run_id, &self.call.tool_call_id)
                .await;
        }
    }
}

/// What withdraws a live call's form: the call is executing again, its input cancelled.
fn withdrawal() -> Decide {
    Box::new(
        |call| match call.continuation.as_deref().map(Continuation::parse) {
            Some(Ok(continuation)) if continuation.live => Ok(CallChange::Continue {
                answer: None,
                answer_id: String::new(),
                continuation: continuation.answered(cancel()).to_text(),
            }),
            _ => Err("not a live call's input".into()),
        },
    )
}

impl Shared {
    async fn withdraw_live(&self, run_id: &str, tool_call_id: &str) {
        let withdrawn = self
            .store
            .settle_tool_call(CallSettlement {
                run_id,
                tenancy: Tenancy::Any,
                tool_call_id,
                decide: withdrawal(),
                lease: None,
            })
            .await;
        if let Err(error) = withdrawn {
            warn!(run_id, tool_call_id, %error, "a live call's form could not be withdrawn");
        }
    }

    /// A running run whose calls wait for someone while none executes was left by a process that
    /// held live calls: their forms are withdrawn and the calls made again (the servers ask
    /// again). Whether any was.
    pub(super) async fn remake_live_calls(&self, run_id: &str, state: &StepState) -> bool {
        let mut remade = false;
        for call in &state.run.pending {
            if call.suspension.kind == SuspendKind::Form {
                let withdrawn = self
                    .store
                    .settle_tool_call(CallSettlement {
                        run_id,
                        tenancy: Tenancy::Any,
                        tool_call_id: &call.tool_call_id,
                        decide: withdrawal(),
                        lease: None,
                    })
                    .await;
                remade |= matches!(withdrawn, Ok(crate::store::SettleOutcome::Settled { .. }));
            }
        }
        remade
    }
}
