//! Tenant isolation against the real server with API keys, on SQLite and on PostgreSQL: every RPC
//! that names a run of another tenant is NOT_FOUND (exactly as for a run that does not exist) and
//! changes nothing; listings, the pending-calls feed and the agents a tenant may not use show
//! nothing of the other tenant; the run's own tenant then finishes it as if nothing happened.

use crate::common;

use askuser::proto::v1 as pb;
use askuser::proto::v1::agent_service_client::AgentServiceClient;
use askuser::proto::v1::run_agent_request::Frame;
use askuser::proto::v1::run_agent_response::Event;
use common::credentials::{authorized, create_key, sqlite_store};
use common::{
    RunStream, Server, collect_frames, error_reason, fresh_database, pending_snapshot, text_answer,
};
use tonic::Code;
use tonic::transport::Channel;

const SCOPES: &str = "runs:start,runs:read,runs:answer,runs:cancel,tools:execute,agents:read";

fn agents() -> String {
    [
        common::scripted_agent(
            "asks",
            &[
                r#"ask = [{ question = "Which region?" }]"#,
                r#"say = "done""#,
            ],
        ),
        common::scripted_agent_with(
            "acme_only",
            "tenants = [\"acme\"]\ninstructions = \"Be brief.\"",
            &[r#"say = "hi""#],
        ),
    ]
    .join("\n")
}

/// Opens a `RunAgent` stream as `key`.
async fn open(
    client: &mut AgentServiceClient<Channel>,
    key: &str,
    first: Frame,
) -> Result<RunStream, tonic::Status> {
    RunStream::open_as(client, Some(key), first).await
}

fn start(agent_id: &str) -> Frame {
    Frame::Start(pb::StartRun {
        agent_id: agent_id.into(),
        prompt: "go".into(),
        ..Default::default()
    })
}

/// Starts a run of `asks` as `key` and reads it to its question: (stream, run id, call id).
async fn suspended_run(
    client: &mut AgentServiceClient<Channel>,
    key: &str,
) -> (RunStream, String, String) {
    let mut stream = open(client, key, start("asks")).await.expect("start");
    loop {
        let frame = stream
            .try_next()
            .await
            .expect("frame")
            .expect("open stream");
        if let Some(Event::ToolCallSuspended(suspended)) = frame.event {
            return (stream, frame.run_id, suspended.tool_call_id);
        }
    }
}

/// The code and `ErrorInfo` reason a call failed with; panics if it succeeded.
fn refusal<T: std::fmt::Debug>(outcome: Result<T, tonic::Status>) -> (Code, Option<String>) {
    match outcome {
        Ok(value) => panic!("expected a refusal, got {value:?}"),
        Err(status) => (status.code(), error_reason(&status)),
    }
}

/// What every run-addressed RPC answers `key` about `run_id`: one (code, reason) per RPC.
async fn run_rpcs(
    client: &mut AgentServiceClient<Channel>,
    key: &str,
    run_id: &str,
    call_id: &str,
) -> Vec<(&'static str, (Code, Option<String>))> {
    let credential = Some(key);
    let get = client
        .get_run(authorized(
            pb::GetRunRequest {
                run_id: run_id.into(),
            },
            credential,
        ))
        .await;
    let watch = match client
        .watch_run(authorized(
            pb::WatchRunRequest {
                run_id: run_id.into(),
                after_sequence: 0,
            },
            credential,
        ))
        .await
    {
        Ok(mut stream) => stream.get_mut().message().await.map(|_| ()),
        Err(status) => Err(status),
    };
    let attach = open(
        client,
        key,
        Frame::Attach(pb::AttachRun {
            run_id: run_id.into(),
            after_sequence: 0,
        }),
    )
    .await;
    let attach = match attach {
        Ok(mut stream) => stream.try_next().await.map(|_| ()),
        Err(status) => Err(status),
    };
    let resume = match client
        .resume_run(authorized(
            pb::ResumeRunRequest {
                answer: Some(text_answer(run_id, call_id, "eu-west")),
            },
            credential,
        ))
        .await
    {
        Ok(mut stream) => stream.get_mut().message().await.map(|_| ()),
        Err(status) => Err(status),
    };
    let claim = client
        .claim_call(authorized(
            pb::ClaimCallRequest {
                run_id: run_id.into(),
                tool_call_id: call_id.into(),
                ttl: None,
                claimant: "worker".into(),
            },
            credential,
        ))
        .await;
    let cancel = client
        .cancel_run(authorized(
            pb::CancelRunRequest {
                run_id: run_id.into(),
                reason: "mine now".into(),
            },
            credential,
        ))
        .await;
    vec![
        ("GetRun", refusal(get)),
        ("WatchRun", refusal(watch)),
        ("RunAgent attach", refusal(attach)),
        ("ResumeRun", refusal(resume)),
        ("ClaimCall", refusal(claim)),
        ("CancelRun", refusal(cancel)),
    ]
}

/// The runs `ListRuns` shows `key`.
async fn listed(client: &mut AgentServiceClient<Channel>, key: &str) -> Vec<String> {
    client
        .list_runs(authorized(pb::ListRunsRequest::default(), Some(key)))
        .await
        .expect("list runs")
        .into_inner()
        .runs
        .into_iter()
        .map(|run| run.run_id)
        .collect()
}

/// The runs whose calls the pending-calls feed's snapshot shows `key`.
async fn pending_runs(client: &mut AgentServiceClient<Channel>, key: &str) -> Vec<String> {
    let request = pb::WatchPendingCallsRequest::default();
    let calls = pending_snapshot(client, Some(key), request).await;
    calls.into_iter().map(|pending| pending.run_id).collect()
}

async fn agents_listed(client: &mut AgentServiceClient<Channel>, key: &str) -> Vec<pb::Agent> {
    client
        .list_agents(authorized(pb::ListAgentsRequest {}, Some(key)))
        .await
        .expect("list agents")
        .into_inner()
        .agents
}

async fn agent_ids(client: &mut AgentServiceClient<Channel>, key: &str) -> Vec<String> {
    let agents = agents_listed(client, key).await;
    agents.into_iter().map(|agent| agent.agent_id).collect()
}

/// The instructions of the agents `ListAgents` shows `key`, in order.
async fn instructions(client: &mut AgentServiceClient<Channel>, key: &str) -> Vec<String> {
    let agents = agents_listed(client, key).await;
    agents.into_iter().map(|agent| agent.instructions).collect()
}

/// The isolation scenario on a server with a PostgreSQL store (`database_url`), or its own SQLite
/// file.
async fn tenants_are_isolated(database_url: Option<&str>) {
    let mut args = vec!["--auth", "keys"];
    args.extend(database_url.iter().flat_map(|url| ["--database-url", url]));
    let server = Server::start_with(Some(&agents()), &args);
    let store = match database_url {
        Some(url) => ["--database-url", url],
        None => sqlite_store(&server),
    };
    let acme = create_key(&store, "acme", "acme", SCOPES);
    let globex = create_key(&store, "globex", "globex", SCOPES);
    let mut client = server.agents().await;

    let (mut stream, run_id, call_id) = suspended_run(&mut client, &acme).await;

    // Every RPC on acme's run answers globex exactly as on a run that does not exist.
    let foreign = run_rpcs(&mut client, &globex, &run_id, &call_id).await;
    let missing = run_rpcs(&mut client, &globex, "no-such-run", &call_id).await;
    for ((rpc, refused), (_, absent)) in foreign.iter().zip(&missing) {
        assert_eq!(refused.0, Code::NotFound, "{rpc}: {refused:?}");
        assert_eq!(
            refused.1, absent.1,
            "{rpc}: the reason tells the runs apart"
        );
    }
    assert_eq!(listed(&mut client, &globex).await, Vec::<String>::new());
    assert_eq!(
        pending_runs(&mut client, &globex).await,
        Vec::<String>::new()
    );

    // An agent kept for acme is, to globex, no agent at all.
    assert_eq!(agent_ids(&mut client, &globex).await, ["asks"]);
    assert_eq!(agent_ids(&mut client, &acme).await, ["acme_only", "asks"]);
    // Agents' instructions are for `admin` only.
    assert_eq!(instructions(&mut client, &acme).await, ["", ""]);
    let admin = create_key(&store, "acme", "admin", &format!("{SCOPES},admin"));
    assert_eq!(instructions(&mut client, &admin).await, ["Be brief.", ""]);
    let mut refused = open(&mut client, &globex, start("acme_only")).await;
    let code = match refused.as_mut() {
        Ok(stream) => stream.try_next().await.map(|_| ()).err().map(|s| s.code()),
        Err(status) => Some(status.code()),
    };
    assert_eq!(code, Some(Code::NotFound));

    // Nothing changed: acme sees its run, still waiting, and answers it.
    assert_eq!(listed(&mut client, &acme).await, [run_id.as_str()]);
    assert_eq!(pending_runs(&mut client, &acme).await, [run_id.as_str()]);
    let run = client
        .get_run(authorized(
            pb::GetRunRequest {
                run_id: run_id.clone(),
            },
            Some(&acme),
        ))
        .await
        .expect("get own run")
        .into_inner()
        .run
        .expect("run");
    assert_eq!(run.status, pb::RunStatus::Suspended as i32);
    let pending: Vec<&str> = run
        .pending_tool_calls
        .iter()
        .map(|c| c.tool_call_id.as_str())
        .collect();
    assert_eq!(pending, [call_id.as_str()]);
    stream
        .sender
        .send(pb::RunAgentRequest {
            frame: Some(Frame::Answer(text_answer(&run_id, &call_id, "eu-west"))),
        })
        .await
        .expect("answer");
    drop(stream.sender);
    let frames = collect_frames(&mut stream.inbound).await;
    let settled_by = frames.iter().find_map(|frame| match &frame.event {
        Some(Event::ToolResult(result)) => result.settled_by.clone(),
        _ => None,
    });
    assert_eq!(
        settled_by.map(|by| (by.tenant, by.method)),
        Some(("acme".to_owned(), pb::AuthMethod::ApiKey as i32))
    );
    assert!(
        frames.iter().any(
            |f| matches!(&f.event, Some(Event::RunCompleted(done)) if done.output_text == "done")
        ),
        "{frames:?}"
    );
}

#[tokio::test]
async fn tenants_are_isolated_on_sqlite() {
    tenants_are_isolated(None).await;
}

#[tokio::test]
async fn tenants_are_isolated_on_postgresql() {
    let Some(url) = fresh_database().await else {
        return;
    };
    tenants_are_isolated(Some(&url)).await;
}

/// `ClaimCall` of `call_id` on `run_id` as `key` for `claimant`.
async fn claim(
    client: &mut AgentServiceClient<Channel>,
    key: &str,
    run_id: &str,
    call_id: &str,
    claimant: &str,
) -> Result<pb::ClaimCallResponse, tonic::Status> {
    client
        .claim_call(authorized(
            pb::ClaimCallRequest {
                run_id: run_id.into(),
                tool_call_id: call_id.into(),
                ttl: None,
                claimant: claimant.into(),
            },
            Some(key),
        ))
        .await
        .map(tonic::Response::into_inner)
}

/// A claim is its principal's: another key of the same tenant sending the claimant name the feed
/// shows does not renew (take over) it.
async fn claims_belong_to_their_principal(database_url: Option<&str>) {
    let mut args = vec!["--auth", "keys"];
    args.extend(database_url.iter().flat_map(|url| ["--database-url", url]));
    let server = Server::start_with(Some(&agents()), &args);
    let store = match database_url {
        Some(url) => ["--database-url", url],
        None => sqlite_store(&server),
    };
    let first = create_key(&store, "acme", "worker-a", SCOPES);
    let second = create_key(&store, "acme", "worker-b", SCOPES);
    let mut client = server.agents().await;
    let (_stream, run_id, call_id) = suspended_run(&mut client, &first).await;

    claim(&mut client, &first, &run_id, &call_id, "w1")
        .await
        .expect("first claim");
    let taken = claim(&mut client, &second, &run_id, &call_id, "w1").await;
    assert_eq!(
        refusal(taken),
        (Code::FailedPrecondition, Some("ALREADY_CLAIMED".into()))
    );
    claim(&mut client, &first, &run_id, &call_id, "w1")
        .await
        .expect("the holder renews its claim");
}

#[tokio::test]
async fn claims_belong_to_their_principal_on_sqlite() {
    claims_belong_to_their_principal(None).await;
}

#[tokio::test]
async fn claims_belong_to_their_principal_on_postgresql() {
    let Some(url) = fresh_database().await else {
        return;
    };
    claims_belong_to_their_principal(Some(&url)).await;
}

/// The status of `outcome` as (code, reason, `ErrorInfo.metadata["scope"]`); panics if it
/// succeeded.
fn scope_refusal<T: std::fmt::Debug>(
    outcome: Result<T, tonic::Status>,
) -> (Code, Option<String>, Option<String>) {
    use tonic_types::StatusExt;
    let status = outcome.expect_err("expected a refusal");
    let scope = status
        .get_details_error_info()
        .and_then(|info| info.metadata.get("scope").cloned());
    (status.code(), error_reason(&status), scope)
}

fn key_request(tenant: &str, name: &str, scopes: &[&str]) -> pb::CreateKeyRequest {
    pb::CreateKeyRequest {
        tenant: tenant.into(),
        name: name.into(),
        scopes: scopes.iter().map(|scope| scope.to_string()).collect(),
    }
}

/// The id of the key named `name` in `askuser keys list`.
fn offline_key_id(server: &Server, name: &str) -> String {
    common::credentials::keys(server, &["list"])
        .lines()
        .find(|line| line.split('\t').nth(2) == Some(name))
        .and_then(|line| line.split('\t').next())
        .expect("the key is listed")
        .to_owned()
}

#[tokio::test]
async fn an_admin_manages_only_its_own_tenants_keys_and_reads_only_its_runs() {
    use askuser::proto::v1::admin_service_client::AdminServiceClient;
    let server = Server::start_with(Some(&agents()), &["--auth", "keys"]);
    let store = sqlite_store(&server);
    let acme = create_key(&store, "acme", "acme", SCOPES);
    let acme_admin = create_key(&store, "acme", "acme-admin", "admin");
    let globex_admin = create_key(&store, "globex", "globex-admin", "admin");
    let operator = create_key(&store, "ops", "operator", "operator");
    let mut client = server.agents().await;
    let mut admin = AdminServiceClient::new(server.channel().await);
    let (_stream, run_id, _call_id) = suspended_run(&mut client, &acme).await;

    // globex's admin: no key for acme, no operator key, none of acme's keys listed or revoked.
    let for_acme = admin
        .create_key(authorized(
            key_request("acme", "sneaky", &["runs:read"]),
            Some(&globex_admin),
        ))
        .await;
    let operator_scope = Some("operator".to_owned());
    assert_eq!(
        scope_refusal(for_acme),
        (
            Code::PermissionDenied,
            Some("MISSING_SCOPE".into()),
            operator_scope.clone()
        )
    );
    let escalate = admin
        .create_key(authorized(
            key_request("globex", "escalate", &["operator"]),
            Some(&globex_admin),
        ))
        .await;
    assert_eq!(
        scope_refusal(escalate),
        (
            Code::PermissionDenied,
            Some("MISSING_SCOPE".into()),
            operator_scope
        )
    );
    let listed_tenants: Vec<String> = admin
        .list_keys(authorized(pb::ListKeysRequest {}, Some(&globex_admin)))
        .await
        .expect("list keys")
        .into_inner()
        .keys
        .into_iter()
        .map(|key| key.tenant)
        .collect();
    assert_eq!(listed_tenants, ["globex"]);
    let acme_admin_id = offline_key_id(&server, "acme-admin");
    let revoke = admin
        .revoke_key(authorized(
            pb::RevokeKeyRequest {
                key_id: acme_admin_id.clone(),
            },
            Some(&globex_admin),
        ))
        .await;
    assert_eq!(
        refusal(revoke),
        (Code::NotFound, Some("KEY_NOT_FOUND".into()))
    );
    // Its own tenant's keys it does manage.
    admin
        .create_key(authorized(
            key_request("globex", "reader", &["runs:read"]),
            Some(&globex_admin),
        ))
        .await
        .expect("a key of its own tenant");

    // Nor does it read acme's runs or deliveries.
    let get = client
        .get_run(authorized(
            pb::GetRunRequest {
                run_id: run_id.clone(),
            },
            Some(&globex_admin),
        ))
        .await;
    assert_eq!(refusal(get), (Code::NotFound, Some("RUN_NOT_FOUND".into())));
    assert_eq!(
        listed(&mut client, &globex_admin).await,
        Vec::<String>::new()
    );
    assert_eq!(
        pending_runs(&mut client, &globex_admin).await,
        Vec::<String>::new()
    );
    let deliveries = admin
        .list_webhook_deliveries(authorized(
            pb::ListWebhookDeliveriesRequest {
                run_id: run_id.clone(),
                ..Default::default()
            },
            Some(&globex_admin),
        ))
        .await
        .expect("list deliveries")
        .into_inner()
        .deliveries;
    assert!(deliveries.is_empty(), "{deliveries:?}");

    // acme's admin still works: nothing of acme changed.
    assert_eq!(listed(&mut client, &acme_admin).await, [run_id.as_str()]);

    // The operator manages every tenant's keys, and the key it made for acme acts in acme.
    let made = admin
        .create_key(authorized(
            key_request("acme", "made-by-operator", &["runs:read"]),
            Some(&operator),
        ))
        .await
        .expect("the operator makes a key for acme")
        .into_inner();
    assert_eq!(listed(&mut client, &made.secret).await, [run_id.as_str()]);
    let mut every_tenant: Vec<String> = admin
        .list_keys(authorized(pb::ListKeysRequest {}, Some(&operator)))
        .await
        .expect("list keys")
        .into_inner()
        .keys
        .into_iter()
        .map(|key| key.tenant)
        .collect();
    every_tenant.sort();
    every_tenant.dedup();
    assert_eq!(every_tenant, ["acme", "globex", "ops"]);
    admin
        .revoke_key(authorized(
            pb::RevokeKeyRequest {
                key_id: acme_admin_id,
            },
            Some(&operator),
        ))
        .await
        .expect("the operator revokes acme's key");
    // Runs stay per tenant, even for the operator.
    assert_eq!(listed(&mut client, &operator).await, Vec::<String>::new());
}

/// Idle pending-calls feeds a tenant holds open.
const IDLE_FEEDS: usize = 20;

/// A feed as `key`, read to the end of its snapshot.
async fn idle_feed(
    client: &mut AgentServiceClient<Channel>,
    key: &str,
) -> tonic::Streaming<pb::WatchPendingCallsResponse> {
    let request = authorized(pb::WatchPendingCallsRequest::default(), Some(key));
    let mut feed = client
        .watch_pending_calls(request)
        .await
        .expect("watch pending calls")
        .into_inner();
    while !matches!(
        next_feed_event(&mut feed).await,
        pb::watch_pending_calls_response::Event::SnapshotDone(_)
    ) {}
    feed
}

async fn next_feed_event(
    feed: &mut tonic::Streaming<pb::WatchPendingCallsResponse>,
) -> pb::watch_pending_calls_response::Event {
    tokio::time::timeout(common::FRAME_TIMEOUT, feed.message())
        .await
        .expect("timed out waiting for the feed")
        .expect("feed")
        .expect("feed open")
        .event
        .expect("an event")
}

/// The store reads the pending-calls feeds have made so far, from the metrics.
async fn feed_reads(metrics_addr: &str) -> f64 {
    let scrape = common::scrape_metrics(metrics_addr).await;
    common::metric_sample(&scrape, "askuser_pending_feed_store_reads_total").unwrap_or(0.0)
}

/// Before, every feed read the store again for every commit of every tenant, so one tenant's idle
/// feeds slowed all the others; now a commit is read once, for its own tenant's feeds only.
#[tokio::test]
async fn idle_feeds_of_one_tenant_make_no_store_reads_for_another_tenants_commits() {
    let metrics_addr = format!("127.0.0.1:{}", common::free_port());
    let server = Server::process_with(
        Some(&agents()),
        &["--auth", "keys", "--metrics-listen", &metrics_addr],
    );
    let store = sqlite_store(&server);
    let acme = create_key(&store, "acme", "acme", SCOPES);
    let globex = create_key(&store, "globex", "globex", SCOPES);
    let mut client = server.agents().await;
    let mut feeds = Vec::new();
    for _ in 0..IDLE_FEEDS {
        feeds.push(idle_feed(&mut client, &acme).await);
    }
    let before = feed_reads(&metrics_addr).await;

    // Globex's round trips: each commit of a suspension and of an answer.
    for _ in 0..5 {
        let (mut stream, run_id, call_id) = suspended_run(&mut client, &globex).await;
        stream.send(text_answer(&run_id, &call_id, "eu")).await;
        while stream.try_next().await.expect("frame").is_some() {}
    }
    // Then acme's own question: once every feed has sent it, every feed has seen every commit
    // before it.
    let (_stream, run_id, _) = suspended_run(&mut client, &acme).await;
    for feed in &mut feeds {
        loop {
            if let pb::watch_pending_calls_response::Event::CallPending(pending) =
                next_feed_event(feed).await
                && pending.run_id == run_id
            {
                break;
            }
        }
    }
    let reads = feed_reads(&metrics_addr).await - before;
    assert_eq!(
        reads, 1.0,
        "acme's question is read once for its {IDLE_FEEDS} feeds, and none of globex's commits"
    );
}
