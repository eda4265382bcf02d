//! A PostgreSQL server of a test's own (initdb and pg_ctl, as the `postgres` user when the test
//! runs as root), for tests that crash it or configure it unlike the shared test server.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Command;

use super::postgres_client;

/// A PostgreSQL server of the test's own, so that crashing it disturbs no other test.
pub struct Postgres {
    bin: PathBuf,
    dir: tempfile::TempDir,
    pub port: u16,
    /// `-c name=value` settings of the server beyond the defaults.
    settings: Vec<String>,
}

impl Postgres {
    /// PostgreSQL's programs: `PG_BIN`, else the newest version in /usr/lib/postgresql.
    fn bin() -> Option<PathBuf> {
        if let Ok(bin) = std::env::var("PG_BIN") {
            return Some(PathBuf::from(bin));
        }
        let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .filter_map(|entry| entry.ok().map(|e| e.path().join("bin")))
            .collect();
        found.sort();
        found.pop()
    }

    /// A command run as the `postgres` user when the test runs as root (initdb refuses root).
    fn command(&self, program: &str) -> Command {
        let program = self.bin.join(program);
        let root = Command::new("id")
            .arg("-u")
            .output()
            .map(|o| o.stdout == b"0\n")
            .unwrap_or(false);
        if root {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(program);
            command
        } else {
            Command::new(program)
        }
    }

    /// Starts a server; `None` where PostgreSQL is not installed (the test returns early, reported
    /// as not run by postgres_gate, or fails where PostgreSQL is required).
    pub fn start() -> Option<Postgres> {
        Postgres::start_with_tls(None)
    }

    /// Starts a server with `ssl = on`, presenting `identity` (certificate and key, PEM).
    pub fn start_with_tls(identity: Option<(&str, &str)>) -> Option<Postgres> {
        let Some(bin) = Postgres::bin() else {
            super::postgres_gate::not_run(
                "PostgreSQL is not installed (no PG_BIN, nothing in /usr/lib/postgresql)",
            );
            return None;
        };
        let dir = tempfile::tempdir().expect("temp dir");
        let _ = Command::new("chown")
            .arg("postgres")
            .arg(dir.path())
            .status();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let mut postgres = Postgres {
            bin,
            dir,
            port,
            settings: Vec::new(),
        };
        let status = postgres
            .command("initdb")
            .arg("-D")
            .arg(postgres.data())
            .args(["-U", "askuser", "--auth=trust", "-E", "UTF8"])
            .stdout(std::process::Stdio::null())
            .status()
            .expect("initdb");
        assert!(status.success(), "initdb failed");
        if let Some((certificate, key)) = identity {
            postgres.install_identity(certificate, key);
        }
        postgres.pg_ctl_start();
        Some(postgres)
    }

    /// Writes the server's certificate and key into its data directory (the key readable by the
    /// server's user only, as PostgreSQL demands) and turns `ssl` on.
    fn install_identity(&mut self, certificate: &str, key: &str) {
        for (name, text) in [("server.crt", certificate), ("server.key", key)] {
            let path = self.data().join(name);
            std::fs::write(&path, text).expect("write TLS file");
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                .expect("chmod TLS file");
            let _ = Command::new("chown").arg("postgres").arg(&path).status();
        }
        self.settings.extend(
            [
                "ssl=on",
                "ssl_cert_file=server.crt",
                "ssl_key_file=server.key",
            ]
            .map(String::from),
        );
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    pub fn pg_ctl_start(&self) {
        let mut options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c max_connections=300",
            self.port,
            self.dir.path().display()
        );
        for setting in &self.settings {
            options.push_str(" -c ");
            options.push_str(setting);
        }
        let status = self
            .command("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-o", &options, "-l"])
            .arg(self.dir.path().join("server.log"))
            .args(["-w", "start"])
            .stdout(std::process::Stdio::null())
            .status()
            .expect("pg_ctl start");
        assert!(status.success(), "pg_ctl start failed");
    }

    /// Crashes the server: no checkpoint, every connection cut.
    pub fn crash(&self) {
        let status = self
            .command("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "-w", "stop"])
            .stdout(std::process::Stdio::null())
            .status()
            .expect("pg_ctl stop");
        assert!(status.success(), "pg_ctl stop failed");
    }

    /// A new empty database; its URL.
    pub async fn database(&self) -> String {
        let name = format!("askuser_chaos_{}", uuid::Uuid::now_v7().simple());
        let url = |database: &str| format!("postgres://askuser@127.0.0.1:{}/{database}", self.port);
        postgres_client(&url("postgres"))
            .await
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .expect("CREATE DATABASE");
        url(&name)
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = self
            .command("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "-w", "stop"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    }
}
