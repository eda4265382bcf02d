//! Who may settle a call, the one rule every way of settling passes (answer frames on a `RunAgent`
//! stream, `ResumeRun`, the inbox and the terminal client, which use those): first the scope the
//! call's kind needs, then the call's assignees. Authentication lets a principal reach an answer
//! path; only here, where the call's kind is known, is it decided whether it may settle *this* call.

use super::assignees;
use super::error::{RejectReason, RuntimeError, short_id};
use crate::domain::{Principal, Scope, SuspendKind, Suspension};

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

/// Whether `principal` may settle the call `tool_call_id` that waits as `suspension` says; the
/// refusal leaves the call pending. A principal without the scope learns nothing of assignees or
/// of whether its answer would fit.
pub fn check(
    suspension: &Suspension,
    tool_call_id: &str,
    principal: &Principal,
) -> Result<(), RuntimeError> {
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
            assert!(check(&waiting(kind), "c", &answerer).is_ok());
            assert!(check(&waiting(kind), "c", &worker).is_err());
            assert!(check(&waiting(kind), "c", &reader).is_err());
        }
        let output = waiting(SuspendKind::ClientTool);
        assert!(check(&output, "c", &worker).is_ok());
        assert!(matches!(
            check(&output, "c", &answerer),
            Err(RuntimeError::AnswerRejected {
                reason: RejectReason::MissingScope(Scope::ToolsExecute),
                ..
            })
        ));
        assert!(check(&output, "c", &key(&[Scope::Admin])).is_ok());
    }
}
