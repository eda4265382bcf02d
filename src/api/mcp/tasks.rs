//! Task-augmented calls (the MCP tasks extension, `io.modelcontextprotocol/tasks`): a host that
//! declares it gets a task at once instead of a call that waits for a person, and polls it. The
//! task is the request (or the run) itself: its id is the run's id, and `tasks/get` reads the run
//! from the store, so a task outlives askuser restarts and is the same on every replica. The
//! caller's tenant bounds it as every read.

use std::time::{Duration, UNIX_EPOCH};

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolResult, CreateTaskResult, DetailedTask, GetTaskResult, JsonObject, Task, TaskPayload,
};
use rmcp::service::{RequestContext, RoleServer};

use super::{McpFace, errors, outcome};
use crate::domain::{EventKind, Principal, RunRecord, RunStatus};
use crate::runtime::requests::REQUEST_AGENT;
use crate::runtime::{RuntimeError, ask_user, forms};

/// How often a host should poll a task.
const POLL_INTERVAL: Duration = Duration::from_secs(1);

/// Whether the host asked for tasks.
pub(super) fn wanted(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .is_some_and(|capabilities| capabilities.supports_tasks())
}

fn rfc3339(ms: i64) -> String {
    let time = UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    humantime::format_rfc3339_millis(time).to_string()
}

fn task(run_id: &str, created_ms: i64, updated_ms: i64) -> Task {
    Task::new(
        run_id,
        Default::default(),
        rfc3339(created_ms),
        rfc3339(updated_ms),
    )
    .with_poll_interval_ms(u64::try_from(POLL_INTERVAL.as_millis()).unwrap_or(1000))
}

/// The task a call made: the run `run_id`, just created (or found by its request id).
pub(super) fn created(run_id: &str) -> CreateTaskResult {
    let now = crate::domain::now_millis();
    CreateTaskResult::new(
        task(run_id, now, now).with_status_message("waiting for a person".to_owned()),
    )
}

/// What the call returns once the run has ended.
fn result(run: &RunRecord) -> CallToolResult {
    if run.agent_id == REQUEST_AGENT {
        let asked_a_question = run.settled.first().is_none_or(|call| {
            [ask_user::TOOL_NAME, forms::FORM_TOOL].contains(&call.tool_name.as_str())
        });
        return match asked_a_question {
            true => outcome::answer(run),
            false => outcome::approval(run),
        };
    }
    let end = match run.status {
        RunStatus::Completed => EventKind::RunCompleted {
            output_text: run.output_text.clone(),
            usage: None,
        },
        _ => EventKind::RunFailed {
            message: run.error_message.clone(),
        },
    };
    outcome::run_end(&run.run_id, end)
}

/// A run as the task it is.
fn detailed(run: &RunRecord) -> DetailedTask {
    let mut base = task(&run.run_id, run.created_ms, run.updated_ms);
    let payload = match run.status {
        RunStatus::Running => TaskPayload::Working,
        RunStatus::Suspended => {
            base = base.with_status_message("waiting for a person".to_owned());
            TaskPayload::Working
        }
        // Cancelled (`tasks/cancel`, `CancelRun`, the inbox): a cancelled task; a failed run is
        // a result the host reads (`isError`).
        RunStatus::Cancelled => TaskPayload::Cancelled,
        RunStatus::Completed | RunStatus::Failed => match serde_json::to_value(result(run)) {
            Ok(serde_json::Value::Object(result)) => TaskPayload::Completed { result },
            _ => TaskPayload::Failed {
                error: JsonObject::from_iter([(
                    "message".to_owned(),
                    serde_json::json!("the result could not be written"),
                )]),
            },
        },
    };
    DetailedTask::new(base, payload)
}

/// The run `task_id` of the caller's tenant, as a tool call's error when there is none.
async fn run(face: &McpFace, task_id: &str, principal: &Principal) -> Result<RunRecord, McpError> {
    face.api
        .runtime
        .get_run(task_id, principal)
        .await
        .map_err(|error| match error {
            RuntimeError::RunNotFound(_) => McpError::invalid_params(
                format!("no task {task_id}"),
                Some(serde_json::json!({"reason": "RUN_NOT_FOUND"})),
            ),
            other => errors::from_runtime("tasks/get", other),
        })
}

/// `tasks/get`.
pub(super) async fn get(
    face: &McpFace,
    task_id: &str,
    principal: &Principal,
) -> Result<GetTaskResult, McpError> {
    Ok(GetTaskResult::new(detailed(
        &run(face, task_id, principal).await?,
    )))
}

/// `tasks/cancel`: cancels the request (or run); its waiting call is settled as cancelled.
pub(super) async fn cancel(
    face: &McpFace,
    task_id: &str,
    principal: &Principal,
) -> Result<(), McpError> {
    run(face, task_id, principal).await?;
    face.api
        .runtime
        .cancel_run(task_id, "cancelled by the MCP host", principal)
        .await
        .map(drop)
        .map_err(|error| errors::from_runtime("tasks/cancel", error))
}
