//! The input rules of the `ask_user` tool, checked both through `ToolService.AskUser` and through
//! runs whose scripted model calls the tool.

use crate::common;

use askuser::proto::v1 as pb;
use askuser::proto::v1::run_agent_response::Event;
use askuser::proto::v1::tool_service_client::ToolServiceClient;
use common::{RunStream, Server, field_violations, get_run, scripted_agent};
use pb::SelectionMode::{MultiSelect, SingleSelect};
use tonic::Code;
use tonic::transport::Channel;

fn option(label: &str, description: &str) -> pb::AskUserOption {
    pb::AskUserOption {
        label: label.into(),
        description: description.into(),
    }
}

fn input(question: &str, labels: &[&str], mode: Option<pb::SelectionMode>) -> pb::AskUserInput {
    pb::AskUserInput {
        question: question.into(),
        options: labels.iter().map(|label| option(label, "")).collect(),
        selection_mode: mode.map(|mode| mode as i32),
    }
}

async fn ask(
    tools: &mut ToolServiceClient<Channel>,
    input: pb::AskUserInput,
) -> Result<String, tonic::Status> {
    tools
        .ask_user(pb::AskUserRequest { input: Some(input) })
        .await
        .map(|response| response.into_inner().content)
}

/// Asks with input that must be INVALID_ARGUMENT; returns its field violations, in order.
async fn violations(
    tools: &mut ToolServiceClient<Channel>,
    input: pb::AskUserInput,
) -> Vec<(String, String)> {
    let status = ask(tools, input).await.expect_err("input must be rejected");
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    field_violations(&status)
}

/// The fields of [`violations`].
async fn violated_fields(
    tools: &mut ToolServiceClient<Channel>,
    input: pb::AskUserInput,
) -> Vec<String> {
    violations(tools, input)
        .await
        .into_iter()
        .map(|(field, _)| field)
        .collect()
}

/// Runs an agent whose script never suspends, to its end; returns the tool results, after checking
/// that no question was suspended and that the run completed with `output`.
async fn results_of_unsuspended_run(
    server: &Server,
    agent_id: &str,
    output: &str,
) -> Vec<pb::ToolResult> {
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, agent_id).await;
    let frames = run.frames_until_end().await;
    assert!(
        !frames
            .iter()
            .any(|f| matches!(f.event, Some(Event::ToolCallSuspended(_)))),
        "{frames:?}"
    );
    match &frames.last().expect("frames").event {
        Some(Event::RunCompleted(done)) => assert_eq!(done.output_text, output),
        other => panic!("expected run_completed, got {other:?}"),
    }
    let stored = get_run(&mut client, &run.run_id).await;
    assert_eq!(stored.status, pb::RunStatus::Completed as i32);
    assert!(stored.pending_tool_calls.is_empty());
    frames
        .into_iter()
        .filter_map(|frame| match frame.event {
            Some(Event::ToolResult(result)) => Some(result),
            _ => None,
        })
        .collect()
}

/// Checks that a tool result reports an invalid call; returns its content.
fn invalid_call_content(result: &pb::ToolResult) -> &str {
    assert!(result.is_error, "{result:?}");
    assert_eq!(result.kind, pb::ToolResultKind::InvalidCall as i32);
    &result.content
}

#[tokio::test]
async fn blank_questions_are_rejected() {
    let agents = scripted_agent(
        "blank",
        &[r#"ask = [{ question = " \t\n " }]"#, r#"say = "went on""#],
    );
    let server = Server::start_with(Some(&agents), &[]);
    let mut tools = server.tools().await;
    for question in ["", " ", "\t\n  \r"] {
        assert_eq!(
            violations(&mut tools, input(question, &[], None)).await,
            [(
                "input.question".to_owned(),
                "question must not be empty".to_owned()
            )],
            "{question:?}"
        );
    }
    let missing = tools
        .ask_user(pb::AskUserRequest { input: None })
        .await
        .expect_err("a request without input has no question");
    assert_eq!(missing.code(), Code::InvalidArgument);
    assert_eq!(field_violations(&missing)[0].0, "input.question");
    // Surrounding white space is allowed and kept as written.
    assert_eq!(
        ask(&mut tools, input(" Name? ", &[], None)).await.unwrap(),
        "[Question for user]:  Name? "
    );

    let results = results_of_unsuspended_run(&server, "blank", "went on").await;
    assert_eq!(results.len(), 1);
    assert_eq!(
        invalid_call_content(&results[0]),
        "Failed to ask user: question must not be empty"
    );
}

#[tokio::test]
async fn option_labels_must_be_non_empty_and_unique() {
    let agents = scripted_agent(
        "repeats",
        &[
            r#"ask = [{ question = "Which?", options = [{ label = "a" }, { label = "a" }] }]"#,
            r#"say = "went on""#,
        ],
    );
    let server = Server::start_with(Some(&agents), &[]);
    let mut tools = server.tools().await;
    assert_eq!(
        violated_fields(
            &mut tools,
            input("Which?", &["a", "", "a", "  ", "b"], None)
        )
        .await,
        [
            "input.options[1].label",
            "input.options[2].label",
            "input.options[3].label"
        ]
    );
    // Labels are compared exactly, and a description is optional.
    let with_descriptions = pb::AskUserInput {
        question: "Which?".into(),
        options: vec![option("Yes", "go ahead"), option("yes", "")],
        selection_mode: None,
    };
    assert_eq!(
        ask(&mut tools, with_descriptions).await.unwrap(),
        "[Question for user]: Which?\nOptions: Yes, yes\nSelection mode: single_select"
    );

    let results = results_of_unsuspended_run(&server, "repeats", "went on").await;
    assert_eq!(results.len(), 1);
    let content = invalid_call_content(&results[0]);
    assert!(content.contains("options[1].label"), "{content}");
    assert!(content.contains("unique"), "{content}");
}

#[tokio::test]
async fn default_size_limits() {
    let server = Server::start();
    let mut tools = server.tools().await;
    let labels: Vec<String> = (0..65).map(|i| format!("o{i}")).collect();
    let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
    assert_eq!(
        ask(&mut tools, input("Which?", &labels[..64], None))
            .await
            .unwrap(),
        format!(
            "[Question for user]: Which?\nOptions: {}\nSelection mode: single_select",
            labels[..64].join(", ")
        )
    );
    assert_eq!(
        violated_fields(&mut tools, input("Which?", &labels, None)).await,
        ["input.options"]
    );

    let longest_label = "l".repeat(1024);
    assert!(
        ask(&mut tools, input("Which?", &[&longest_label], None))
            .await
            .is_ok()
    );
    let too_long_label = "l".repeat(1025);
    assert_eq!(
        violated_fields(&mut tools, input("Which?", &[&too_long_label], None)).await,
        ["input.options[0].label"]
    );

    let longest_question = "q".repeat(16 * 1024);
    assert_eq!(
        ask(&mut tools, input(&longest_question, &[], None))
            .await
            .unwrap(),
        format!("[Question for user]: {longest_question}")
    );
    let too_long_question = "q".repeat(16 * 1024 + 1);
    assert_eq!(
        violated_fields(&mut tools, input(&too_long_question, &[], None)).await,
        ["input.question"]
    );
}

#[tokio::test]
async fn lowered_size_limits() {
    let agents = scripted_agent(
        "many",
        &[
            r#"ask = [{ question = "Pick", options = [{ label = "a" }, { label = "b" }, { label = "c" }] }]"#,
            r#"say = "went on""#,
        ],
    );
    let server = Server::start_with(
        Some(&agents),
        &[
            "--max-options",
            "2",
            "--max-label-bytes",
            "4",
            "--max-question-bytes",
            "10",
        ],
    );
    let mut tools = server.tools().await;
    assert!(
        ask(&mut tools, input("Pick", &["a", "b"], None))
            .await
            .is_ok()
    );
    assert_eq!(
        violated_fields(&mut tools, input("Pick", &["a", "b", "c"], None)).await,
        ["input.options"]
    );
    // Limits count bytes, not characters: "éé" is 4 bytes, "ééa" 5.
    assert!(ask(&mut tools, input("Pick", &["éé"], None)).await.is_ok());
    assert_eq!(
        violated_fields(&mut tools, input("Pick", &["ééa"], None)).await,
        ["input.options[0].label"]
    );
    assert!(
        ask(&mut tools, input("0123456789", &[], None))
            .await
            .is_ok()
    );
    assert_eq!(
        violated_fields(&mut tools, input("0123456789a", &[], None)).await,
        ["input.question"]
    );
    assert_eq!(
        violated_fields(&mut tools, input("ééééé?", &[], None)).await,
        ["input.question"]
    );

    let results = results_of_unsuspended_run(&server, "many", "went on").await;
    assert_eq!(results.len(), 1);
    let content = invalid_call_content(&results[0]);
    assert!(content.contains("the limit is 2"), "{content}");
}

#[tokio::test]
async fn selection_mode_requires_options() {
    let agents = scripted_agent(
        "modes",
        &[
            r#"ask = [{ question = "Name?", selection_mode = "multi_select" },
                     { question = "Name?", options = [], selection_mode = "single_select" },
                     { question = "Pick", options = [{ label = "a" }], selection_mode = "many" }]"#,
            r#"say = "went on""#,
        ],
    );
    let server = Server::start_with(Some(&agents), &[]);
    let mut tools = server.tools().await;
    for mode in [SingleSelect, MultiSelect] {
        assert_eq!(
            violations(&mut tools, input("Name?", &[], Some(mode))).await,
            [(
                "input.selection_mode".to_owned(),
                "selectionMode requires options".to_owned()
            )],
            "{mode:?}"
        );
    }
    let unknown_mode = pb::AskUserInput {
        selection_mode: Some(7),
        ..input("Pick", &["a"], None)
    };
    assert_eq!(
        violated_fields(&mut tools, unknown_mode).await,
        ["input.selection_mode"]
    );
    // Every violation of an input is reported, in field order.
    assert_eq!(
        violated_fields(&mut tools, input(" ", &[], Some(MultiSelect))).await,
        ["input.question", "input.selection_mode"]
    );

    let results = results_of_unsuspended_run(&server, "modes", "went on").await;
    let contents: Vec<&str> = results.iter().map(invalid_call_content).collect();
    assert_eq!(contents.len(), 3, "{contents:?}");
    assert_eq!(
        contents[..2],
        [
            "Failed to ask user: selectionMode requires options",
            "Failed to ask user: selectionMode requires options"
        ]
    );
    assert!(contents[2].contains("\"many\""), "{}", contents[2]);
}

#[tokio::test]
async fn selection_mode_resolves_to_single_select_or_free_text() {
    let agents = scripted_agent(
        "defaults",
        &[
            r#"ask = [{ question = "Pick", options = [{ label = "a" }, { label = "b" }] },
                     { question = "Name?" },
                     { question = "Note?", options = [] }]"#,
        ],
    );
    let server = Server::start_with(Some(&agents), &[]);
    let mut tools = server.tools().await;
    assert_eq!(
        ask(&mut tools, input("Pick", &["a", "b"], None))
            .await
            .unwrap(),
        "[Question for user]: Pick\nOptions: a, b\nSelection mode: single_select"
    );
    assert_eq!(
        ask(&mut tools, input("Name?", &[], None)).await.unwrap(),
        "[Question for user]: Name?"
    );

    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "defaults").await;
    let mut payloads = Vec::new();
    for _ in 0..3 {
        let suspended = run.next_suspended().await;
        payloads.push(suspended.suspend_payload.expect("payload"));
    }
    let single = &payloads[0];
    assert_eq!(single.options, [option("a", ""), option("b", "")]);
    assert_eq!(single.selection_mode, Some(SingleSelect as i32));
    for free_text in &payloads[1..] {
        assert!(free_text.options.is_empty(), "{free_text:?}");
        assert_eq!(free_text.selection_mode, None, "{free_text:?}");
    }
    let stored = get_run(&mut client, &run.run_id).await;
    let stored_payloads: Vec<pb::SuspendPayload> = stored
        .pending_tool_calls
        .into_iter()
        .map(|call| call.suspend_payload.expect("payload"))
        .collect();
    assert_eq!(stored_payloads, payloads);
}

#[tokio::test]
async fn fallback_text_is_exact() {
    let server = Server::start();
    let mut tools = server.tools().await;
    let cases = [
        (
            input("What is your name?", &[], None),
            "[Question for user]: What is your name?",
        ),
        (
            pb::AskUserInput {
                question: "Deploy where?".into(),
                options: vec![option("staging", "safe"), option("production", "live")],
                selection_mode: None,
            },
            "[Question for user]: Deploy where?\nOptions: staging, production\nSelection mode: single_select",
        ),
        (
            input(
                "Deploy where?",
                &["staging", "production"],
                Some(SingleSelect),
            ),
            "[Question for user]: Deploy where?\nOptions: staging, production\nSelection mode: single_select",
        ),
        (
            input("Which checks?", &["lint", "unit tests"], Some(MultiSelect)),
            "[Question for user]: Which checks?\nOptions: lint, unit tests\nSelection mode: multi_select",
        ),
        (
            input("Line one\nline two", &[], None),
            "[Question for user]: Line one\nline two",
        ),
    ];
    for (input, expected) in cases {
        assert_eq!(ask(&mut tools, input).await.unwrap(), expected);
    }
}

#[tokio::test]
async fn invalid_calls_become_error_results_and_the_run_goes_on() {
    let agents = [
        scripted_agent(
            "bad",
            &[r#"ask = [{ question = "" }]"#, r#"say = "carried on""#],
        ),
        scripted_agent(
            "mixed",
            &[
                r#"ask = [{ question = "" }, { question = "Name?" }]"#,
                r#"say = "Hello {{answer.1}}""#,
            ],
        ),
    ]
    .concat();
    let server = Server::start_with(Some(&agents), &[]);

    let results = results_of_unsuspended_run(&server, "bad", "carried on").await;
    assert_eq!(results.len(), 1);
    assert_eq!(
        invalid_call_content(&results[0]),
        "Failed to ask user: question must not be empty"
    );

    // A bad call next to a good one: only the good one suspends; the answer the next turn sees is
    // the one to the question actually asked.
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "mixed").await;
    let mut frames = Vec::new();
    let suspended = loop {
        let frame = run.next().await;
        if let Some(Event::ToolCallSuspended(suspended)) = &frame.event {
            break suspended.clone();
        }
        frames.push(frame);
    };
    let calls: Vec<&pb::ToolCall> = frames
        .iter()
        .filter_map(|f| match &f.event {
            Some(Event::ToolCall(call)) => Some(call),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 2, "{frames:?}");
    assert_eq!(calls[1].tool_call_id, suspended.tool_call_id);
    let results: Vec<&pb::ToolResult> = frames
        .iter()
        .filter_map(|f| match &f.event {
            Some(Event::ToolResult(result)) => Some(result),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 1, "{frames:?}");
    let result = results[0];
    assert_eq!(result.tool_call_id, calls[0].tool_call_id);
    assert_eq!(
        invalid_call_content(result),
        "Failed to ask user: question must not be empty"
    );
    let stored = get_run(&mut client, &run.run_id).await;
    assert_eq!(stored.status, pb::RunStatus::Suspended as i32);
    let pending: Vec<&str> = stored
        .pending_tool_calls
        .iter()
        .map(|call| call.tool_call_id.as_str())
        .collect();
    assert_eq!(pending, [suspended.tool_call_id.as_str()]);
    run.send_text(&suspended.tool_call_id, "Ada").await;
    assert_eq!(run.completed_text().await, "Hello Ada");

    // The same kinds of bad input through ToolService name the offending fields.
    let mut tools = server.tools().await;
    assert_eq!(
        violated_fields(&mut tools, input("", &["ok", ""], None)).await,
        ["input.question", "input.options[1].label"]
    );
}
