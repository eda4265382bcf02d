//! An MCP server's URL-mode elicitation reaches a person: the fixture's `sign_in` tool asks the
//! person to open a sign-in page (a multi round-trip request whose input is `{"mode": "url"}`),
//! the call waits as a form with the `url` and no fields, and accepting (a form answer without
//! values) or declining goes back to the tool as `accept` or `decline`. askuser never opens the
//! page itself.

use crate::common;
use crate::forms::{answer, form_answer};
use crate::mcp_elicitation::answered;
use crate::mcp_tools::{CallLog, agent, stdio_server, wait_up};

use askuser::proto::v1 as pb;

use common::{RunStream, Server, field_violations, get_run};

const SIGN_IN: &str = r#"{ tool = "team__sign_in", arguments = { service = "api" } }"#;
const URL: &str = "https://auth.example.com/authorize?service=api";
const MESSAGE: &str = "Sign in to api to let the deploy read its settings";

fn agents(log: &CallLog) -> String {
    stdio_server("team", log, "approval = \"never\"") + &agent("ops", &["team"], &[SIGN_IN])
}

/// Starts `ops` and returns its run id and the form it waits on.
async fn started(server: &Server) -> (String, pb::ToolCallSuspended) {
    wait_up(server, "ops").await;
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "ops").await;
    let suspended = run.next_suspended().await;
    (run.run_id.clone(), suspended)
}

fn assert_url_form(form: Option<&pb::Form>) {
    let form = form.expect("a form");
    assert_eq!(form.url, URL);
    assert_eq!(form.message, MESSAGE);
    assert!(form.fields.is_empty(), "a URL form has no fields: {form:?}");
}

#[tokio::test]
async fn a_url_elicitation_waits_as_a_form_with_its_url_and_accepting_or_declining_goes_back() {
    let log = CallLog::new();
    let server = Server::start_with(Some(&agents(&log)), &[]);

    let (run_id, suspended) = started(&server).await;
    assert_eq!(suspended.kind(), pb::SuspendKind::Form);
    assert_eq!(suspended.tool_name, "team__sign_in");
    assert_url_form(suspended.form.as_ref());
    // GetRun's pending call carries the same form.
    let mut client = server.agents().await;
    let stored = get_run(&mut client, &run_id).await;
    assert_eq!(stored.status(), pb::RunStatus::Suspended);
    assert_eq!(stored.pending_tool_calls.len(), 1);
    assert_url_form(stored.pending_tool_calls[0].form.as_ref());
    assert!(
        log.calls().is_empty(),
        "the tool goes on only once answered"
    );

    // A value for a form without fields is refused; the form stays answerable.
    let value = pb::FieldValue {
        value: Some(pb::field_value::Value::Text("signed in".into())),
    };
    let mut client = server.agents().await;
    let refused = client
        .resume_run(pb::ResumeRunRequest {
            answer: Some(form_answer(
                &run_id,
                &suspended.tool_call_id,
                &[("done", value)],
            )),
        })
        .await
        .expect_err("a URL form takes no values");
    assert_eq!(refused.code(), tonic::Code::InvalidArgument, "{refused:?}");
    let violations = field_violations(&refused);
    assert!(
        violations
            .iter()
            .any(|(field, _)| field.contains("answer.form.values")),
        "{violations:?}"
    );
    let stored = get_run(&mut client, &run_id).await;
    assert_eq!(stored.status(), pb::RunStatus::Suspended);

    // Accepting: a form answer without values.
    let (result, output) =
        answered(&server, form_answer(&run_id, &suspended.tool_call_id, &[])).await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(result.content, "api: sign-in accept");
    assert_eq!(output, "api: sign-in accept");

    // Another run, declined.
    let (run_id, suspended) = started(&server).await;
    let decline = answer(
        &run_id,
        &suspended.tool_call_id,
        pb::answer::Answer::Decline(pb::Decline {
            reason: "not now".into(),
        }),
    );
    let (result, output) = answered(&server, decline).await;
    assert_eq!(result.content, "api: sign-in decline");
    assert_eq!(output, "api: sign-in decline");

    let calls = log.calls();
    let actions: Vec<&str> = calls
        .iter()
        .map(|c| c["arguments"]["action"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(actions, ["accept", "decline"], "{calls:?}");
    assert!(calls.iter().all(|c| c["tool"] == "sign_in"));
}
