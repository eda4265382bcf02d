//! Answer links end to end: a `call.suspended` webhook carries a signed link per assignee; the link
//! (a bearer credential of its own) reads its run and settles its call once, as `link:<assignee>`;
//! it is refused for another call, run or RPC, after use, after expiry, altered, or made for
//! someone who is not an assignee; every refusal leaves the call waiting.

use crate::common;

use std::time::Duration;

use askuser::auth::{AnswerLinks, LinkClaims};
use askuser::proto::v1 as pb;
use askuser::proto::v1::agent_service_client::AgentServiceClient;
use askuser::proto::v1::run_agent_request::Frame;
use askuser::proto::v1::run_agent_response::Event;
use common::credentials::{authorized, create_key, resume_as, sqlite_store};
use common::webhook_receiver::{Receiver, json};
use common::{RunStream, Server, scripted_agent_with, text_answer};
use tonic::transport::Channel;

const PUBLIC_URL: &str = "https://askuser.example.com";
const SECRET_ENV: &str = "ASKUSER_TEST_WEBHOOK_SECRET";

/// A server of `agents` with `args`, signing webhooks with a secret of its environment.
fn start_server(agents: &str, args: &[&str]) -> Server {
    Server::process_with_env(
        Some(agents),
        args,
        &[(SECRET_ENV, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")],
    )
}

/// An agent whose question names two assignees, then says what it was told.
fn agents(receiver: &Receiver, assignees: &str) -> String {
    format!(
        "{}\n[[webhook]]\nurl = \"{}\"\nevents = [\"call.suspended\"]\nsecret_env = \"{SECRET_ENV}\"\n",
        scripted_agent_with(
            "asker",
            &format!("assignees = {assignees}"),
            &[
                r#"ask = [{ question = "Ship it?" }]"#,
                r#"say = "told: {{answer.1}}""#
            ],
        ),
        receiver.url
    )
}

/// The `data` of the `call.suspended` delivery of `run_id`.
async fn suspended_data(receiver: &Receiver, run_id: &str) -> serde_json::Value {
    let received = receiver
        .wait_for("the call.suspended delivery", |received| {
            received
                .iter()
                .any(|r| json(r)["data"]["run"]["run_id"] == run_id)
        })
        .await;
    let delivery = received
        .iter()
        .map(json)
        .find(|body| body["data"]["run"]["run_id"] == run_id)
        .expect("a delivery of the run");
    assert_eq!(delivery["type"], "call.suspended");
    delivery["data"].clone()
}

/// The token of an answer URL: what follows `#`.
fn token(url: &serde_json::Value) -> String {
    let url = url.as_str().expect("an answer URL");
    let (page, token) = url.split_once('#').expect("a token after #");
    assert_eq!(page, format!("{PUBLIC_URL}/answer"), "{url}");
    assert!(token.starts_with("al1."), "{url}");
    token.to_owned()
}

/// `GetRun` as `credential`: the run, or the refusal's code and reason.
async fn get_run_as(
    client: &mut AgentServiceClient<Channel>,
    credential: &str,
    run_id: &str,
) -> Result<pb::Run, (tonic::Code, Option<String>)> {
    client
        .get_run(authorized(
            pb::GetRunRequest {
                run_id: run_id.into(),
            },
            Some(credential),
        ))
        .await
        .map(|response| response.into_inner().run.expect("run"))
        .map_err(|status| (status.code(), common::error_reason(&status)))
}

fn refusal(code: tonic::Code, reason: &str) -> (tonic::Code, Option<String>) {
    (code, Some(reason.to_owned()))
}

/// The pending call ids of `run_id`, read with `key`.
async fn pending(client: &mut AgentServiceClient<Channel>, key: &str, run_id: &str) -> Vec<String> {
    let run = get_run_as(client, key, run_id).await.expect("the run");
    run.pending_tool_calls
        .into_iter()
        .map(|call| call.tool_call_id)
        .collect()
}

/// The run once it has ended (read with `credential`, polled for up to a minute).
async fn finished(
    client: &mut AgentServiceClient<Channel>,
    credential: Option<&str>,
    run_id: &str,
) -> pb::Run {
    for _ in 0..600 {
        let run = client
            .get_run(authorized(
                pb::GetRunRequest {
                    run_id: run_id.into(),
                },
                credential,
            ))
            .await
            .expect("the run")
            .into_inner()
            .run
            .expect("run");
        if run.status == pb::RunStatus::Completed as i32 {
            return run;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("run {run_id} did not complete");
}

/// Starts `asker` as `key`; the run's id and its waiting call's.
async fn start_asker(client: &mut AgentServiceClient<Channel>, key: &str) -> (String, String) {
    let start = Frame::Start(pb::StartRun {
        agent_id: "asker".into(),
        ..Default::default()
    });
    let mut run = RunStream::open_as(client, Some(key), start)
        .await
        .expect("started");
    let first = run.next().await;
    let call = run.next_suspended().await;
    (first.run_id, call.tool_call_id)
}

#[tokio::test]
async fn an_answer_link_settles_its_own_call_once_as_its_assignee_and_opens_nothing_else() {
    let receiver = Receiver::start(0);
    let dir = std::env::temp_dir().join(format!("askuser-links-{}", common::free_port()));
    std::fs::create_dir_all(&dir).expect("dir");
    let secret_file = dir.join("link.secret");
    std::fs::write(&secret_file, "an answer link secret of at least 32 bytes\n").expect("secret");
    let server = start_server(
        &agents(&receiver, r#"["alice", "group:ops"]"#),
        &[
            "--auth",
            "keys",
            "--public-url",
            PUBLIC_URL,
            "--answer-link-secret-file",
            secret_file.to_str().expect("utf-8"),
        ],
    );
    // The key that starts runs cannot answer them: only the links do here.
    let key = create_key(
        &sqlite_store(&server),
        "acme",
        "starter",
        "runs:start,runs:read",
    );
    let mut client = server.agents().await;
    let (run_a, call_a) = start_asker(&mut client, &key).await;
    let (run_b, call_b) = start_asker(&mut client, &key).await;

    // One link per assignee; `answer_url` is the first's.
    let data = suspended_data(&receiver, &run_a).await;
    assert_eq!(data["link"], format!("{PUBLIC_URL}/runs/{run_a}#{call_a}"));
    let urls = data["answer_urls"].as_object().expect("answer_urls");
    assert_eq!(urls.len(), 2, "{data:#}");
    assert_eq!(data["answer_url"], urls["alice"]);
    assert!(data["answer_url_expire_time"].is_string(), "{data:#}");
    let alice = token(&urls["alice"]);
    let ops = token(&urls["group:ops"]);
    assert_ne!(alice, ops);
    let ops_b = token(&suspended_data(&receiver, &run_b).await["answer_urls"]["group:ops"]);

    // It reads its own run (the page shows the call from it), nothing else.
    let run = get_run_as(&mut client, &alice, &run_a)
        .await
        .expect("the link reads its run");
    assert_eq!(run.pending_tool_calls[0].tool_call_id, call_a);
    let other_call = refusal(tonic::Code::PermissionDenied, "ANSWER_LINK_OTHER_CALL");
    assert_eq!(
        get_run_as(&mut client, &alice, &run_b).await.err(),
        Some(other_call.clone())
    );
    let listed = client
        .list_runs(authorized(pb::ListRunsRequest::default(), Some(&alice)))
        .await
        .expect_err("a link lists no runs");
    assert_eq!(
        (listed.code(), common::error_reason(&listed)),
        other_call.clone()
    );
    // Not another call, even of a run it may not read.
    assert_eq!(
        resume_as(&mut client, &alice, text_answer(&run_b, &call_b, "yes"))
            .await
            .err(),
        Some(other_call.clone())
    );
    assert_eq!(
        resume_as(&mut client, &alice, text_answer(&run_a, &call_b, "yes"))
            .await
            .err(),
        Some(other_call)
    );

    // Altered: another call's claims under this link's tag, or a tag cut short.
    let (_, tag_a) = alice.rsplit_once('.').expect("tag");
    let (claims_b, _) = ops_b.rsplit_once('.').expect("tag");
    let invalid = Some(refusal(tonic::Code::Unauthenticated, "ANSWER_LINK_INVALID"));
    for altered in [
        format!("{claims_b}.{tag_a}"),
        alice[..alice.len() - 2].to_owned(),
    ] {
        let (run_id, call_id) = match altered.starts_with(claims_b) {
            true => (&run_b, &call_b),
            false => (&run_a, &call_a),
        };
        assert_eq!(
            resume_as(&mut client, &altered, text_answer(run_id, call_id, "yes"))
                .await
                .err(),
            invalid,
            "{altered}"
        );
    }

    // Signed with the server's secret, but expired, or made for someone who is not an assignee.
    let links = AnswerLinks::from_file(&secret_file, Duration::from_secs(3600)).expect("secret");
    let mint = |assignee: &str, expire_ms: i64| {
        links.sign(&LinkClaims {
            run_id: run_a.clone(),
            tool_call_id: call_a.clone(),
            tenant: "acme".into(),
            assignee: Some(assignee.into()),
            expire_ms,
        })
    };
    let now = common::now_ms();
    assert_eq!(
        resume_as(
            &mut client,
            &mint("alice", now - 1),
            text_answer(&run_a, &call_a, "yes")
        )
        .await
        .err(),
        Some(refusal(tonic::Code::Unauthenticated, "ANSWER_LINK_EXPIRED"))
    );
    assert_eq!(
        resume_as(
            &mut client,
            &mint("mallory", now + 60_000),
            text_answer(&run_a, &call_a, "yes")
        )
        .await
        .err(),
        Some(refusal(tonic::Code::PermissionDenied, "NOT_ASSIGNEE"))
    );
    // Every refusal left both calls waiting.
    assert_eq!(pending(&mut client, &key, &run_a).await, [call_a.as_str()]);
    assert_eq!(pending(&mut client, &key, &run_b).await, [call_b.as_str()]);

    // Used: settled as alice's link, and the run goes on.
    let accepted = resume_as(&mut client, &alice, text_answer(&run_a, &call_a, "ship"))
        .await
        .expect("the link answers its call");
    assert!(matches!(accepted, Event::AnswerAccepted(_)), "{accepted:?}");
    let run = finished(&mut client, Some(&key), &run_a).await;
    assert_eq!(run.output_text, "told: ship");
    let settled_by = run.settled_tool_calls[0]
        .settled_by
        .clone()
        .expect("settled by");
    assert_eq!(settled_by.subject, "link:alice");
    assert_eq!(settled_by.tenant, "acme");
    assert_eq!(settled_by.method, pb::AuthMethod::AnswerLink as i32);

    // Once: the link, and the call's other links, open nothing more.
    let used = Some(refusal(tonic::Code::PermissionDenied, "ANSWER_LINK_USED"));
    assert_eq!(get_run_as(&mut client, &alice, &run_a).await.err(), used);
    assert_eq!(get_run_as(&mut client, &ops, &run_a).await.err(), used);
    let again = resume_as(&mut client, &ops, text_answer(&run_a, &call_a, "other"))
        .await
        .expect_err("a second answer through a link");
    assert_eq!(again.0, tonic::Code::FailedPrecondition, "{again:?}");

    // A group's link settles as the group.
    resume_as(&mut client, &ops_b, text_answer(&run_b, &call_b, "later"))
        .await
        .expect("the group's link");
    let run = finished(&mut client, Some(&key), &run_b).await;
    let settled_by = run.settled_tool_calls[0].settled_by.clone().expect("by");
    assert_eq!(settled_by.subject, "link:group:ops");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn without_auth_a_sqlite_server_makes_its_own_link_secret_and_keeps_it_across_restarts() {
    let receiver = Receiver::start(0);
    let mut server = start_server(&agents(&receiver, "[]"), &["--public-url", PUBLIC_URL]);
    let mut client = server.agents().await;
    let run = RunStream::start(&mut client, "asker").await;
    let call = {
        let mut run = run;
        let call = run.next_suspended().await;
        (run.run_id, call.tool_call_id)
    };
    let data = suspended_data(&receiver, &call.0).await;
    assert!(data.get("answer_urls").is_none(), "no assignees: {data:#}");
    let link = token(&data["answer_url"]);
    let secret = server.data_dir.join("answer-link.secret");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&secret)
            .expect("the secret file")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{}", secret.display());
    }

    // The link made before the restart still works after it.
    server.restart();
    let mut client = server.agents().await;
    resume_as(&mut client, &link, text_answer(&call.0, &call.1, "ok"))
        .await
        .expect("the link answers after a restart");
    let run = finished(&mut client, None, &call.0).await;
    let settled_by = run.settled_tool_calls[0].settled_by.clone().expect("by");
    // With auth off the link is still who answered.
    assert_eq!(settled_by.subject, "link");
    assert_eq!(settled_by.method, pb::AuthMethod::AnswerLink as i32);
    // An API the link does not open is refused even with auth off.
    let listed = client
        .list_runs(authorized(pb::ListRunsRequest::default(), Some(&link)))
        .await
        .expect_err("a link lists no runs");
    assert_eq!(listed.code(), tonic::Code::PermissionDenied);
}
