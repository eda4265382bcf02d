//! Forms end to end over the socket: `ask_user_questions` (Claude Code's `AskUserQuestion` shape)
//! and `ask_user_form` (an MCP elicitation) suspend as `SUSPEND_KIND_FORM`; each kind of wrong
//! value is refused in-band with its path and leaves the form answerable; the model gets each
//! tool's result shape; a reply in prose settles any question; `ToolService.RenderQuestion`
//! renders each tool outside a run.

use crate::common;

use std::collections::HashMap;

use askuser::proto::v1 as pb;
use askuser::proto::v1::run_agent_response::Event;
use common::{RunStream, Server, field_violations, fresh_database, get_run, scripted_agent_with};
use pb::field_value::Value;
use serde_json::json;
use tonic::Code;

fn text(value: &str) -> pb::FieldValue {
    pb::FieldValue {
        value: Some(Value::Text(value.into())),
    }
}

pub(crate) fn number(value: f64) -> pb::FieldValue {
    pb::FieldValue {
        value: Some(Value::Number(value)),
    }
}

pub(crate) fn boolean(value: bool) -> pb::FieldValue {
    pb::FieldValue {
        value: Some(Value::Boolean(value)),
    }
}

fn choice(values: &[&str], other: &str) -> pb::FieldValue {
    pb::FieldValue {
        value: Some(Value::Choice(pb::ChoiceValue {
            values: values.iter().map(|v| v.to_string()).collect(),
            other: other.into(),
        })),
    }
}

pub(crate) fn answer(run_id: &str, call: &str, answer: pb::answer::Answer) -> pb::Answer {
    pb::Answer {
        run_id: run_id.into(),
        tool_call_id: call.into(),
        answer: Some(answer),
        answer_id: String::new(),
    }
}

pub(crate) fn form_answer(
    run_id: &str,
    call: &str,
    values: &[(&str, pb::FieldValue)],
) -> pb::Answer {
    let values = values
        .iter()
        .map(|(name, value)| (name.to_string(), value.clone()))
        .collect::<HashMap<_, _>>();
    answer(
        run_id,
        call,
        pb::answer::Answer::Form(pb::FormAnswer { values }),
    )
}

/// Sends `answer`, which must be refused in-band as INVALID_ANSWER; returns the violated fields.
async fn refused(run: &mut RunStream, answer: pb::Answer) -> Vec<String> {
    run.send(answer).await;
    let rejected = run.next_rejected().await;
    assert_eq!(rejected.reason, "INVALID_ANSWER", "{rejected:?}");
    rejected
        .field_violations
        .into_iter()
        .map(|violation| violation.field)
        .collect()
}

/// Reads frames until the result of `call`; returns it.
async fn result_of(run: &mut RunStream, call: &str) -> pb::ToolResult {
    loop {
        match run.next().await.event {
            Some(Event::ToolResult(result)) if result.tool_call_id == call => return result,
            Some(Event::RunFailed(failed)) => panic!("run failed: {}", failed.message),
            _ => {}
        }
    }
}

fn fields(form: &pb::Form) -> Vec<(&str, &pb::form_field::Kind)> {
    form.fields
        .iter()
        .map(|field| (field.name.as_str(), field.kind.as_ref().expect("a kind")))
        .collect()
}

/// The demo agent `release`, answered through both of its forms with every kind of refusal on the
/// way, on SQLite or on PostgreSQL.
async fn release_forms_round_trip(database_url: Option<&str>) {
    let args: Vec<&str> = database_url
        .iter()
        .flat_map(|url| ["--database-url", url])
        .collect();
    let server = Server::start_with(None, &args);
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "release").await;
    let run_id = run.run_id.clone();

    // The questions: Claude Code's shape as a form of choice fields that allow "Other".
    let questions = run.next_suspended().await;
    assert_eq!(questions.kind, pb::SuspendKind::Form as i32);
    assert_eq!(questions.tool_name, "ask_user_questions");
    assert!(questions.suspend_payload.is_none());
    let form = questions.form.clone().expect("a form");
    let kinds = fields(&form);
    assert_eq!(kinds.len(), 2);
    let pb::form_field::Kind::Choice(rollout) = kinds[0].1 else {
        panic!("a choice field: {kinds:?}")
    };
    assert_eq!(form.fields[0].header, "Rollout");
    assert!(form.fields[0].required);
    assert!(rollout.allow_other && !rollout.multiple);
    assert_eq!(rollout.choices[0].value, "Canary (Recommended)");
    assert!(rollout.choices[0].recommended && !rollout.choices[1].recommended);
    assert!(rollout.choices[0].preview.contains("stage 1"));
    let pb::form_field::Kind::Choice(checks) = kinds[1].1 else {
        panic!("a choice field: {kinds:?}")
    };
    assert!(checks.multiple);

    // The pending call carries the form too: in GetRun, in the pending-calls feed (filtered to
    // forms), and ListRuns finds the run by its pending kind.
    let pending = get_run(&mut client, &run.run_id).await.pending_tool_calls;
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].form.as_ref(), Some(&form));
    let feed = common::pending_snapshot(
        &mut client,
        None,
        pb::WatchPendingCallsRequest {
            kinds: vec![pb::SuspendKind::Form as i32],
            ..Default::default()
        },
    )
    .await;
    assert_eq!(feed.len(), 1);
    assert_eq!(
        feed[0].call.as_ref().and_then(|c| c.form.as_ref()),
        Some(&form)
    );
    let listed = client
        .list_runs(pb::ListRunsRequest {
            pending_kind: pb::SuspendKind::Form as i32,
            ..Default::default()
        })
        .await
        .expect("list runs")
        .into_inner()
        .runs;
    let ids: Vec<&str> = listed.iter().map(|r| r.run_id.as_str()).collect();
    assert_eq!(ids, [run_id.as_str()]);

    let call = questions.tool_call_id.clone();
    for (values, field) in [
        (
            vec![("q1", choice(&["Blue-green"], ""))],
            "answer.form.values[\"q2\"]",
        ),
        (
            vec![
                ("q1", choice(&["Rolling"], "")),
                ("q2", choice(&["unit"], "")),
            ],
            "answer.form.values[\"q1\"]",
        ),
        (
            vec![
                ("q1", choice(&["Blue-green", "Canary (Recommended)"], "")),
                ("q2", choice(&["unit"], "")),
            ],
            "answer.form.values[\"q1\"]",
        ),
        (
            vec![
                ("q1", choice(&["Blue-green"], "")),
                ("q2", choice(&["unit", "unit"], "")),
            ],
            "answer.form.values[\"q2\"]",
        ),
        (
            vec![
                ("q1", choice(&["Blue-green"], "")),
                ("q2", choice(&["unit"], "")),
                ("q9", text("extra")),
            ],
            "answer.form.values[\"q9\"]",
        ),
        (
            vec![("q1", text("Blue-green")), ("q2", choice(&["unit"], ""))],
            "answer.form.values[\"q1\"]",
        ),
    ] {
        assert_eq!(
            refused(&mut run, form_answer(&run_id, &call, &values)).await,
            [field],
            "{values:?}"
        );
    }
    // Text is not how a form is answered.
    assert_eq!(
        refused(&mut run, common::text_answer(&run_id, &call, "Canary")).await,
        ["answer.text"]
    );
    // Still pending and answerable: "Other" text where the field allows it.
    run.send(form_answer(
        &run_id,
        &call,
        &[
            ("q1", choice(&[], "Rolling, one zone at a time")),
            ("q2", choice(&["unit", "load"], "")),
        ],
    ))
    .await;
    let result = result_of(&mut run, &call).await;
    assert_eq!(result.kind, pb::ToolResultKind::Answered as i32);
    let content: serde_json::Value = serde_json::from_str(&result.content).expect("JSON result");
    assert_eq!(
        content,
        json!({ "answers": {
            "How should the release roll out?": "Rolling, one zone at a time",
            "Which checks must pass first?": ["unit", "load"],
        }})
    );

    // The form: MCP's elicitation shape as typed fields.
    let details = run.next_suspended().await;
    assert_eq!(details.tool_name, "ask_user_form");
    let form = details.form.clone().expect("a form");
    assert_eq!(form.message, "The release's details");
    let names: Vec<&str> = form.fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["version", "replicas", "announce"]);
    let call = details.tool_call_id.clone();
    let valid = |version: pb::FieldValue, replicas: pb::FieldValue| {
        vec![
            ("version", version),
            ("replicas", replicas),
            ("announce", boolean(true)),
        ]
    };
    for (values, field) in [
        (valid(text("v1.4"), number(3.0)), "version"),
        (valid(text("1.4.2"), number(2.5)), "replicas"),
        (valid(text("1.4.2"), number(50.0)), "replicas"),
        (valid(text("1.4.2"), number(0.0)), "replicas"),
        (valid(text("1.4.2"), text("3")), "replicas"),
        (vec![("replicas", number(3.0))], "version"),
        (
            vec![
                ("version", text("1.4.2")),
                ("replicas", number(3.0)),
                ("announce", text("yes")),
            ],
            "announce",
        ),
    ] {
        assert_eq!(
            refused(&mut run, form_answer(&run_id, &call, &values)).await,
            [format!("answer.form.values[\"{field}\"]")],
            "{values:?}"
        );
    }
    run.send(form_answer(
        &run_id,
        &call,
        &valid(text("1.4.2"), number(3.0)),
    ))
    .await;
    let result = result_of(&mut run, &call).await;
    let content: serde_json::Value = serde_json::from_str(&result.content).expect("JSON result");
    assert_eq!(
        content,
        json!({ "action": "accept", "content": { "version": "1.4.2", "replicas": 3, "announce": true } })
    );
    assert_eq!(
        run.completed_text().await,
        "Release 1.4.2 on 3 replicas, rolled out by Rolling, one zone at a time after unit, load (announce: true)."
    );
    // The settled calls keep what was answered.
    let settled = get_run(&mut client, &run.run_id).await.settled_tool_calls;
    assert_eq!(settled.len(), 2);
}

#[tokio::test]
async fn release_forms_round_trip_on_sqlite() {
    release_forms_round_trip(None).await;
}

#[tokio::test]
async fn release_forms_round_trip_on_postgresql() {
    let Some(url) = fresh_database().await else {
        return;
    };
    release_forms_round_trip(Some(&url)).await;
}

/// An agent whose one form call asks `properties` (TOML inline table text), then says its result.
fn form_agent(properties: &str, required: &str, settings: &str) -> String {
    scripted_agent_with(
        "form",
        &format!("tools = [\"ask_user_form\", \"ask_user\"]\n{settings}"),
        &[
            &format!(
                "call = [{{ tool = \"ask_user_form\", arguments = {{ message = \"Details\", requestedSchema = {{ type = \"object\", properties = {{ {properties} }}, required = [{required}] }} }} }}]"
            ),
            "say = \"got {{result.1}}\"",
        ],
    )
}

#[tokio::test]
async fn text_formats_lengths_and_selection_counts_are_checked() {
    let agents = form_agent(
        r#"email = { type = "string", format = "email" }, site = { type = "string", format = "uri" },
           day = { type = "string", format = "date" }, at = { type = "string", format = "date-time" },
           code = { type = "string", minLength = 2, maxLength = 4 },
           tags = { type = "array", items = { type = "string", enum = ["a", "b", "c"] }, minItems = 1, maxItems = 2 },
           tier = { type = "string", oneOf = [{ const = "gold", title = "Gold" }, { const = "tin", title = "Tin" }] }"#,
        "",
        "",
    );
    let server = Server::start_with(Some(&agents), &[]);
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "form").await;
    let run_id = run.run_id.clone();
    let call = run.next_suspended().await.tool_call_id;
    for (name, value) in [
        ("email", text("ops at example")),
        ("site", text("not a uri")),
        ("day", text("2026-02-30")),
        ("at", text("2026-12-02 10:00")),
        ("code", text("x")),
        ("code", text("toolong")),
        ("tags", choice(&[], "")),
        ("tags", choice(&["a", "b", "c"], "")),
        ("tags", choice(&["a"], "my own")),
        ("tier", choice(&["silver"], "")),
    ] {
        assert_eq!(
            refused(
                &mut run,
                form_answer(&run_id, &call, &[(name, value.clone())])
            )
            .await,
            [format!("answer.form.values[\"{name}\"]")],
            "{name}: {value:?}"
        );
    }
    run.send(form_answer(
        &run_id,
        &call,
        &[
            ("email", text("ops@example.com")),
            ("site", text("https://example.com/a")),
            ("day", text("2026-12-02")),
            ("at", text("2026-12-02T10:00:00Z")),
            ("code", text("ab")),
            ("tags", choice(&["c", "a"], "")),
            ("tier", choice(&["tin"], "")),
        ],
    ))
    .await;
    let result = result_of(&mut run, &call).await;
    let content: serde_json::Value = serde_json::from_str(&result.content).expect("JSON");
    assert_eq!(content["content"]["tags"], json!(["c", "a"]));
    assert_eq!(content["content"]["tier"], json!("tin"));
    assert_eq!(content["content"]["at"], json!("2026-12-02T10:00:00Z"));
}

#[tokio::test]
async fn replies_declines_and_expiry_reach_the_model_in_each_shape() {
    let agents = form_agent(
        r#"name = { type = "string" }"#,
        "\"name\"",
        "question_ttl = \"1s\"",
    );
    let server = Server::start_with(Some(&agents), &[]);
    let mut client = server.agents().await;

    // Declined: MCP's decline.
    let mut run = RunStream::start(&mut client, "form").await;
    let call = run.next_suspended().await.tool_call_id;
    let decline = pb::answer::Answer::Decline(pb::Decline::default());
    run.send(answer(&run.run_id, &call, decline)).await;
    let result = result_of(&mut run, &call).await;
    assert_eq!(result.kind, pb::ToolResultKind::Declined as i32);
    assert_eq!(result.content, r#"{"action":"decline"}"#);

    // Replied in prose: told as such, whatever the question.
    let mut run = RunStream::start(&mut client, "form").await;
    let call = run.next_suspended().await.tool_call_id;
    let run_id = run.run_id.clone();
    let reply = |text: &str| answer(&run_id, &call, pb::answer::Answer::Reply(text.into()));
    assert_eq!(refused(&mut run, reply("  ")).await, ["answer.reply"]);
    run.send(reply("Ask Dana, she owns it")).await;
    let result = result_of(&mut run, &call).await;
    assert_eq!(result.kind, pb::ToolResultKind::Replied as i32);
    assert_eq!(
        result.content,
        "User replied instead of answering: Ask Dana, she owns it"
    );

    // Expired: MCP's cancel.
    let mut run = RunStream::start(&mut client, "form").await;
    let call = run.next_suspended().await.tool_call_id;
    let result = result_of(&mut run, &call).await;
    assert_eq!(result.kind, pb::ToolResultKind::Expired as i32);
    assert_eq!(result.content, r#"{"action":"cancel"}"#);
    assert_eq!(run.completed_text().await, r#"got {"action":"cancel"}"#);

    // A reply also settles a plain ask_user question.
    let server = Server::start();
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "greeter").await;
    let call = run.next_suspended().await.tool_call_id;
    let why = pb::answer::Answer::Reply("Why do you ask?".into());
    run.send(answer(&run.run_id, &call, why)).await;
    let result = result_of(&mut run, &call).await;
    assert_eq!(result.kind, pb::ToolResultKind::Replied as i32);
    assert_eq!(
        result.content,
        "User replied instead of answering: Why do you ask?"
    );
}

#[tokio::test]
async fn bad_form_calls_are_invalid_and_ask_nothing() {
    let agents = form_agent(r#"nested = { type = "object", properties = {} }"#, "", "");
    let server = Server::start_with(Some(&agents), &[]);
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "form").await;
    let frames = run.frames_until_end().await;
    assert!(
        !frames
            .iter()
            .any(|f| matches!(f.event, Some(Event::ToolCallSuspended(_)))),
        "{frames:?}"
    );
    let result = frames
        .iter()
        .find_map(|f| match &f.event {
            Some(Event::ToolResult(result)) => Some(result.clone()),
            _ => None,
        })
        .expect("a result");
    assert_eq!(result.kind, pb::ToolResultKind::InvalidCall as i32);
    assert!(
        result.content.contains("property \"nested\"") && result.content.contains("nested objects"),
        "{}",
        result.content
    );
}

#[tokio::test]
async fn render_question_renders_each_tool_outside_a_run() {
    let server = Server::start();
    let mut tools = server.tools().await;
    let render = |tool: &str, arguments: serde_json::Value| pb::RenderQuestionRequest {
        tool_name: tool.into(),
        arguments_json: arguments.to_string(),
    };
    let questions = json!({ "questions": [{
        "question": "Which database?", "header": "DB", "multiSelect": false,
        "options": [{ "label": "PostgreSQL", "description": "durable" }, { "label": "SQLite", "description": "a file" }]
    }]});
    for tool in ["ask_user_questions", "AskUserQuestion"] {
        let content = tools
            .render_question(render(tool, questions.clone()))
            .await
            .expect("rendered")
            .into_inner()
            .content;
        assert_eq!(
            content,
            "[Questions for user]\n- q1 (choice, required): [DB] Which database? (options PostgreSQL, SQLite; or the user's own answer)"
        );
    }
    let form = json!({ "message": "Details", "requestedSchema": { "type": "object",
        "properties": { "replicas": { "type": "integer", "minimum": 1, "maximum": 5 } }, "required": ["replicas"] } });
    let content = tools
        .render_question(render("ask_user_form", form))
        .await
        .expect("rendered")
        .into_inner()
        .content;
    assert_eq!(
        content,
        "[Form for user]: Details\n- replicas (integer, required): replicas (minimum 1; maximum 5)"
    );
    let content = tools
        .render_question(render("ask_user", json!({ "question": "Name?" })))
        .await
        .expect("rendered")
        .into_inner()
        .content;
    assert_eq!(content, "[Question for user]: Name?");

    let bad = json!({ "message": "x", "requestedSchema": { "type": "object",
        "properties": { "when": { "type": "string", "format": "ipv4" } } } });
    let status = tools
        .render_question(render("ask_user_form", bad))
        .await
        .expect_err("invalid");
    assert_eq!(status.code(), Code::InvalidArgument);
    let violations = field_violations(&status);
    assert_eq!(
        violations[0].0,
        "arguments_json.requestedSchema.properties.when"
    );
    let status = tools
        .render_question(render("ask_someone", json!({})))
        .await
        .expect_err("unknown tool");
    assert_eq!(status.code(), Code::InvalidArgument);
    assert_eq!(field_violations(&status)[0].0, "tool_name");
}
