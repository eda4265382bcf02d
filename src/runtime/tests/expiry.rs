//! Expiry: a question whose time ran out is settled by the server, and its run goes on.

use std::time::Duration;

use crate::domain::{Principal, RunStatus, Scope, SettledBy, ToolResultKind};
use crate::runtime::testing::{Harness, agent, config, principal};

const ASKS_THEN_SAYS: &str = r#"
[[turn]]
ask = [{ question = "Name?" }]

[[turn]]
say = "Nobody answered"
"#;

#[tokio::test]
async fn an_expired_question_is_settled_by_the_server_and_its_run_goes_on() {
    let harness = Harness::new(vec![agent("a", ASKS_THEN_SAYS)], config());
    let ada = principal("ada", &[Scope::RunsRead, Scope::RunsAnswer]);
    harness.runtime.start().await.expect("the runtime starts");
    let run = harness
        .run_until_idle("a", &ada, Some(Duration::from_millis(200)))
        .await;
    assert_eq!(
        run.status,
        RunStatus::Suspended,
        "it waits until the question expires"
    );
    let call = run.pending[0].tool_call_id.clone();

    // The expiry loop, woken by the suspension, settles it at its time.
    let run = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let run = harness.idle(&run.run_id, &ada).await;
            if run.status.is_terminal() {
                return run;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the run ends");
    assert_eq!(run.status, RunStatus::Completed);
    assert_eq!(run.output_text, "Nobody answered");
    let settled = run
        .settled
        .iter()
        .find(|c| c.tool_call_id == call)
        .expect("the call is settled");
    assert_eq!(settled.kind, ToolResultKind::Expired);
    assert_eq!(
        settled.settled_by,
        Some(SettledBy::from(&Principal::server()))
    );
    harness.runtime.begin_shutdown();
}
