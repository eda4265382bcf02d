//! Whether a PostgreSQL test runs. Without a PostgreSQL to run on, a PostgreSQL test returns early
//! and the test binary says, in one line as it exits, how many did not run, in which modules, and
//! how to run them, so plain `cargo test` needs no database. Under `ASKUSER_REQUIRE_POSTGRES` (set by scripts/test) a
//! missing PostgreSQL fails the test instead: there no PostgreSQL test can be skipped.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, Once, PoisonError};

/// Set (to anything but empty or `0`) where PostgreSQL tests must run: scripts/test sets it.
pub const REQUIRE_VARIABLE: &str = "ASKUSER_REQUIRE_POSTGRES";

const HOW_TO_RUN: &str = "source scripts/postgres.sh && start_postgres, then cargo test in that shell; or ./scripts/test";

static NOT_RUN: AtomicUsize = AtomicUsize::new(0);
static REASONS: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
/// How many did not run per module (the harness names a test's thread `module::test`).
static MODULES: Mutex<BTreeMap<String, usize>> = Mutex::new(BTreeMap::new());
static REPORT_AT_EXIT: Once = Once::new();

/// A PostgreSQL test cannot run because `missing` (e.g. "ASKUSER_TEST_DATABASE_URL is not set"):
/// where PostgreSQL is required this fails the test; elsewhere the test is counted as not run and
/// its caller returns.
#[track_caller]
pub fn not_run(missing: &'static str) {
    let required = std::env::var(REQUIRE_VARIABLE).is_ok_and(|value| !matches!(&*value, "" | "0"));
    if required {
        panic!(
            "{missing}: this test needs PostgreSQL ({REQUIRE_VARIABLE} is set). Run {HOW_TO_RUN}"
        );
    }
    NOT_RUN.fetch_add(1, Ordering::SeqCst);
    let module = std::thread::current()
        .name()
        .and_then(|test| test.rsplit_once("::"))
        .map_or("?", |(module, _)| module)
        .to_owned();
    *MODULES
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .entry(module)
        .or_default() += 1;
    let mut reasons = REASONS.lock().unwrap_or_else(PoisonError::into_inner);
    if !reasons.contains(&missing) {
        reasons.push(missing);
    }
    // The harness captures what a passing test prints, and the count is known only once every
    // test has run: the line is written when the binary exits, after the harness's summary.
    REPORT_AT_EXIT.call_once(|| {
        // SAFETY: `report` is a plain function with no arguments, as atexit expects; it neither
        // unwinds nor calls exit.
        unsafe { libc::atexit(report) };
    });
}

extern "C" fn report() {
    let count = NOT_RUN.load(Ordering::SeqCst);
    let reasons = REASONS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .join("; ");
    let binary = std::env::current_exe()
        .ok()
        .and_then(|path| {
            path.file_stem()
                .map(|stem| stem.to_string_lossy().into_owned())
        })
        .unwrap_or_default();
    // Cargo names a test binary `<name>-<hash>`.
    let binary = binary.rsplit_once('-').map_or(&*binary, |(name, _)| name);
    let modules = MODULES
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .map(|(module, count)| format!("{module} {count}"))
        .collect::<Vec<_>>()
        .join(", ");
    let tests = if count == 1 { "test" } else { "tests" };
    // Written to the terminal's stderr directly, past the harness, which is done by now.
    let _ = writeln!(
        std::io::stderr(),
        "postgresql: {count} {tests} of {binary} did not run ({modules}): {reasons} ({HOW_TO_RUN})"
    );
}
