//! The comparison with Mastra, measured in the same run by `scripts/bench --compare mastra`
//! (bench/mastra/bench.mjs writes the JSON read here): the same round trip on `@mastra/core` with
//! its LibSQL store, and askuser's figures as multiples of Mastra's.

use std::fmt::Write;
use std::path::Path;

use serde::Deserialize;

use super::mb;
use crate::BenchError;
use crate::scenarios::{Plan, StoreFigures};
use crate::server::StoreKind;

/// What bench/mastra/bench.mjs measured.
#[derive(Clone, Debug, Deserialize)]
pub struct MastraFigures {
    pub mastra_version: String,
    #[serde(default)]
    pub libsql_version: String,
    pub node_version: String,
    pub sequential: MastraRate,
    pub concurrent: MastraRate,
    #[serde(default)]
    pub hold: Option<MastraHold>,
}

/// Round trips one way (sequential, or `concurrency` in flight).
#[derive(Clone, Debug, Deserialize)]
pub struct MastraRate {
    #[serde(default = "one")]
    pub concurrency: usize,
    pub runs: usize,
    pub rate: f64,
    pub resume_p50_ms: f64,
    pub resume_p99_ms: f64,
}

fn one() -> usize {
    1
}

/// Runs left suspended and the process's memory.
#[derive(Clone, Debug, Deserialize)]
pub struct MastraHold {
    pub runs: usize,
    pub bytes_per_run: f64,
}

impl MastraFigures {
    pub fn read(path: &Path) -> Result<Self, BenchError> {
        let text = std::fs::read_to_string(path)?;
        serde_json::from_str(&text)
            .map_err(|error| BenchError::failed(format!("{}: {error}", path.display())))
    }
}

fn times(ours: f64, theirs: f64) -> String {
    format!("{:.1}×", ours / theirs)
}

/// One figure of a store against Mastra's: askuser's text and the multiple, when it ran.
type Compared<'a> = Box<dyn Fn(&StoreFigures) -> Option<(String, String)> + 'a>;

/// The section: a table of Mastra's figures and each store's, with multiples (higher is better
/// for askuser), or a line saying how to get one.
pub fn section(
    out: &mut String,
    mastra: Option<&MastraFigures>,
    results: &[(StoreKind, Plan, StoreFigures)],
) {
    let _ = writeln!(out, "\n## Compared with Mastra\n");
    let Some(mastra) = mastra else {
        let _ = writeln!(
            out,
            "Not measured in this run: `scripts/bench --compare mastra` runs the same round trip \
             on Mastra (bench/mastra) first and adds the comparison here."
        );
        return;
    };
    let _ = writeln!(
        out,
        "Measured in this run, before askuser, on the same machine: `@mastra/core` {} with \
         `@mastra/libsql` {} on a database file, Node {}, in one process with no network \
         (bench/mastra/bench.mjs): an agent whose ask-user tool suspends the run on \"Which \
         environment?\", resumed with `staging`, the model's \"Deploying to staging\" checked. \
         Multiples are askuser ÷ Mastra for rates and Mastra ÷ askuser for latencies and memory \
         (higher is better for askuser). askuser's figures include a gRPC round trip over \
         loopback that Mastra's in-process calls do not pay.\n",
        mastra.mastra_version, mastra.libsql_version, mastra.node_version
    );
    let mut header = String::from("| figure | Mastra |");
    let mut rule = String::from("|---|---|");
    for (kind, _, _) in results {
        header.push_str(&format!(" {} | multiple |", kind.name()));
        rule.push_str("---|---|");
    }
    let _ = writeln!(out, "{header}\n{rule}");
    let sequential = &mastra.sequential;
    let concurrent = &mastra.concurrent;
    let mut rows: Vec<(String, String, Compared)> = vec![
        (
            "sequential round trips/s".into(),
            format!("{:.0} ({} runs)", sequential.rate, sequential.runs),
            Box::new(|f: &StoreFigures| {
                let rate = f.sequential.as_ref()?.rate();
                Some((format!("{rate:.0}"), times(rate, sequential.rate)))
            }),
        ),
        (
            format!("round trips/s at concurrency {}", concurrent.concurrency),
            format!("{:.0} ({} runs)", concurrent.rate, concurrent.runs),
            Box::new(|f: &StoreFigures| {
                let at = f.at(concurrent.concurrency)?;
                Some((
                    format!("{:.0}", at.rate()),
                    times(at.rate(), concurrent.rate),
                ))
            }),
        ),
        (
            "resume p50 (sequential)".into(),
            format!("{:.3} ms", sequential.resume_p50_ms),
            Box::new(|f: &StoreFigures| {
                let p50 = f.sequential.as_ref()?.ms(|t| t.resume.p50);
                Some((format!("{p50:.3} ms"), times(sequential.resume_p50_ms, p50)))
            }),
        ),
        (
            "resume p99 (sequential)".into(),
            format!("{:.3} ms", sequential.resume_p99_ms),
            Box::new(|f: &StoreFigures| {
                let p99 = f.sequential.as_ref()?.ms(|t| t.resume.p99);
                Some((format!("{p99:.3} ms"), times(sequential.resume_p99_ms, p99)))
            }),
        ),
    ];
    if let Some(hold) = &mastra.hold {
        rows.push((
            "memory per suspended run".into(),
            format!("{:.0} bytes ({} runs held)", hold.bytes_per_run, hold.runs),
            Box::new(|f: &StoreFigures| {
                let held = f.hold.as_ref()?;
                let last = held.points.last()?;
                let per_run = (last.rss_kib.saturating_sub(held.baseline_rss_kib) * 1024) as f64
                    / last.runs as f64;
                Some((
                    format!(
                        "{per_run:.0} bytes (({:.1} − {:.1} MB) ÷ {} runs)",
                        mb(last.rss_kib),
                        mb(held.baseline_rss_kib),
                        last.runs
                    ),
                    times(hold.bytes_per_run, per_run.max(1.0)),
                ))
            }),
        ));
    }
    for (name, theirs, figure) in rows {
        let mut line = format!("| {name} | {theirs} |");
        for (_, _, figures) in results {
            match figure(figures) {
                Some((ours, multiple)) => line.push_str(&format!(" {ours} | {multiple} |")),
                None => line.push_str(" not run | |"),
            }
        }
        let _ = writeln!(out, "{line}");
    }
}
