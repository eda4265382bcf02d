//! Authentication and scopes against the real server: API keys made and revoked with
//! `askuser keys` on the server's own SQLite file, JWTs verified against a JWKS file and a JWKS
//! URL, and the refusal to serve an open server on a public address.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use askuser::proto::v1 as pb;
use askuser::proto::v1::agent_service_client::AgentServiceClient;
use askuser::proto::v1::tool_service_client::ToolServiceClient;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use common::credentials::{self, authorized, keys, keys_on, resume_as, sqlite_store};
use common::{Server, error_reason};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use tonic::Code;
use tonic::transport::Channel;
use tonic_types::StatusExt;

fn create_key(server: &Server, scopes: &str) -> String {
    credentials::create_key(&sqlite_store(server), "acme", scopes, scopes)
}

/// Calls `rpc` (by its method name) with `credential`; only the status matters.
async fn call(channel: &Channel, rpc: &str, credential: Option<&str>) -> Result<(), tonic::Status> {
    let mut agents = AgentServiceClient::new(channel.clone());
    let run_id = "run-that-does-not-exist".to_owned();
    match rpc {
        "ListAgents" => agents
            .list_agents(authorized(pb::ListAgentsRequest {}, credential))
            .await
            .map(drop),
        "ListRuns" => agents
            .list_runs(authorized(pb::ListRunsRequest::default(), credential))
            .await
            .map(drop),
        "GetRun" => agents
            .get_run(authorized(pb::GetRunRequest { run_id }, credential))
            .await
            .map(drop),
        "CancelRun" => agents
            .cancel_run(authorized(
                pb::CancelRunRequest {
                    run_id,
                    reason: String::new(),
                },
                credential,
            ))
            .await
            .map(drop),
        "ClaimCall" => agents
            .claim_call(authorized(
                pb::ClaimCallRequest {
                    run_id,
                    tool_call_id: "call".into(),
                    ttl: None,
                    claimant: "worker".into(),
                },
                credential,
            ))
            .await
            .map(drop),
        "ResumeRun" => agents
            .resume_run(authorized(
                pb::ResumeRunRequest {
                    answer: Some(common::text_answer(&run_id, "call", "yes")),
                },
                credential,
            ))
            .await
            .map(drop),
        "Ask" => askuser::proto::v1::human_service_client::HumanServiceClient::new(channel.clone())
            .ask(authorized(
                pb::AskRequest {
                    call: Some(pb::ask_request::Call::Question(pb::AskUserInput {
                        question: "Proceed?".into(),
                        ..Default::default()
                    })),
                    ..Default::default()
                },
                credential,
            ))
            .await
            .map(drop),
        "AskUser" => ToolServiceClient::new(channel.clone())
            .ask_user(authorized(
                pb::AskUserRequest {
                    input: Some(pb::AskUserInput {
                        question: "Proceed?".into(),
                        ..Default::default()
                    }),
                },
                credential,
            ))
            .await
            .map(drop),
        other => panic!("no call {other}"),
    }
}

/// Whether the status is one authentication or authorization gave.
fn refused(outcome: &Result<(), tonic::Status>) -> Option<Code> {
    match outcome {
        Err(status)
            if matches!(
                status.code(),
                Code::Unauthenticated | Code::PermissionDenied
            ) =>
        {
            Some(status.code())
        }
        _ => None,
    }
}

/// Each scope and an RPC it lets through.
const SCOPED_RPCS: [(&str, &str); 8] = [
    ("agents:read", "ListAgents"),
    ("runs:read", "ListRuns"),
    ("runs:read", "GetRun"),
    ("runs:cancel", "CancelRun"),
    ("tools:execute", "ClaimCall"),
    ("runs:answer", "ResumeRun"),
    ("runs:start", "AskUser"),
    ("asks:create", "Ask"),
];

async fn health(channel: &Channel) -> Result<(), tonic::Status> {
    tonic_health::pb::health_client::HealthClient::new(channel.clone())
        .check(tonic_health::pb::HealthCheckRequest::default())
        .await
        .map(drop)
}

#[tokio::test]
async fn api_keys_authenticate_and_scopes_authorize() {
    let server = Server::start_with(None, &["--auth", "keys"]);
    let channel = server.channel().await;

    health(&channel).await.expect("health is open");
    let missing = call(&channel, "ListAgents", None).await.unwrap_err();
    assert_eq!(missing.code(), Code::Unauthenticated, "{missing:?}");
    let forged = call(&channel, "ListAgents", Some("ak_0000_forged"))
        .await
        .unwrap_err();
    assert_eq!(forged.code(), Code::Unauthenticated, "{forged:?}");

    let mut checked = 0;
    for (scope, rpc) in SCOPED_RPCS {
        let key = create_key(&server, scope);
        let allowed = call(&channel, rpc, Some(&key)).await;
        assert_eq!(refused(&allowed), None, "{scope} on {rpc}: {allowed:?}");
        // Every other scope's RPC is refused, naming the scope it needs.
        // `ResumeRun` also lets `tools:execute` through: a client tool's output is settled with
        // it, and which scope an answer needs is the call's to say (assignees.rs).
        let reaches = |other_rpc: &str| scope == "tools:execute" && other_rpc == "ResumeRun";
        for (other_scope, other_rpc) in SCOPED_RPCS
            .iter()
            .filter(|(s, rpc)| *s != scope && !reaches(rpc))
        {
            let status = call(&channel, other_rpc, Some(&key)).await.unwrap_err();
            assert_eq!(
                status.code(),
                Code::PermissionDenied,
                "{scope} on {other_rpc}"
            );
            assert_eq!(error_reason(&status).as_deref(), Some("MISSING_SCOPE"));
            let info = status.get_details_error_info().expect("error info");
            assert_eq!(
                info.metadata.get("scope").map(String::as_str),
                Some(*other_scope)
            );
            checked += 1;
        }
    }
    let admin = create_key(&server, "admin");
    for (_, rpc) in SCOPED_RPCS {
        let outcome = call(&channel, rpc, Some(&admin)).await;
        assert_eq!(refused(&outcome), None, "admin on {rpc}: {outcome:?}");
    }
    common::report_figures("auth: scope refusals checked", &[("refusals", checked)]);
}

/// Opens `RunAgent` with `first` as its first frame and `credential`; the first response.
async fn run_agent(
    channel: &Channel,
    first: pb::run_agent_request::Frame,
    credential: &str,
) -> Result<pb::RunAgentResponse, tonic::Status> {
    let (sender, receiver) = tokio::sync::mpsc::channel(1);
    sender
        .send(pb::RunAgentRequest { frame: Some(first) })
        .await
        .expect("queue the first frame");
    let mut agents = AgentServiceClient::new(channel.clone());
    let request = authorized(
        tokio_stream::wrappers::ReceiverStream::new(receiver),
        Some(credential),
    );
    let mut stream = agents.run_agent(request).await?.into_inner();
    let first = stream.message().await?.expect("a first frame");
    drop(sender);
    Ok(first)
}

/// `RunAgent` needs `runs:read` (attaching reads a run); starting a run on it needs `runs:start`.
#[tokio::test]
async fn starting_a_run_on_run_agent_needs_runs_start() {
    let server = Server::start_with(None, &["--auth", "keys"]);
    let channel = server.channel().await;
    let reader = create_key(&server, "runs:read");
    let starter = create_key(&server, "runs:start,runs:read");
    let start = || {
        pb::run_agent_request::Frame::Start(pb::StartRun {
            agent_id: "greeter".into(),
            ..Default::default()
        })
    };
    let refused = run_agent(&channel, start(), &reader).await.unwrap_err();
    assert_eq!(refused.code(), Code::PermissionDenied, "{refused:?}");
    assert_eq!(error_reason(&refused).as_deref(), Some("MISSING_SCOPE"));
    let info = refused.get_details_error_info().expect("error info");
    assert_eq!(
        info.metadata.get("scope").map(String::as_str),
        Some("runs:start")
    );

    let started = run_agent(&channel, start(), &starter).await.expect("start");
    let attach = pb::run_agent_request::Frame::Attach(pb::AttachRun {
        run_id: started.run_id.clone(),
        after_sequence: 0,
    });
    let attached = run_agent(&channel, attach, &reader).await.expect("attach");
    assert_eq!(attached.run_id, started.run_id);
}

#[tokio::test]
async fn a_revoked_key_is_refused_at_once() {
    let server = Server::start_with(None, &["--auth", "keys"]);
    let channel = server.channel().await;
    let key = create_key(&server, "agents:read");
    call(&channel, "ListAgents", Some(&key))
        .await
        .expect("the key works");
    let listing = keys(&server, &["list"]);
    let key_id = listing
        .lines()
        .find(|line| line.contains("agents:read"))
        .and_then(|line| line.split('\t').next())
        .expect("the key is listed")
        .to_owned();
    assert!(!listing.contains(&key), "the listing shows no secret");
    keys(&server, &["revoke", &key_id]);
    // Keys are looked up on every request: the next one is refused.
    let status = call(&channel, "ListAgents", Some(&key)).await.unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated, "{status:?}");
    assert!(
        keys(&server, &["list"])
            .lines()
            .any(|line| { line.starts_with(&key_id) && !line.ends_with('\t') })
    );
}

#[tokio::test]
async fn admins_create_and_revoke_keys_while_the_server_runs() {
    use askuser::proto::v1::admin_service_client::AdminServiceClient;
    let server = Server::start_with(None, &["--auth", "keys"]);
    let channel = server.channel().await;
    let admin_key = create_key(&server, "admin");
    let reader_key = create_key(&server, "runs:read");
    let mut admin = AdminServiceClient::new(channel.clone());
    let status = admin
        .list_keys(authorized(pb::ListKeysRequest {}, Some(&reader_key)))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::PermissionDenied);

    let created = admin
        .create_key(authorized(
            pb::CreateKeyRequest {
                tenant: "acme".into(),
                name: "inbox".into(),
                scopes: vec!["agents:read".into()],
            },
            Some(&admin_key),
        ))
        .await
        .expect("create a key")
        .into_inner();
    let key_id = created.key.expect("the key").key_id;
    call(&channel, "ListAgents", Some(&created.secret))
        .await
        .expect("the new key works");
    let listed = admin
        .list_keys(authorized(pb::ListKeysRequest {}, Some(&admin_key)))
        .await
        .expect("list keys")
        .into_inner()
        .keys;
    assert_eq!(listed.len(), 3);
    admin
        .revoke_key(authorized(
            pb::RevokeKeyRequest {
                key_id: key_id.clone(),
            },
            Some(&admin_key),
        ))
        .await
        .expect("revoke");
    let status = call(&channel, "ListAgents", Some(&created.secret))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated);
    let again = admin
        .revoke_key(authorized(
            pb::RevokeKeyRequest { key_id },
            Some(&admin_key),
        ))
        .await
        .unwrap_err();
    assert_eq!(error_reason(&again).as_deref(), Some("KEY_NOT_FOUND"));
    let bad_scope = admin
        .create_key(authorized(
            pb::CreateKeyRequest {
                tenant: "acme".into(),
                name: "typo".into(),
                scopes: vec!["runs:everything".into()],
            },
            Some(&admin_key),
        ))
        .await
        .unwrap_err();
    assert_eq!(bad_scope.code(), Code::InvalidArgument);
}

#[tokio::test]
async fn keys_live_in_postgresql_for_every_replica() {
    let Some(url) = common::fresh_database().await else {
        return;
    };
    let store = ["--database-url", url.as_str()];
    // The first key is made offline, before any server ran on the database.
    let key = keys_on(
        &store,
        &[
            "create",
            "--tenant",
            "acme",
            "--name",
            "ci",
            "--scopes",
            "agents:read",
        ],
    )
    .trim()
    .to_owned();
    let replicas = [
        Server::start_with(None, &["--auth", "keys", "--database-url", &url]),
        Server::start_with(None, &["--auth", "keys", "--database-url", &url]),
    ];
    for replica in &replicas {
        let channel = replica.channel().await;
        call(&channel, "ListAgents", Some(&key))
            .await
            .expect("the key works");
    }
    let key_id = keys_on(&store, &["list"])
        .split('\t')
        .next()
        .expect("a key")
        .to_owned();
    keys_on(&store, &["revoke", &key_id]);
    for replica in &replicas {
        let channel = replica.channel().await;
        let status = call(&channel, "ListAgents", Some(&key)).await.unwrap_err();
        assert_eq!(status.code(), Code::Unauthenticated, "{status:?}");
    }
}

#[tokio::test]
async fn reflection_is_open_on_loopback_with_auth_on() {
    use tonic_reflection::pb::v1::ServerReflectionRequest;
    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    let server = Server::start_with(None, &["--auth", "keys"]);
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut client = ServerReflectionClient::new(server.channel().await);
    let mut replies = client
        .server_reflection_info(tokio_stream::iter([request]))
        .await
        .expect("reflection is open on loopback")
        .into_inner();
    assert!(replies.message().await.expect("a reply").is_some());
}

/// An EC P-256 signing key and its JWK.
struct SigningKey {
    kid: String,
    encoding: EncodingKey,
    jwk: serde_json::Value,
}

fn signing_key(kid: &str) -> SigningKey {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("key");
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
        .expect("key pair");
    // An uncompressed point: 0x04, then x and y.
    let point = pair.public_key().as_ref();
    let jwk = serde_json::json!({
        "kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": kid,
        "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
        "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
    });
    SigningKey {
        kid: kid.to_owned(),
        encoding: EncodingKey::from_ec_der(pkcs8.as_ref()),
        jwk,
    }
}

/// A JWKS (JSON Web Key Set) of these keys.
fn jwks_of(keys: &[&SigningKey]) -> serde_json::Value {
    serde_json::json!({ "keys": keys.iter().map(|key| key.jwk.clone()).collect::<Vec<_>>() })
}

fn write_jwks(path: &Path, keys: &[&SigningKey]) {
    std::fs::write(path, jwks_of(keys).to_string()).expect("write JWKS");
}

fn token(key: &SigningKey, claims: serde_json::Value) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(key.kid.clone());
    jsonwebtoken::encode(&header, &claims, &key.encoding).expect("sign")
}

fn claims(changes: serde_json::Value) -> serde_json::Value {
    let now = common::now_ms() / 1000;
    let mut claims = serde_json::json!({
        "iss": "https://id.example", "aud": "askuser", "sub": "ada", "tenant": "acme",
        "scope": "agents:read runs:read", "exp": now + 600, "iat": now,
    });
    for (name, value) in changes.as_object().expect("object") {
        claims[name] = value.clone();
    }
    claims
}

/// A key rotation: a token signed by a new key is refused until `publish` (given the old key and
/// the new one) makes the key set hold it, then accepted once the server reads the set again, which
/// it does on an unknown key id, at most every few seconds. Returns how many calls that took.
async fn rotate(channel: &Channel, old: &SigningKey, publish: impl FnOnce(&[&SigningKey])) -> u64 {
    let new = signing_key("second");
    let rotated = token(&new, claims(serde_json::json!({})));
    let status = call(channel, "ListAgents", Some(&rotated))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated);
    publish(&[old, &new]);
    let mut attempts = 0;
    loop {
        attempts += 1;
        match call(channel, "ListAgents", Some(&rotated)).await {
            Ok(()) => return attempts,
            Err(status) if attempts < 40 && status.code() == Code::Unauthenticated => {
                tokio::time::sleep(Duration::from_millis(250)).await
            }
            Err(status) => panic!("the rotated key is not taken up: {status:?}"),
        }
    }
}

#[tokio::test]
async fn jwts_are_verified_against_the_jwks_and_rotation_is_followed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let jwks = dir.path().join("jwks.json");
    let first = signing_key("first");
    write_jwks(&jwks, &[&first]);
    let jwks_arg = jwks.to_str().expect("utf-8 path");
    let server = Server::start_with(
        None,
        &[
            "--auth",
            "jwt",
            "--jwt-jwks-file",
            jwks_arg,
            "--jwt-issuer",
            "https://id.example",
            "--jwt-audience",
            "askuser",
        ],
    );
    let channel = server.channel().await;

    let valid = token(&first, claims(serde_json::json!({})));
    call(&channel, "ListAgents", Some(&valid))
        .await
        .expect("a valid token");
    let denied = call(&channel, "CancelRun", Some(&valid)).await.unwrap_err();
    assert_eq!(denied.code(), Code::PermissionDenied);

    let an_hour_ago = common::now_ms() / 1000 - 3600;
    let stranger = signing_key("first");
    let refused_tokens = [
        (
            "expired",
            token(&first, claims(serde_json::json!({ "exp": an_hour_ago }))),
        ),
        (
            "wrong issuer",
            token(
                &first,
                claims(serde_json::json!({ "iss": "https://evil.example" })),
            ),
        ),
        (
            "wrong audience",
            token(&first, claims(serde_json::json!({ "aud": "someone-else" }))),
        ),
        (
            "bad signature",
            token(&stranger, claims(serde_json::json!({}))),
        ),
        (
            "no tenant",
            token(&first, claims(serde_json::json!({ "tenant": null }))),
        ),
        ("not a token", "garbage".to_owned()),
    ];
    for (what, token) in &refused_tokens {
        let status = call(&channel, "ListAgents", Some(token)).await.unwrap_err();
        assert_eq!(status.code(), Code::Unauthenticated, "{what}: {status:?}");
    }

    // Rotation: the server reads the file again on the unknown key id.
    let attempts = rotate(&channel, &first, |keys| write_jwks(&jwks, keys)).await;
    common::report_figures(
        "auth: JWTs refused, rotation",
        &[
            ("refused_kinds", refused_tokens.len() as u64),
            ("rotation_attempts", attempts),
        ],
    );
}

/// A JWKS endpoint of an identity provider: serves the key set it holds and counts the fetches.
#[derive(Clone, Default)]
struct JwksEndpoint {
    keys: Arc<Mutex<serde_json::Value>>,
    fetches: Arc<AtomicU64>,
}

impl JwksEndpoint {
    fn publish(&self, keys: &[&SigningKey]) {
        *self.keys.lock().expect("JWKS lock") = jwks_of(keys);
    }

    /// Serves `GET /jwks.json` on a port of its own; its URL.
    async fn serve(&self) -> String {
        let endpoint = self.clone();
        let app = axum::Router::new().route(
            "/jwks.json",
            axum::routing::get(move || {
                let endpoint = endpoint.clone();
                async move {
                    endpoint.fetches.fetch_add(1, Ordering::SeqCst);
                    let jwks = endpoint.keys.lock().expect("JWKS lock").to_string();
                    ([("content-type", "application/json")], jwks)
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("address");
        tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
        format!("http://{addr}/jwks.json")
    }
}

// Multi-threaded: the server fetches the JWKS from this test's endpoint while the test waits for
// the server to start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_jwks_is_fetched_from_its_url_and_again_for_an_unknown_key() {
    let endpoint = JwksEndpoint::default();
    let first = signing_key("first");
    endpoint.publish(&[&first]);
    let url = endpoint.serve().await;
    let server = Server::start_with(
        None,
        &[
            "--auth",
            "jwt",
            "--jwt-jwks-url",
            &url,
            "--jwt-issuer",
            "https://id.example",
            "--jwt-audience",
            "askuser",
        ],
    );
    let channel = server.channel().await;
    assert_eq!(
        endpoint.fetches.load(Ordering::SeqCst),
        1,
        "fetched once at start"
    );
    call(
        &channel,
        "ListAgents",
        Some(&token(&first, claims(serde_json::json!({})))),
    )
    .await
    .expect("a token signed by the published key");

    // The provider rotates: the server fetches the URL again on the unknown key id.
    let attempts = rotate(&channel, &first, |keys| endpoint.publish(keys)).await;
    let fetches = endpoint.fetches.load(Ordering::SeqCst);
    assert!(
        fetches >= 2,
        "the unknown key id made the server fetch again ({fetches})"
    );
    common::report_figures(
        "auth: JWKS from a URL",
        &[("fetches", fetches), ("rotation_attempts", attempts)],
    );
}

#[test]
fn an_open_server_refuses_a_public_address() {
    let dir = tempfile::tempdir().expect("temp dir");
    let output = Command::new(env!("CARGO_BIN_EXE_askuser"))
        .args(["serve", "--listen", "0.0.0.0:0", "--data-dir"])
        .arg(dir.path())
        .output()
        .expect("run askuser serve");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--insecure-no-auth"), "{stderr}");
    let mut insecure = Command::new(env!("CARGO_BIN_EXE_askuser"))
        .args([
            "serve",
            "--listen",
            "0.0.0.0:0",
            "--insecure-no-auth",
            "--data-dir",
        ])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run askuser serve");
    let mut line = String::new();
    let read = BufReader::new(insecure.stdout.take().expect("stdout")).read_line(&mut line);
    let _ = insecure.kill();
    let _ = insecure.wait();
    read.expect("read stdout");
    assert!(
        line.starts_with("askuser listening on 0.0.0.0:"),
        "{line:?}"
    );
}

/// An agent that asks one question, then says "done".
fn asking_agent() -> String {
    common::scripted_agent(
        "asks",
        &[
            r#"ask = [{ question = "Which region?" }]"#,
            r#"say = "done""#,
        ],
    )
}

/// Starts a run of `asks` as `key` and reads it to its question: (stream, call id).
async fn asking_run(channel: &Channel, key: &str) -> (common::RunStream, String) {
    let mut client = AgentServiceClient::new(channel.clone());
    let start = pb::run_agent_request::Frame::Start(pb::StartRun {
        agent_id: "asks".into(),
        prompt: "go".into(),
        ..Default::default()
    });
    let mut stream = common::RunStream::open_as(&mut client, Some(key), start)
        .await
        .expect("start");
    loop {
        let frame = stream.try_next().await.expect("frame").expect("open");
        if let Some(pb::run_agent_response::Event::ToolCallSuspended(suspended)) = frame.event {
            stream.run_id = frame.run_id;
            return (stream, suspended.tool_call_id);
        }
    }
}

/// Revokes the key named `name` with `askuser keys revoke`.
fn revoke_by_name(server: &Server, name: &str) {
    let listing = keys(server, &["list"]);
    let key_id = listing
        .lines()
        .find(|line| line.split('\t').nth(2) == Some(name))
        .and_then(|line| line.split('\t').next())
        .expect("the key is listed")
        .to_owned();
    keys(server, &["revoke", &key_id]);
}

/// Reads `stream` until it fails; the status (a stream that ends OK fails the test).
async fn stream_failure<T>(stream: &mut tonic::Streaming<T>) -> tonic::Status {
    loop {
        match tokio::time::timeout(common::FRAME_TIMEOUT, stream.message())
            .await
            .expect("timed out waiting for the stream to end")
        {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("the stream ended OK"),
            Err(status) => return status,
        }
    }
}

fn assert_invalid_credentials(what: &str, status: &tonic::Status) {
    assert_eq!(status.code(), Code::Unauthenticated, "{what}: {status:?}");
    assert_eq!(
        error_reason(status).as_deref(),
        Some("INVALID_CREDENTIALS"),
        "{what}: {status:?}"
    );
}

#[tokio::test]
async fn revoking_a_key_ends_its_open_streams() {
    let agents = asking_agent();
    let server = Server::start_with(
        Some(&agents),
        &["--auth", "keys", "--principal-recheck", "1s"],
    );
    let channel = server.channel().await;
    let key = credentials::create_key(
        &sqlite_store(&server),
        "acme",
        "doomed",
        "runs:start,runs:read",
    );
    let (mut run, _) = asking_run(&channel, &key).await;
    let mut agents_client = AgentServiceClient::new(channel.clone());
    let mut watch = agents_client
        .watch_run(authorized(
            pb::WatchRunRequest {
                run_id: run.run_id.clone(),
                after_sequence: 0,
            },
            Some(&key),
        ))
        .await
        .expect("watch the run")
        .into_inner();
    let mut feed = agents_client
        .watch_pending_calls(authorized(
            pb::WatchPendingCallsRequest::default(),
            Some(&key),
        ))
        .await
        .expect("watch the pending calls")
        .into_inner();

    revoke_by_name(&server, "doomed");
    let status = stream_failure(&mut run.inbound).await;
    assert_invalid_credentials("RunAgent", &status);
    let status = stream_failure(&mut watch).await;
    assert_invalid_credentials("WatchRun", &status);
    let status = stream_failure(&mut feed).await;
    assert_invalid_credentials("WatchPendingCalls", &status);
}

#[tokio::test]
async fn an_answer_frame_after_revocation_is_refused_at_once() {
    let agents = asking_agent();
    // No timed re-check within the test: only the answer frame's own check can end the stream.
    let server = Server::start_with(
        Some(&agents),
        &["--auth", "keys", "--principal-recheck", "1h"],
    );
    let channel = server.channel().await;
    let store = sqlite_store(&server);
    let doomed =
        credentials::create_key(&store, "acme", "doomed", "runs:start,runs:read,runs:answer");
    let valid = credentials::create_key(&store, "acme", "valid", "runs:read,runs:answer");
    let (mut run, call_id) = asking_run(&channel, &doomed).await;
    revoke_by_name(&server, "doomed");
    run.send_text(&call_id, "eu-west").await;
    let status = stream_failure(&mut run.inbound).await;
    assert_invalid_credentials("the answer frame", &status);

    // The call is still pending, and a valid key answers it.
    let mut client = AgentServiceClient::new(channel.clone());
    let pending = client
        .get_run(authorized(
            pb::GetRunRequest {
                run_id: run.run_id.clone(),
            },
            Some(&valid),
        ))
        .await
        .expect("get the run")
        .into_inner()
        .run
        .expect("the run")
        .pending_tool_calls;
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(pending[0].tool_call_id, call_id);
    let accepted = resume_as(
        &mut client,
        &valid,
        common::text_answer(&run.run_id, &call_id, "us-east"),
    )
    .await;
    assert!(
        matches!(
            accepted,
            Ok(pb::run_agent_response::Event::AnswerAccepted(_))
        ),
        "a valid key answers: {accepted:?}"
    );
}

#[tokio::test]
async fn a_jwt_ends_its_stream_after_its_exp() {
    let dir = tempfile::tempdir().expect("temp dir");
    let jwks = dir.path().join("jwks.json");
    let key = signing_key("first");
    write_jwks(&jwks, &[&key]);
    let server = Server::start_with(
        None,
        &[
            "--auth",
            "jwt",
            "--jwt-jwks-file",
            jwks.to_str().expect("utf-8 path"),
            "--jwt-leeway",
            "0s",
            "--principal-recheck",
            "1s",
        ],
    );
    let channel = server.channel().await;
    // Valid for a few seconds: long enough to open the stream on a loaded machine.
    let exp = common::now_ms() / 1000 + 5;
    let short = token(&key, claims(serde_json::json!({ "exp": exp })));
    let mut feed = AgentServiceClient::new(channel.clone())
        .watch_pending_calls(authorized(
            pb::WatchPendingCallsRequest::default(),
            Some(&short),
        ))
        .await
        .expect("the token is valid when the stream opens")
        .into_inner();
    let status = stream_failure(&mut feed).await;
    assert_invalid_credentials("WatchPendingCalls past exp", &status);
    assert!(common::now_ms() / 1000 >= exp, "ended before exp");
}

/// The RSA key of tests/fixtures/jwt (PKCS#1 DER) as a signing key with id `kid`, its JWK naming
/// `alg` when given.
fn rsa_signing_key(kid: &str, alg: Option<&str>) -> SigningKey {
    use ring::rsa::PublicKeyComponents;
    let der = include_bytes!("../fixtures/jwt/rsa_pkcs1.der");
    let pair = ring::signature::RsaKeyPair::from_der(der).expect("RSA key");
    let public = PublicKeyComponents::<Vec<u8>>::from(pair.public());
    let mut jwk = serde_json::json!({
        "kty": "RSA", "use": "sig", "kid": kid,
        "n": URL_SAFE_NO_PAD.encode(&public.n),
        "e": URL_SAFE_NO_PAD.encode(&public.e),
    });
    if let Some(alg) = alg {
        jwk["alg"] = alg.into();
    }
    SigningKey {
        kid: kid.to_owned(),
        encoding: EncodingKey::from_rsa_der(der),
        jwk,
    }
}

fn token_with(key: &SigningKey, algorithm: Algorithm, claims: serde_json::Value) -> String {
    let mut header = Header::new(algorithm);
    header.kid = Some(key.kid.clone());
    jsonwebtoken::encode(&header, &claims, &key.encoding).expect("sign")
}

/// The default claims without `name`.
fn claims_without(name: &str) -> serde_json::Value {
    let mut claims = claims(serde_json::json!({}));
    claims.as_object_mut().expect("object").remove(name);
    claims
}

#[tokio::test]
async fn jwts_need_the_required_claims_a_current_nbf_and_their_keys_algorithm() {
    let dir = tempfile::tempdir().expect("temp dir");
    let jwks = dir.path().join("jwks.json");
    let ec = signing_key("ec");
    let rs256 = rsa_signing_key("rs256", Some("RS256"));
    let rsa_any = rsa_signing_key("rsa", None);
    write_jwks(&jwks, &[&ec, &rs256, &rsa_any]);
    let server = Server::start_with(
        None,
        &[
            "--auth",
            "jwt",
            "--jwt-jwks-file",
            jwks.to_str().expect("utf-8 path"),
            "--jwt-issuer",
            "https://id.example",
            "--jwt-audience",
            "askuser",
        ],
    );
    let channel = server.channel().await;
    let now = common::now_ms() / 1000;
    let accepted = [
        ("ES256 key", token(&ec, claims(serde_json::json!({})))),
        (
            "nbf passed",
            token(&ec, claims(serde_json::json!({ "nbf": now - 10 }))),
        ),
        (
            "RS256 for an RS256 key",
            token_with(&rs256, Algorithm::RS256, claims(serde_json::json!({}))),
        ),
        (
            "PS256 for an RSA key without alg",
            token_with(&rsa_any, Algorithm::PS256, claims(serde_json::json!({}))),
        ),
    ];
    for (what, token) in &accepted {
        call(&channel, "ListAgents", Some(token))
            .await
            .unwrap_or_else(|status| panic!("{what}: {status:?}"));
    }
    let refused = [
        ("no iss", token(&ec, claims_without("iss"))),
        ("no aud", token(&ec, claims_without("aud"))),
        (
            "nbf in an hour",
            token(&ec, claims(serde_json::json!({ "nbf": now + 3600 }))),
        ),
        (
            "PS256 for an RS256 key",
            token_with(&rs256, Algorithm::PS256, claims(serde_json::json!({}))),
        ),
        (
            "RS512 for an RS256 key",
            token_with(&rs256, Algorithm::RS512, claims(serde_json::json!({}))),
        ),
    ];
    let mut let_through = Vec::new();
    for (what, token) in &refused {
        match call(&channel, "ListAgents", Some(token)).await {
            Ok(()) => let_through.push(*what),
            Err(status) => assert_invalid_credentials(what, &status),
        }
    }
    assert!(let_through.is_empty(), "accepted: {let_through:?}");
}

#[tokio::test]
async fn create_key_refuses_bad_names_and_duplicate_scopes() {
    use askuser::proto::v1::admin_service_client::AdminServiceClient;
    let server = Server::start_with(None, &["--auth", "keys"]);
    let admin_key = create_key(&server, "admin");
    let mut admin = AdminServiceClient::new(server.channel().await);
    let long = "k".repeat(129);
    let cases = [
        ("", vec!["runs:read"], "name"),
        (long.as_str(), vec!["runs:read"], "name"),
        ("nul\0byte", vec!["runs:read"], "name"),
        ("new\nline", vec!["runs:read"], "name"),
        ("twice", vec!["runs:read", "runs:read"], "scopes[1]"),
    ];
    for (name, scopes, field) in cases {
        let status = admin
            .create_key(authorized(
                pb::CreateKeyRequest {
                    tenant: "acme".into(),
                    name: name.into(),
                    scopes: scopes.iter().map(|scope| scope.to_string()).collect(),
                },
                Some(&admin_key),
            ))
            .await
            .expect_err("refused");
        assert_eq!(status.code(), Code::InvalidArgument, "{name:?}: {status:?}");
        let fields: Vec<String> = common::field_violations(&status)
            .into_iter()
            .map(|(field, _)| field)
            .collect();
        assert_eq!(fields, [field], "{name:?}");
    }
    admin
        .create_key(authorized(
            pb::CreateKeyRequest {
                tenant: "acme".into(),
                name: "k".repeat(128),
                scopes: vec!["runs:read".into()],
            },
            Some(&admin_key),
        ))
        .await
        .expect("a name of 128 bytes");
}

/// Runs made with `--auth none` (tenant `default`), then auth turned on: the log says the runs are
/// hidden, and `askuser keys move-runs` gives them to a tenant whose key then sees and answers
/// them. On a PostgreSQL store (`database_url`), or the server's own SQLite file.
async fn runs_made_without_auth_move_to_a_tenant(database_url: Option<&str>) {
    let agents = asking_agent();
    let store_args: Vec<&str> = database_url
        .iter()
        .flat_map(|url| ["--database-url", url])
        .collect();
    let mut server = Server::process_with(Some(&agents), &store_args);
    let data_dir = server.data_dir.to_str().expect("utf-8 path").to_owned();
    let store: Vec<&str> = match database_url {
        Some(_) => store_args.clone(),
        None => vec!["--data-dir", &data_dir],
    };
    let mut client = server.agents().await;
    let mut run = common::RunStream::start(&mut client, "asks").await;
    let call_id = run.next_suspended().await.tool_call_id;
    let run_id = run.run_id.clone();
    drop(run);

    // Authentication on: the run belongs to `default`, which the log says, with the way out.
    server.restart_with(&[&["--auth", "keys"], store_args.as_slice()].concat());
    let log = server.log();
    assert!(
        log.contains("1 runs belong to the tenant `default`") && log.contains("keys move-runs"),
        "{log}"
    );
    let key = credentials::create_key(&store, "acme", "acme", "runs:read,runs:answer");
    let channel = server.channel().await;
    let mut client = AgentServiceClient::new(channel.clone());
    let listed = |client: &mut AgentServiceClient<Channel>| {
        let mut client = client.clone();
        let key = key.clone();
        async move {
            client
                .list_runs(authorized(pb::ListRunsRequest::default(), Some(&key)))
                .await
                .expect("list runs")
                .into_inner()
                .runs
                .into_iter()
                .map(|run| run.run_id)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(listed(&mut client).await, Vec::<String>::new());

    let moved = keys_on(&store, &["move-runs", "--from", "default", "--to", "acme"]);
    assert_eq!(moved.trim(), "moved 1 runs from default to acme");
    assert_eq!(listed(&mut client).await, [run_id.as_str()]);
    // The moved run is acme's in full: its key answers the waiting call.
    let accepted = resume_as(
        &mut client,
        &key,
        common::text_answer(&run_id, &call_id, "eu-west"),
    )
    .await;
    assert!(
        matches!(
            accepted,
            Ok(pb::run_agent_response::Event::AnswerAccepted(_))
        ),
        "acme answers its moved run: {accepted:?}"
    );
}

#[tokio::test]
async fn runs_made_without_auth_move_to_a_tenant_that_keys_see_on_sqlite() {
    runs_made_without_auth_move_to_a_tenant(None).await;
}

#[tokio::test]
async fn runs_made_without_auth_move_to_a_tenant_that_keys_see_on_postgresql() {
    let Some(url) = common::fresh_database().await else {
        return;
    };
    runs_made_without_auth_move_to_a_tenant(Some(&url)).await;
}
