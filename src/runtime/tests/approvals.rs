//! How a decision settles a call that waits for approval: an edit is checked against the tool's
//! schema, an approved client tool call then waits for its output, and a decision is taken once.

use crate::domain::{
    AnswerInput, ApprovalDecision, RunRecord, RunStatus, Scope, SuspendKind, ToolDefinition,
};
use crate::runtime::testing::{Harness, agent, config, principal};
use crate::runtime::{AnswerAck, RejectReason, RuntimeError};

/// Calls the client tool `deploy`, then says what it returned.
const DEPLOYS: &str = r#"
[[turn]]
call = [{ tool = "deploy", arguments = { env = "staging" } }]

[[turn]]
say = "Deployed: {{result.1}}"
"#;

fn deploy() -> ToolDefinition {
    ToolDefinition {
        name: "deploy".into(),
        description: "Deploys".into(),
        parameters_json_schema: r#"{"type":"object","properties":{"env":{"type":"string"}},"required":["env"],"additionalProperties":false}"#.into(),
        approval_always: true,
    }
}

fn approval(decision: ApprovalDecision) -> AnswerInput {
    AnswerInput::Approval(decision)
}

fn reason(outcome: &Result<AnswerAck, RuntimeError>) -> Option<RejectReason> {
    match outcome {
        Err(RuntimeError::AnswerRejected { reason, .. }) => Some(*reason),
        _ => None,
    }
}

/// What the call waits for now, if it waits.
async fn waits_for(harness: &Harness, run: &RunRecord, call: &str) -> Option<SuspendKind> {
    let reader = principal("reader", &[Scope::RunsRead]);
    let run = harness.idle(&run.run_id, &reader).await;
    run.pending
        .iter()
        .find(|c| c.tool_call_id == call)
        .map(|c| c.suspension.kind)
}

#[tokio::test]
async fn an_approval_is_decided_once_and_the_approved_call_waits_for_its_output() {
    let harness = Harness::new(vec![agent("a", DEPLOYS)], config());
    let ada = principal("ada", &[Scope::RunsRead, Scope::RunsAnswer]);
    let run = harness
        .run_with_tools_until_idle("a", &ada, None, vec![deploy()])
        .await;
    assert_eq!(run.status, RunStatus::Suspended);
    let call = run.pending[0].tool_call_id.clone();
    assert_eq!(run.pending[0].suspension.kind, SuspendKind::Approval);

    // An edit must fit the tool's schema; the refusal leaves the approval waiting.
    let bad_edit = ApprovalDecision::Edit {
        arguments_json: r#"{"env": 7}"#.into(),
    };
    let refused = harness
        .answer(&run, &call, approval(bad_edit), "e1", &ada)
        .await;
    match &refused {
        Err(RuntimeError::AnswerRejected {
            reason: RejectReason::InvalidAnswer,
            violations,
            ..
        }) => assert_eq!(violations[0].field, "answer.approval.edit.arguments_json"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        waits_for(&harness, &run, &call).await,
        Some(SuspendKind::Approval)
    );
    // A tool's output is not a decision.
    let output = AnswerInput::ToolOutput {
        content: "ok".into(),
        is_error: false,
    };
    let early = harness
        .answer(&run, &call, output.clone(), "o0", &ada)
        .await;
    assert_eq!(
        reason(&early),
        Some(RejectReason::InvalidAnswer),
        "{early:?}"
    );

    let approved = harness
        .answer(&run, &call, approval(ApprovalDecision::Approve), "a1", &ada)
        .await
        .expect("the approval is taken");
    assert!(!approved.duplicate);
    // A client tool call, once approved, waits for a worker's output.
    assert_eq!(
        waits_for(&harness, &run, &call).await,
        Some(SuspendKind::ClientTool)
    );
    // The same decision again is a retry; another decision comes too late. (Both asked by who
    // may settle the call as it waits now, a client tool call.)
    let lead = principal(
        "lead",
        &[Scope::RunsRead, Scope::RunsAnswer, Scope::ToolsExecute],
    );
    let again = harness
        .answer(
            &run,
            &call,
            approval(ApprovalDecision::Approve),
            "a2",
            &lead,
        )
        .await;
    assert_eq!(
        again.expect("a retry"),
        AnswerAck {
            answer_id: "a1".into(),
            duplicate: true,
            ..approved.clone()
        }
    );
    let reject = ApprovalDecision::Reject {
        reason: "changed my mind".into(),
    };
    let late = harness
        .answer(&run, &call, approval(reject), "r1", &lead)
        .await;
    assert_eq!(
        reason(&late),
        Some(RejectReason::AlreadyAnswered),
        "{late:?}"
    );

    // The output is a worker's to give.
    let worker = principal("worker", &[Scope::RunsRead, Scope::ToolsExecute]);
    let person = harness
        .answer(&run, &call, output.clone(), "o1", &ada)
        .await;
    assert_eq!(
        reason(&person),
        Some(RejectReason::MissingScope(Scope::ToolsExecute)),
        "{person:?}"
    );
    let given = harness.answer(&run, &call, output, "o1", &worker).await;
    assert!(!given.expect("the output is taken").duplicate);
    let run = harness.idle(&run.run_id, &ada).await;
    assert_eq!(run.status, RunStatus::Completed);
    assert_eq!(run.output_text, "Deployed: ok");
}

#[tokio::test]
async fn a_rejected_call_never_runs_and_its_run_goes_on() {
    let harness = Harness::new(vec![agent("a", DEPLOYS)], config());
    let ada = principal("ada", &[Scope::RunsRead, Scope::RunsAnswer]);
    let run = harness
        .run_with_tools_until_idle("a", &ada, None, vec![deploy()])
        .await;
    let call = run.pending[0].tool_call_id.clone();
    let reject = ApprovalDecision::Reject {
        reason: "not today".into(),
    };
    let rejected = harness
        .answer(&run, &call, approval(reject), "r1", &ada)
        .await;
    assert!(!rejected.expect("the rejection is taken").duplicate);
    let run = harness.idle(&run.run_id, &ada).await;
    assert_eq!(run.status, RunStatus::Completed);
    assert_eq!(
        run.output_text,
        "Deployed: User rejected the call: not today"
    );
    // Approving a rejected call comes too late.
    let late = harness
        .answer(&run, &call, approval(ApprovalDecision::Approve), "a1", &ada)
        .await;
    assert_eq!(
        reason(&late),
        Some(RejectReason::AlreadyAnswered),
        "{late:?}"
    );
}
