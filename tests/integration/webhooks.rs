//! Webhooks against a local receiver: retries with one `webhook-id`, signatures, deliveries that
//! survive a SIGKILL, reminders, per-run URLs refused unless allowed, listing and redelivery, and
//! three replicas on PostgreSQL that never attempt one delivery at once.

use crate::common;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use askuser::proto::v1 as pb;
use askuser::proto::v1::admin_service_client::AdminServiceClient;
use askuser::proto::v1::run_agent_request::Frame;
use base64::Engine;
use common::credentials::{authorized, create_key, sqlite_store};
use common::webhook_receiver::{Received, Receiver, json};
use common::{RunStream, Server, fresh_database, report_figures, scripted_agent_with};

/// A Standard Webhooks secret: `whsec_` and the base64 of its key.
const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const SECRET_ENV: &str = "ASKUSER_TEST_WEBHOOK_SECRET";

/// Whether `received` is signed with [`SECRET`], checked by hand (HMAC-SHA256 of
/// `id.timestamp.body`), not by the library that signed it.
fn signature_verifies(received: &Received) -> bool {
    signed_with(received, SECRET)
}

/// Whether one of the signatures of `received` is made with `secret`.
fn signed_with(received: &Received, secret: &str) -> bool {
    let key = base64::engine::general_purpose::STANDARD
        .decode(secret.trim_start_matches("whsec_"))
        .expect("secret");
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key);
    let signed = format!("{}.{}.{}", received.id, received.timestamp, received.body);
    let expected = base64::engine::general_purpose::STANDARD
        .encode(ring::hmac::sign(&key, signed.as_bytes()).as_ref());
    received
        .signature
        .split(' ')
        .any(|signature| signature == format!("v1,{expected}"))
}

/// An agent that asks once (its question expiring after `ttl`), then completes.
fn asking_agent(ttl: &str) -> String {
    scripted_agent_with(
        "asker",
        &format!("question_ttl = \"{ttl}\""),
        &[r#"ask = [{ question = "Deploy?" }]"#, r#"say = "done""#],
    )
}

fn webhook_table(url: &str, events: &[&str]) -> String {
    let events: Vec<String> = events.iter().map(|e| format!("\"{e}\"")).collect();
    format!(
        "[[webhook]]\nurl = \"{url}\"\nevents = [{}]\nsecret_env = \"{SECRET_ENV}\"\n",
        events.join(", ")
    )
}

fn start_server(agents: &str, args: &[&str]) -> Server {
    Server::process_with_env(Some(agents), args, &[(SECRET_ENV, SECRET)])
}

async fn admin(server: &Server) -> AdminServiceClient<tonic::transport::Channel> {
    AdminServiceClient::new(server.channel().await)
}

async fn deliveries(server: &Server, run_id: &str) -> Vec<pb::WebhookDelivery> {
    admin(server)
        .await
        .list_webhook_deliveries(pb::ListWebhookDeliveriesRequest {
            run_id: run_id.into(),
            ..Default::default()
        })
        .await
        .expect("list deliveries")
        .into_inner()
        .deliveries
}

/// Opens a run with `start`; its status when refused.
async fn open_run(
    client: &mut askuser::proto::v1::agent_service_client::AgentServiceClient<
        tonic::transport::Channel,
    >,
    start: Frame,
) -> Result<RunStream, tonic::Status> {
    let mut run = RunStream::open(client, start).await?;
    let first = run.inbound.message().await?.expect("a first frame");
    run.run_id = first.run_id;
    Ok(run)
}

fn of_type<'a>(received: &'a [Received], event_type: &str) -> Vec<&'a Received> {
    received
        .iter()
        .filter(|r| json(r)["type"] == event_type)
        .collect()
}

#[tokio::test]
async fn a_failing_receiver_gets_one_signed_delivery_until_it_accepts_and_can_have_it_again() {
    let receiver = Receiver::start(3);
    let agents = format!(
        "{}\n{}",
        asking_agent("1h"),
        webhook_table(&receiver.url, &["call.suspended"])
    );
    let metrics_addr = format!("127.0.0.1:{}", common::free_port());
    let server = start_server(
        &agents,
        &[
            "--webhook-initial-backoff",
            "100ms",
            "--public-url",
            "https://askuser.example.com",
            "--metrics-listen",
            &metrics_addr,
        ],
    );
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "asker").await;
    let suspended = run.next_suspended().await;

    let received = receiver
        .wait_for("a delivery accepted after three failures", |r| r.len() >= 4)
        .await;
    let ids: HashSet<&str> = received.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids.len(), 1, "one webhook-id on every attempt: {ids:?}");
    assert!(received.iter().all(signature_verifies), "{received:#?}");
    let body = json(&received[3]);
    assert_eq!(body["type"], "call.suspended");
    assert_eq!(body["data"]["run"]["run_id"], run.run_id);
    assert_eq!(body["data"]["run"]["agent_id"], "asker");
    assert_eq!(
        body["data"]["event"]["toolCallSuspended"]["toolCallId"],
        suspended.tool_call_id
    );
    assert_eq!(
        body["data"]["link"],
        format!(
            "https://askuser.example.com/runs/{}#{}",
            run.run_id, suspended.tool_call_id
        )
    );

    let listed = deliveries(&server, &run.run_id).await;
    assert_eq!(listed.len(), 1, "{listed:#?}");
    assert_eq!(listed[0].webhook_id, received[0].id);
    assert_eq!(listed[0].attempts, 4);
    assert_eq!(
        listed[0].status,
        i32::from(pb::WebhookDeliveryStatus::Delivered)
    );
    // Each attempt is counted, as it went.
    let scrape = common::scrape_metrics(&metrics_addr).await;
    let sample =
        |name: &str| common::metric_sample(&scrape, &format!("{name}{{event=\"call.suspended\"}}"));
    assert_eq!(sample("askuser_webhook_delivery_failures_total"), Some(3.0));
    assert_eq!(sample("askuser_webhook_deliveries_total"), Some(1.0));

    // Redelivered: pending again, and sent again with the same id.
    let redelivered = admin(&server)
        .await
        .redeliver_webhook(pb::RedeliverWebhookRequest {
            webhook_id: listed[0].webhook_id.clone(),
        })
        .await
        .expect("redeliver")
        .into_inner()
        .delivery
        .expect("delivery");
    assert_eq!(
        redelivered.status,
        i32::from(pb::WebhookDeliveryStatus::Pending)
    );
    let received = receiver.wait_for("the redelivery", |r| r.len() >= 5).await;
    assert_eq!(received[4].id, listed[0].webhook_id);
    let missing = admin(&server)
        .await
        .redeliver_webhook(pb::RedeliverWebhookRequest {
            webhook_id: "no-such-delivery".into(),
        })
        .await
        .expect_err("no such delivery");
    assert_eq!(missing.code(), tonic::Code::NotFound);
    report_figures(
        "webhook retries",
        &[
            ("attempts_until_accepted", u64::from(listed[0].attempts)),
            ("requests_received", received.len() as u64),
        ],
    );
}

#[tokio::test]
async fn per_run_webhooks_need_an_allowed_url() {
    let receiver = Receiver::start(0);
    let agents = asking_agent("1h");
    let start = |url: &str| {
        Frame::Start(pb::StartRun {
            agent_id: "asker".into(),
            prompt: "go".into(),
            webhooks: vec![pb::WebhookSubscription {
                url: url.into(),
                events: vec!["call.suspended".into()],
            }],
            ..Default::default()
        })
    };

    // A server without --webhook-allow takes none.
    let closed = start_server(&agents, &[]);
    let Err(refused) = open_run(&mut closed.agents().await, start(&receiver.url)).await else {
        panic!("per-run webhooks taken without --webhook-allow");
    };
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    let fields: Vec<String> = common::field_violations(&refused)
        .into_iter()
        .map(|(field, _)| field)
        .collect();
    assert_eq!(fields, ["start.webhooks[0].url"]);

    let allow = format!("{}/", receiver.url.trim_end_matches("/hook"));
    let open = start_server(
        &agents,
        &[
            "--webhook-allow",
            &allow,
            "--webhook-secret-env",
            SECRET_ENV,
            // The receiver listens on 127.0.0.1.
            "--webhook-deny-private=false",
        ],
    );
    let mut client = open.agents().await;
    let Err(refused) = open_run(&mut client, start("http://169.254.169.254/latest")).await else {
        panic!("a URL no pattern allows was taken");
    };
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    let fields: Vec<String> = common::field_violations(&refused)
        .into_iter()
        .map(|(field, _)| field)
        .collect();
    assert_eq!(fields, ["start.webhooks[0].url"]);

    // An allowed one is delivered, signed with the server's secret.
    let Ok(_run) = open_run(&mut client, start(&receiver.url)).await else {
        panic!("an allowed URL was refused");
    };
    let received = receiver
        .wait_for("the per-run delivery", |r| !r.is_empty())
        .await;
    assert!(signature_verifies(&received[0]));
    assert_eq!(json(&received[0])["type"], "call.suspended");
}

#[tokio::test]
async fn a_reminder_fires_before_the_question_expires() {
    let receiver = Receiver::start(0);
    let agents = format!(
        "{}\n{}",
        asking_agent("6s"),
        webhook_table(&receiver.url, &["call.reminder", "call.settled"])
    );
    let server = start_server(&agents, &["--webhook-reminders", "0.25"]);
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "asker").await;
    let suspended = run.next_suspended().await;
    let expire_ms = common::timestamp_ms(suspended.expire_time.as_ref().expect("expires"));

    let received = receiver
        .wait_for("the reminder and the expiry", |r| {
            !of_type(r, "call.reminder").is_empty() && !of_type(r, "call.settled").is_empty()
        })
        .await;
    let reminder = of_type(&received, "call.reminder")[0].clone();
    let settled = of_type(&received, "call.settled")[0].clone();
    assert!(
        reminder.at_ms < expire_ms,
        "the reminder came at {} after the expiry at {expire_ms}",
        reminder.at_ms
    );
    assert!(reminder.id.ends_with(":r250"), "{}", reminder.id);
    assert_eq!(json(&reminder)["data"]["reminder"]["fraction"], 0.25);
    assert_eq!(
        json(&settled)["data"]["event"]["toolResult"]["kind"],
        "TOOL_RESULT_KIND_EXPIRED"
    );
    report_figures(
        "webhook reminder",
        &[(
            "ms_before_expiry",
            u64::try_from(expire_ms - reminder.at_ms).unwrap_or(0),
        )],
    );
}

#[tokio::test]
async fn a_delivery_committed_before_a_sigkill_is_delivered_after_the_restart() {
    // The receiver's port, closed for now: every attempt fails until it opens.
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = port.local_addr().expect("addr");
    drop(port);
    let url = format!("http://{addr}/hook");
    let agents = format!(
        "{}\n{}",
        asking_agent("1h"),
        webhook_table(&url, &["call.suspended"])
    );
    let mut server = start_server(&agents, &["--webhook-initial-backoff", "100ms"]);
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "asker").await;
    run.next_suspended().await;
    let run_id = run.run_id.clone();
    drop(run);
    let mut before = Vec::new();
    for _ in 0..300 {
        before = deliveries(&server, &run_id).await;
        if before.first().is_some_and(|d| d.attempts >= 1) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(before.len(), 1, "{before:#?}");
    assert!(!before[0].last_error.is_empty(), "{before:#?}");

    server.kill();
    let receiver = Receiver::serve(std::net::TcpListener::bind(addr).expect("rebind"), 0);
    server.restart();
    let received = receiver
        .wait_for("the delivery after the restart", |r| !r.is_empty())
        .await;
    assert_eq!(received[0].id, before[0].webhook_id);
    assert!(signature_verifies(&received[0]));
    let after = deliveries(&server, &run_id).await;
    assert_eq!(
        after[0].status,
        i32::from(pb::WebhookDeliveryStatus::Delivered)
    );
    report_figures(
        "webhook after sigkill",
        &[("attempts", u64::from(after[0].attempts))],
    );
}

#[tokio::test]
async fn three_replicas_deliver_each_event_and_never_one_at_once() {
    const RUNS: usize = 12;
    let Some(database_url) = fresh_database().await else {
        return;
    };
    let receiver = Receiver::start(0);
    let agents = format!(
        "{}\n{}",
        scripted_agent_with(
            "asker",
            "",
            &[r#"ask = [{ question = "Deploy?" }]"#, r#"say = "done""#]
        ),
        webhook_table(&receiver.url, &[])
    );
    let replicas: Vec<Server> = (0..3)
        .map(|_| start_server(&agents, &["--database-url", &database_url]))
        .collect();
    let mut run_ids = Vec::new();
    for index in 0..RUNS {
        let replica = &replicas[index % replicas.len()];
        let mut client = replica.agents().await;
        let mut run = RunStream::start(&mut client, "asker").await;
        let suspended = run.next_suspended().await;
        run.send_text(&suspended.tool_call_id, "yes").await;
        run.completed_text().await;
        run_ids.push(run.run_id.clone());
    }
    let mut expected: HashSet<String> = HashSet::new();
    for run_id in &run_ids {
        for delivery in deliveries(&replicas[0], run_id).await {
            expected.insert(delivery.webhook_id);
        }
    }
    // A suspension, its settling and the completion, per run.
    assert_eq!(expected.len(), RUNS * 3, "{expected:?}");
    let received = receiver
        .wait_for("every delivery", |r| {
            let ids: HashSet<&str> = r.iter().map(|r| r.id.as_str()).collect();
            expected.iter().all(|id| ids.contains(id.as_str()))
        })
        .await;
    let mut per_id: HashMap<&str, u64> = HashMap::new();
    for r in &received {
        *per_id.entry(r.id.as_str()).or_default() += 1;
    }
    assert_eq!(receiver.overlaps(), 0, "an id attempted by two at once");
    assert!(received.iter().all(signature_verifies));
    report_figures(
        "webhooks on three replicas",
        &[
            ("deliveries", expected.len() as u64),
            ("requests", received.len() as u64),
            ("overlapping", receiver.overlaps() as u64),
            (
                "sent_twice",
                per_id.values().filter(|count| **count > 1).count() as u64,
            ),
        ],
    );
}

/// A start with one per-run subscription to `url`, asking for `call.suspended`.
fn start_with_webhook(url: &str) -> Frame {
    Frame::Start(pb::StartRun {
        agent_id: "asker".into(),
        prompt: "go".into(),
        webhooks: vec![pb::WebhookSubscription {
            url: url.into(),
            events: vec!["call.suspended".into()],
        }],
        ..Default::default()
    })
}

/// The fields of a refusal's violations.
fn violated_fields(status: &tonic::Status) -> Vec<String> {
    common::field_violations(status)
        .into_iter()
        .map(|(field, _)| field)
        .collect()
}

/// Waits (up to a minute) until the run's deliveries are all done with (not pending).
async fn settled_deliveries(server: &Server, run_id: &str) -> Vec<pb::WebhookDelivery> {
    for _ in 0..600 {
        let listed = deliveries(server, run_id).await;
        let pending = pb::WebhookDeliveryStatus::Pending as i32;
        if !listed.is_empty() && listed.iter().all(|d| d.status != pending) {
            return listed;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the deliveries of {run_id} stayed pending");
}

/// Issue 22, 2: a pattern binds scheme, host (`*.` one whole label), port and a path prefix on
/// segment boundaries after normalisation. The text-glob matcher let
/// `http://127.0.0.1:<port>/.hooks.example.com/x` through `http://*.hooks.example.com/*` (the POST
/// went to 127.0.0.1), and `/hook/../redirect` through `…/hook/`.
#[tokio::test]
async fn allow_patterns_bind_the_host_and_the_path_and_refuse_userinfo() {
    let receiver = Receiver::start(0);
    let origin = receiver.url.trim_end_matches("/hook").to_owned();
    let allow = format!("http://*.hooks.example.com/*,{origin}/hook/");
    let server = start_server(
        &asking_agent("1h"),
        &[
            "--webhook-allow",
            &allow,
            "--webhook-secret-env",
            SECRET_ENV,
            "--webhook-deny-private=false",
        ],
    );
    let mut client = server.agents().await;
    for url in [
        format!("{origin}/.hooks.example.com/x"),
        format!("{origin}/?.hooks.example.com/x"),
        format!("{origin}/#.hooks.example.com/x"),
        format!("{origin}/hook/../redirect"),
        format!("{origin}/hook/%2e%2e/x"),
        format!("{origin}/hook/.%2E/x"),
        format!("{origin}/hookx"),
        format!("http://a.hooks.example.com@{}/hook/x", &origin[7..]),
        format!("http://user:pw@{}/hook/x", &origin[7..]),
        "http://a.b.hooks.example.com/x".to_owned(),
        "https://a.hooks.example.com/x".to_owned(),
    ] {
        match open_run(&mut client, start_with_webhook(&url)).await {
            Err(refused) => {
                assert_eq!(refused.code(), tonic::Code::InvalidArgument, "{url}");
                assert_eq!(
                    violated_fields(&refused),
                    ["start.webhooks[0].url"],
                    "{url}"
                );
            }
            Ok(run) => panic!("{url} was allowed (run {})", run.run_id),
        }
    }
    // What the patterns do allow still is, and a path that normalises into /hook/ is delivered
    // to its normalised form.
    let run = open_run(
        &mut client,
        start_with_webhook(&format!("{origin}/elsewhere/../hook")),
    )
    .await
    .expect("an allowed URL");
    receiver
        .wait_for("the allowed delivery", |r| !r.is_empty())
        .await;
    assert_eq!(deliveries(&server, &run.run_id).await[0].url, receiver.url);
}

/// Issue 22, 2: with `--webhook-deny-private` (on by default) a client's webhook does not reach a
/// loopback address, even through a name that resolves to one, and the listing says so in one
/// fixed message whether something listens there or not (no port scan through `last_error`).
#[tokio::test]
async fn a_private_destination_is_refused_at_delivery_with_one_message_for_open_and_closed_ports() {
    let receiver = Receiver::start(0);
    let port = receiver.url.trim_start_matches("http://127.0.0.1:");
    let port = port.trim_end_matches("/hook");
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let allow = format!("http://localhost:{port}/,http://127.0.0.1:{closed}/,http://[::1]:{port}/");
    let server = start_server(
        &asking_agent("1h"),
        &[
            "--webhook-allow",
            &allow,
            "--webhook-secret-env",
            SECRET_ENV,
        ],
    );
    let mut client = server.agents().await;
    let mut errors = Vec::new();
    for url in [
        format!("http://localhost:{port}/hook"),
        format!("http://127.0.0.1:{closed}/hook"),
        format!("http://[::1]:{port}/hook"),
    ] {
        let run = open_run(&mut client, start_with_webhook(&url))
            .await
            .expect("the allow-list lets it start");
        let listed = settled_deliveries(&server, &run.run_id).await;
        assert_eq!(listed.len(), 1);
        assert_eq!(
            listed[0].status,
            pb::WebhookDeliveryStatus::Dead as i32,
            "{url}: {:?}",
            listed[0]
        );
        errors.push(listed[0].last_error.clone());
    }
    assert!(
        receiver.received().is_empty(),
        "a loopback receiver got a client's webhook"
    );
    assert!(errors[0].contains("--webhook-deny-private"), "{errors:?}");
    assert!(
        errors.iter().all(|error| *error == errors[0]),
        "open and closed ports read differently: {errors:?}"
    );
}

/// Issue 22, 8: a start's webhook URL is at most `--max-webhook-url-bytes` (2048), and a delivery
/// row refers to its run's subscription instead of copying its URL (a 300 KB URL was taken, and
/// copied into every delivery).
#[tokio::test]
async fn webhook_urls_are_bounded_and_stored_once_per_run() {
    let receiver = Receiver::start(0);
    let origin = receiver.url.trim_end_matches("/hook").to_owned();
    let server = start_server(
        &asking_agent("1h"),
        &[
            "--webhook-allow",
            &format!("{origin}/"),
            "--webhook-secret-env",
            SECRET_ENV,
            "--webhook-deny-private=false",
        ],
    );
    let mut client = server.agents().await;
    let huge = format!("{}/{}", receiver.url, "a".repeat(300 * 1024));
    let refused = open_run(&mut client, start_with_webhook(&huge))
        .await
        .err()
        .expect("a 300 KB URL was taken");
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    assert_eq!(violated_fields(&refused), ["start.webhooks[0].url"]);

    let marker = "m".repeat(1500);
    let url = format!("{}/{marker}", receiver.url);
    let mut run = open_run(&mut client, start_with_webhook(&url))
        .await
        .expect("a 1.5 KB URL");
    // The suspension's delivery is written with it.
    run.next_suspended().await;
    let listed = deliveries(&server, &run.run_id).await;
    assert_eq!(
        listed[0].url, url,
        "the listing names the subscription's URL"
    );
    let conn = rusqlite::Connection::open(server.data_path().join("askuser.sqlite3"))
        .expect("open the store");
    let mut select = conn
        .prepare("SELECT * FROM webhook_deliveries")
        .expect("select deliveries");
    let columns = select.column_count();
    let rows: Vec<Vec<String>> = select
        .query_map([], |row| {
            (0..columns)
                .map(|i| row.get::<_, rusqlite::types::Value>(i))
                .map(|value| value.map(|value| format!("{value:?}")))
                .collect()
        })
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert!(!rows.is_empty());
    assert!(
        rows.iter().flatten().all(|value| !value.contains(&marker)),
        "a delivery row holds a copy of the URL"
    );
}

/// A receiver that takes requests and never answers them: how many it holds.
fn hanging_receiver() -> (String, Arc<Mutex<usize>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
    let held = Arc::new(Mutex::new(0usize));
    let counter = Arc::clone(&held);
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move || {
            let counter = Arc::clone(&counter);
            async move {
                *counter.lock().expect("count") += 1;
                std::future::pending::<axum::http::StatusCode>().await
            }
        }),
    );
    listener.set_nonblocking(true).expect("nonblocking");
    let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, held)
}

/// Issue 22, 7: one tenant's receivers that hang hold at most that tenant's share of the
/// deliverer (`--webhook-max-in-flight-per-tenant`, 8, and per host 4), so another tenant's
/// delivery goes out while every one of them still hangs. Before, they took all 32 slots and the
/// other tenant waited for their timeouts.
#[tokio::test]
async fn a_tenant_whose_receivers_hang_does_not_hold_up_another_tenants_delivery() {
    let hanging: Vec<(String, Arc<Mutex<usize>>)> = (0..3).map(|_| hanging_receiver()).collect();
    let fast = Receiver::start(0);
    let mut agents = [
        scripted_agent_with(
            "slow_asker",
            "tenants = [\"slow\"]",
            &[r#"ask = [{ question = "Deploy?" }]"#, r#"say = "done""#],
        ),
        scripted_agent_with(
            "fast_asker",
            "tenants = [\"fast\"]",
            &[r#"ask = [{ question = "Deploy?" }]"#, r#"say = "done""#],
        ),
    ]
    .join("\n");
    for (url, _) in &hanging {
        agents.push_str(&webhook_table(url, &["call.suspended"]));
        agents.push_str("agents = [\"slow_asker\"]\n");
    }
    agents.push_str(&webhook_table(&fast.url, &["call.suspended"]));
    agents.push_str("agents = [\"fast_asker\"]\n");
    let server = start_server(&agents, &["--auth", "keys", "--webhook-timeout", "10m"]);
    let scopes = "runs:start,runs:read,agents:read";
    let slow_key = create_key(&sqlite_store(&server), "slow", "slow", scopes);
    let fast_key = create_key(&sqlite_store(&server), "fast", "fast", scopes);
    let mut client = server.agents().await;
    let start = |agent: &str| {
        Frame::Start(pb::StartRun {
            agent_id: agent.into(),
            prompt: "go".into(),
            ..Default::default()
        })
    };
    // 40 runs, each with three hanging deliveries: far more than every slot of the deliverer.
    let mut slow_runs = Vec::new();
    for _ in 0..40 {
        let mut run = RunStream::open_as(&mut client, Some(&slow_key), start("slow_asker"))
            .await
            .expect("a slow tenant's run");
        run.next_suspended().await;
        slow_runs.push(run);
    }
    let held = || -> usize {
        hanging
            .iter()
            .map(|(_, held)| *held.lock().expect("held"))
            .sum()
    };
    for _ in 0..600 {
        if held() >= 8 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(held(), 8, "the slow tenant's attempts fill its share");

    let mut fast_run = RunStream::open_as(&mut client, Some(&fast_key), start("fast_asker"))
        .await
        .expect("the other tenant's run");
    let suspended_ms = common::now_ms();
    fast_run.next_suspended().await;
    let received = fast
        .wait_for("the other tenant's delivery", |r| !r.is_empty())
        .await;
    report_figures(
        "a tenant's delivery while another's receivers hang",
        &[
            ("slow_attempts_hanging", held() as u64),
            (
                "ms_to_delivery",
                u64::try_from(received[0].at_ms - suspended_ms).unwrap_or(0),
            ),
        ],
    );
    // Every slow attempt still hangs (none is ever answered), and no more were let in.
    assert_eq!(held(), 8, "the slow tenant took more than its share");
    for (_, held) in &hanging {
        assert!(
            *held.lock().expect("held") <= 4,
            "a host took more than its share"
        );
    }
    drop(slow_runs);
}

/// Issue 22, 6: each tenant signs its runs' own webhooks with its own secret, made (and shown
/// once) by `AdminService.RotateWebhookSecret`; a tenant without one may not ask for them; a
/// rotation signs with the new and the old secret until the overlap ends. Before, one server-wide
/// secret signed every tenant's, so any tenant could forge deliveries to every other's receiver.
#[tokio::test]
async fn each_tenant_signs_its_runs_own_webhooks_with_its_own_secret() {
    let receiver = Receiver::start(0);
    let origin = receiver.url.trim_end_matches("/hook").to_owned();
    let sealing_key = base64::engine::general_purpose::STANDARD.encode([42u8; 32]);
    let server = Server::process_with_env(
        Some(&asking_agent("1h")),
        &[
            "--auth",
            "keys",
            "--webhook-allow",
            &format!("{origin}/"),
            "--webhook-secret-env",
            SECRET_ENV,
            "--webhook-secrets-key-env",
            "ASKUSER_TEST_SEALING_KEY",
            "--webhook-deny-private=false",
        ],
        &[
            (SECRET_ENV, SECRET),
            ("ASKUSER_TEST_SEALING_KEY", sealing_key.as_str()),
        ],
    );
    let scopes = "runs:start,runs:read,agents:read,admin";
    let acme = create_key(&sqlite_store(&server), "acme", "acme", scopes);
    let globex = create_key(&sqlite_store(&server), "globex", "globex", scopes);
    let mut client = server.agents().await;
    let mut admin = admin(&server).await;
    let rotate = |key: &str| authorized(pb::RotateWebhookSecretRequest {}, Some(key));

    // No secret of its own yet: no per-run webhooks (the server-wide one is not acme's).
    let refused = RunStream::open_as(&mut client, Some(&acme), start_with_webhook(&receiver.url))
        .await
        .err()
        .expect("acme's per-run webhook taken without a secret of its own");
    assert_eq!(
        refused.code(),
        tonic::Code::FailedPrecondition,
        "{refused:?}"
    );
    assert_eq!(
        common::error_reason(&refused).as_deref(),
        Some("WEBHOOK_SECRET_REQUIRED")
    );

    let first = admin.rotate_webhook_secret(rotate(&acme)).await;
    let first = first.expect("acme's secret").into_inner();
    assert!(first.secret.starts_with("whsec_"));
    assert!(first.previous_expire_time.is_none());
    let globex_secret = admin
        .rotate_webhook_secret(rotate(&globex))
        .await
        .expect("globex's secret")
        .into_inner()
        .secret;
    assert_ne!(first.secret, globex_secret);

    let delivered = async |key: &str, count: usize| {
        let mut run = RunStream::open_as(
            &mut server.agents().await,
            Some(key),
            start_with_webhook(&receiver.url),
        )
        .await
        .expect("a per-run webhook");
        run.next_suspended().await;
        receiver
            .wait_for("the delivery", |r| r.len() >= count)
            .await
            .pop()
            .expect("a delivery")
    };
    let from_acme = delivered(&acme, 1).await;
    assert!(signed_with(&from_acme, &first.secret));
    assert!(!signed_with(&from_acme, &globex_secret));
    assert!(!signed_with(&from_acme, SECRET));
    let from_globex = delivered(&globex, 2).await;
    assert!(signed_with(&from_globex, &globex_secret));
    assert!(!signed_with(&from_globex, &first.secret));

    // A rotation: the new secret and the old one both sign until the overlap ends.
    let second = admin
        .rotate_webhook_secret(rotate(&acme))
        .await
        .expect("a rotation")
        .into_inner();
    assert!(second.previous_expire_time.is_some());
    let after = delivered(&acme, 3).await;
    assert!(signed_with(&after, &second.secret));
    assert!(signed_with(&after, &first.secret));
    assert!(!signed_with(&after, &globex_secret));
    assert_eq!(after.signature.split(' ').count(), 2, "{}", after.signature);
    drop(client);

    // At rest the secrets are sealed, never as given.
    let conn = rusqlite::Connection::open(server.data_path().join("askuser.sqlite3"))
        .expect("open the store");
    let stored: Vec<String> = conn
        .prepare("SELECT secret || ' ' || COALESCE(previous_secret, '') FROM webhook_secrets")
        .and_then(|mut select| select.query_map([], |row| row.get(0))?.collect())
        .expect("stored secrets");
    assert_eq!(stored.len(), 2);
    for secret in [&first.secret, &second.secret, &globex_secret] {
        let key = secret.trim_start_matches("whsec_");
        assert!(
            stored.iter().all(|row| !row.contains(key)),
            "a secret stored as is"
        );
    }
}
