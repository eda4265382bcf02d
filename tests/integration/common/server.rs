//! The server under test, on 127.0.0.1 with a real SQLite file in a temporary directory (or the
//! PostgreSQL its flags name). By default it runs inside the test process, on a runtime of its
//! own; a test that needs a real process boundary (SIGKILL and restarts, signals and the drain,
//! resource limits of the process, the binary's log, process-wide state such as the metrics
//! recorder, the OTLP exporter or environment variables) runs `askuser serve` as a child process.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

use askuser::proto::v1::agent_service_client::AgentServiceClient;
use askuser::proto::v1::tool_service_client::ToolServiceClient;
use tonic::transport::Channel;

/// How long a server may take to start.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// How long an in-process server's blocking tasks get to end once it is stopped.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// A running askuser server.
pub struct Server {
    running: Option<Running>,
    /// Whether it runs as a child process (else inside the test process).
    process: bool,
    pub addr: String,
    pub data_dir: PathBuf,
    config: Option<PathBuf>,
    extra_args: Vec<String>,
    extra_env: Vec<(String, String)>,
    // Keeps the temporary directory alive as long as the server.
    _temp: Option<tempfile::TempDir>,
}

enum Running {
    Process(Child),
    InProcess(InProcess),
}

/// A server served by a thread of the test process, on its own runtime.
struct InProcess {
    /// Dropped to stop the server: its runtime is dropped, ending every task as a kill would.
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for InProcess {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// `askuser serve`'s flags, parsed as the binary parses them.
#[derive(clap::Parser)]
struct ServeFlags {
    #[command(flatten)]
    serve: askuser::config::ServeArgs,
}

impl Server {
    /// Starts a server in-process with the built-in demo agents.
    pub fn start() -> Server {
        Server::start_with(None, &[])
    }

    /// Starts a server in-process with an agents file (TOML text) and extra `serve` flags.
    pub fn start_with(agents_toml: Option<&str>, extra_args: &[&str]) -> Server {
        Server::new(agents_toml, extra_args, &[], false)
    }

    /// Starts `askuser serve` as a child process with the built-in demo agents.
    pub fn process() -> Server {
        Server::process_with(None, &[])
    }

    /// Starts `askuser serve` as a child process with an agents file and extra `serve` flags.
    pub fn process_with(agents_toml: Option<&str>, extra_args: &[&str]) -> Server {
        Server::process_with_env(agents_toml, extra_args, &[])
    }

    /// [`Server::process_with`] with extra environment variables for the server process (they
    /// stay set across restarts): a child, so the test process's environment is never changed.
    pub fn process_with_env(
        agents_toml: Option<&str>,
        extra_args: &[&str],
        extra_env: &[(&str, &str)],
    ) -> Server {
        Server::new(agents_toml, extra_args, extra_env, true)
    }

    fn new(
        agents_toml: Option<&str>,
        extra_args: &[&str],
        extra_env: &[(&str, &str)],
        process: bool,
    ) -> Server {
        let temp = tempfile::tempdir().expect("temp dir");
        let data_dir = temp.path().join("data");
        let config = agents_toml.map(|toml| {
            let path = temp.path().join("agents.toml");
            std::fs::write(&path, toml).expect("write agents file");
            path
        });
        let mut server = Server {
            running: None,
            process,
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

    /// The log (stderr) of a server run as a child process, for failure messages and assertions.
    /// An in-process server's log is not captured (the tracing subscriber is process-wide): a
    /// test that asserts on the log starts its server with `Server::process*`.
    pub fn log(&self) -> String {
        match self.process {
            true => std::fs::read_to_string(self.log_path()).unwrap_or_default(),
            false => "(the server ran in the test process: no log)".to_owned(),
        }
    }

    fn log_path(&self) -> PathBuf {
        self.data_dir.with_file_name("server.log")
    }

    /// The flags of `askuser serve` for this server.
    fn serve_args(&self) -> Vec<String> {
        let mut args = vec![
            "--listen".to_owned(),
            "127.0.0.1:0".to_owned(),
            "--data-dir".to_owned(),
            self.data_dir.to_str().expect("utf-8 path").to_owned(),
        ];
        args.extend(self.extra_args.iter().cloned());
        if let Some(config) = &self.config {
            args.push("--config".to_owned());
            args.push(config.to_str().expect("utf-8 path").to_owned());
        }
        args
    }

    fn spawn(&mut self) {
        std::fs::create_dir_all(&self.data_dir).expect("data dir");
        match self.process {
            true => self.spawn_process(),
            false => self.spawn_in_process(),
        }
    }

    fn spawn_process(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .expect("log file");
        let mut child = Command::new(env!("CARGO_BIN_EXE_askuser"))
            .arg("serve")
            .args(self.serve_args())
            .env("RUST_LOG", "info")
            .envs(self.extra_env.iter().map(|(name, value)| (name, value)))
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("spawn askuser");
        let stdout = child.stdout.take().expect("stdout");
        let addr = askuser::server::announced_address(stdout, START_TIMEOUT)
            .unwrap_or_else(|error| panic!("{error}; log:\n{}", self.log()));
        self.addr = addr.to_string();
        self.running = Some(Running::Process(child));
    }

    fn spawn_in_process(&mut self) {
        for flag in ["--metrics-listen", "--otlp-endpoint"] {
            assert!(
                !self
                    .extra_args
                    .iter()
                    .any(|arg| arg == flag || arg.starts_with(&format!("{flag}="))),
                "{flag} sets process-wide state: start the server with Server::process*"
            );
        }
        let flags = std::iter::once("askuser".to_owned()).chain(self.serve_args());
        let args = <ServeFlags as clap::Parser>::try_parse_from(flags)
            .unwrap_or_else(|error| panic!("serve flags: {error}"))
            .serve;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener.set_nonblocking(true).expect("non-blocking");
        let addr = listener.local_addr().expect("local address");
        let (built_tx, built_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(format!("askuser {addr}"))
            .spawn(move || {
                // As the binary's `#[tokio::main]`: a multi-threaded runtime, a worker per core.
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .enable_all()
                    .build()
                    .expect("runtime");
                runtime.block_on(async move {
                    let built = match askuser::server::Built::build(args).await {
                        Ok(built) => built,
                        Err(error) => {
                            let _ = built_tx.send(Err(error.to_string()));
                            return;
                        }
                    };
                    let _ = built_tx.send(Ok(()));
                    let listener =
                        tokio::net::TcpListener::from_std(listener).expect("tokio listener");
                    tokio::select! {
                        served = built.run(listener, std::future::pending()) => {
                            if let Err(error) = served {
                                eprintln!("askuser on {addr} failed: {error}");
                            }
                        }
                        _ = stopped => {}
                    }
                });
                runtime.shutdown_timeout(STOP_TIMEOUT);
            })
            .expect("server thread");
        let mut running = InProcess {
            stop: Some(stop),
            thread: Some(thread),
        };
        match built_rx.recv_timeout(START_TIMEOUT) {
            Ok(Ok(())) => {}
            Ok(Err(error)) => panic!("server did not start: {error}"),
            Err(_) => {
                // Not joined: a server stuck in its start would hold the test forever.
                running.thread.take();
                panic!("server did not start within {START_TIMEOUT:?}")
            }
        }
        self.addr = addr.to_string();
        self.running = Some(Running::InProcess(running));
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

    /// The child process, for what only a process has.
    fn child(&mut self) -> Option<&mut Child> {
        assert!(
            self.process,
            "this needs a process: start the server with Server::process*"
        );
        match self.running.as_mut()? {
            Running::Process(child) => Some(child),
            Running::InProcess(_) => None,
        }
    }

    /// SIGKILL: no shutdown code runs.
    pub fn kill(&mut self) {
        if let Some(child) = self.child() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.running = None;
    }

    /// SIGTERM, then waits for the process to exit; returns whether it exited successfully.
    pub fn terminate(&mut self) -> bool {
        let Some(mut child) = self.send_terminate() else {
            return false;
        };
        child.wait().map(|s| s.success()).unwrap_or(false)
    }

    /// Sends SIGTERM without waiting; returns the child to wait on.
    pub fn send_terminate(&mut self) -> Option<Child> {
        self.child()?;
        let Some(Running::Process(child)) = self.running.take() else {
            return None;
        };
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status();
        Some(child)
    }

    /// Starts the server process again on the same data directory (a new port), after a SIGKILL.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// Starts the server process again on the same data directory with other extra `serve` flags.
    pub fn restart_with(&mut self, extra_args: &[&str]) {
        self.extra_args = extra_args.iter().map(|s| s.to_string()).collect();
        self.restart();
    }

    /// The server's process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        assert!(
            self.process,
            "an in-process server has no pid: start it with Server::process*"
        );
        match self.running.as_ref()? {
            Running::Process(child) => Some(child.id()),
            Running::InProcess(_) => None,
        }
    }

    pub fn data_path(&self) -> &Path {
        &self.data_dir
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        match self.running.take() {
            Some(Running::Process(mut child)) => {
                let _ = child.kill();
                let _ = child.wait();
            }
            Some(Running::InProcess(server)) => drop(server),
            None => {}
        }
    }
}
