//! The web inbox served by `askuser serve` on the gRPC port: the page at `/` and `/runs/<id>`, its
//! assets, the headers that confine it, revalidation by ETag; public with auth on while every call
//! stays authenticated; gone with `--no-ui`.

use crate::common;

use askuser::proto::v1 as pb;
use common::Server;
use reqwest::{Method, StatusCode};

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .http1_only()
        .build()
        .expect("client")
}

async fn request(server: &Server, method: Method, path: &str) -> reqwest::Response {
    http()
        .request(method, format!("http://{}{path}", server.addr))
        .send()
        .await
        .expect("request")
}

async fn get(server: &Server, path: &str) -> reqwest::Response {
    request(server, Method::GET, path).await
}

fn header<'a>(response: &'a reqwest::Response, name: &str) -> &'a str {
    response
        .headers()
        .get(name)
        .unwrap_or_else(|| panic!("no {name} header"))
        .to_str()
        .expect("ascii")
}

#[tokio::test]
async fn the_page_and_its_assets_are_served_with_headers_that_confine_them() {
    let server = Server::start();

    let index = get(&server, "/").await;
    assert_eq!(index.status(), StatusCode::OK);
    assert_eq!(header(&index, "content-type"), "text/html; charset=utf-8");
    assert_eq!(header(&index, "content-security-policy"), CSP);
    assert_eq!(header(&index, "x-content-type-options"), "nosniff");
    assert_eq!(header(&index, "referrer-policy"), "no-referrer");
    assert_eq!(header(&index, "cache-control"), "no-cache");
    let etag = header(&index, "etag").to_owned();
    assert!(
        etag.starts_with('"') && etag.ends_with('"') && etag.len() > 2,
        "a strong ETag: {etag}"
    );
    let page = index.text().await.expect("body");
    assert!(page.contains("/assets/app.js"), "{page}");
    assert!(page.contains("/assets/app.css"), "{page}");

    // The page routes on the client side: a run's address is the same page.
    let run_page = get(&server, "/runs/01JRUN").await;
    assert_eq!(run_page.status(), StatusCode::OK);
    assert_eq!(header(&run_page, "etag"), etag);
    assert_eq!(run_page.text().await.expect("body"), page);

    for (path, content_type) in [
        ("/assets/app.js", "text/javascript; charset=utf-8"),
        ("/assets/app.css", "text/css; charset=utf-8"),
        ("/assets/icon.svg", "image/svg+xml"),
    ] {
        let asset = get(&server, path).await;
        assert_eq!(asset.status(), StatusCode::OK, "{path}");
        assert_eq!(header(&asset, "content-type"), content_type, "{path}");
        assert_eq!(header(&asset, "x-content-type-options"), "nosniff");
        assert_ne!(header(&asset, "etag"), etag, "{path} has its own ETag");
        assert!(!asset.bytes().await.expect("body").is_empty(), "{path}");
    }

    // A browser holding the page revalidates it: 304 while it is the same, the page otherwise.
    let unchanged = http()
        .get(format!("http://{}/", server.addr))
        .header("if-none-match", &etag)
        .send()
        .await
        .expect("revalidate");
    assert_eq!(unchanged.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(header(&unchanged, "etag"), etag);
    assert!(unchanged.bytes().await.expect("body").is_empty());
    let stale = http()
        .get(format!("http://{}/", server.addr))
        .header("if-none-match", "\"an older build\"")
        .send()
        .await
        .expect("revalidate");
    assert_eq!(stale.status(), StatusCode::OK);

    let head = request(&server, Method::HEAD, "/").await;
    assert_eq!(head.status(), StatusCode::OK);
    assert_eq!(header(&head, "content-length"), page.len().to_string());
    assert!(head.bytes().await.expect("body").is_empty());

    for path in ["/nope", "/runs/a/b", "/assets/other.js"] {
        let missing = get(&server, path).await;
        assert_eq!(missing.status(), StatusCode::NOT_FOUND, "{path}");
        assert_eq!(
            header(&missing, "content-type"),
            "text/plain; charset=utf-8"
        );
    }
    let posted = request(&server, Method::POST, "/").await;
    assert_eq!(posted.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(header(&posted, "allow"), "GET, HEAD");
}

#[tokio::test]
async fn a_grpc_call_of_no_service_is_still_unimplemented() {
    let server = Server::start();
    let mut grpc = tonic::client::Grpc::new(server.channel().await);
    grpc.ready().await.expect("ready");
    let codec = tonic_prost::ProstCodec::<pb::ListAgentsRequest, pb::ListAgentsResponse>::default();
    let status = grpc
        .unary(
            tonic::Request::new(pb::ListAgentsRequest {}),
            "/askuser.v9.Nothing/Here".parse().expect("path"),
            codec,
        )
        .await
        .expect_err("no such service");
    assert_eq!(status.code(), tonic::Code::Unimplemented);
}

/// The `grpc-status` of a request refused before any message (it is in the headers).
fn grpc_status(response: &reqwest::Response) -> Option<&str> {
    response
        .headers()
        .get("grpc-status")
        .map(|value| value.to_str().expect("ascii"))
}

#[tokio::test]
async fn with_auth_the_page_is_public_and_every_call_it_makes_is_not() {
    let server = Server::start_with(None, &["--auth", "keys"]);

    for path in ["/", "/runs/01JRUN", "/assets/app.js"] {
        let page = get(&server, path).await;
        // A refusal is HTTP 200 too: only the page's headers and no gRPC status say it was served.
        assert_eq!(page.status(), StatusCode::OK, "{path}");
        assert_eq!(grpc_status(&page), None, "{path}");
        assert_eq!(header(&page, "content-security-policy"), CSP, "{path}");
    }
    let web_call = http()
        .post(format!(
            "http://{}/askuser.v1.AgentService/ListRuns",
            server.addr
        ))
        .header("content-type", "application/grpc-web+proto")
        .header("x-grpc-web", "1")
        .body(vec![0, 0, 0, 0, 0])
        .send()
        .await
        .expect("call");
    assert_eq!(grpc_status(&web_call), Some("16"), "UNAUTHENTICATED");
    // Only reading a page is open: a GET of an RPC is no gRPC call (415, before any credential
    // is looked at), a POST to a page needs a key.
    let rpc_get = get(&server, "/askuser.v1.AgentService/ListRuns").await;
    assert_eq!(rpc_get.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(grpc_status(&rpc_get), None);
    let page_post = request(&server, Method::POST, "/").await;
    assert_eq!(grpc_status(&page_post), Some("16"));
}

#[tokio::test]
async fn no_ui_serves_no_page() {
    let server = Server::start_with(None, &["--no-ui"]);
    for path in ["/", "/assets/app.js"] {
        let response = get(&server, path).await;
        assert_ne!(response.status(), StatusCode::OK, "{path}");
        assert!(
            response.headers().get("content-security-policy").is_none(),
            "{path}"
        );
    }
}
