//! The report's comparison with the transport floor, and the costs of features.

use std::fmt::Write;

use super::targets::Verdict;
use crate::features::Features;
use crate::scenarios::{FloorFigures, Plan, Repeated, StoreFigures, Throughput};
use crate::server::StoreKind;

/// askuser against the transport floor, figure by figure, each store beside the floor measured
/// in turn with its repeats.
pub(super) fn floor_section(out: &mut String, results: &[(StoreKind, Plan, StoreFigures)]) {
    let stores: Vec<(&StoreKind, &StoreFigures, &FloorFigures)> = results
        .iter()
        .filter_map(|(kind, _, figures)| Some((kind, figures, figures.floor.as_ref()?)))
        .collect();
    let Some(&(_, _, first)) = stores.first() else {
        return;
    };
    let _ = writeln!(
        out,
        "\n## Against the transport floor\n\nThe floor is the same round trip's frame pattern \
         (three frames out after the start, the answer in, five frames out, the end: counted \
         below) with the same payloads on a bare tonic `AgentService` with no store and no agent \
         (src/bin/askuser-bench/floor.rs), two worker threads, driven by the same client code. \
         Each repeat of a store's round trips runs in turn with one of the floor's of the same \
         shape and size, on a fresh server each (the floor first in odd-numbered repeats, the \
         store first in even-numbered ones), so each store has a floor of its own. A share is the \
         median over the repeats of each repeat's ratio to the floor's repeat beside it: the \
         machine's speed changes from minute to minute, and a ratio of two medians could set a \
         store's slow minutes against the floor's fast ones. So a share need not equal the \
         ratio of the two medians shown beside it. Machines here differ 2× from day to day; \
         these ratios are what carries from one run to the next. Rates: askuser ÷ floor; \
         latencies and CPU: floor ÷ askuser (100 % = as fast as the transport alone).\n"
    );
    let mut header = String::from("| figure |");
    let mut rule = String::from("|---|");
    for (kind, _, _) in &stores {
        let store = kind.name();
        header.push_str(&format!(" floor beside {store} | {store} | of the floor |"));
        rule.push_str("---|---|---|");
    }
    let _ = writeln!(out, "{header}\n{rule}");
    type Figure = fn(&Throughput) -> f64;
    let rate: Figure = Throughput::rate;
    let p50: Figure = |t| t.resume.p50.as_secs_f64() * 1000.0;
    let p99: Figure = |t| t.resume.p99.as_secs_f64() * 1000.0;
    let cpu: Figure = |t| t.server_cpu_per_run().as_secs_f64() * 1e6;
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
    for concurrent in &first.concurrent {
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
        let digits = if unit == " ms" { 3 } else { 0 };
        let mut line = format!("| {name} |");
        for (_, figures, floor) in &stores {
            match (floor.at(concurrency), figures.at(concurrency)) {
                (Some(base), Some(ours)) => {
                    let share = if higher_is_better {
                        ours.share_of(base, figure)
                    } else {
                        base.share_of(ours, figure)
                    };
                    line.push_str(&format!(
                        " {:.digits$}{unit} | {:.digits$}{unit} | {:.0} % |",
                        base.median(figure),
                        ours.median(figure),
                        100.0 * share
                    ));
                }
                (Some(base), None) => line.push_str(&format!(
                    " {:.digits$}{unit} | not run | |",
                    base.median(figure)
                )),
                _ => line.push_str(" not run | | |"),
            }
        }
        let _ = writeln!(out, "{line}");
    }
    let mut counted = Vec::new();
    for (kind, figures, floor) in &stores {
        if let Some(base) = &floor.sequential {
            counted.push(format!("floor beside {} {}", kind.name(), frames(base)));
        }
        if let Some(sequential) = &figures.sequential {
            counted.push(format!("{} {}", kind.name(), frames(sequential)));
        }
    }
    let _ = writeln!(
        out,
        "\nFrames a round trip receives (before the answer + after it, up to `run_completed`, as \
         counted by the bench): {}.",
        counted.join(", ")
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
            "\nThe transport floor at this shape, in turn with these repeats: {:.0} round \
             trips/s, resume p99 {:.3} ms; this store: **{:.0} %** of its rate (the median of \
             the repeats' shares: {}).",
            base.rate(),
            base.ms(|t| t.resume.p99),
            100.0 * ours.share_of(base, Throughput::rate),
            ours.repeats
                .iter()
                .zip(&base.repeats)
                .map(|(ours, base)| format!("{:.0} %", 100.0 * ours.rate() / base.rate()))
                .collect::<Vec<_>>()
                .join(", ")
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
