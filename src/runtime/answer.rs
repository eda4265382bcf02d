//! Answers: an answer to a question, a decision on an approval, or a client tool's output,
//! decided once against the call as it is in the store, then acknowledged (a retry as a duplicate)
//! or refused with its reason.

use std::sync::Arc;

use super::effects::Metric;
use super::settle_access;
use super::shared::Shared;
use super::tools::{CallPlan, RunTools, run_plan};
use super::writes::{CallRef, Settled};
use super::{
    AnswerAck, AnswerRequest, RejectReason, RuntimeError, Violation, expire_at, settle, short_id,
};
use crate::domain::{AnswerInput, ApprovalDecision, Principal, SuspendKind};
use crate::store::{Approved, Decide, Refusal, StoreError, Tenancy};

impl Shared {
    /// Applies an answer (to a question, an approval or a client tool call) exactly once: checks it
    /// against the call, then changes the pending call with a compare-and-set in the store. A retry
    /// of an accepted answer (same `answer_id`, or the same content) is acknowledged as a duplicate.
    pub(super) async fn answer(
        self: &Arc<Self>,
        request: AnswerRequest,
    ) -> Result<AnswerAck, RuntimeError> {
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
        // An answer link answers its own call only: refused before any lookup.
        settle_access::within_link(
            &request.principal,
            &request.run_id,
            Some(&request.tool_call_id),
        )?;
        let approved = match &request.answer {
            AnswerInput::Approval(ApprovalDecision::Approve | ApprovalDecision::Edit { .. }) => {
                self.approved_call(&request).await?
            }
            _ => None,
        };
        // The answer is checked against the call inside the changing transaction, so reading the
        // call takes no round trip of its own.
        let limits = self.config.limits;
        let (answer, answer_id) = (request.answer.clone(), request.answer_id.clone());
        let store = Arc::clone(&self.store);
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
        let call = CallRef {
            run_id: request.run_id.clone(),
            tenant: Some(request.principal.tenant.clone()),
            tool_call_id: request.tool_call_id.clone(),
        };
        // A draining server starts no executor: it leaves the run's lease to others.
        let take_lease = !self.shutdown.is_cancelled();
        let outcome = self
            .settle(call, decide, Metric::answered, take_lease)
            .await?;
        let ack = |duplicate, result_sequence, answer_id: &str| AnswerAck {
            tool_call_id: request.tool_call_id.clone(),
            answer_id: answer_id.to_owned(),
            duplicate,
            result_sequence,
        };
        match outcome {
            Settled::Applied { first_sequence } => {
                Ok(ack(false, first_sequence, &request.answer_id))
            }
            Settled::Unchanged { call, refusal } => {
                // Even a retry of an earlier answer is acknowledged only to who may settle it.
                settle_access::check(
                    &call.suspension,
                    &call.run_id,
                    &call.tool_call_id,
                    &request.principal,
                )?;
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
        let run = self
            .store
            .get_run(&request.run_id, Tenancy::Only(&request.principal.tenant))
            .await?
            .ok_or_else(|| RuntimeError::RunNotFound(request.run_id.clone()))?;
        let Some(call) = run.pending.iter().find(|c| {
            c.tool_call_id == request.tool_call_id && c.suspension.kind == SuspendKind::Approval
        }) else {
            return Ok(None);
        };
        if settle_access::check(
            &call.suspension,
            &request.run_id,
            &call.tool_call_id,
            &request.principal,
        )
        .is_err()
        {
            // The settle refuses it, before the edit is looked at.
            return Ok(None);
        }
        let not_runnable =
            |why: String| RuntimeError::rejected(RejectReason::ToolCallNotPending, why);
        if run.agent_id == super::requests::REQUEST_AGENT {
            // A standalone request's approval: the asker runs the tool; the result says how.
            let (edited, arguments_json) = match &request.answer {
                AnswerInput::Approval(ApprovalDecision::Edit { arguments_json }) => (
                    true,
                    super::tools::ArgumentsSchema::any_object()
                        .and_then(|schema| schema.check(arguments_json))
                        .map(|(_, canonical)| canonical)
                        .map_err(|error| {
                            let description =
                                format!("the edited arguments are not a JSON object: {error}");
                            RuntimeError::AnswerRejected {
                                reason: RejectReason::InvalidAnswer,
                                message: description.clone(),
                                violations: vec![Violation {
                                    field: "answer.approval.edit.arguments_json".into(),
                                    description,
                                }],
                            }
                        })?,
                ),
                _ => (false, call.suspension.arguments_json.clone()),
            };
            return Ok(Some(Approved::Settle {
                content: super::requests::approval_result(edited, &arguments_json),
            }));
        }
        let agent = self.agents.get(&run.agent_id).ok_or_else(|| {
            not_runnable(format!(
                "agent \"{}\" is not configured on this server",
                run.agent_id
            ))
        })?;
        let tools =
            RunTools::new(agent.tools_now(), &run.run_tools).map_err(StoreError::Corrupt)?;
        // An MCP tool gone since the call was made is still approved: running it then gives the
        // model an error result.
        let gone = agent.tool_for_call(&call.tool_name);
        let tool = tools
            .get(&call.tool_name)
            .or(gone.as_deref())
            .ok_or_else(|| {
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
                expire_ms: expire_at(self.store.now_ms(), timeout, run.question_ttl_ms),
            },
            CallPlan::Invalid(why) => return Err(not_runnable(why)),
        }))
    }

    pub(super) async fn unknown_call(
        &self,
        run_id: &str,
        principal: &Principal,
        tool_call_id: &str,
    ) -> RuntimeError {
        match self
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
}
