//! Test harness: runs the real `askuser` binary on 127.0.0.1:0 with a real SQLite file in a
//! temporary directory, and talks to it with the generated tonic clients.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use askuser::proto::v1 as pb;
use askuser::proto::v1::agent_service_client::AgentServiceClient;
use askuser::proto::v1::run_agent_request::Frame;
use askuser::proto::v1::run_agent_response::Event;
use askuser::proto::v1::tool_service_client::ToolServiceClient;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Streaming;
use tonic::transport::Channel;

/// How long a test waits for one frame before it fails.
pub const FRAME_TIMEOUT: Duration = Duration::from_secs(20);

/// A running `askuser serve` child process.
pub struct Server {
    child: Option<Child>,
    pub addr: String,
    pub data_dir: PathBuf,
    config: Option<PathBuf>,
    extra_args: Vec<String>,
    extra_env: Vec<(String, String)>,
    // Keeps the temporary directory alive as long as the server.
    _temp: Option<tempfile::TempDir>,
}

impl Server {
    /// Starts a server with the built-in demo agents.
    pub fn start() -> Server {
        Server::start_with(None, &[])
    }

    /// Starts a server with an agents file (TOML text) and extra `serve` flags.
    pub fn start_with(agents_toml: Option<&str>, extra_args: &[&str]) -> Server {
        Server::start_with_env(agents_toml, extra_args, &[])
    }

    /// Like [`Server::start_with`], with extra environment variables for the server process (they
    /// stay set across restarts).
    pub fn start_with_env(
        agents_toml: Option<&str>,
        extra_args: &[&str],
        extra_env: &[(&str, &str)],
    ) -> Server {
        let temp = tempfile::tempdir().expect("temp dir");
        let data_dir = temp.path().join("data");
        let config = agents_toml.map(|toml| {
            let path = temp.path().join("agents.toml");
            std::fs::write(&path, toml).expect("write agents file");
            path
        });
        let mut server = Server {
            child: None,
            addr: String::new(),
            data_dir,
            config,
            extra_args: extra_args.iter().map(|s| s.to_string()).collect(),
            extra_env: extra_env
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect(),
            _temp: Some(temp),
        };
        server.spawn();
        server
    }

    /// The server's log (stderr), for failure messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    fn log_path(&self) -> PathBuf {
        self.data_dir.with_file_name("server.log")
    }

    fn spawn(&mut self) {
        std::fs::create_dir_all(&self.data_dir).expect("data dir");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .expect("log file");
        let mut command = Command::new(env!("CARGO_BIN_EXE_askuser"));
        command
            .arg("serve")
            .arg("--listen")
            .arg("127.0.0.1:0")
            .arg("--data-dir")
            .arg(&self.data_dir)
            .args(&self.extra_args)
            .env("RUST_LOG", "info")
            .envs(self.extra_env.iter().map(|(name, value)| (name, value)))
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log));
        if let Some(config) = &self.config {
            command.arg("--config").arg(config);
        }
        let mut child = command.spawn().expect("spawn askuser");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("server did not start; log:\n{}", self.log()));
        let addr = line
            .trim()
            .strip_prefix("askuser listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}; log:\n{}", self.log()))
            .to_owned();
        self.addr = addr;
        self.child = Some(child);
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub async fn channel(&self) -> Channel {
        Channel::from_shared(self.url())
            .expect("url")
            .connect()
            .await
            .expect("connect")
    }

    pub async fn agents(&self) -> AgentServiceClient<Channel> {
        AgentServiceClient::new(self.channel().await)
    }

    pub async fn tools(&self) -> ToolServiceClient<Channel> {
        ToolServiceClient::new(self.channel().await)
    }

    /// SIGKILL: no shutdown code runs.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGTERM, then waits for the process to exit; returns whether it exited successfully.
    pub fn terminate(&mut self) -> bool {
        let Some(mut child) = self.child.take() else {
            return false;
        };
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status();
        child.wait().map(|s| s.success()).unwrap_or(false)
    }

    /// Sends SIGTERM without waiting; returns the child to wait on.
    pub fn send_terminate(&mut self) -> Option<Child> {
        let child = self.child.take()?;
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status();
        Some(child)
    }

    /// Starts the server again on the same data directory (a new port).
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    pub fn data_path(&self) -> &Path {
        &self.data_dir
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One open `RunAgent` stream.
pub struct RunStream {
    pub sender: mpsc::Sender<pb::RunAgentRequest>,
    pub inbound: Streaming<pb::RunAgentResponse>,
    pub run_id: String,
}

impl RunStream {
    /// Opens a stream whose first frame is `first`; fails with the status if the server refuses.
    pub async fn open(
        client: &mut AgentServiceClient<Channel>,
        first: Frame,
    ) -> Result<RunStream, tonic::Status> {
        let (sender, receiver) = mpsc::channel(16);
        sender
            .send(pb::RunAgentRequest { frame: Some(first) })
            .await
            .expect("send first frame");
        let inbound = client
            .run_agent(ReceiverStream::new(receiver))
            .await?
            .into_inner();
        Ok(RunStream {
            sender,
            inbound,
            run_id: String::new(),
        })
    }

    /// Starts a run and reads its `run_started` frame.
    pub async fn start(client: &mut AgentServiceClient<Channel>, agent_id: &str) -> RunStream {
        let mut stream = RunStream::open(
            client,
            Frame::Start(pb::StartRun {
                agent_id: agent_id.into(),
                prompt: "test".into(),
                ..Default::default()
            }),
        )
        .await
        .expect("start run");
        let first = stream.next().await;
        assert!(
            matches!(first.event, Some(Event::RunStarted(_))),
            "{first:?}"
        );
        assert_eq!(first.sequence, 1);
        stream.run_id = first.run_id;
        stream
    }

    /// Attaches to a run after `after_sequence`.
    pub async fn attach(
        client: &mut AgentServiceClient<Channel>,
        run_id: &str,
        after_sequence: u64,
    ) -> RunStream {
        let mut stream = RunStream::open(
            client,
            Frame::Attach(pb::AttachRun {
                run_id: run_id.into(),
                after_sequence,
            }),
        )
        .await
        .expect("attach");
        stream.run_id = run_id.to_owned();
        stream
    }

    /// The next frame other than a heartbeat.
    pub async fn next(&mut self) -> pb::RunAgentResponse {
        loop {
            let frame = self.next_raw().await.expect("frame");
            if !matches!(frame.event, Some(Event::Heartbeat(_))) {
                return frame;
            }
        }
    }

    /// The next frame, heartbeats included; `None` when the stream ended with OK.
    pub async fn next_raw(&mut self) -> Option<pb::RunAgentResponse> {
        tokio::time::timeout(FRAME_TIMEOUT, self.inbound.message())
            .await
            .expect("timed out waiting for a frame")
            .expect("stream error")
    }

    /// Reads frames until a `tool_call_suspended`; returns it.
    pub async fn next_suspended(&mut self) -> pb::ToolCallSuspended {
        loop {
            let frame = self.next().await;
            match frame.event {
                Some(Event::ToolCallSuspended(suspended)) => return suspended,
                Some(Event::RunFailed(failed)) => panic!("run failed: {}", failed.message),
                _ => {}
            }
        }
    }

    /// Reads frames until the run ends; returns the completed output text.
    pub async fn completed_text(&mut self) -> String {
        loop {
            let frame = self.next().await;
            match frame.event {
                Some(Event::RunCompleted(done)) => return done.output_text,
                Some(Event::RunFailed(failed)) => panic!("run failed: {}", failed.message),
                _ => {}
            }
        }
    }

    pub async fn send(&self, answer: pb::Answer) {
        self.sender
            .send(pb::RunAgentRequest {
                frame: Some(Frame::Answer(answer)),
            })
            .await
            .expect("send answer");
    }

    pub async fn send_text(&self, tool_call_id: &str, text: &str) {
        self.send(text_answer(&self.run_id, tool_call_id, text))
            .await;
    }

    pub async fn send_selections(&self, tool_call_id: &str, labels: &[&str]) {
        self.send(selections_answer(&self.run_id, tool_call_id, labels))
            .await;
    }
}

pub fn text_answer(run_id: &str, tool_call_id: &str, text: &str) -> pb::Answer {
    pb::Answer {
        run_id: run_id.into(),
        tool_call_id: tool_call_id.into(),
        answer: Some(pb::answer::Answer::Text(text.into())),
        answer_id: String::new(),
    }
}

pub fn selections_answer(run_id: &str, tool_call_id: &str, labels: &[&str]) -> pb::Answer {
    pb::Answer {
        run_id: run_id.into(),
        tool_call_id: tool_call_id.into(),
        answer: Some(pb::answer::Answer::Selections(pb::Selections {
            labels: labels.iter().map(|l| l.to_string()).collect(),
        })),
        answer_id: String::new(),
    }
}

pub fn decline_answer(run_id: &str, tool_call_id: &str, reason: &str) -> pb::Answer {
    pb::Answer {
        run_id: run_id.into(),
        tool_call_id: tool_call_id.into(),
        answer: Some(pb::answer::Answer::Decline(pb::Decline {
            reason: reason.into(),
        })),
        answer_id: String::new(),
    }
}

/// The `ErrorInfo.reason` of a status, if it has one.
pub fn error_reason(status: &tonic::Status) -> Option<String> {
    use tonic_types::StatusExt;
    status.get_details_error_info().map(|info| info.reason)
}

/// The `BadRequest` field violations of a status, as (field, description).
pub fn field_violations(status: &tonic::Status) -> Vec<(String, String)> {
    use tonic_types::StatusExt;
    status
        .get_details_bad_request()
        .map(|bad| {
            bad.field_violations
                .into_iter()
                .map(|v| (v.field, v.description))
                .collect()
        })
        .unwrap_or_default()
}
