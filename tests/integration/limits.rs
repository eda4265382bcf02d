//! Every string, list and map a client sends has a limit: over it is INVALID_ARGUMENT with a field
//! violation naming the field and the limit, the same on `RunAgent` answer frames as on `ResumeRun`;
//! an error never echoes a huge id. Secrets in endpoints (userinfo, query strings) stay out of every
//! frame, run and log line.

use crate::common;

use std::collections::HashMap;

use askuser::proto::v1 as pb;
use askuser::proto::v1::run_agent_request::Frame;
use askuser::proto::v1::run_agent_response::Event;
use common::{RunStream, Server, error_reason, field_violations, report_figures};

/// The server's peak RSS (VmHWM), in KiB.
fn peak_rss_kib(server: &Server) -> u64 {
    let pid = server.pid().expect("pid");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

/// The one violation of a refused request: (field, description).
fn violation(status: &tonic::Status) -> (String, String) {
    assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
    let violations = field_violations(status);
    assert_eq!(violations.len(), 1, "{status:?}");
    violations.into_iter().next().expect("a violation")
}

fn start(agent_id: &str, metadata: HashMap<String, String>) -> Frame {
    Frame::Start(pb::StartRun {
        agent_id: agent_id.into(),
        prompt: "hi".into(),
        metadata,
        ..Default::default()
    })
}

fn metadata(entries: usize, value_bytes: usize) -> HashMap<String, String> {
    (0..entries)
        .map(|i| (format!("key{i}"), "v".repeat(value_bytes)))
        .collect()
}

/// Peak RSS the refused requests of a test may add, in KiB.
const BOUND_KIB: u64 = 50 * 1024;

#[tokio::test]
async fn requests_over_a_limit_are_refused_naming_the_field_and_the_limit() {
    let server = Server::process();
    let mut client = server.agents().await;
    let long_id = "r".repeat(300);
    let before = peak_rss_kib(&server);

    let refused = |frame| {
        let mut client = client.clone();
        async move {
            RunStream::open(&mut client, frame)
                .await
                .err()
                .expect("refused")
        }
    };
    let (field, description) = violation(&refused(start("greeter", metadata(80, 1))).await);
    assert_eq!(field, "start.metadata");
    assert_eq!(
        description,
        "start.metadata has 80 entries; the limit is 64"
    );
    // Near the message limit: decoded, then refused by the count alone.
    for _ in 0..3 {
        let (_, description) = violation(&refused(start("greeter", metadata(20_000, 0))).await);
        assert_eq!(
            description,
            "start.metadata has 20000 entries; the limit is 64"
        );
    }
    let (field, description) = violation(&refused(start("greeter", metadata(2, 10_000))).await);
    assert_eq!(field, "start.metadata");
    assert!(
        description.ends_with("bytes (keys and values); the limit is 16384"),
        "{description}"
    );
    let (field, description) = violation(&refused(start(&long_id, HashMap::new())).await);
    assert_eq!(field, "start.agent_id");
    assert_eq!(description, "start.agent_id is 300 bytes; the limit is 256");

    let tools = vec![
        pb::ToolDefinition {
            name: "t".into(),
            ..Default::default()
        };
        65
    ];
    let (field, description) = violation(
        &refused(Frame::Start(pb::StartRun {
            agent_id: "greeter".into(),
            tools,
            ..Default::default()
        }))
        .await,
    );
    assert_eq!(field, "start.tools");
    assert_eq!(description, "start.tools has 65 entries; the limit is 64");

    let status = client
        .get_run(pb::GetRunRequest {
            run_id: long_id.clone(),
        })
        .await
        .expect_err("a long run id");
    assert_eq!(violation(&status).0, "run_id");
    assert!(!status.message().contains(&long_id), "{status:?}");
    let status = client
        .cancel_run(pb::CancelRunRequest {
            run_id: "run".into(),
            reason: "why ".repeat(1100),
        })
        .await
        .expect_err("a long reason");
    assert_eq!(
        violation(&status),
        (
            "reason".to_owned(),
            "reason is 4400 bytes; the limit is 4096".to_owned()
        )
    );
    let status = client
        .claim_call(pb::ClaimCallRequest {
            run_id: "run".into(),
            tool_call_id: "call".into(),
            claimant: long_id.clone(),
            ttl: None,
        })
        .await
        .expect_err("a long claimant");
    assert_eq!(violation(&status).0, "claimant");
    let Err(status) = client
        .watch_pending_calls(pb::WatchPendingCallsRequest {
            agent_ids: vec!["a".into(); 65],
            ..Default::default()
        })
        .await
    else {
        panic!("65 agent ids are watched");
    };
    assert_eq!(
        violation(&status),
        (
            "agent_ids".to_owned(),
            "agent_ids has 65 entries; the limit is 64".to_owned()
        )
    );
    let status = client
        .list_runs(pb::ListRunsRequest {
            page_token: "t".repeat(5000),
            ..Default::default()
        })
        .await
        .expect_err("a huge page token");
    assert_eq!(violation(&status).0, "page_token");

    let after = peak_rss_kib(&server);
    report_figures(
        "limits: requests over a limit (3 with 20,000 metadata entries among them)",
        &[
            ("peak_rss_before_kib", before),
            ("peak_rss_after_kib", after),
        ],
    );
    assert!(after - before < BOUND_KIB, "{before} KiB → {after} KiB");
}

#[tokio::test]
async fn limits_follow_their_flags() {
    let server = Server::start_with(
        None,
        &[
            "--max-metadata-entries",
            "2",
            "--max-id-bytes",
            "8",
            "--max-reason-bytes",
            "10",
        ],
    );
    let mut client = server.agents().await;
    let status = RunStream::open(&mut client, start("greeter", metadata(3, 1)))
        .await
        .err()
        .expect("3 entries");
    assert_eq!(
        violation(&status).1,
        "start.metadata has 3 entries; the limit is 2"
    );
    let status = client
        .get_run(pb::GetRunRequest {
            run_id: "123456789".into(),
        })
        .await
        .expect_err("a 9-byte id");
    assert_eq!(violation(&status).1, "run_id is 9 bytes; the limit is 8");
    // Within the limits, the run goes as ever.
    let mut run = RunStream::open(&mut client, start("greeter", metadata(2, 1)))
        .await
        .expect("2 entries");
    assert!(matches!(run.next().await.event, Some(Event::RunStarted(_))));
}

/// An answer over a limit is INVALID_ANSWER naming the field, on `ResumeRun` (a status) and on
/// `RunAgent` (an `answer_rejected` frame) alike; the question still takes a good answer.
#[tokio::test]
async fn answers_over_a_limit_are_invalid_answers_on_both_paths() {
    let server = Server::start();
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "greeter").await;
    let question = run.next_suspended().await.tool_call_id;
    let with_answer_id = |answer_id: &str| pb::Answer {
        answer_id: answer_id.into(),
        ..common::text_answer(&run.run_id, &question, "Ada")
    };
    let cases = [
        (
            common::decline_answer(&run.run_id, &question, &"no".repeat(2049)),
            "answer.decline.reason",
            "answer.decline.reason is 4098 bytes; the limit is 4096",
        ),
        (
            with_answer_id(&"a".repeat(257)),
            "answer.answer_id",
            "answer.answer_id is 257 bytes; the limit is 256",
        ),
        (
            common::text_answer(&run.run_id, &question, &"x".repeat(65_537)),
            "answer.text",
            "answer.text is 65537 bytes; the limit is 65536",
        ),
    ];
    for (answer, field, description) in cases {
        let status = common::resume(&mut client, answer.clone())
            .await
            .expect_err("over a limit");
        assert_eq!(
            violation(&status),
            (field.to_owned(), description.to_owned())
        );
        assert_eq!(error_reason(&status).as_deref(), Some("INVALID_ANSWER"));
        assert_eq!(status.message(), description);

        run.send(answer).await;
        let rejected = run.next_rejected().await;
        assert_eq!(rejected.reason, "INVALID_ANSWER");
        assert_eq!(rejected.message, description);
        let violations: Vec<(&str, &str)> = rejected
            .field_violations
            .iter()
            .map(|v| (v.field.as_str(), v.description.as_str()))
            .collect();
        assert_eq!(violations, [(field, description)]);
    }
    run.send_text(&question, "Ada").await;
    assert_eq!(run.completed_text().await, "Hello, Ada!");
}

/// Ids under their limit may still be long; an error quotes at most 64 characters of one.
#[tokio::test]
async fn errors_cut_the_ids_they_quote() {
    let server = Server::start();
    let mut client = server.agents().await;
    let long_id = format!("{}-end", "r".repeat(200));
    let status = client
        .get_run(pb::GetRunRequest {
            run_id: long_id.clone(),
        })
        .await
        .expect_err("no such run");
    assert_eq!(status.code(), tonic::Code::NotFound);
    assert!(
        status
            .message()
            .contains(&format!("\"{}…\"", "r".repeat(64))),
        "{status:?}"
    );
    assert!(!status.message().contains("-end"), "{status:?}");
    let mut run = RunStream::start(&mut client, "greeter").await;
    let question = run.next_suspended().await.tool_call_id;
    run.send(common::text_answer(&long_id, &question, "Ada"))
        .await;
    let rejected = run.next_rejected().await;
    assert_eq!(rejected.reason, "RUN_MISMATCH");
    assert!(!rejected.message.contains("-end"), "{}", rejected.message);
}

/// What an HTTP tool at an URL with credentials in it fails with names neither: not in a frame,
/// not in `GetRun`, not in the server's log.
#[tokio::test]
async fn an_http_tool_url_with_credentials_stays_out_of_frames_runs_and_logs() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = closed.local_addr().expect("address");
    drop(closed);
    let url = format!("http://deployer:pw-s3cr3t-91@{addr}/x?token=abc-77");
    let agents = format!(
        r#"
[[tool]]
name = "deploy"
kind = "http"
url = "{url}"
max_retries = 0

[[agent]]
id = "shipper"
tools = ["deploy"]
[agent.model]
provider = "scripted"
[[agent.model.turns]]
call = [{{ tool = "deploy", arguments = {{ service = "api" }} }}]
[[agent.model.turns]]
say = "deploy said: {{{{result.1}}}}"
"#
    );
    let server = Server::process_with(Some(&agents), &[]);
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "shipper").await;
    let frames = run.frames_until_end().await;
    let result = frames
        .iter()
        .find_map(|frame| match &frame.event {
            Some(Event::ToolResult(result)) => Some(result.clone()),
            _ => None,
        })
        .expect("a tool result");
    assert!(result.is_error, "{result:?}");
    let run = common::get_run(&mut client, &run.run_id).await;
    let shown = [
        format!("{frames:?}"),
        format!("{run:?}"),
        server.log(),
        format!("{:?}", client.list_agents(pb::ListAgentsRequest {}).await),
    ];
    for text in shown {
        for secret in ["pw-s3cr3t-91", "token=abc-77", "abc-77"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
    }
}
