//! The client under test, as the runner talks to it: a request (one JSON object) in, a reply out.
//! A language's client is a child process speaking the protocol of tests/conformance/README.md on
//! stdin/stdout; the Rust stubs answer the same requests in process.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::Outcome;
use crate::message::Status;
use crate::rust_client::RustClient;

/// How long a client under test may take to reply to one request.
const REPLY_TIMEOUT: Duration = Duration::from_secs(60);

/// What a call gave: its result, or the gRPC status it failed with.
pub enum Reply {
    Ok(Value),
    Error(Status),
}

impl Reply {
    /// The result of a call that must succeed.
    pub fn ok(self, what: &str) -> Outcome<Value> {
        match self {
            Reply::Ok(value) => Ok(value),
            Reply::Error(status) => Err(format!("{what} failed: {status}")),
        }
    }
}

/// One client under test, for one scenario.
pub enum ClientUnderTest {
    Process(Box<ProcessClient>),
    InProcess(Box<RustClient>),
}

impl ClientUnderTest {
    pub async fn call(&mut self, request: Value) -> Outcome<Reply> {
        let response = match self {
            ClientUnderTest::Process(process) => process.call(&request).await?,
            ClientUnderTest::InProcess(client) => client.handle(request).await,
        };
        let object = response
            .as_object()
            .filter(|object| object.len() == 1)
            .ok_or_else(|| format!("a reply has exactly one of ok, error, failure: {response}"))?;
        match object.iter().next() {
            Some((key, value)) if key == "ok" => Ok(Reply::Ok(value.clone())),
            Some((key, value)) if key == "error" => Ok(Reply::Error(Status::from_json(value)?)),
            Some((key, value)) if key == "failure" => {
                Err(format!("the client under test failed: {value}"))
            }
            _ => Err(format!(
                "a reply has exactly one of ok, error, failure: {response}"
            )),
        }
    }

    /// What the client under test wrote to stderr, for a failure's report.
    pub fn log(&self) -> String {
        match self {
            ClientUnderTest::Process(process) => process.log(),
            ClientUnderTest::InProcess(_) => String::new(),
        }
    }
}

/// A `client-under-test` child process; killed when dropped.
pub struct ProcessClient {
    _child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    stderr_path: PathBuf,
}

impl ProcessClient {
    pub fn spawn(program: &str, stderr_path: PathBuf) -> Outcome<ProcessClient> {
        let stderr = std::fs::File::create(&stderr_path)
            .map_err(|error| format!("{}: {error}", stderr_path.display()))?;
        let mut child = Command::new(program)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| format!("cannot start {program}: {error}"))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        Ok(ProcessClient {
            _child: child,
            stdin,
            stdout: BufReader::new(stdout).lines(),
            stderr_path,
        })
    }

    async fn call(&mut self, request: &Value) -> Outcome<Value> {
        let mut line = request.to_string();
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .await
            .map_err(|error| format!("writing to the client under test: {error}"))?;
        self.stdin
            .flush()
            .await
            .map_err(|error| error.to_string())?;
        let reply = tokio::time::timeout(REPLY_TIMEOUT, self.stdout.next_line())
            .await
            .map_err(|_| format!("no reply to {request} within {REPLY_TIMEOUT:?}"))?
            .map_err(|error| format!("reading the client under test: {error}"))?
            .ok_or_else(|| {
                format!("the client under test exited instead of replying to {request}")
            })?;
        serde_json::from_str(&reply)
            .map_err(|error| format!("a reply that is not JSON ({error}): {reply}"))
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }
}
