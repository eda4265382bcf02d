//! Browsers' way in: gRPC-Web over HTTP/1.1 on the gRPC port, authenticated like any call, and
//! CORS only for the origins `--cors-origin` names.

mod common;

use askuser::proto::v1 as pb;
use common::Server;
use common::credentials::{create_key, sqlite_store};
use prost::Message;

/// A gRPC-Web call's outcome: its messages and its status (from the trailers, or the headers of a
/// call refused before any message).
struct WebCall {
    messages: Vec<Vec<u8>>,
    status: String,
}

/// Calls `method` of `AgentService` with gRPC-Web (binary) over HTTP/1.1, as a browser does.
async fn web_call(server: &Server, method: &str, request: &[u8], key: Option<&str>) -> WebCall {
    let mut body = vec![0];
    body.extend_from_slice(&u32::try_from(request.len()).expect("size").to_be_bytes());
    body.extend_from_slice(request);
    let mut call = reqwest::Client::builder()
        .http1_only()
        .build()
        .expect("client")
        .post(format!(
            "http://{}/askuser.v1.AgentService/{method}",
            server.addr
        ))
        .header("content-type", "application/grpc-web+proto")
        .header("x-grpc-web", "1")
        .body(body);
    if let Some(key) = key {
        call = call.header("authorization", format!("Bearer {key}"));
    }
    let response = call.send().await.expect("send");
    assert_eq!(response.version(), reqwest::Version::HTTP_11);
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
