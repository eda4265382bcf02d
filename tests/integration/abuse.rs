//! What a client sends cannot make the server do unbounded work: requests over the message size
//! are refused before they are decoded, validation stops early, pages are bounded by bytes, and
//! flags that could only hurt are refused. Each case reports the server's peak RSS (VmHWM).

use crate::common;

use askuser::proto::v1 as pb;
use askuser::proto::v1::run_agent_request::Frame;
use common::{RunStream, Server, field_violations, report_figures, scripted_agent};

/// A figure of /proc/PID/status, in KiB.
fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

fn peak_rss_kib(server: &Server) -> u64 {
    status_kib(server.pid().expect("pid"), "VmHWM:")
}

/// The request of the review: 2,000,000 empty options, about 4 MB on the wire.
fn huge_ask_user() -> pb::AskUserRequest {
    pb::AskUserRequest {
        input: Some(pb::AskUserInput {
            question: "Which?".into(),
            options: vec![pb::AskUserOption::default(); 2_000_000],
            selection_mode: None,
        }),
    }
}

/// Peak RSS a refused request may add, in KiB.
const BOUND_KIB: u64 = 50 * 1024;

#[tokio::test]
async fn a_4_mb_request_is_refused_before_it_is_decoded() {
    let server = Server::process();
    let mut tools = server.tools().await;
    // Warm up: the first requests grow the allocator's arenas.
    tools
        .ask_user(pb::AskUserRequest {
            input: Some(pb::AskUserInput {
                question: "Warm?".into(),
                ..Default::default()
            }),
        })
        .await
        .expect("small request");
    let before = peak_rss_kib(&server);
    for _ in 0..3 {
        let status = tools
            .ask_user(huge_ask_user())
            .await
            .expect_err("a 4 MB request");
        assert_eq!(status.code(), tonic::Code::OutOfRange, "{status:?}");
        assert!(status.message().contains("too large"), "{status:?}");
    }
    let after = peak_rss_kib(&server);
    report_figures(
        "abuse 4 MB AskUser x3",
        &[
            ("peak_rss_before_kib", before),
            ("peak_rss_after_kib", after),
        ],
    );
    assert!(
        after - before < BOUND_KIB,
        "peak RSS grew from {before} KiB to {after} KiB"
    );
}

/// A request under the message limit with far too many options: the count is checked first, one
/// violation comes back, and no option is looked at.
#[tokio::test]
async fn too_many_options_are_refused_by_count_with_one_violation() {
    let server = Server::process();
    let mut tools = server.tools().await;
    let before = peak_rss_kib(&server);
    let input = pb::AskUserInput {
        question: "Which?".into(),
        options: vec![pb::AskUserOption::default(); 100_000],
        selection_mode: None,
    };
    let status = tools
        .ask_user(pb::AskUserRequest { input: Some(input) })
        .await
        .expect_err("too many options");
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    let violations = field_violations(&status);
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert_eq!(violations[0].0, "input.options");
    let after = peak_rss_kib(&server);
    report_figures(
        "abuse 100,000 empty options",
        &[
            ("peak_rss_before_kib", before),
            ("peak_rss_after_kib", after),
        ],
    );
    assert!(after - before < BOUND_KIB);

    // Within the count, every option bad: at most 20 violations.
    let input = pb::AskUserInput {
        question: "Which?".into(),
        options: vec![pb::AskUserOption::default(); 64],
        selection_mode: None,
    };
    let status = tools
        .ask_user(pb::AskUserRequest { input: Some(input) })
        .await
        .expect_err("empty labels");
    assert_eq!(field_violations(&status).len(), 20);
}

/// An answer selecting more labels than the question offers is refused by its count, and a bad
/// label's violation does not repeat the offered labels.
#[tokio::test]
async fn oversized_selections_are_refused_by_count() {
    let server = Server::start_with(
        Some(&scripted_agent(
            "multi",
            &[
                r#"ask = [{ question = "Which?", options = [{ label = "a" }, { label = "b" }], selection_mode = "multi_select" }]"#,
                r#"say = "{{answer.1}}""#,
            ],
        )),
        &[],
    );
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "multi").await;
    let question = run.next_suspended().await.tool_call_id;
    let labels: Vec<&str> = vec!["a"; 10_000];
    run.send_selections(&question, &labels).await;
    let rejected = run.next_rejected().await;
    assert_eq!(rejected.field_violations.len(), 1, "{rejected:?}");
    assert_eq!(
        rejected.field_violations[0].field,
        "answer.selections.labels"
    );
    run.send_selections(&question, &["c"]).await;
    let rejected = run.next_rejected().await;
    assert_eq!(
        rejected.field_violations[0].description,
        "\"c\" is not one of the offered labels"
    );
    run.send_selections(&question, &["b"]).await;
    assert_eq!(run.completed_text().await, "b");
}

#[tokio::test]
async fn a_prompt_over_its_limit_is_invalid_argument_naming_the_field() {
    let server = Server::start_with(None, &["--max-prompt-bytes", "1000"]);
    let mut client = server.agents().await;
    let status = RunStream::open(
        &mut client,
        Frame::Start(pb::StartRun {
            agent_id: "greeter".into(),
            prompt: "x".repeat(1001),
            ..Default::default()
        }),
    )
    .await
    .err()
    .expect("a long prompt");
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    assert_eq!(field_violations(&status)[0].0, "start.prompt");
}

/// A `ListRuns` page stops before the run that would take it past the response limit.
#[tokio::test]
async fn a_list_page_is_bounded_by_bytes() {
    // Requests of at most 100 KB: responses of 400 KB, pages of 200 KB.
    let server = Server::start_with(
        None,
        &[
            "--max-message-bytes",
            "100000",
            "--max-prompt-bytes",
            "60000",
        ],
    );
    let mut client = server.agents().await;
    for _ in 0..8 {
        let run = RunStream::open(
            &mut client,
            Frame::Start(pb::StartRun {
                agent_id: "greeter".into(),
                prompt: "p".repeat(50_000),
                ..Default::default()
            }),
        )
        .await
        .expect("start");
        drop(run);
    }
    let mut seen = 0;
    let mut token = String::new();
    let mut pages = 0;
    loop {
        let page = client
            .list_runs(pb::ListRunsRequest {
                page_size: 1000,
                page_token: token.clone(),
                ..Default::default()
            })
            .await
            .expect("list runs")
            .into_inner();
        assert!(
            prost::Message::encoded_len(&page) <= 200_000 + 60_000,
            "a page of {} bytes",
            prost::Message::encoded_len(&page)
        );
        pages += 1;
        seen += page.runs.len();
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    assert_eq!(seen, 8);
    assert!(pages > 1, "8 runs of 50 KB fit one page of at most 200 KB");
}

#[test]
fn flags_that_could_only_hurt_are_refused() {
    for (flag, value) in [
        ("--heartbeat-interval", "0s"),
        ("--lease-ttl", "0s"),
        ("--prune-interval", "0s"),
        ("--database-pool-size", "0"),
        ("--max-options", "0"),
        ("--max-message-bytes", "0"),
    ] {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_askuser"))
            .args(["serve", "--listen", "127.0.0.1:0", flag, value])
            .output()
            .expect("run askuser");
        assert!(!output.status.success(), "{flag} {value} was accepted");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(flag)
                && (stderr.contains("more than 0") || stderr.contains("at least 1")),
            "{flag} {value}: {stderr}"
        );
    }
}

/// NUL characters in text a client sends are INVALID_ARGUMENT naming the field, on both stores
/// (PostgreSQL cannot store one; before, it failed such requests with INTERNAL), and the question
/// stays answerable.
async fn nul_characters_are_refused(server: &Server) {
    let mut client = server.agents().await;
    let start = |prompt: &str, metadata: &[(&str, &str)]| {
        Frame::Start(pb::StartRun {
            agent_id: "greeter".into(),
            prompt: prompt.into(),
            metadata: metadata
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        })
    };
    for (frame, field) in [
        (start("hello\0", &[]), "start.prompt"),
        (start("hello", &[("team", "a\0b")]), "start.metadata"),
    ] {
        let status = RunStream::open(&mut client, frame)
            .await
            .err()
            .expect("a NUL");
        assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
        assert_eq!(field_violations(&status)[0].0, field);
    }
    let mut run = RunStream::start(&mut client, "greeter").await;
    let question = run.next_suspended().await.tool_call_id;
    let status = common::resume(
        &mut client,
        common::text_answer(&run.run_id, &question, "Ada\0Lovelace"),
    )
    .await
    .expect_err("a NUL answer");
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    assert_eq!(field_violations(&status)[0].0, "answer.text");
    let cancel = client
        .cancel_run(pb::CancelRunRequest {
            run_id: run.run_id.clone(),
            reason: "\0".into(),
        })
        .await
        .expect_err("a NUL reason");
    assert_eq!(cancel.code(), tonic::Code::InvalidArgument);
    let get = client
        .get_run(pb::GetRunRequest {
            run_id: "run\0".into(),
        })
        .await
        .expect_err("a NUL id");
    assert_eq!(get.code(), tonic::Code::InvalidArgument);
    // Nothing was lost: the question still takes a good answer.
    run.send_text(&question, "Ada").await;
    assert_eq!(run.completed_text().await, "Hello, Ada!");
}

#[tokio::test]
async fn nul_characters_are_refused_on_sqlite() {
    nul_characters_are_refused(&Server::start()).await;
}

#[tokio::test]
async fn nul_characters_are_refused_on_postgres() {
    let Some(database_url) = common::fresh_database().await else {
        return;
    };
    nul_characters_are_refused(&Server::start_with(
        None,
        &["--database-url", &database_url],
    ))
    .await;
}

/// A suspended run of the demo agent `greeter`, for streams to watch.
async fn suspended_greeter(server: &Server) -> String {
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "greeter").await;
    run.next_suspended().await;
    run.run_id.clone()
}

async fn watch(
    client: &mut askuser::proto::v1::agent_service_client::AgentServiceClient<
        tonic::transport::Channel,
    >,
    run_id: &str,
) -> Result<tonic::Streaming<pb::RunAgentResponse>, tonic::Status> {
    client
        .watch_run(pb::WatchRunRequest {
            run_id: run_id.into(),
            after_sequence: 0,
        })
        .await
        .map(tonic::Response::into_inner)
}

/// A stream watching `run_id`, once the server has a place for it (within 2.5 s).
async fn watch_when_free(
    client: &mut askuser::proto::v1::agent_service_client::AgentServiceClient<
        tonic::transport::Channel,
    >,
    run_id: &str,
) -> tonic::Streaming<pb::RunAgentResponse> {
    for _ in 0..50 {
        match watch(client, run_id).await {
            Ok(stream) => return stream,
            Err(status) if status.code() == tonic::Code::ResourceExhausted => {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            Err(status) => panic!("watching the run: {status:?}"),
        }
    }
    panic!("no place for a stream was given back within 2.5 s")
}

#[tokio::test]
async fn streams_beyond_the_server_wide_cap_are_resource_exhausted() {
    let server = Server::start_with(None, &["--max-open-streams", "2"]);
    let run_id = suspended_greeter(&server).await;
    let mut client = server.agents().await;
    // The `RunAgent` stream that made the run holds a place until the server has seen it end,
    // which may come after the client dropped it.
    let first = watch_when_free(&mut client, &run_id).await;
    let _second = watch_when_free(&mut client, &run_id).await;
    let refused = watch(&mut client, &run_id)
        .await
        .expect_err("a third stream");
    assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
    assert_eq!(
        common::error_reason(&refused).as_deref(),
        Some("TOO_MANY_STREAMS")
    );
    // A stream that ends gives its place back.
    drop(first);
    watch_when_free(&mut client, &run_id).await;
}

/// A pending-calls feed as `key`.
async fn feed_as(
    client: &mut askuser::proto::v1::agent_service_client::AgentServiceClient<
        tonic::transport::Channel,
    >,
    key: &str,
) -> Result<tonic::Streaming<pb::WatchPendingCallsResponse>, tonic::Status> {
    let request =
        common::credentials::authorized(pb::WatchPendingCallsRequest::default(), Some(key));
    client
        .watch_pending_calls(request)
        .await
        .map(tonic::Response::into_inner)
}

fn assert_refused(outcome: Result<impl std::fmt::Debug, tonic::Status>, reason: &str) {
    let refused = outcome.expect_err("a stream past the cap");
    assert_eq!(
        refused.code(),
        tonic::Code::ResourceExhausted,
        "{refused:?}"
    );
    assert_eq!(common::error_reason(&refused).as_deref(), Some(reason));
}

/// Before, one key could hold every stream the server allows (its feeds slowing every tenant);
/// now each principal and each tenant has a cap of its own, on every streaming RPC.
#[tokio::test]
async fn streams_beyond_a_principals_or_a_tenants_cap_are_resource_exhausted() {
    use common::credentials::{create_key, sqlite_store};
    let agents = scripted_agent("asker", &[r#"ask = [{ question = "Name?" }]"#]);
    let server = Server::start_with(
        Some(&agents),
        &[
            "--auth",
            "keys",
            "--max-streams-per-principal",
            "2",
            "--max-streams-per-tenant",
            "3",
        ],
    );
    let store = sqlite_store(&server);
    let scopes = "runs:start,runs:read,runs:answer";
    let first_key = create_key(&store, "acme", "first", scopes);
    let second_key = create_key(&store, "acme", "second", scopes);
    let other_tenant = create_key(&store, "globex", "other", scopes);
    let mut client = server.agents().await;

    let first_feed = feed_as(&mut client, &first_key).await.expect("first feed");
    let _second_feed = feed_as(&mut client, &first_key).await.expect("second feed");
    assert_refused(
        feed_as(&mut client, &first_key).await,
        "TOO_MANY_PRINCIPAL_STREAMS",
    );
    // Another key of the tenant has room of its own, up to the tenant's cap.
    let _third_feed = feed_as(&mut client, &second_key).await.expect("third feed");
    assert_refused(
        feed_as(&mut client, &second_key).await,
        "TOO_MANY_TENANT_STREAMS",
    );
    // The same cap holds for every streaming RPC.
    let start = Frame::Start(pb::StartRun {
        agent_id: "asker".into(),
        prompt: "go".into(),
        ..Default::default()
    });
    assert_refused(
        RunStream::open_as(&mut client, Some(&second_key), start.clone())
            .await
            .map(|_| ()),
        "TOO_MANY_TENANT_STREAMS",
    );
    // Another tenant is served all the same.
    let _other_feed = feed_as(&mut client, &other_tenant)
        .await
        .expect("other tenant's feed");
    let mut run = RunStream::open_as(&mut client, Some(&other_tenant), start)
        .await
        .expect("other tenant's run");
    run.next_suspended().await;
    // A stream that ends gives its place back.
    drop(first_feed);
    let mut reopened = None;
    for _ in 0..100 {
        if let Ok(feed) = feed_as(&mut client, &second_key).await {
            reopened = Some(feed);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(reopened.is_some(), "the freed place was never given back");
}

#[tokio::test]
async fn a_stream_without_a_first_frame_is_ended() {
    let server = Server::start_with(None, &["--first-frame-timeout", "300ms"]);
    let mut client = server.agents().await;
    let (_sender, receiver) = tokio::sync::mpsc::channel::<pb::RunAgentRequest>(1);
    let started = std::time::Instant::now();
    let outcome = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        client.run_agent(tokio_stream::wrappers::ReceiverStream::new(receiver)),
    )
    .await
    .expect("the server ended the silent stream");
    let status = match outcome {
        Err(status) => status,
        Ok(response) => response
            .into_inner()
            .message()
            .await
            .expect_err("an error, not a frame"),
    };
    assert_eq!(status.code(), tonic::Code::DeadlineExceeded, "{status:?}");
    assert_eq!(
        common::error_reason(&status).as_deref(),
        Some("NO_FIRST_FRAME")
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

#[tokio::test]
async fn streams_per_connection_are_capped() {
    let server = Server::start_with(None, &["--max-concurrent-streams", "2"]);
    let run_id = suspended_greeter(&server).await;
    // One connection for all three.
    let mut client = server.agents().await;
    let first = watch(&mut client, &run_id).await.expect("first");
    let _second = watch(&mut client, &run_id).await.expect("second");
    let mut third_client = client.clone();
    let third = tokio::spawn(async move { watch(&mut third_client, &run_id).await.is_ok() });
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(
        !third.is_finished(),
        "a third stream opened on the connection"
    );
    drop(first);
    let opened = tokio::time::timeout(std::time::Duration::from_secs(10), third)
        .await
        .expect("the third stream opened once one closed")
        .expect("task");
    assert!(opened);
}

#[tokio::test]
async fn old_connections_are_closed_so_clients_rebalance() {
    let server = Server::start_with(
        None,
        &[
            "--max-connection-age",
            "1s",
            "--max-connection-age-grace",
            "1s",
        ],
    );
    let run_id = suspended_greeter(&server).await;
    let mut client = server.agents().await;
    let mut stream = watch(&mut client, &run_id).await.expect("watch");
    let started = std::time::Instant::now();
    let ended = tokio::time::timeout(std::time::Duration::from_secs(15), async {
        loop {
            match stream.message().await {
                Ok(Some(_)) => {}
                other => return other.map(|_| ()),
            }
        }
    })
    .await
    .expect("the old connection was closed");
    assert!(
        ended.is_err(),
        "the stream ended without an error: {ended:?}"
    );
    assert!(started.elapsed() >= std::time::Duration::from_millis(900));
}

/// On SIGTERM with a drain delay the server keeps accepting connections and reports NOT_SERVING,
/// so that a probe sees it go before the listener closes.
#[tokio::test]
async fn a_draining_server_reports_not_serving_before_it_closes() {
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::health_client::HealthClient;
    let mut server = Server::process_with(None, &["--drain-delay", "3s"]);
    let url = server.url();
    // Serving (and so listening for SIGTERM) before the signal comes.
    let serving = HealthClient::new(server.channel().await)
        .check(tonic_health::pb::HealthCheckRequest::default())
        .await
        .expect("health")
        .into_inner()
        .status;
    assert_eq!(serving, ServingStatus::Serving as i32);
    let mut child = server.send_terminate().expect("running");
    let mut saw_not_serving = false;
    for _ in 0..40 {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        // A new connection each time, as a probe makes.
        let Ok(channel) = tonic::transport::Channel::from_shared(url.clone())
            .expect("url")
            .connect()
            .await
        else {
            break;
        };
        let status = HealthClient::new(channel)
            .check(tonic_health::pb::HealthCheckRequest::default())
            .await
            .map(|r| r.into_inner().status);
        if status.is_ok_and(|s| s == ServingStatus::NotServing as i32) {
            saw_not_serving = true;
            break;
        }
    }
    assert!(saw_not_serving, "no new connection saw NOT_SERVING");
    assert!(child.wait().expect("exit").success());
}

/// A start retried with its request id (by a client or a mesh) returns the run the first one
/// made, replayed from its first event, and creates no second run.
#[tokio::test]
async fn a_retried_start_returns_the_same_run() {
    let server = Server::start();
    let mut client = server.agents().await;
    let start = || {
        Frame::Start(pb::StartRun {
            agent_id: "greeter".into(),
            prompt: "hello".into(),
            request_id: "start-7f3a".into(),
            ..Default::default()
        })
    };
    let mut first = RunStream::open(&mut client, start()).await.expect("start");
    let started = first.next().await;
    let question = first.next_suspended().await;
    let mut retry = RunStream::open(&mut client, start()).await.expect("retry");
    let replayed = retry.next().await;
    assert_eq!(replayed.run_id, started.run_id);
    assert_eq!(replayed.sequence, 1);
    assert_eq!(
        retry.next_suspended().await.tool_call_id,
        question.tool_call_id
    );
    let runs = client
        .list_runs(pb::ListRunsRequest::default())
        .await
        .expect("list")
        .into_inner()
        .runs;
    assert_eq!(runs.len(), 1);
    let long = pb::StartRun {
        agent_id: "greeter".into(),
        request_id: "k".repeat(257),
        ..Default::default()
    };
    let status = RunStream::open(&mut client, Frame::Start(long))
        .await
        .err()
        .expect("a long request id");
    assert_eq!(field_violations(&status)[0].0, "start.request_id");
}

/// `ListRuns` page tokens are the server's own: garbage, or a token of another filter, is
/// INVALID_ARGUMENT rather than read as a position.
#[tokio::test]
async fn page_tokens_are_opaque_and_bound_to_their_filter() {
    let server = Server::start();
    let mut client = server.agents().await;
    for _ in 0..3 {
        RunStream::start(&mut client, "greeter")
            .await
            .next_suspended()
            .await;
    }
    let list = |agent_id: &str, token: &str| pb::ListRunsRequest {
        agent_id: agent_id.into(),
        page_size: 1,
        page_token: token.into(),
        ..Default::default()
    };
    let first = client
        .list_runs(list("greeter", ""))
        .await
        .expect("first page")
        .into_inner();
    assert!(!first.next_page_token.is_empty());
    assert!(!first.next_page_token.contains(&first.runs[0].run_id));
    let second = client
        .list_runs(list("greeter", &first.next_page_token))
        .await
        .expect("second page")
        .into_inner();
    assert_ne!(second.runs[0].run_id, first.runs[0].run_id);
    for (agent, token) in [
        ("greeter", "garbage"),
        ("greeter", first.runs[0].run_id.as_str()),
        ("", first.next_page_token.as_str()),
    ] {
        let status = client
            .list_runs(list(agent, token))
            .await
            .expect_err("a token not of this listing");
        assert_eq!(status.code(), tonic::Code::InvalidArgument, "{token}");
        assert_eq!(field_violations(&status)[0].0, "page_token");
    }
}

/// The database URL can come from a file (a mounted secret), and its password is in no log line.
#[tokio::test]
async fn the_database_url_comes_from_a_file_and_stays_out_of_the_log() {
    let Some(database_url) = common::fresh_database().await else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("database-url");
    std::fs::write(&file, format!("{database_url}\n")).expect("write");
    let server = Server::process_with(None, &["--database-url-file", file.to_str().expect("path")]);
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "greeter").await;
    let question = run.next_suspended().await.tool_call_id;
    run.send_text(&question, "Ada").await;
    assert_eq!(run.completed_text().await, "Hello, Ada!");
    assert!(server.log().contains("postgres"), "{}", server.log());
    assert!(!server.log().contains(&database_url), "{}", server.log());
}
