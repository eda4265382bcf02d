//! Creating a run: its row and its `run_started` event, decided once for both stores. (Whether a
//! start repeats an earlier one is read first, by each store in its own way.)

use super::{Write, new_events};
use crate::domain::{Event, EventKind, RunStatus};
use crate::store::records::{INSERT_RUN, first_step, run_tools_column, to_json};
use crate::store::webhook_records::webhooks_column;
use crate::store::{Committed, CreateOutcome, Created, Lease, NewRun, StepState, StoreResult};

/// A run to write.
pub(in crate::store) struct CreatePlan {
    /// In this order: the run, then its events.
    pub run_insert: Write,
    pub events: Vec<Event>,
    /// The run's webhook plan, for the deliveries the events make.
    pub webhooks: Option<String>,
    step: StepState,
}

/// The creation of `run` at `now_ms`, leased as `lease` says.
pub(in crate::store) fn plan(
    run: NewRun,
    lease: Option<Lease<'_>>,
    now_ms: i64,
) -> StoreResult<CreatePlan> {
    let webhooks = webhooks_column(run.webhooks.as_ref())?;
    let run_insert = Write {
        sql: INSERT_RUN,
        params: vec![
            run.run_id.as_str().into(),
            run.agent_id.as_str().into(),
            run.prompt.as_str().into(),
            to_json(&run.metadata)?.into(),
            run.question_ttl_ms.into(),
            now_ms.into(),
            run_tools_column(&run)?.into(),
            lease.map(|lease| lease.owner.to_owned()).into(),
            lease.map(|lease| lease.until_ms).into(),
            run.request_id.clone().into(),
            run.tenant.as_str().into(),
            webhooks.clone().into(),
            run.trace_context.clone().into(),
            run.request.clone().into(),
        ],
    };
    let started = EventKind::RunStarted {
        agent_id: run.agent_id.clone(),
        prompt: run.prompt.clone(),
        metadata: run.metadata.clone(),
    };
    Ok(CreatePlan {
        run_insert,
        events: new_events(&run.run_id, 0, vec![started], now_ms),
        webhooks,
        step: first_step(run, now_ms)?,
    })
}

impl CreatePlan {
    /// The outcome once written.
    pub fn outcome(self) -> CreateOutcome {
        CreateOutcome::Created(Box::new(Created {
            committed: Committed {
                events: self.events,
                status: RunStatus::Running,
            },
            step: self.step,
        }))
    }
}
