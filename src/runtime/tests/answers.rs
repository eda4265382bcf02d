//! How an answer settles a pending question: once, by whom, and what is refused (the call then
//! still waits).

use std::time::Duration;

use crate::domain::{AnswerInput, Principal, RunRecord, RunStatus, Scope};
use crate::runtime::testing::{Harness, agent, config, principal};
use crate::runtime::{AnswerAck, RejectReason, RuntimeError};

/// Asks a name, then says hello with the answer.
const ASKS_A_NAME: &str = r#"
[[turn]]
ask = [{ question = "Name?" }]

[[turn]]
say = "Hello {{answer.1}}"
"#;

fn answerer(subject: &str) -> Principal {
    principal(subject, &[Scope::RunsRead, Scope::RunsAnswer])
}

/// A question waiting for `asker`'s answer, in a run of agent `a`.
async fn waiting(harness: &Harness, asker: &Principal) -> (RunRecord, String) {
    let run = harness.run_until_idle("a", asker, None).await;
    assert_eq!(run.status, RunStatus::Suspended);
    assert_eq!(run.pending.len(), 1, "{run:?}");
    let call = run.pending[0].tool_call_id.clone();
    (run, call)
}

fn text(text: &str) -> AnswerInput {
    AnswerInput::Text(text.to_owned())
}

fn reason(outcome: &Result<AnswerAck, RuntimeError>) -> Option<RejectReason> {
    match outcome {
        Err(RuntimeError::AnswerRejected { reason, .. }) => Some(*reason),
        _ => None,
    }
}

/// Whether the call still waits, as the store has it.
async fn still_waits(harness: &Harness, run: &RunRecord, call: &str, by: &Principal) -> bool {
    let run = harness.runtime.get_run(&run.run_id, by).await.expect("run");
    run.pending.iter().any(|c| c.tool_call_id == call)
}

#[tokio::test]
async fn an_answer_applies_once_and_its_retries_are_acknowledged_as_duplicates() {
    let harness = Harness::new(vec![agent("a", ASKS_A_NAME)], config());
    let ada = answerer("ada");
    let (run, call) = waiting(&harness, &ada).await;

    let first = harness.answer(&run, &call, text("Ada"), "k1", &ada).await;
    let first = first.expect("the answer is taken");
    assert!(!first.duplicate);
    assert!(first.result_sequence > 0);

    // The same key again: nothing is applied twice.
    let again = harness.answer(&run, &call, text("Ada"), "k1", &ada).await;
    assert_eq!(
        again.expect("a retry"),
        AnswerAck {
            duplicate: true,
            ..first.clone()
        }
    );
    // The same content under another key is the same answer, acknowledged under its first key.
    let other_key = harness.answer(&run, &call, text("Ada"), "k2", &ada).await;
    let other_key = other_key.expect("a retry under another key");
    assert!(other_key.duplicate);
    assert_eq!(other_key.answer_id, "k1");
    assert_eq!(other_key.result_sequence, first.result_sequence);

    // Other content under the first key is a reused key, not a retry.
    let reused = harness.answer(&run, &call, text("Grace"), "k1", &ada).await;
    assert_eq!(
        reason(&reused),
        Some(RejectReason::AnswerIdReused),
        "{reused:?}"
    );
    // Other content under a new key comes too late.
    let late = harness.answer(&run, &call, text("Grace"), "k3", &ada).await;
    assert_eq!(
        reason(&late),
        Some(RejectReason::AlreadyAnswered),
        "{late:?}"
    );

    let run = harness.idle(&run.run_id, &ada).await;
    assert_eq!(run.status, RunStatus::Completed);
    assert_eq!(run.output_text, "Hello Ada");
}

#[tokio::test]
async fn an_answer_of_the_wrong_kind_is_refused_and_the_question_still_waits() {
    let harness = Harness::new(vec![agent("a", ASKS_A_NAME)], config());
    let ada = answerer("ada");
    let (run, call) = waiting(&harness, &ada).await;

    let output = AnswerInput::ToolOutput {
        content: "42".into(),
        is_error: false,
    };
    let refused = harness.answer(&run, &call, output, "k1", &ada).await;
    match &refused {
        Err(RuntimeError::AnswerRejected {
            reason: RejectReason::InvalidAnswer,
            violations,
            ..
        }) => assert_eq!(violations[0].field, "answer.tool_output"),
        other => panic!("{other:?}"),
    }
    assert!(still_waits(&harness, &run, &call, &ada).await);

    // The refused answer's key is not spent: it takes the right answer.
    let taken = harness.answer(&run, &call, text("Ada"), "k1", &ada).await;
    assert!(!taken.expect("the answer is taken").duplicate);
    assert!(!still_waits(&harness, &run, &call, &ada).await);
}

#[tokio::test]
async fn only_an_assignee_with_the_answer_scope_settles_a_question() {
    let mut assigned = agent("a", ASKS_A_NAME);
    assigned.assignees = vec!["ada".into()];
    let harness = Harness::new(vec![assigned], config());
    let ada = answerer("ada");
    let (run, call) = waiting(&harness, &ada).await;

    let bob = harness
        .answer(&run, &call, text("Bob"), "", &answerer("bob"))
        .await;
    assert_eq!(reason(&bob), Some(RejectReason::NotAssignee), "{bob:?}");
    // A worker's key settles client tool calls, not questions, even for an assignee.
    let worker = principal("ada", &[Scope::RunsRead, Scope::ToolsExecute]);
    let worker = harness.answer(&run, &call, text("Ada"), "", &worker).await;
    assert_eq!(
        reason(&worker),
        Some(RejectReason::MissingScope(Scope::RunsAnswer)),
        "{worker:?}"
    );
    // Another tenant does not see the run at all.
    let stranger = Principal {
        tenant: "other".into(),
        ..answerer("ada")
    };
    let stranger = harness
        .answer(&run, &call, text("Ada"), "", &stranger)
        .await;
    assert!(
        matches!(stranger, Err(RuntimeError::RunNotFound(_))),
        "{stranger:?}"
    );
    assert!(still_waits(&harness, &run, &call, &ada).await);

    let taken = harness.answer(&run, &call, text("Ada"), "", &ada).await;
    assert!(!taken.expect("the assignee's answer").duplicate);
}

#[tokio::test]
async fn a_question_past_its_time_takes_no_answer_before_the_expiry_loop_settles_it() {
    let harness = Harness::new(vec![agent("a", ASKS_A_NAME)], config());
    let ada = answerer("ada");
    // The runtime is not started: no expiry loop settles the call.
    let run = harness
        .run_until_idle("a", &ada, Some(Duration::from_millis(1)))
        .await;
    let call = run.pending[0].tool_call_id.clone();
    tokio::time::sleep(Duration::from_millis(20)).await;

    let late = harness.answer(&run, &call, text("Ada"), "", &ada).await;
    assert_eq!(
        reason(&late),
        Some(RejectReason::QuestionExpired),
        "{late:?}"
    );
    assert!(still_waits(&harness, &run, &call, &ada).await);
}

#[tokio::test]
async fn an_answer_to_an_unknown_call_or_run_is_refused() {
    let harness = Harness::new(vec![agent("a", ASKS_A_NAME)], config());
    let ada = answerer("ada");
    let (run, call) = waiting(&harness, &ada).await;

    let unknown_call = harness
        .answer(&run, "call_nope", text("Ada"), "", &ada)
        .await;
    assert_eq!(
        reason(&unknown_call),
        Some(RejectReason::ToolCallNotPending),
        "{unknown_call:?}"
    );
    let gone = RunRecord {
        run_id: "no-such-run".into(),
        ..run.clone()
    };
    let unknown_run = harness.answer(&gone, &call, text("Ada"), "", &ada).await;
    assert!(
        matches!(unknown_run, Err(RuntimeError::RunNotFound(_))),
        "{unknown_run:?}"
    );
    assert!(still_waits(&harness, &run, &call, &ada).await);
}
