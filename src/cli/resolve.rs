//! Run and call ids from what a person typed: the whole id, or (like git) any prefix of at least
//! [`MIN_PREFIX`] characters that only one run or call starts with. Resolved here, in the client:
//! runs from `GetRun` and then `ListRuns`, a run's calls from `GetRun`.

use super::CliError;
use super::connect::Connection;
use crate::proto::v1 as pb;

/// The shortest prefix taken for an id.
pub const MIN_PREFIX: usize = 6;

/// The most runs looked through for a prefix.
const MAX_RUNS_SCANNED: usize = 10_000;

/// The run `given` names, with its pending calls when the caller may read it. `None` when the
/// caller may not read runs (`PERMISSION_DENIED`): `given` is then sent as it is.
pub async fn run(connection: &mut Connection, given: &str) -> Result<Option<pb::Run>, CliError> {
    let not_found = match connection.get_run(given).await {
        Ok(run) => return Ok(Some(run)),
        Err(CliError::Status(status)) if status.code() == tonic::Code::PermissionDenied => {
            return Ok(None);
        }
        Err(CliError::Status(status))
            if matches!(
                status.code(),
                tonic::Code::NotFound | tonic::Code::InvalidArgument
            ) =>
        {
            CliError::Status(status)
        }
        Err(error) => return Err(error),
    };
    if given.chars().count() < MIN_PREFIX {
        return Err(too_short("run", given));
    }
    let mut matches = Vec::new();
    let mut page_token = String::new();
    let mut scanned = 0;
    loop {
        let page = connection
            .list_runs(pb::ListRunsRequest {
                page_size: 1000,
                page_token,
                ..pb::ListRunsRequest::default()
            })
            .await?;
        scanned += page.runs.len();
        matches.extend(
            page.runs
                .into_iter()
                .filter(|run| run.run_id.starts_with(given)),
        );
        if page.next_page_token.is_empty() || scanned >= MAX_RUNS_SCANNED || matches.len() > 1 {
            break;
        }
        page_token = page.next_page_token;
    }
    match matches.len() {
        0 => Err(not_found),
        1 => {
            let run_id = matches.remove(0).run_id;
            connection.get_run(&run_id).await.map(Some)
        }
        _ => {
            let candidates = matches
                .iter()
                .map(|run| {
                    format!(
                        "{} ({}, {})",
                        run.run_id,
                        run.agent_id,
                        super::print::short_name(run.status().as_str_name(), "RUN_STATUS_")
                    )
                })
                .collect();
            Err(ambiguous("run", given, candidates))
        }
    }
}

/// The run id `given` names (as given when the caller may not read runs).
pub async fn run_id(connection: &mut Connection, given: &str) -> Result<String, CliError> {
    Ok(run(connection, given)
        .await?
        .map(|run| run.run_id)
        .unwrap_or_else(|| given.to_owned()))
}

/// The pending call of `run` that `given` names: its whole id, or a prefix of it (with or without
/// its `call_` start). `None` when no pending call matches: the id is then sent as given, and the
/// server says what became of it.
pub fn call<'a>(
    run: &'a pb::Run,
    given: &str,
) -> Result<Option<&'a pb::PendingToolCall>, CliError> {
    let calls = &run.pending_tool_calls;
    if let Some(call) = calls.iter().find(|call| call.tool_call_id == given) {
        return Ok(Some(call));
    }
    let matching: Vec<&pb::PendingToolCall> = calls
        .iter()
        .filter(|call| matches_call(&call.tool_call_id, given))
        .collect();
    if given.chars().count() < MIN_PREFIX && !matching.is_empty() {
        return Err(too_short("call", given));
    }
    match matching.as_slice() {
        [] => Ok(None),
        [call] => Ok(Some(call)),
        _ => Err(ambiguous(
            "call",
            given,
            matching
                .iter()
                .map(|call| format!("{} ({})", call.tool_call_id, call.tool_name))
                .collect(),
        )),
    }
}

/// Whether `given` starts the call id, or its part after `call_`.
fn matches_call(tool_call_id: &str, given: &str) -> bool {
    !given.is_empty()
        && (tool_call_id.starts_with(given)
            || tool_call_id
                .strip_prefix("call_")
                .is_some_and(|rest| rest.starts_with(given)))
}

fn too_short(what: &str, given: &str) -> CliError {
    CliError::Usage(format!(
        "{what} id {given:?} is too short: give the whole id or at least {MIN_PREFIX} characters of it"
    ))
}

fn ambiguous(what: &str, given: &str, candidates: Vec<String>) -> CliError {
    CliError::Usage(format!(
        "{what} id {given:?} is ambiguous: it starts {}; give more characters",
        candidates.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_with(calls: &[&str]) -> pb::Run {
        pb::Run {
            pending_tool_calls: calls
                .iter()
                .map(|id| pb::PendingToolCall {
                    tool_call_id: (*id).to_owned(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn a_call_prefix_is_unique_ambiguous_or_too_short() {
        let run = run_with(&["call_01a2b3c4d5", "call_01a2b3ffff"]);
        let found = |given| call(&run, given).map(|call| call.map(|c| c.tool_call_id.clone()));
        assert_eq!(
            found("call_01a2b3c4d5").unwrap().as_deref(),
            Some("call_01a2b3c4d5")
        );
        assert_eq!(
            found("01a2b3c").unwrap().as_deref(),
            Some("call_01a2b3c4d5")
        );
        assert_eq!(
            found("call_01a2b3f").unwrap().as_deref(),
            Some("call_01a2b3ffff")
        );
        assert!(
            found("01a2b3")
                .unwrap_err()
                .to_string()
                .contains("ambiguous")
        );
        assert!(found("01a2").unwrap_err().to_string().contains("too short"));
        assert_eq!(found("zzzzzzzz").unwrap(), None);
    }
}
