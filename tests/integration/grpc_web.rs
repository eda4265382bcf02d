//! Browsers' way in: gRPC-Web over HTTP/1.1 on the gRPC port, authenticated like any call, and
//! CORS only for the origins `--cors-origin` names.

use crate::common;

use askuser::proto::v1 as pb;
use askuser::proto::v1::run_agent_request::Frame;
use common::Server;
use common::credentials::{create_key, sqlite_store};
use prost::Message;

/// A gRPC-Web call's outcome: its messages and its status (from the trailers, or the headers of a
/// call refused before any message).
struct WebCall {
    messages: Vec<Vec<u8>>,
    status: String,
}

/// `message` in one (gRPC and gRPC-Web) length-prefixed frame.
fn framed(message: &[u8]) -> Vec<u8> {
    let mut body = vec![0];
    body.extend_from_slice(&u32::try_from(message.len()).expect("size").to_be_bytes());
    body.extend_from_slice(message);
    body
}

/// POSTs `body` to `method` of `AgentService` over HTTP/1.1 with `headers`, as any page may.
async fn post(
    server: &Server,
    method: &str,
    body: Vec<u8>,
    headers: &[(&str, &str)],
) -> reqwest::Response {
    let mut call = reqwest::Client::builder()
        .http1_only()
        .build()
        .expect("client")
        .post(format!(
            "http://{}/askuser.v1.AgentService/{method}",
            server.addr
        ))
        .body(body);
    for (name, value) in headers {
        call = call.header(*name, *value);
    }
    let response = call.send().await.expect("send");
    assert_eq!(response.version(), reqwest::Version::HTTP_11);
    response
}

/// Calls `method` of `AgentService` with gRPC-Web (binary) over HTTP/1.1, as a browser does.
async fn web_call(server: &Server, method: &str, request: &[u8], key: Option<&str>) -> WebCall {
    let bearer = key.map(|key| format!("Bearer {key}"));
    let mut headers = vec![];
    if let Some(bearer) = &bearer {
        headers.push(("authorization", bearer.as_str()));
    }
    web_call_with(server, method, request, &headers).await
}

/// [`web_call`] with extra headers.
async fn web_call_with(
    server: &Server,
    method: &str,
    request: &[u8],
    extra: &[(&str, &str)],
) -> WebCall {
    let mut headers = vec![
        ("content-type", "application/grpc-web+proto"),
        ("x-grpc-web", "1"),
    ];
    headers.extend_from_slice(extra);
    let response = post(server, method, framed(request), &headers).await;
    assert_eq!(response.status(), 200);
    let header_status = response
        .headers()
        .get("grpc-status")
        .map(|v| v.to_str().expect("ascii").to_owned());
    let bytes = response.bytes().await.expect("body");
    let (mut messages, mut status) = (Vec::new(), header_status);
    let mut rest = &bytes[..];
    while rest.len() >= 5 {
        let length = u32::from_be_bytes(rest[1..5].try_into().expect("4 bytes")) as usize;
        let frame = &rest[5..5 + length];
        if rest[0] & 0x80 == 0 {
            messages.push(frame.to_vec());
        } else {
            let trailers = String::from_utf8_lossy(frame);
            status = trailers
                .lines()
                .find_map(|line| line.trim().strip_prefix("grpc-status:"))
                .map(|code| code.trim().to_owned());
        }
        rest = &rest[5 + length..];
    }
    WebCall {
        messages,
        status: status.expect("a grpc-status"),
    }
}

#[tokio::test]
async fn grpc_web_over_http1_is_served_and_authenticated() {
    let server = Server::start_with(None, &["--auth", "keys"]);
    let key = create_key(&sqlite_store(&server), "acme", "web", "agents:read");
    let request = pb::ListAgentsRequest {}.encode_to_vec();

    let refused = web_call(&server, "ListAgents", &request, None).await;
    assert_eq!(refused.status, "16", "UNAUTHENTICATED without a key");
    assert!(refused.messages.is_empty());

    let listed = web_call(&server, "ListAgents", &request, Some(&key)).await;
    assert_eq!(listed.status, "0");
    let [message] = &listed.messages[..] else {
        panic!("one message, got {}", listed.messages.len());
    };
    let agents = pb::ListAgentsResponse::decode(&message[..]).expect("decode");
    assert!(
        agents
            .agents
            .iter()
            .any(|agent| agent.agent_id == "greeter"),
        "{agents:?}"
    );
}

/// A browser's preflight of a gRPC-Web call from `origin`: the origin the answer allows, if any.
async fn preflight(server: &Server, origin: &str) -> Option<String> {
    let response = reqwest::Client::new()
        .request(
            reqwest::Method::OPTIONS,
            format!("http://{}/askuser.v1.AgentService/ListAgents", server.addr),
        )
        .header("origin", origin)
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "authorization,content-type,x-grpc-web",
        )
        .send()
        .await
        .expect("preflight");
    response
        .headers()
        .get("access-control-allow-origin")
        .map(|v| v.to_str().expect("ascii").to_owned())
}

#[tokio::test]
async fn only_the_named_origins_pass_cors() {
    let server = Server::start_with(None, &["--cors-origin", "https://inbox.example.com"]);
    assert_eq!(
        preflight(&server, "https://inbox.example.com").await,
        Some("https://inbox.example.com".to_owned())
    );
    assert_eq!(preflight(&server, "https://evil.example.com").await, None);

    let closed = Server::start();
    assert_eq!(preflight(&closed, "https://inbox.example.com").await, None);
}

/// A start frame of the demo agent `greeter`, encoded.
fn start_greeter() -> Vec<u8> {
    pb::RunAgentRequest {
        frame: Some(Frame::Start(pb::StartRun {
            agent_id: "greeter".into(),
            prompt: "hello".into(),
            ..Default::default()
        })),
    }
    .encode_to_vec()
}

/// How many runs the server holds, asked over gRPC from 127.0.0.1.
async fn run_count(server: &Server) -> usize {
    let mut client = server.agents().await;
    let listed = client
        .list_runs(pb::ListRunsRequest::default())
        .await
        .expect("list runs");
    listed.into_inner().runs.len()
}

/// The `ErrorInfo.reason` of a call refused before any message (its status in the headers).
fn refusal_reason(headers: &reqwest::header::HeaderMap) -> Option<String> {
    tonic::Status::from_header_map(headers).and_then(|status| common::error_reason(&status))
}

#[tokio::test]
async fn a_text_plain_post_to_an_rpc_path_is_415_and_starts_no_run() {
    // What `fetch(url, {method: "POST", mode: "no-cors", body})` from any page sends: no preflight.
    let server = Server::start();
    let response = post(
        &server,
        "RunAgent",
        framed(&start_greeter()),
        &[
            ("content-type", "text/plain"),
            ("origin", "http://evil.example"),
        ],
    )
    .await;
    assert_eq!(response.status(), 415);
    assert_eq!(run_count(&server).await, 0, "no run started");
    // The inbox's pages are GETs without a gRPC type, and still served.
    let page = reqwest::get(format!("{}/", server.url()))
        .await
        .expect("page");
    assert_eq!(page.status(), 200);
}

#[tokio::test]
async fn an_open_server_refuses_foreign_hosts_and_origins_and_starts_no_run() {
    let server = Server::start_with(None, &["--auth", "none"]);
    // DNS rebinding: evil.example resolves to 127.0.0.1, the page is "same-origin".
    for headers in [
        vec![("host", "evil.example")],
        vec![
            ("host", "evil.example:80"),
            ("origin", "http://evil.example"),
        ],
        vec![("origin", "http://evil.example")],
    ] {
        let mut all = vec![
            ("content-type", "application/grpc-web+proto"),
            ("x-grpc-web", "1"),
        ];
        all.extend_from_slice(&headers);
        let response = post(&server, "RunAgent", framed(&start_greeter()), &all).await;
        let grpc_status = response
            .headers()
            .get("grpc-status")
            .map(|v| v.to_str().expect("ascii").to_owned());
        assert_eq!(grpc_status.as_deref(), Some("7"), "{headers:?}");
        let reason = refusal_reason(response.headers());
        let expected = match headers[0].0 {
            "host" => "HOST_NOT_ALLOWED",
            _ => "ORIGIN_NOT_ALLOWED",
        };
        assert_eq!(reason.as_deref(), Some(expected), "{headers:?}");
    }
    // A page (no gRPC type) of a foreign host is a plain 403.
    let page = reqwest::Client::new()
        .get(format!("{}/", server.url()))
        .header("host", "evil.example")
        .send()
        .await
        .expect("page");
    assert_eq!(page.status(), 403);
    // Over HTTP/2 the host is the `:authority`.
    let channel = tonic::transport::Endpoint::from_shared(server.url())
        .expect("url")
        .origin("http://evil.example".parse().expect("uri"))
        .connect()
        .await
        .expect("connect");
    let refused = pb::agent_service_client::AgentServiceClient::new(channel)
        .list_runs(pb::ListRunsRequest::default())
        .await
        .expect_err("refused");
    assert_eq!(refused.code(), tonic::Code::PermissionDenied);
    assert_eq!(
        common::error_reason(&refused).as_deref(),
        Some("HOST_NOT_ALLOWED")
    );
    assert_eq!(run_count(&server).await, 0, "no run started");
}

#[tokio::test]
async fn allowed_host_admits_a_name_and_only_it() {
    let server = Server::start_with(None, &["--allowed-host", "askuser.internal"]);
    let request = pb::ListRunsRequest::default().encode_to_vec();
    let admitted = web_call_with(
        &server,
        "ListRuns",
        &request,
        &[
            ("host", "askuser.internal:8080"),
            ("origin", "http://askuser.internal:8080"),
        ],
    )
    .await;
    assert_eq!(admitted.status, "0");
    let refused = web_call_with(&server, "ListRuns", &request, &[("host", "evil.example")]).await;
    assert_eq!(refused.status, "7");
}
