//! API keys for tests with auth on: made with `askuser keys` on a server's store, and sent as
//! `authorization: Bearer` on each request.

use std::process::Command;

use askuser::proto::v1 as pb;
use askuser::proto::v1::agent_service_client::AgentServiceClient;
use askuser::proto::v1::run_agent_response::Event;
use tonic::transport::Channel;

use super::Server;

/// Runs `askuser keys <args>` on the server's data directory; returns its stdout.
pub fn keys(server: &Server, args: &[&str]) -> String {
    let data_dir = server.data_dir.to_str().expect("utf-8 path");
    keys_on(&["--data-dir", data_dir], args)
}

/// Runs `askuser keys <store flags> <args>`; returns its stdout.
pub fn keys_on(store: &[&str], args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_askuser"))
        .arg("keys")
        .args(store)
        .args(args)
        .output()
        .expect("run askuser keys");
    assert!(
        output.status.success(),
        "askuser keys {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("utf-8")
}

/// Creates a key of `tenant` named `name` (its principal's subject is `key:<name>`) with these
/// comma-separated scopes on `store` (`serve`'s store flags); returns the key.
pub fn create_key(store: &[&str], tenant: &str, name: &str, scopes: &str) -> String {
    keys_on(
        store,
        &[
            "create", "--tenant", tenant, "--name", name, "--scopes", scopes,
        ],
    )
    .trim()
    .to_owned()
}

/// The store flags of a server on its own SQLite file.
pub fn sqlite_store(server: &Server) -> [&str; 2] {
    ["--data-dir", server.data_dir.to_str().expect("utf-8 path")]
}

/// A request carrying `credential` as a bearer token, if any.
pub fn authorized<T>(message: T, credential: Option<&str>) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    if let Some(credential) = credential {
        let value = format!("Bearer {credential}")
            .parse()
            .expect("header value");
        request.metadata_mut().insert("authorization", value);
    }
    request
}

/// `ResumeRun` as `key`: the first frame's event, or the refusal's code and reason.
pub async fn resume_as(
    client: &mut AgentServiceClient<Channel>,
    key: &str,
    answer: pb::Answer,
) -> Result<Event, (tonic::Code, Option<String>)> {
    let request = pb::ResumeRunRequest {
        answer: Some(answer),
    };
    let refused = |status: tonic::Status| (status.code(), super::error_reason(&status));
    let mut stream = client
        .resume_run(authorized(request, Some(key)))
        .await
        .map_err(refused)?
        .into_inner();
    let frame = tokio::time::timeout(super::FRAME_TIMEOUT, stream.message())
        .await
        .expect("timed out waiting for a frame")
        .map_err(refused)?
        .expect("a frame");
    Ok(frame.event.expect("an event"))
}
