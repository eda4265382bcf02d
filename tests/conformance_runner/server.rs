//! The server the scenarios run against: `askuser serve --auth keys` with the conformance agents on
//! a SQLite file, and the two keys, made offline before it starts. `restart_server` kills it and
//! starts it again on the same port and database.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::Outcome;

/// The scopes of both keys (tests/conformance/README.md, "The keys").
const SCOPES: &str =
    "runs:start,runs:read,runs:answer,runs:cancel,tools:execute,agents:read,asks:create";

/// How long the server may take to start.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The server binary: ASKUSER_BIN, or the one cargo built with this test.
fn binary() -> PathBuf {
    std::env::var_os("ASKUSER_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_askuser")))
}

struct Process {
    child: Option<Child>,
    /// `127.0.0.1:0` until the first start; then the port it got, kept across restarts.
    listen: String,
    data_dir: PathBuf,
    agents: PathBuf,
    log: PathBuf,
}

impl Process {
    fn spawn(&mut self) -> Outcome {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|error| error.to_string())?;
        let mut child = Command::new(binary())
            .args(["serve", "--auth", "keys", "--listen", &self.listen])
            .arg("--data-dir")
            .arg(&self.data_dir)
            .arg("--config")
            .arg(&self.agents)
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .spawn()
            .map_err(|error| format!("cannot start {}: {error}", binary().display()))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let addr = askuser::server::announced_address(stdout, START_TIMEOUT)
            .map_err(|error| format!("{error}; see {}", self.log.display()))?;
        self.listen = addr.to_string();
        self.child = Some(child);
        Ok(())
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The running server, shared with the thread that brings it back after a restart.
pub struct Server {
    process: Arc<Mutex<Process>>,
    pub addr: String,
    pub own_key: String,
    pub other_key: String,
    restarting: Option<JoinHandle<Outcome>>,
}

impl Server {
    pub fn start(dir: &Path, agents: &Path) -> Outcome<Server> {
        let data_dir = dir.join("data");
        let key = |tenant: &str| -> Outcome<String> {
            let output = Command::new(binary())
                .arg("keys")
                .arg("--data-dir")
                .arg(&data_dir)
                .args([
                    "create",
                    "--tenant",
                    tenant,
                    "--name",
                    "conformance",
                    "--scopes",
                    SCOPES,
                ])
                .output()
                .map_err(|error| error.to_string())?;
            let key = String::from_utf8_lossy(&output.stdout).trim().to_owned();
            if !output.status.success() || key.is_empty() {
                return Err(format!(
                    "askuser keys create failed: {}",
                    String::from_utf8_lossy(&output.stderr)
                ));
            }
            Ok(key)
        };
        let (own_key, other_key) = (key("conformance")?, key("other")?);
        let mut process = Process {
            child: None,
            listen: "127.0.0.1:0".into(),
            data_dir,
            agents: agents.to_owned(),
            log: dir.join("server.log"),
        };
        process.spawn()?;
        Ok(Server {
            addr: process.listen.clone(),
            process: Arc::new(Mutex::new(process)),
            own_key,
            other_key,
            restarting: None,
        })
    }

    /// Kills the server now and starts it again on the same port after `down`, without waiting.
    pub fn restart(&mut self, down: Duration) -> Outcome {
        self.wait_until_up()?;
        let process = Arc::clone(&self.process);
        process.lock().map_err(|_| "server lock poisoned")?.kill();
        self.restarting = Some(std::thread::spawn(move || {
            std::thread::sleep(down);
            process.lock().map_err(|_| "server lock poisoned")?.spawn()
        }));
        Ok(())
    }

    /// Waits for a restart in progress to finish.
    pub fn wait_until_up(&mut self) -> Outcome {
        match self.restarting.take() {
            Some(handle) => handle.join().map_err(|_| "the restart panicked")?,
            None => Ok(()),
        }
    }

    pub fn log(&self) -> String {
        self.process
            .lock()
            .map(|process| std::fs::read_to_string(&process.log).unwrap_or_default())
            .unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.wait_until_up();
        if let Ok(mut process) = self.process.lock() {
            process.kill();
        }
    }
}
