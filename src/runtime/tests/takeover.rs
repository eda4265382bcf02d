//! Takeover: a working run whose executor is gone (no lease, or a lapsed one) is picked up by the
//! runtime at start; a run whose lease another executor still holds is left to it.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::domain::{RunStatus, Scope};
use crate::runtime::RuntimeConfig;
use crate::runtime::testing::{Harness, agent, config, principal};
use crate::store::{CreateOutcome, Lease, NewRun};

const SAYS_DONE: &str = r#"
[[turn]]
say = "Done"
"#;

fn new_run(run_id: &str) -> NewRun {
    NewRun {
        run_id: run_id.to_owned(),
        tenant: "acme".into(),
        agent_id: "a".into(),
        prompt: "Hi".into(),
        metadata: BTreeMap::new(),
        question_ttl_ms: None,
        run_tools: Vec::new(),
        request_id: None,
        webhooks: None,
        trace_context: None,
        request: None,
    }
}

#[tokio::test]
async fn at_start_runs_without_a_live_lease_are_taken_over_and_others_left_alone() {
    // A short lease: takeovers of a batch are spread over a quarter of it.
    let config = RuntimeConfig {
        lease_ttl: Duration::from_secs(1),
        ..config()
    };
    let harness = Harness::new(vec![agent("a", SAYS_DONE)], config);
    let reader = principal("ada", &[Scope::RunsRead]);
    // Left working by a server that stopped: no lease, and a lease that lapsed.
    let orphans = ["orphan-1", "orphan-2"];
    let lapsed = Lease {
        owner: "a-dead-server",
        until_ms: harness.store.now_ms() - 1,
    };
    let created = harness.store.create_run(new_run(orphans[0]), None).await;
    assert!(
        matches!(created, Ok(CreateOutcome::Created(_))),
        "{created:?}"
    );
    let created = harness
        .store
        .create_run(new_run(orphans[1]), Some(lapsed))
        .await;
    assert!(
        matches!(created, Ok(CreateOutcome::Created(_))),
        "{created:?}"
    );
    // Held by a live executor elsewhere.
    let held = Lease {
        owner: "a-live-server",
        until_ms: harness.store.now_ms() + 600_000,
    };
    let created = harness.store.create_run(new_run("held"), Some(held)).await;
    assert!(
        matches!(created, Ok(CreateOutcome::Created(_))),
        "{created:?}"
    );

    harness.runtime.start().await.expect("the runtime starts");
    for run_id in orphans {
        let run = harness.idle(run_id, &reader).await;
        assert_eq!(run.status, RunStatus::Completed, "{run_id}");
        assert_eq!(run.output_text, "Done");
    }
    let held = harness
        .runtime
        .get_run("held", &reader)
        .await
        .expect("the held run");
    assert_eq!(held.status, RunStatus::Running);
    assert_eq!(held.turns, 0, "nobody here stepped it");
    harness.runtime.begin_shutdown();
}
