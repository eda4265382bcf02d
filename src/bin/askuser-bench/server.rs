//! The server under test: a real `askuser serve` child process on 127.0.0.1:0 with a fresh store
//! (a new SQLite data directory, or a new PostgreSQL database) for every scenario.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use askuser::proto::v1::agent_service_client::AgentServiceClient;
use tonic::transport::{Channel, Endpoint};

use crate::BenchError;
use crate::scenarios::cpu_time;

/// How long the server may take to print its address, and to exit after SIGTERM.
const START_TIMEOUT: Duration = Duration::from_secs(30);
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// Which store the server runs on.
#[derive(Clone, Debug)]
pub enum StoreKind {
    /// The embedded SQLite store in a fresh data directory.
    Sqlite,
    /// PostgreSQL: every server gets a fresh database created through this URL (whose path names
    /// an existing database, e.g. `postgres`).
    Postgres { admin_url: String },
}

impl StoreKind {
    pub fn name(&self) -> &'static str {
        match self {
            StoreKind::Sqlite => "SQLite",
            StoreKind::Postgres { .. } => "PostgreSQL",
        }
    }
}

/// What a throughput scenario runs against: the askuser server on a store, or the transport floor.
#[derive(Clone, Copy, Debug)]
pub enum Launch<'a> {
    Server {
        binary: &'a Path,
        kind: &'a StoreKind,
        /// Extra `serve` flags, e.g. `--auth keys`.
        flags: &'a [&'a str],
        /// With `--auth keys`: the tenant of the API key the round trips present.
        key_tenant: Option<&'a str>,
    },
    Floor,
}

impl Launch<'_> {
    pub async fn start(&self, dir: &Path) -> Result<ServerProcess, BenchError> {
        match *self {
            Launch::Server {
                binary,
                kind,
                flags,
                ..
            } => ServerProcess::start_with(binary, dir, kind, flags).await,
            Launch::Floor => ServerProcess::start_floor(dir).await,
        }
    }
}

/// Bytes a store takes on disk.
#[derive(Clone, Copy, Debug, Default)]
pub struct StoreSize {
    pub database: u64,
    /// The SQLite WAL, not yet copied into the database file; 0 for PostgreSQL.
    pub wal: u64,
}

/// CPU time so far of each of a database's processes, by process id.
pub struct DatabaseCpu(BTreeMap<u32, Duration>);

impl DatabaseCpu {
    /// CPU time the database's processes used since `before`: a process that started since
    /// counts whole; one that ended since is not counted.
    pub fn since(&self, before: &DatabaseCpu) -> Duration {
        self.0
            .iter()
            .map(|(pid, cpu)| cpu.saturating_sub(before.0.get(pid).copied().unwrap_or_default()))
            .sum()
    }
}

/// Whether process `pid` of this machine is a PostgreSQL process.
fn is_postgres(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .is_ok_and(|name| name.trim_end() == "postgres")
}

/// A running server and the store it owns.
pub struct ServerProcess {
    child: Child,
    pub addr: String,
    dir: PathBuf,
    database: Option<Database>,
}

/// A database created for one server, dropped after it.
struct Database {
    admin_url: String,
    name: String,
    url: String,
}

impl ServerProcess {
    /// Starts `binary serve` with a store of `kind` under `dir` (created fresh).
    pub async fn start(binary: &Path, dir: &Path, kind: &StoreKind) -> Result<Self, BenchError> {
        Self::start_with(binary, dir, kind, &[]).await
    }

    /// [`ServerProcess::start`] with extra `serve` flags (e.g. `--auth keys`).
    pub async fn start_with(
        binary: &Path,
        dir: &Path,
        kind: &StoreKind,
        extra_args: &[&str],
    ) -> Result<Self, BenchError> {
        if dir.exists() {
            std::fs::remove_dir_all(dir)?;
        }
        std::fs::create_dir_all(dir)?;
        let database = match kind {
            StoreKind::Sqlite => None,
            StoreKind::Postgres { admin_url } => Some(Database::create(admin_url, dir).await?),
        };
        let agents = dir.join("agents.toml");
        std::fs::write(&agents, crate::workload::BENCH_AGENTS)?;
        let mut command = Command::new(binary);
        command
            .arg("serve")
            .arg("--listen")
            .arg("127.0.0.1:0")
            .arg("--data-dir")
            .arg(dir.join("data"))
            .arg("--config")
            .arg(&agents)
            .args(extra_args)
            // Its defaults but the line per run event (`askuser::runs`): what is measured is the
            // request path, not a log line per event written to a file.
            .env("RUST_LOG", "info,askuser::runs=warn");
        if let Some(database) = &database {
            command.arg("--database-url").arg(&database.url);
        }
        Self::spawn(command, dir, database)
    }

    /// Starts the transport floor ([`crate::floor`]): this program with `--serve-floor`.
    pub async fn start_floor(dir: &Path) -> Result<Self, BenchError> {
        if dir.exists() {
            std::fs::remove_dir_all(dir)?;
        }
        std::fs::create_dir_all(dir)?;
        let mut command = Command::new(std::env::current_exe()?);
        command.arg("--serve-floor");
        Self::spawn(command, dir, None)
    }

    /// Runs `command` with its stderr in `dir/server.log` and waits for its address on stdout.
    fn spawn(
        mut command: Command,
        dir: &Path,
        database: Option<Database>,
    ) -> Result<Self, BenchError> {
        let log = std::fs::File::create(dir.join("server.log"))?;
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log));
        let mut child = command.spawn()?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| BenchError::failed("the server's stdout is not piped"))?;
        let addr = match askuser::server::announced_address(stdout, START_TIMEOUT) {
            Ok(addr) => addr,
            Err(error) => {
                let _ = child.kill();
                let _ = child.wait();
                let log = std::fs::read_to_string(dir.join("server.log")).unwrap_or_default();
                return Err(BenchError::failed(format!("{error}; log:\n{log}")));
            }
        };
        Ok(ServerProcess {
            addr: addr.to_string(),
            child,
            dir: dir.to_owned(),
            database,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// CPU time so far of each of the database's processes (its backends and background
    /// processes, as `pg_stat_activity` lists them, but the one this asks through), when the
    /// database is PostgreSQL on this machine; `None` for SQLite, which runs in the server, or
    /// when its processes cannot be read here.
    pub async fn database_cpu(&self) -> Result<Option<DatabaseCpu>, BenchError> {
        let Some(database) = &self.database else {
            return Ok(None);
        };
        let client = postgres_client(&database.url).await?;
        let rows = client
            .query(
                "SELECT pid FROM pg_stat_activity WHERE pid <> pg_backend_pid()",
                &[],
            )
            .await?;
        let mut processes = BTreeMap::new();
        for row in rows {
            let pid = u32::try_from(row.get::<_, i32>(0))
                .map_err(|_| BenchError::failed("PostgreSQL listed a negative process id"))?;
            // A process that ended since, or one on another machine (whose id may be a local
            // process's of another program), is left out.
            if is_postgres(pid)
                && let Ok(cpu) = cpu_time(pid)
            {
                processes.insert(pid, cpu);
            }
        }
        Ok((!processes.is_empty()).then_some(DatabaseCpu(processes)))
    }

    /// Opens `count` HTTP/2 connections to the server.
    pub async fn connect(
        &self,
        count: usize,
    ) -> Result<Vec<AgentServiceClient<Channel>>, BenchError> {
        let endpoint = Endpoint::from_shared(format!("http://{}", self.addr))
            .map_err(|e| BenchError::failed(e.to_string()))?
            .tcp_nodelay(true);
        let mut clients = Vec::with_capacity(count);
        for _ in 0..count {
            clients.push(AgentServiceClient::new(endpoint.connect().await?));
        }
        Ok(clients)
    }

    /// The server's resident set size in KiB (`VmRSS` of /proc/PID/status).
    pub fn rss_kib(&self) -> Result<u64, BenchError> {
        self.status_kib("VmRSS:")
    }

    /// The anonymous part of the server's resident set in KiB (`RssAnon`).
    pub fn anon_kib(&self) -> Result<u64, BenchError> {
        self.status_kib("RssAnon:")
    }

    /// The server's peak resident set size in KiB (`VmHWM`).
    pub fn peak_rss_kib(&self) -> Result<u64, BenchError> {
        self.status_kib("VmHWM:")
    }

    fn status_kib(&self, field: &str) -> Result<u64, BenchError> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))?;
        status
            .lines()
            .find_map(|line| line.strip_prefix(field))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kib| kib.parse().ok())
            .ok_or_else(|| BenchError::failed(format!("no {field} in /proc/PID/status")))
    }

    /// What the store takes on disk: the SQLite database file and its WAL, or the PostgreSQL
    /// database's `pg_database_size` (tables, indexes, TOAST; the server-wide WAL is not in it).
    pub async fn store_size(&self) -> Result<StoreSize, BenchError> {
        match &self.database {
            None => {
                let mut size = StoreSize::default();
                for entry in std::fs::read_dir(self.dir.join("data"))? {
                    let entry = entry?;
                    let bytes = entry.metadata()?.len();
                    if entry.file_name().to_string_lossy().ends_with("-wal") {
                        size.wal += bytes;
                    } else {
                        size.database += bytes;
                    }
                }
                Ok(size)
            }
            Some(database) => {
                let client = postgres_client(&database.url).await?;
                let size: i64 = client
                    .query_one("SELECT pg_database_size(current_database())", &[])
                    .await?
                    .get(0);
                Ok(StoreSize {
                    database: u64::try_from(size).unwrap_or(0),
                    wal: 0,
                })
            }
        }
    }

    /// Creates an API key of `tenant` with every scope but `admin` on the server's store (with
    /// `askuser keys`); returns the key.
    pub fn create_key(&self, binary: &Path, tenant: &str) -> Result<String, BenchError> {
        let mut command = Command::new(binary);
        command.arg("keys");
        match &self.database {
            None => command.arg("--data-dir").arg(self.dir.join("data")),
            Some(database) => command.arg("--database-url").arg(&database.url),
        };
        let output = command
            .args(["create", "--tenant", tenant, "--name", tenant, "--scopes"])
            .arg("runs:start,runs:read,runs:answer,runs:cancel,tools:execute,agents:read")
            .output()?;
        if !output.status.success() {
            return Err(BenchError::failed(format!(
                "askuser keys create: {}",
                String::from_utf8_lossy(&output.stderr)
            )));
        }
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
    }

    /// SIGTERM, then waits for a graceful exit; drops the scenario's database.
    pub async fn stop(mut self) -> Result<(), BenchError> {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.pid().to_string())
            .status();
        let deadline = Instant::now() + STOP_TIMEOUT;
        let exited = loop {
            if let Some(status) = self.child.try_wait()? {
                break Some(status);
            }
            if Instant::now() > deadline {
                break None;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        if exited.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if let Some(database) = self.database.take() {
            database.drop_database().await?;
        }
        match exited {
            Some(status) if status.success() => Ok(()),
            Some(status) => Err(BenchError::failed(format!(
                "the server exited with {status}"
            ))),
            None => Err(BenchError::failed("the server did not stop within 30 s")),
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // A scenario that failed midway leaves no server behind.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

pub async fn postgres_client(url: &str) -> Result<tokio_postgres::Client, BenchError> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    Ok(client)
}

impl Database {
    /// Creates a database named after the scenario directory.
    async fn create(admin_url: &str, dir: &Path) -> Result<Self, BenchError> {
        let (base, _) = admin_url
            .rsplit_once('/')
            .ok_or_else(|| BenchError::failed("the PostgreSQL URL has no database path"))?;
        let scenario = dir
            .file_name()
            .map(|name| {
                name.to_string_lossy()
                    .replace(|c: char| !c.is_ascii_alphanumeric(), "_")
            })
            .unwrap_or_default();
        let name = format!("askuser_bench_{scenario}");
        let admin = postgres_client(admin_url).await?;
        admin
            .batch_execute(&format!("DROP DATABASE IF EXISTS {name}"))
            .await?;
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await?;
        Ok(Database {
            admin_url: admin_url.to_owned(),
            url: format!("{base}/{name}"),
            name,
        })
    }

    async fn drop_database(&self) -> Result<(), BenchError> {
        let admin = postgres_client(&self.admin_url).await?;
        admin
            .batch_execute(&format!("DROP DATABASE IF EXISTS {}", self.name))
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_cpu_counts_what_each_process_used_since() {
        let ms = Duration::from_millis;
        let before = DatabaseCpu(BTreeMap::from([(10, ms(100)), (11, ms(50)), (12, ms(70))]));
        // 10 used 30 ms more, 11 ended, 12 used none, 13 started and used 20 ms.
        let after = DatabaseCpu(BTreeMap::from([(10, ms(130)), (12, ms(70)), (13, ms(20))]));
        assert_eq!(after.since(&before), ms(50));
    }

    #[test]
    fn only_postgres_processes_are_read_as_the_database_s() {
        // This test's own process is not PostgreSQL; a process id no process has is not either.
        assert!(!is_postgres(std::process::id()));
        assert!(!is_postgres(u32::MAX));
    }
}
