//! What `askuser serve` says when it cannot start: the real binary, its exit status and its
//! stderr. Each message names what is wrong (the path, the user) and the flag that fixes it.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a start that should fail may take before the test gives up on it.
const EXIT_TIMEOUT: Duration = Duration::from_secs(30);

/// `askuser serve` (and `args`) as a command, on a free port unless `args` names one.
fn serve(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_askuser"));
    command.arg("serve").args(askuser_args(args));
    command
}

fn askuser_args(args: &[&str]) -> Vec<String> {
    let mut all: Vec<String> = Vec::new();
    if !args.contains(&"--listen") {
        all.extend(["--listen".into(), "127.0.0.1:0".into()]);
    }
    all.extend(args.iter().map(|arg| arg.to_string()));
    all
}

/// Runs `command` (its environment cleared of the store settings a developer may have set) and
/// asserts it exits non-zero in time; returns its stderr.
fn refused(mut command: Command, scratch: &Path) -> String {
    let stderr_path = scratch.join("stderr.txt");
    let stderr = std::fs::File::create(&stderr_path).expect("stderr file");
    let mut child = command
        .env_remove("ASKUSER_DATABASE_URL")
        .env_remove("ASKUSER_DATABASE_URL_FILE")
        .env_remove("ASKUSER_CONFIG")
        .current_dir(scratch)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap_or_else(|error| panic!("run {command:?}: {error}"));
    let deadline = Instant::now() + EXIT_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for askuser") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{command:?} still runs after {EXIT_TIMEOUT:?}; stderr:\n{}",
                std::fs::read_to_string(&stderr_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stderr = std::fs::read_to_string(&stderr_path).expect("read stderr");
    assert!(
        !status.success(),
        "{command:?} started (exit {status}); stderr:\n{stderr}"
    );
    stderr
}

/// A scratch directory others may enter (a `tempdir` is 0700), so that a run as another user
/// fails on the directory under test, not on the way to it.
fn scratch() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
        .expect("chmod scratch");
    dir
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

#[test]
fn a_data_dir_that_is_a_file_is_named_with_the_flag() {
    let scratch = scratch();
    let file = scratch.path().join("not-a-directory");
    std::fs::write(&file, "").expect("write file");
    let stderr = refused(serve(&["--data-dir", path_str(&file)]), scratch.path());
    assert!(stderr.contains(path_str(&file)), "{stderr}");
    assert!(stderr.contains("is a file, not a directory"), "{stderr}");
    assert!(stderr.contains("--data-dir"), "{stderr}");
}

/// Whether this process runs as root (which ignores file permissions).
fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Whether `program` can be run (it is on the PATH).
fn available(program: &str) -> bool {
    Command::new(program)
        .arg("--help")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

#[test]
fn a_data_dir_without_permission_is_named_with_the_user_and_the_flag() {
    let scratch = scratch();
    let parent = scratch.path().join("read-only");
    std::fs::create_dir(&parent).expect("mkdir parent");
    let data_dir = parent.join("data");
    let args = askuser_args(&["--data-dir", path_str(&data_dir)]);
    let (command, user) = if running_as_root() {
        // Root writes anywhere: run askuser as `nobody`, to whom the root-owned 0755 parent is
        // read-only. `runuser` sets USER as a login would; `setpriv` leaves it to us.
        std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(0o755))
            .expect("chmod parent");
        let command = if available("runuser") {
            let mut command = Command::new("runuser");
            command
                .args(["-u", "nobody", "--", env!("CARGO_BIN_EXE_askuser"), "serve"])
                .args(&args);
            command
        } else if available("setpriv") {
            let mut command = Command::new("setpriv");
            command
                .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
                .args([env!("CARGO_BIN_EXE_askuser"), "serve"])
                .args(&args)
                .env("USER", "nobody");
            command
        } else {
            panic!(
                "running as root, and neither runuser nor setpriv is on the PATH to run askuser \
                 as nobody: the permission-denied message cannot be tested (install util-linux, \
                 or run the tests as another user)"
            );
        };
        (command, "nobody".to_owned())
    } else {
        std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(0o500))
            .expect("chmod parent");
        let user = match std::env::var("USER") {
            Ok(user) if !user.is_empty() => user,
            _ => {
                let output = Command::new("id").arg("-un").output().expect("id -un");
                String::from_utf8_lossy(&output.stdout).trim().to_owned()
            }
        };
        let mut command = serve(&["--data-dir", path_str(&data_dir)]);
        command.env("USER", &user);
        (command, user)
    };
    let stderr = refused(command, scratch.path());
    // Let the scratch directory be removed.
    std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(0o700))
        .expect("chmod parent back");
    assert!(stderr.contains(path_str(&data_dir)), "{stderr}");
    assert!(stderr.contains("permission denied"), "{stderr}");
    assert!(stderr.contains(&format!("user {user}")), "{stderr}");
    assert!(stderr.contains("--data-dir"), "{stderr}");
}

#[test]
fn a_port_in_use_is_named_with_the_flag() {
    let scratch = scratch();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a port");
    let addr = taken.local_addr().expect("local addr").to_string();
    let data_dir = scratch.path().join("data");
    let stderr = refused(
        serve(&["--listen", &addr, "--data-dir", path_str(&data_dir)]),
        scratch.path(),
    );
    drop(taken);
    assert!(
        stderr.contains(&format!("cannot listen on {addr}")),
        "{stderr}"
    );
    assert!(stderr.contains("another process listens there"), "{stderr}");
    assert!(stderr.contains("--listen"), "{stderr}");
}

#[test]
fn a_missing_agents_file_is_named() {
    let scratch = scratch();
    let agents = scratch.path().join("no-such-agents.toml");
    let data_dir = scratch.path().join("data");
    let stderr = refused(
        serve(&[
            "--config",
            path_str(&agents),
            "--data-dir",
            path_str(&data_dir),
        ]),
        scratch.path(),
    );
    assert!(stderr.contains(path_str(&agents)), "{stderr}");
    assert!(stderr.contains("cannot read"), "{stderr}");
}
