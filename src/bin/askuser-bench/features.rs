//! What features cost: sequential round trips with the defaults, with `--auth keys` and with
//! metrics kept, interleaved repeat by repeat.

use std::path::Path;

use crate::BenchError;
use crate::scenarios::{
    Plan, Repeated, Shape, Throughput, measure, median_of_sorted, print_throughput,
};
use crate::server::{Launch, StoreKind};

/// Sequential round trips with the defaults, with `--auth keys` and with metrics kept.
#[derive(Clone, Debug)]
pub struct Features {
    pub defaults: Repeated,
    pub auth: Repeated,
    pub metrics: Repeated,
}

impl Features {
    /// What a feature costs: the fraction of the defaults' rate it loses (negative: none), the
    /// median over the repeats of each repeat's loss against the defaults of the same repeat. A
    /// ratio of the two medians would set a repeat's slow defaults against another's fast
    /// feature: the machine's speed drifts by more between repeats than a feature costs.
    pub fn cost(with: &Repeated, defaults: &Repeated) -> f64 {
        let mut losses: Vec<f64> = with
            .repeats
            .iter()
            .zip(&defaults.repeats)
            .map(|(with, defaults)| 1.0 - with.rate() / defaults.rate())
            .collect();
        losses.sort_by(f64::total_cmp);
        median_of_sorted(&losses)
    }
}

/// Sequential round trips with the defaults, with `--auth keys` (each trip presenting an API
/// key) and with metrics kept (`--metrics-listen`), one of each per repeat so that drift in the
/// machine's speed falls on all three alike; each repeat starts one later in the three than the
/// one before, so that none always runs first (on a server started while the last one's files
/// are still being written back, say).
pub async fn features(
    binary: &Path,
    work_dir: &Path,
    kind: &StoreKind,
    plan: &Plan,
) -> Result<Features, BenchError> {
    let launches = [
        ("defaults", &[][..], None),
        ("--auth keys", &["--auth", "keys"][..], Some("bench")),
        (
            "--metrics-listen",
            &["--metrics-listen", "127.0.0.1:0"][..],
            None,
        ),
    ];
    let mut repeats: [Vec<Throughput>; 3] = Default::default();
    for repeat in 0..plan.feature_repeats {
        for turn in 0..launches.len() {
            let index = (repeat + turn) % launches.len();
            let (name, flags, key_tenant) = launches[index];
            let launch = Launch::Server {
                binary,
                kind,
                flags,
                key_tenant,
            };
            let dir = work_dir.join(format!("features-{index}-r{repeat}"));
            let figures = measure(launch, &dir, plan, Shape::SEQUENTIAL).await?;
            print_throughput(&format!("{name}, repeat {}", repeat + 1), &figures);
            repeats[index].push(figures);
        }
    }
    let [defaults, auth, metrics] = repeats.map(|repeats| Repeated {
        concurrency: 1,
        connections: 1,
        repeats,
    });
    let features = Features {
        defaults,
        auth,
        metrics,
    };
    println!(
        "  medians: defaults {:.0}, --auth keys {:.0} ({:+.1} %), metrics {:.0} ({:+.1} %) round \
         trips/s",
        features.defaults.rate(),
        features.auth.rate(),
        -100.0 * Features::cost(&features.auth, &features.defaults),
        features.metrics.rate(),
        -100.0 * Features::cost(&features.metrics, &features.defaults),
    );
    Ok(features)
}
