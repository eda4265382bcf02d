//! TLS: the gRPC listener over TLS and mTLS with certificates made here, their reload without a
//! restart, and PostgreSQL over TLS with `sslmode=verify-full`.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use askuser::proto::v1 as pb;
use askuser::proto::v1::agent_service_client::AgentServiceClient;
use askuser::proto::v1::run_agent_response::Event;
use common::postgres_cluster::Postgres;
use common::{RunStream, Server, postgres_client, report_figures, scripted_agent};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType, IsCa, KeyPair,
};
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

/// A certificate authority made for one test.
struct Authority {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// A certificate and its key, PEM.
struct Pair {
    cert: String,
    key: String,
}

impl Authority {
    fn new(name: &str) -> Authority {
        let mut params = CertificateParams::default();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name = DistinguishedName::new();
        params.distinguished_name.push(DnType::CommonName, name);
        let key = KeyPair::generate().expect("CA key");
        Authority {
            issuer: CertifiedIssuer::self_signed(params, key).expect("CA certificate"),
        }
    }

    fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A certificate for `names` (host names or IP addresses) with common name `subject`.
    fn issue(&self, subject: &str, names: &[&str]) -> Pair {
        let mut params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .expect("names");
        params.distinguished_name = DistinguishedName::new();
        params.distinguished_name.push(DnType::CommonName, subject);
        let key = KeyPair::generate().expect("key");
        let cert = params.signed_by(&key, &self.issuer).expect("certificate");
        Pair {
            cert: cert.pem(),
            key: key.serialize_pem(),
        }
    }
}

/// Writes `text` to `path` as a rotation does: whole, by renaming a finished file over it.
fn replace_file(path: &Path, text: &str) {
    let partial = path.with_extension("partial");
    std::fs::write(&partial, text).expect("write");
    std::fs::rename(&partial, path).expect("rename");
}

/// The server's TLS files in a directory of the test's.
struct Files {
    dir: tempfile::TempDir,
}

impl Files {
    fn new(server: &Pair, client_ca: Option<&str>) -> Files {
        let files = Files {
            dir: tempfile::tempdir().expect("temp dir"),
        };
        files.write(server);
        if let Some(ca) = client_ca {
            replace_file(&files.path("client-ca.pem"), ca);
        }
        files
    }

    fn write(&self, server: &Pair) {
        // The key first: the certificate's change is the one a reload may see alone.
        replace_file(&self.path("server.key"), &server.key);
        replace_file(&self.path("server.pem"), &server.cert);
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn flags(&self, client_ca: bool) -> Vec<String> {
        let mut flags = vec![
            "--tls-cert".into(),
            self.path("server.pem").display().to_string(),
            "--tls-key".into(),
            self.path("server.key").display().to_string(),
            "--tls-reload-interval".into(),
            "100ms".into(),
        ];
        if client_ca {
            flags.push("--tls-client-ca".into());
            flags.push(self.path("client-ca.pem").display().to_string());
        }
        flags
    }
}

fn start(files: &Files, client_ca: bool) -> Server {
    let flags = files.flags(client_ca);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    Server::start_with(None, &flags)
}

/// A new TLS connection that trusts `ca` (if any) and presents `identity` (if any); the error says
/// why it failed.
async fn tls_channel(
    server: &Server,
    ca: Option<&str>,
    identity: Option<&Pair>,
) -> Result<Channel, String> {
    let mut tls = ClientTlsConfig::new().domain_name("localhost");
    if let Some(ca) = ca {
        tls = tls.ca_certificate(Certificate::from_pem(ca));
    }
    if let Some(pair) = identity {
        tls = tls.identity(Identity::from_pem(&pair.cert, &pair.key));
    }
    Endpoint::from_shared(format!("https://{}", server.addr))
        .map_err(|e| e.to_string())?
        .tls_config(tls)
        .map_err(|e| e.to_string())?
        .connect_timeout(Duration::from_secs(10))
        .connect()
        .await
        .map_err(|e| format!("connect: {e:?}"))
}

/// Lists the agents over a new TLS connection (see [`tls_channel`]).
async fn list_agents(
    server: &Server,
    ca: Option<&str>,
    identity: Option<&Pair>,
) -> Result<usize, String> {
    let channel = tls_channel(server, ca, identity).await?;
    let listed = AgentServiceClient::new(channel)
        .list_agents(pb::ListAgentsRequest::default())
        .await
        .map_err(|e| format!("call: {e:?}"))?;
    Ok(listed.into_inner().agents.len())
}

#[tokio::test]
async fn tls_serves_clients_that_trust_its_authority_only() {
    let ca = Authority::new("test CA");
    let files = Files::new(&ca.issue("askuser", &["localhost", "127.0.0.1"]), None);
    let server = start(&files, false);

    let agents = list_agents(&server, Some(&ca.pem()), None)
        .await
        .unwrap_or_else(|e| panic!("{e}; log:\n{}", server.log()));
    assert!(agents > 0, "the demo agents are listed");
    let untrusting = list_agents(&server, None, None).await;
    assert!(untrusting.is_err(), "{untrusting:?}");
    let other = Authority::new("another CA");
    let wrong_ca = list_agents(&server, Some(&other.pem()), None).await;
    assert!(wrong_ca.is_err(), "{wrong_ca:?}");
    // Plaintext gRPC is not served at all.
    let plaintext = Channel::from_shared(server.url())
        .expect("url")
        .connect()
        .await
        .map_err(|e| e.to_string());
    let refused = match plaintext {
        Err(_) => true,
        Ok(channel) => AgentServiceClient::new(channel)
            .list_agents(pb::ListAgentsRequest::default())
            .await
            .is_err(),
    };
    assert!(refused, "a plaintext call was served");
}

#[tokio::test]
async fn mtls_requires_a_client_certificate_of_the_client_authority() {
    let ca = Authority::new("server CA");
    let clients = Authority::new("client CA");
    let files = Files::new(
        &ca.issue("askuser", &["localhost", "127.0.0.1"]),
        Some(&clients.pem()),
    );
    let server = start(&files, true);

    let without = list_agents(&server, Some(&ca.pem()), None).await;
    assert!(without.is_err(), "{without:?}");
    let stranger = Authority::new("unknown client CA").issue("mallory", &["mallory"]);
    let foreign = list_agents(&server, Some(&ca.pem()), Some(&stranger)).await;
    assert!(foreign.is_err(), "{foreign:?}");
    let client = clients.issue("ci-bot", &["ci-bot"]);
    list_agents(&server, Some(&ca.pem()), Some(&client))
        .await
        .unwrap_or_else(|e| panic!("{e}; log:\n{}", server.log()));
}

#[tokio::test]
async fn with_auth_cert_a_client_certificate_names_the_caller() {
    let ca = Authority::new("server CA");
    let clients = Authority::new("client CA");
    let files = Files::new(
        &ca.issue("askuser", &["localhost", "127.0.0.1"]),
        Some(&clients.pem()),
    );
    let mut flags = files.flags(true);
    flags.extend(
        [
            "--auth",
            "cert",
            "--cert-tenant",
            "acme",
            "--cert-scopes",
            "runs:start,runs:read,runs:answer",
        ]
        .map(String::from),
    );
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let agents = scripted_agent(
        "asks",
        &[
            r#"ask = [{ question = "Name?" }]"#,
            r#"say = "hi {{answer.1}}""#,
        ],
    );
    let server = Server::start_with(Some(&agents), &flags);
    let client = clients.issue("ci-bot", &["ci-bot"]);
    let channel = tls_channel(&server, Some(&ca.pem()), Some(&client))
        .await
        .unwrap_or_else(|e| panic!("{e}; log:\n{}", server.log()));
    let mut agents = AgentServiceClient::new(channel);

    let mut run = RunStream::start(&mut agents, "asks").await;
    let question = run.next_suspended().await;
    run.send_text(&question.tool_call_id, "Ada").await;
    let settled_by = loop {
        if let Some(Event::ToolResult(result)) = run.next().await.event {
            break result.settled_by;
        }
    };
    assert_eq!(
        settled_by,
        Some(pb::SettledBy {
            tenant: "acme".into(),
            subject: "cert:ci-bot".into(),
            method: pb::AuthMethod::Certificate as i32,
        })
    );
    assert_eq!(run.completed_text().await, "hi Ada");
    // The certificate's principal has the scopes --cert-scopes gives, no more.
    let refused = agents
        .list_agents(pb::ListAgentsRequest::default())
        .await
        .expect_err("agents:read was not given");
    assert_eq!(refused.code(), tonic::Code::PermissionDenied);
}

#[tokio::test]
async fn replaced_certificate_files_serve_new_connections_without_a_restart() {
    let old_ca = Authority::new("old CA");
    let files = Files::new(&old_ca.issue("askuser", &["localhost", "127.0.0.1"]), None);
    let flags = files.flags(false);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    // A process: the test reads its log.
    let server = Server::process_with(None, &flags);
    list_agents(&server, Some(&old_ca.pem()), None)
        .await
        .unwrap_or_else(|e| panic!("{e}; log:\n{}", server.log()));

    let new_ca = Authority::new("new CA");
    files.write(&new_ca.issue("askuser", &["localhost", "127.0.0.1"]));
    // A bound on waiting for the poll, not a measure of it.
    let began = Instant::now();
    let mut attempts = 0u64;
    loop {
        attempts += 1;
        if list_agents(&server, Some(&new_ca.pem()), None)
            .await
            .is_ok()
        {
            break;
        }
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "the new certificate was never served; log:\n{}",
            server.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let old = list_agents(&server, Some(&old_ca.pem()), None).await;
    assert!(old.is_err(), "the old certificate is still served");
    assert!(server.log().contains("TLS certificates reloaded"));
    report_figures("tls reload", &[("connection_attempts", attempts)]);
}

#[test]
fn a_certificate_without_its_key_is_refused_at_start() {
    let output = Command::new(env!("CARGO_BIN_EXE_askuser"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--tls-cert",
            "server.pem",
        ])
        .stdin(Stdio::null())
        .output()
        .expect("run askuser");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--tls-key"), "{stderr}");
}

/// A database URL of `postgres` that verifies its certificate fully against `ca_file`.
fn verify_full_url(postgres: &Postgres, database: &str, ca_file: &Path) -> String {
    format!(
        "postgres://askuser@127.0.0.1:{}/{database}?sslmode=verify-full&sslrootcert={}",
        postgres.port,
        ca_file.display()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_over_tls_with_verify_full() {
    let ca = Authority::new("database CA");
    let identity = ca.issue("db", &["127.0.0.1", "localhost"]);
    let Some(postgres) = Postgres::start_with_tls(Some((&identity.cert, &identity.key))) else {
        return;
    };
    let plain_url = postgres.database().await;
    let database = plain_url
        .rsplit('/')
        .next()
        .expect("database name")
        .to_owned();
    let dir = tempfile::tempdir().expect("temp dir");
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).expect("write CA");

    let agents = scripted_agent("hello", &["say = \"over TLS\""]);
    let url = verify_full_url(&postgres, &database, &ca_file);
    let server = Server::start_with(Some(&agents), &["--database-url", &url]);
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "hello").await;
    assert_eq!(run.completed_text().await, "over TLS");

    // The store's connections are encrypted: PostgreSQL says so of every one of this database.
    let rows = postgres_client(&plain_url)
        .await
        .query(
            "SELECT ssl FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) \
             WHERE datname = $1 AND pid <> pg_backend_pid()",
            &[&database],
        )
        .await
        .expect("pg_stat_ssl");
    let encrypted = rows.iter().filter(|row| row.get::<_, bool>(0)).count();
    assert!(encrypted > 0, "no encrypted connection");
    assert_eq!(encrypted, rows.len(), "a store connection is not encrypted");
    report_figures(
        "postgres tls",
        &[("encrypted_connections", encrypted as u64)],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_verify_full_refuses_a_certificate_for_another_host() {
    let ca = Authority::new("database CA");
    let identity = ca.issue("db", &["db.example"]);
    let Some(postgres) = Postgres::start_with_tls(Some((&identity.cert, &identity.key))) else {
        return;
    };
    let plain_url = postgres.database().await;
    let database = plain_url
        .rsplit('/')
        .next()
        .expect("database name")
        .to_owned();
    let dir = tempfile::tempdir().expect("temp dir");
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).expect("write CA");

    let output = Command::new(env!("CARGO_BIN_EXE_askuser"))
        .args(["serve", "--listen", "127.0.0.1:0", "--database-url"])
        .arg(verify_full_url(&postgres, &database, &ca_file))
        .stdin(Stdio::null())
        .output()
        .expect("run askuser");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("not valid for name"), "{stderr}");

    // verify-ca checks the chain only: the same certificate is accepted.
    let verify_ca = format!(
        "postgres://askuser@127.0.0.1:{}/{database}?sslmode=verify-ca&sslrootcert={}",
        postgres.port,
        ca_file.display()
    );
    let server = Server::start_with(None, &["--database-url", &verify_ca]);
    assert!(
        server
            .agents()
            .await
            .list_agents(pb::ListAgentsRequest::default())
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn client_subject_names_the_verified_client_certificate() {
    use askuser::api::client_subject;
    use askuser::tls::{TlsFiles, tls_incoming, watch_files};
    use tonic::service::interceptor::InterceptedService;
    use tonic::transport::server::TcpIncoming;
    use tonic_health::pb::health_client::HealthClient;

    let ca = Authority::new("server CA");
    let clients = Authority::new("client CA");
    let files = Files::new(
        &ca.issue("askuser", &["localhost", "127.0.0.1"]),
        Some(&clients.pem()),
    );
    let configs = watch_files(
        TlsFiles {
            cert: files.path("server.pem"),
            key: files.path("server.key"),
            client_ca: Some(files.path("client-ca.pem")),
        },
        Duration::from_secs(60),
    )
    .expect("TLS files");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    let (subjects, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let (_reporter, health) = tonic_health::server::health_reporter();
    let record = move |request: tonic::Request<()>| {
        let _ = subjects.send(client_subject(&request));
        Ok(request)
    };
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(InterceptedService::new(health, record))
            .serve_with_incoming(tls_incoming(TcpIncoming::from(listener), configs)),
    );

    let client = clients.issue("ci-bot", &["ci-bot"]);
    let tls = ClientTlsConfig::new()
        .domain_name("localhost")
        .ca_certificate(Certificate::from_pem(ca.pem()))
        .identity(Identity::from_pem(&client.cert, &client.key));
    let channel = Endpoint::from_shared(format!("https://{addr}"))
        .expect("url")
        .tls_config(tls)
        .expect("tls")
        .connect()
        .await
        .expect("connect");
    HealthClient::new(channel)
        .check(tonic_health::pb::HealthCheckRequest::default())
        .await
        .expect("health check");
    assert_eq!(seen.recv().await, Some(Some("ci-bot".to_owned())));
}

/// The terminal client over mTLS: `--tls-ca`, `--tls-cert` + `--tls-key` and `--tls-server-name`,
/// its certificate naming the caller (`--auth cert`).
#[test]
fn the_terminal_client_trusts_tls_ca_and_presents_its_certificate() {
    let ca = Authority::new("server CA");
    let clients = Authority::new("client CA");
    let files = Files::new(&ca.issue("askuser", &["localhost"]), Some(&clients.pem()));
    let mut flags = files.flags(true);
    flags.extend(
        [
            "--auth",
            "cert",
            "--cert-tenant",
            "acme",
            "--cert-scopes",
            "runs:start,runs:read,runs:answer",
        ]
        .map(String::from),
    );
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let agents = scripted_agent(
        "asks",
        &[
            r#"ask = [{ question = "Name?" }]"#,
            r#"say = "hi {{answer.1}}""#,
        ],
    );
    let server = Server::start_with(Some(&agents), &flags);
    let client = clients.issue("ci-bot", &["ci-bot"]);
    replace_file(&files.path("ca.pem"), &ca.pem());
    replace_file(&files.path("client.pem"), &client.cert);
    replace_file(&files.path("client.key"), &client.key);
    let path = |name: &str| files.path(name).display().to_string();
    // The certificate names localhost, not the 127.0.0.1 of the address.
    let tls = [
        "--tls-ca".to_owned(),
        path("ca.pem"),
        "--tls-server-name".to_owned(),
        "localhost".to_owned(),
    ];
    let mtls = [
        "--tls-cert".to_owned(),
        path("client.pem"),
        "--tls-key".to_owned(),
        path("client.key"),
    ];
    let askuser = |args: &[&str], extra: &[String]| {
        Command::new(env!("CARGO_BIN_EXE_askuser"))
            .args(args)
            .args(["--addr", &server.addr])
            .args(extra)
            .stdin(Stdio::null())
            .output()
            .expect("run askuser")
    };

    let started = askuser(
        &["start", "asks", "go", "--json"],
        &[&tls[..], &mtls[..]].concat(),
    );
    assert!(
        started.status.success(),
        "{}; log:\n{}",
        String::from_utf8_lossy(&started.stderr),
        server.log()
    );
    let frames: Vec<serde_json::Value> = String::from_utf8_lossy(&started.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect();
    let run_id = frames[0]["runId"].as_str().expect("run id").to_owned();
    let call_id = frames
        .iter()
        .find_map(|frame| frame["toolCallSuspended"]["toolCallId"].as_str())
        .expect("a question")
        .to_owned();

    // Without a client certificate the server does not let the client in.
    let refused = askuser(&["answer", &run_id, &call_id, "--text", "Ada"], &tls);
    assert_eq!(refused.status.code(), Some(1));
    let answered = askuser(
        &["answer", &run_id, &call_id, "--text", "Ada"],
        &[&tls[..], &mtls[..]].concat(),
    );
    let stdout = String::from_utf8_lossy(&answered.stdout);
    assert!(
        answered.status.success(),
        "{}",
        String::from_utf8_lossy(&answered.stderr)
    );
    assert!(stdout.contains("(by cert:ci-bot)"), "{stdout}");
    assert!(stdout.contains("hi Ada"), "{stdout}");
}
