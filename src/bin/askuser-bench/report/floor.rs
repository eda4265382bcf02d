//! The report's comparison with the transport floor, and the costs of features.

use std::fmt::Write;

use super::targets::{Verdict, percent_of};
use crate::scenarios::{Features, FloorFigures, Plan, Repeated, StoreFigures, Throughput};
use crate::server::StoreKind;

/// askuser against the transport floor, figure by figure.
pub(super) fn floor_section(
    out: &mut String,
    floor: &FloorFigures,
    results: &[(StoreKind, Plan, StoreFigures)],
) {
    let _ = writeln!(
        out,
        "\n## Against the transport floor\n\nThe floor is the same round trip's frame pattern \
         (three frames out after the start, the answer in, five frames out, the end: counted \
         below) with the same payloads on a bare tonic `AgentService` with no store and no agent (src/bin/askuser-bench/floor.rs), two \
         worker threads, driven by the same client code, measured first in this run ({} repeats \
         each). Machines here differ 2× from day to day; these ratios are what carries from one \
         run to the next. Rates: askuser ÷ floor; latencies and CPU: floor ÷ askuser (100 % = as \
         fast as the transport alone).\n",
        floor.sequential.repeats.len()
    );
    let mut header = String::from("| figure | floor |");
    let mut rule = String::from("|---|---|");
    for (kind, _, _) in results {
        header.push_str(&format!(" {} | of the floor |", kind.name()));
        rule.push_str("---|---|");
    }
    let _ = writeln!(out, "{header}\n{rule}");
    type Figure = fn(&Repeated) -> f64;
    let rate: Figure = Repeated::rate;
    let p50: Figure = |r| r.ms(|t| t.resume.p50);
    let p99: Figure = |r| r.ms(|t| t.resume.p99);
    let cpu: Figure = |r| r.ms(Throughput::server_cpu_per_run) * 1000.0;
    let mut rows: Vec<(String, usize, Figure, bool, &str)> = vec![
        ("sequential round trips/s".into(), 1, rate, true, ""),
        ("resume p50 (sequential)".into(), 1, p50, false, " ms"),
        ("resume p99 (sequential)".into(), 1, p99, false, " ms"),
        (
            "server CPU per round trip (sequential)".into(),
            1,
            cpu,
            false,
            " µs",
        ),
    ];
    for concurrent in &floor.concurrent {
        let c = concurrent.concurrency;
        rows.push((
            format!("round trips/s at concurrency {c}"),
            c,
            rate,
            true,
            "",
        ));
        rows.push((
            format!("server CPU per round trip at {c}"),
            c,
            cpu,
            false,
            " µs",
        ));
    }
    for (name, concurrency, figure, higher_is_better, unit) in rows {
        let Some(base) = floor.at(concurrency) else {
            continue;
        };
        let base_value = figure(base);
        let digits = if unit == " ms" { 3 } else { 0 };
        let mut line = format!("| {name} | {base_value:.digits$}{unit} |");
        for (_, _, figures) in results {
            match figures.at(concurrency) {
                Some(ours) => {
                    let value = figure(ours);
                    let share = if higher_is_better {
                        percent_of(value, base_value)
                    } else {
                        percent_of(base_value, value)
                    };
                    line.push_str(&format!(" {value:.digits$}{unit} | {share:.0} % |"));
                }
                None => line.push_str(" not run | |"),
            }
        }
        let _ = writeln!(out, "{line}");
    }
    let mut counted = format!("floor {}", frames(&floor.sequential));
    for (kind, _, figures) in results {
        if let Some(sequential) = &figures.sequential {
            counted.push_str(&format!(", {} {}", kind.name(), frames(sequential)));
        }
    }
    let _ = writeln!(
        out,
        "\nFrames a round trip receives (before the answer + after it, up to `run_completed`, as \
         counted by the bench): {counted}."
    );
}

/// The frames of a round trip (before the answer + after it), as the bench counted them.
fn frames(repeated: &Repeated) -> String {
    repeated
        .repeats
        .first()
        .map_or("?".into(), |t| format!("{} + {}", t.frames.0, t.frames.1))
}

/// The transport floor's rate at `concurrency`, and this figure's share of it, as a sentence.
pub(super) fn floor_line(out: &mut String, floor: Option<&FloorFigures>, ours: &Repeated) {
    if let Some(base) = floor.and_then(|f| f.at(ours.concurrency)) {
        let _ = writeln!(
            out,
            "\nThe transport floor at this shape: {:.0} round trips/s, resume p99 {:.3} ms; this \
             store: **{:.0} %** of its rate.",
            base.rate(),
            base.ms(|t| t.resume.p99),
            percent_of(ours.rate(), base.rate())
        );
    }
}

/// The features scenario: the sequential rate with each feature on against the defaults.
pub(super) fn features_table(out: &mut String, features: &Features) {
    let _ = writeln!(
        out,
        "| server | round trips/s (median) | vs the defaults | resume p50 | resume p99 | server CPU \
         per round trip | within 5 % |\n|---|---|---|---|---|---|---|"
    );
    for (name, with) in [
        ("defaults", &features.defaults),
        ("`--auth keys`, a key on every call", &features.auth),
        ("`--metrics-listen` (metrics kept)", &features.metrics),
    ] {
        let cost = Features::cost(with, &features.defaults);
        let _ = writeln!(
            out,
            "| {name} | {:.0} | {:+.1} % | {:.3} ms | {:.3} ms | {:.0} µs | {} |",
            with.rate(),
            -100.0 * cost,
            with.ms(|t| t.resume.p50),
            with.ms(|t| t.resume.p99),
            with.ms(Throughput::server_cpu_per_run) * 1000.0,
            Verdict::of(cost <= 0.05).text(),
        );
    }
}
