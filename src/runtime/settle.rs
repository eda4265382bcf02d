//! How an answer changes a pending call, decided from the call as it is in the store: a question
//! takes text, selections or a decline; an approval takes a decision (or a decline, which
//! rejects); a client tool call takes its output. Anything else is refused and the call stays as it
//! was.

use super::ask_user::{self, AskUserLimits, Violation, check_answer};
use super::error::{RejectReason, RuntimeError, short_id};
use super::forms;
use super::mcp::Continuation;
use super::settle_access;
use crate::domain::{
    AnswerInput, ApprovalDecision, Form, Principal, SettledBy, SuspendKind, ToolResultKind,
};
use crate::store::{Approved, CallChange, CallStatus, Refusal, Settlement, ToolCallRecord};
use serde_json::{Value, json};

/// The result of an approval that expired: the tool never ran.
pub const APPROVAL_EXPIRED_RESULT: &str = "No decision: the approval request expired";
/// The result of a client tool call whose output never came.
pub const OUTPUT_EXPIRED_RESULT: &str = "No output: the tool call timed out";

/// The result of a rejected approval.
pub fn rejected_result(reason: &str) -> String {
    if reason.is_empty() {
        "User rejected the call".to_owned()
    } else {
        format!("User rejected the call: {reason}")
    }
}

/// A tool's result after the person who approved it changed its arguments.
pub fn edited_result(arguments_json: &str, content: &str) -> String {
    format!("User edited the arguments to {arguments_json}. Result: {content}")
}

/// The field of an answer's kind, for violations.
fn answer_field(answer: &AnswerInput) -> &'static str {
    match answer {
        AnswerInput::Text(_) => "answer.text",
        AnswerInput::Selections(_) => "answer.selections",
        AnswerInput::Decline(_) => "answer.decline",
        AnswerInput::ToolOutput { .. } => "answer.tool_output",
        AnswerInput::Approval(_) => "answer.approval",
        AnswerInput::Form(_) => "answer.form",
        AnswerInput::Reply(_) => "answer.reply",
    }
}

/// What an answer does to `call` at `now_ms` (the store's clock), or why it cannot. `approved` is
/// what the call becomes when an approval lets the tool run (worked out by the caller, who knows
/// the tool).
pub fn decide(
    call: &ToolCallRecord,
    answer: &AnswerInput,
    answer_id: &str,
    approved: Option<&Approved>,
    limits: &AskUserLimits,
    now_ms: i64,
    principal: &Principal,
) -> Result<CallChange, RuntimeError> {
    // Who may settle comes first: a caller who may not learns nothing of whether its answer fits.
    settle_access::check(
        &call.suspension,
        &call.run_id,
        &call.tool_call_id,
        principal,
    )?;
    let settled_by = &SettledBy::from(principal);
    let settle = |status, content: String, is_error, kind| {
        Ok(CallChange::Settle(Settlement {
            settled_by: Some(settled_by.clone()),
            status,
            answer: Some(answer.clone()),
            answer_id: answer_id.to_owned(),
            content,
            is_error,
            kind,
        }))
    };
    // Expiry is part of the compare-and-set: past its time a call takes no answer, even before the
    // expiry loop has settled it.
    if call.expire_ms.is_some_and(|expire_ms| expire_ms <= now_ms) {
        return Err(RuntimeError::rejected(
            RejectReason::QuestionExpired,
            format!("tool call \"{}\" expired", short_id(&call.tool_call_id)),
        ));
    }
    match (call.suspension.kind, answer) {
        (SuspendKind::Question, _) => {
            let Some(payload) = &call.suspension.payload else {
                return Err(crate::store::StoreError::Corrupt(format!(
                    "question {} has no payload",
                    call.tool_call_id
                ))
                .into());
            };
            if let Err(violations) = check_answer(payload, answer, limits) {
                return Err(RuntimeError::AnswerRejected {
                    reason: RejectReason::InvalidAnswer,
                    message: format!(
                        "the answer does not fit the question: {}",
                        ask_user::describe(&violations)
                    ),
                    violations,
                });
            }
            let (status, kind) = answered(answer);
            settle(status, ask_user::answer_result(answer), false, kind)
        }
        (SuspendKind::Form, _) => {
            let Some(form) = &call.suspension.form else {
                return Err(crate::store::StoreError::Corrupt(format!(
                    "form {} has no fields",
                    call.tool_call_id
                ))
                .into());
            };
            if let Err(violations) = forms::check_answer(form, answer, limits) {
                return Err(RuntimeError::AnswerRejected {
                    reason: RejectReason::InvalidAnswer,
                    message: format!(
                        "the answer does not fit the form: {}",
                        ask_user::describe(&violations)
                    ),
                    violations,
                });
            }
            if let Some(continuation) = &call.continuation {
                return continued(continuation, Some((form, answer)), answer_id);
            }
            let (status, kind) = answered(answer);
            settle(status, forms::answer_result(form, answer), false, kind)
        }
        (
            SuspendKind::Approval,
            AnswerInput::Decline(reason)
            | AnswerInput::Approval(ApprovalDecision::Reject { reason }),
        ) => settle(
            CallStatus::Rejected,
            rejected_result(reason.as_str()),
            false,
            ToolResultKind::Rejected,
        ),
        (SuspendKind::Approval, AnswerInput::Approval(decision)) => match approved {
            Some(next) => Ok(CallChange::Approve {
                decision: decision.clone(),
                answer_id: answer_id.to_owned(),
                next: next.clone(),
                by: settled_by.clone(),
            }),
            // The call changed since the caller looked at it.
            None => Err(RuntimeError::rejected(
                RejectReason::ToolCallNotPending,
                format!(
                    "tool call \"{}\" no longer waits for approval",
                    call.tool_call_id
                ),
            )),
        },
        (
            SuspendKind::ClientTool,
            &AnswerInput::ToolOutput {
                ref content,
                is_error,
            },
        ) => {
            let content = match &call.decision {
                Some(decision) if matches!(decision.decision, ApprovalDecision::Edit { .. }) => {
                    edited_result(&call.suspension.arguments_json, content.as_str())
                }
                _ => content.clone(),
            };
            settle(
                CallStatus::Responded,
                content,
                is_error,
                ToolResultKind::Output,
            )
        }
        (kind, answer) => {
            let wants = match kind {
                SuspendKind::Question => "text, selections or decline",
                SuspendKind::Approval => "approval (approve, reject or edit) or decline",
                SuspendKind::ClientTool => "tool_output",
                SuspendKind::Form => "form, reply or decline",
            };
            let description = format!(
                "tool call \"{}\" waits for {}: settle it with {wants}",
                call.tool_call_id,
                kind_name(kind)
            );
            Err(RuntimeError::AnswerRejected {
                reason: RejectReason::InvalidAnswer,
                message: description.clone(),
                violations: vec![Violation::new(answer_field(answer), description)],
            })
        }
    }
}

/// How an accepted answer to a question or a form settles it.
fn answered(answer: &AnswerInput) -> (CallStatus, ToolResultKind) {
    match answer {
        AnswerInput::Decline(_) => (CallStatus::Declined, ToolResultKind::Declined),
        // A reply is an answer in the store (the call is settled by the person), told apart by its
        // result's kind.
        AnswerInput::Reply(_) => (CallStatus::Answered, ToolResultKind::Replied),
        _ => (CallStatus::Answered, ToolResultKind::Answered),
    }
}

fn kind_name(kind: SuspendKind) -> &'static str {
    match kind {
        SuspendKind::Form => "a form's answer",
        SuspendKind::Question => "an answer",
        SuspendKind::Approval => "an approval",
        SuspendKind::ClientTool => "a client tool's output",
    }
}

/// The error a [`decide`] refused with, back from the store's transaction.
pub fn refused(refusal: Refusal) -> RuntimeError {
    match refusal.downcast::<RuntimeError>() {
        Ok(error) => *error,
        // Only `decide`'s errors are carried: anything else is a bug, reported as one.
        Err(other) => RuntimeError::Internal(format!("a settle was refused: {other}")),
    }
}

/// What an answer to the input a tool asked for mid-call (or its expiry: `None`) does: the call
/// runs on with the answer, as an MCP elicitation result.
fn continued(
    continuation: &str,
    answer: Option<(&Form, &AnswerInput)>,
    answer_id: &str,
) -> Result<CallChange, RuntimeError> {
    let response = match answer {
        None => json!({ "action": "cancel" }),
        // A reply in prose is no value the tool asked for: it is told no.
        Some((_, AnswerInput::Reply(_) | AnswerInput::Decline(_))) => {
            json!({ "action": "decline" })
        }
        Some((form, answer)) => {
            let mut response: Value = serde_json::from_str(&forms::answer_result(form, answer))
                .map_err(|e| RuntimeError::Internal(format!("an elicitation result: {e}")))?;
            if !form.url.is_empty() {
                // Accepting a URL is consent to open it: there is no content.
                if let Some(object) = response.as_object_mut() {
                    object.remove("content");
                }
            }
            response
        }
    };
    let continuation = Continuation::parse(continuation)
        .map_err(|e| RuntimeError::from(crate::store::StoreError::Corrupt(e)))?
        .answered(response);
    Ok(CallChange::Continue {
        answer: answer.map(|(_, answer)| answer.clone()),
        answer_id: answer_id.to_owned(),
        continuation: continuation.to_text(),
    })
}

/// What a call whose wait ran out becomes: settled as expired, or (input its tool asked for) run
/// on, told the person cancelled.
pub fn expired_change(call: &ToolCallRecord) -> CallChange {
    if let Some(continuation) = &call.continuation
        && let Ok(change) = continued(continuation, None, "")
    {
        return change;
    }
    CallChange::Settle(expired(call))
}

/// What settles a call whose wait ran out.
pub fn expired(call: &ToolCallRecord) -> Settlement {
    let (content, is_error) = match (call.suspension.kind, &call.suspension.form) {
        (SuspendKind::Form, Some(form)) => (forms::expired_result(form), false),
        (SuspendKind::Question | SuspendKind::Form, _) => {
            (ask_user::EXPIRED_RESULT.to_owned(), false)
        }
        (SuspendKind::Approval, _) => (APPROVAL_EXPIRED_RESULT.to_owned(), true),
        (SuspendKind::ClientTool, _) => (OUTPUT_EXPIRED_RESULT.to_owned(), true),
    };
    Settlement {
        settled_by: Some(SettledBy::from(&Principal::server())),
        status: CallStatus::Expired,
        answer: None,
        answer_id: String::new(),
        content,
        is_error,
        kind: ToolResultKind::Expired,
    }
}

/// An earlier answer that a retry repeats.
pub struct Repeated<'a> {
    /// The sequence its acknowledgement points to.
    pub sequence: u64,
    /// The `answer_id` it was accepted under.
    pub answer_id: &'a str,
}

/// The earlier answer (settlement or approval decision) of `call`, with its key, if it had one.
fn earlier(call: &ToolCallRecord) -> Option<(&AnswerInput, &str, u64)> {
    let settled = matches!(
        call.status,
        CallStatus::Answered | CallStatus::Declined | CallStatus::Responded | CallStatus::Rejected
    );
    let answer = call.answer.as_ref().filter(|_| settled)?;
    Some((answer, call.answer_id.as_str(), call.result_sequence))
}

/// Whether `answer` repeats what already settled (or approved) `call`: the same content, under
/// any key or none.
pub fn repeated<'a>(call: &'a ToolCallRecord, answer: &AnswerInput) -> Option<Repeated<'a>> {
    if let (Some(decision), AnswerInput::Approval(again)) = (&call.decision, answer) {
        return (*again == decision.decision).then_some(Repeated {
            sequence: decision.sequence,
            answer_id: &decision.answer_id,
        });
    }
    let (earlier, answer_id, sequence) = earlier(call)?;
    (earlier == answer).then_some(Repeated {
        sequence,
        answer_id,
    })
}

/// Whether `answer_id` is the key of an earlier, different answer of `call`: a client reusing an
/// idempotency key for other content, which is refused rather than taken for a retry.
pub fn key_reused(call: &ToolCallRecord, answer_id: &str) -> bool {
    let decision_key = call.decision.as_ref().map(|d| d.answer_id.as_str());
    let answer_key = earlier(call).map(|(_, key, _)| key);
    !answer_id.is_empty() && (decision_key == Some(answer_id) || answer_key == Some(answer_id))
}

/// Why an answer to a call that no longer waits (or waits for something else) is refused.
pub fn not_pending(call: &ToolCallRecord) -> RuntimeError {
    let id = short_id(&call.tool_call_id);
    match call.status {
        CallStatus::Answered
        | CallStatus::Declined
        | CallStatus::Responded
        | CallStatus::Rejected
        | CallStatus::Executing
        | CallStatus::Executed => RuntimeError::rejected(
            RejectReason::AlreadyAnswered,
            format!("tool call \"{id}\" was already settled"),
        ),
        CallStatus::Pending if call.decision.is_some() => RuntimeError::rejected(
            RejectReason::AlreadyAnswered,
            format!("the approval of tool call \"{id}\" was already decided"),
        ),
        CallStatus::Expired => RuntimeError::rejected(
            RejectReason::QuestionExpired,
            format!("tool call \"{id}\" expired"),
        ),
        CallStatus::Cancelled => RuntimeError::rejected(
            RejectReason::RunNotSuspended,
            format!("the run of tool call \"{id}\" was cancelled"),
        ),
        CallStatus::Invalid | CallStatus::Pending => RuntimeError::rejected(
            RejectReason::ToolCallNotPending,
            format!("tool call \"{id}\" is not waiting for an answer"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{SuspendPayload, Suspension, now_millis};

    fn anyone() -> Principal {
        Principal::anonymous()
    }

    fn question(expire_ms: Option<i64>) -> ToolCallRecord {
        ToolCallRecord {
            run_id: "run".into(),
            tool_call_id: "call".into(),
            tool_name: "ask_user".into(),
            status: CallStatus::Pending,
            suspension: Suspension {
                payload: Some(SuspendPayload {
                    question: "Name?".into(),
                    options: Vec::new(),
                    selection_mode: None,
                }),
                ..Suspension::default()
            },
            expire_ms,
            answer: None,
            answer_id: String::new(),
            result_sequence: 0,
            decision: None,
            suspended_ms: None,
            continuation: None,
        }
    }

    #[test]
    fn a_call_past_its_expiry_takes_no_answer() {
        let answer = AnswerInput::Text("Ada".into());
        let limits = AskUserLimits::default();
        let past = question(Some(now_millis() - 1));
        let refused = decide(&past, &answer, "", None, &limits, now_millis(), &anyone()).err();
        assert!(
            matches!(
                refused,
                Some(RuntimeError::AnswerRejected {
                    reason: RejectReason::QuestionExpired,
                    ..
                })
            ),
            "{refused:?}"
        );
        let future = question(Some(now_millis() + 60_000));
        assert!(decide(&future, &answer, "", None, &limits, now_millis(), &anyone()).is_ok());
        assert!(
            decide(
                &question(None),
                &answer,
                "",
                None,
                &limits,
                now_millis(),
                &anyone()
            )
            .is_ok()
        );
    }
}
