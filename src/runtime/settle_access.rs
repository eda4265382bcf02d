//! Who may settle a call, the one rule every way of settling passes (answer frames on a `RunAgent`
//! stream, `ResumeRun`, the inbox and the terminal client, which use those): first the scope the
//! call's kind needs, then the call's assignees. Authentication lets a principal reach an answer
//! path; only here, where the call's kind is known, is it decided whether it may settle *this* call.
//! An answer link's principal is also bound here to its one call: what it may answer and read.

use super::assignees;
use super::error::{RejectReason, RuntimeError, short_id};
use crate::domain::{Principal, RunRecord, Scope, SuspendKind, Suspension};

/// The scope that settles a call waiting for `kind`: an answer to a question and a decision on an
/// approval are a person's (`runs:answer`); a client tool's output is a worker's (`tools:execute`).
pub fn scope_to_settle(kind: SuspendKind) -> Scope {
    match kind {
        SuspendKind::Question | SuspendKind::Form | SuspendKind::Approval => Scope::RunsAnswer,
        SuspendKind::ClientTool => Scope::ToolsExecute,
    }
}

/// The scopes of which a principal needs at least one to reach an answer path at all.
pub const ANY_SCOPE_TO_SETTLE: [Scope; 2] = [Scope::RunsAnswer, Scope::ToolsExecute];

/// Whether `principal` may settle the call `tool_call_id` of `run_id` that waits as `suspension`
/// says; the refusal leaves the call pending. A principal without the scope learns nothing of
/// assignees or of whether its answer would fit.
pub fn check(
    suspension: &Suspension,
    run_id: &str,
    tool_call_id: &str,
    principal: &Principal,
) -> Result<(), RuntimeError> {
    within_link(principal, run_id, Some(tool_call_id))?;
    let scope = scope_to_settle(suspension.kind);
    if !principal.may(scope) {
        return Err(RuntimeError::rejected(
            RejectReason::MissingScope(scope),
            format!(
                "settling tool call \"{}\" ({}) needs the scope {}",
                short_id(tool_call_id),
                what(suspension.kind),
                scope.as_str()
            ),
        ));
    }
    if !assignees::may_settle(suspension, principal) {
        return Err(RuntimeError::rejected(
            RejectReason::NotAssignee,
            format!(
                "tool call \"{}\" is assigned to {}",
                short_id(tool_call_id),
                suspension.assignees.join(", ")
            ),
        ));
    }
    Ok(())
}

/// Whether an answer link's principal stays within its call: `run_id`, and `tool_call_id` when
/// one is named (an answer). Any other principal passes. Checked before anything is looked up, so
/// a link learns nothing of other runs and calls.
pub fn within_link(
    principal: &Principal,
    run_id: &str,
    tool_call_id: Option<&str>,
) -> Result<(), RuntimeError> {
    let Some(link) = &principal.link else {
        return Ok(());
    };
    if link.run_id != run_id || tool_call_id.is_some_and(|call| call != link.tool_call_id) {
        return Err(RuntimeError::rejected(
            RejectReason::AnswerLinkOtherCall,
            format!(
                "this answer link opens tool call \"{}\" of run \"{}\" only",
                short_id(&link.tool_call_id),
                short_id(&link.run_id)
            ),
        ));
    }
    Ok(())
}

/// Whether an answer link's principal may still read `run`: only while its call waits for a person.
/// Once the call is settled or decided (by this link or any other way) the link opens nothing: it
/// was for one answer.
pub fn link_may_read(run: &RunRecord, principal: &Principal) -> Result<(), RuntimeError> {
    within_link(principal, &run.run_id, None)?;
    let Some(link) = &principal.link else {
        return Ok(());
    };
    if run.pending.iter().any(|call| {
        call.tool_call_id == link.tool_call_id
            && scope_to_settle(call.suspension.kind) == Scope::RunsAnswer
    }) {
        return Ok(());
    }
    Err(RuntimeError::rejected(
        RejectReason::AnswerLinkUsed,
        format!(
            "tool call \"{}\" no longer waits: this answer link was used, or the call was settled another way",
            short_id(&link.tool_call_id)
        ),
    ))
}

fn what(kind: SuspendKind) -> &'static str {
    match kind {
        SuspendKind::Question => "a question",
        SuspendKind::Form => "a form",
        SuspendKind::Approval => "an approval",
        SuspendKind::ClientTool => "a client tool's output",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::AuthMethod;

    fn key(scopes: &[Scope]) -> Principal {
        Principal {
            tenant: "t".into(),
            subject: "key:k".into(),
            scopes: scopes.to_vec(),
            groups: Vec::new(),
            method: AuthMethod::ApiKey,
            link: None,
        }
    }

    fn waiting(kind: SuspendKind) -> Suspension {
        Suspension {
            kind,
            ..Suspension::default()
        }
    }

    #[test]
    fn each_kind_takes_its_own_scope() {
        let answerer = key(&[Scope::RunsRead, Scope::RunsAnswer]);
        let worker = key(&[Scope::RunsRead, Scope::ToolsExecute]);
        let reader = key(&[Scope::RunsRead]);
        for kind in [SuspendKind::Question, SuspendKind::Approval] {
            assert!(check(&waiting(kind), "r", "c", &answerer).is_ok());
            assert!(check(&waiting(kind), "r", "c", &worker).is_err());
            assert!(check(&waiting(kind), "r", "c", &reader).is_err());
        }
        let output = waiting(SuspendKind::ClientTool);
        assert!(check(&output, "r", "c", &worker).is_ok());
        assert!(matches!(
            check(&output, "r", "c", &answerer),
            Err(RuntimeError::AnswerRejected {
                reason: RejectReason::MissingScope(Scope::ToolsExecute),
                ..
            })
        ));
        assert!(check(&output, "r", "c", &key(&[Scope::Admin])).is_ok());
    }
}
