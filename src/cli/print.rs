//! Output on stdout: human lines, or with `--json` the proto3 JSON mapping of each frame or item,
//! one object per line.

use std::io::{Stdout, Write};

use super::CliError;
use super::call::WaitingCall;
use crate::proto::v1 as pb;
use crate::proto::v1::run_agent_response::Event;
use crate::proto::v1::watch_pending_calls_response::Event as FeedEvent;

/// The proto3 JSON mapping of a message, on one line.
pub fn to_json<M: prost::Message + prost::Name>(message: &M) -> Result<String, CliError> {
    let value = crate::proto_json::to_json_value(message)
        .map_err(|error| CliError::Usage(error.to_string()))?;
    Ok(serde_json::to_string(&value)?)
}

/// Writes frames and items to stdout.
pub struct Printer {
    json: bool,
    /// Questions and approvals are shown by the prompt that asks them, so their frames print nothing.
    prompts_inline: bool,
    /// The last text delta did not end its line.
    mid_line: bool,
    out: Stdout,
}

impl Printer {
    pub fn new(json: bool) -> Printer {
        Printer {
            json,
            prompts_inline: false,
            mid_line: false,
            out: std::io::stdout(),
        }
    }

    /// A printer for a session whose questions are asked by prompts.
    pub fn with_prompts(mut self) -> Printer {
        self.prompts_inline = true;
        self
    }

    /// One object per line.
    pub fn json_line<M: prost::Message + prost::Name>(
        &mut self,
        message: &M,
    ) -> Result<(), CliError> {
        let line = to_json(message)?;
        writeln!(self.out, "{line}")?;
        self.out.flush()?;
        Ok(())
    }

    /// A line of its own, after any text left mid-line.
    pub fn line(&mut self, text: &str) -> Result<(), CliError> {
        if self.mid_line {
            writeln!(self.out)?;
            self.mid_line = false;
        }
        writeln!(self.out, "{text}")?;
        self.out.flush()?;
        Ok(())
    }

    /// One frame of a run's stream (heartbeats print nothing).
    pub fn frame(&mut self, frame: &pb::RunAgentResponse) -> Result<(), CliError> {
        let Some(event) = &frame.event else {
            return Ok(());
        };
        if matches!(event, Event::Heartbeat(_)) {
            return Ok(());
        }
        if self.json {
            return self.json_line(frame);
        }
        match event {
            Event::RunStarted(started) => self.line(&format!(
                "run {} started: agent {}",
                frame.run_id, started.agent_id
            )),
            Event::TextDelta(delta) => {
                write!(self.out, "{}", delta.text)?;
                self.out.flush()?;
                self.mid_line = !delta.text.ends_with('\n');
                Ok(())
            }
            // A question's call shows as its suspension.
            Event::ToolCall(call) if call.tool_name == "ask_user" => Ok(()),
            Event::ToolCall(call) => {
                self.line(&format!("tool {} {}", call.tool_name, call.arguments_json))
            }
            Event::ToolCallSuspended(suspended) => {
                let call = WaitingCall::from(suspended);
                if self.prompts_inline && call.is_for_a_person() {
                    return Ok(());
                }
                let mut text = describe_call(&call);
                if let Some(expire_time) = &suspended.expire_time {
                    text.push_str(&format!("\n  expires {expire_time}"));
                }
                self.line(&text)
            }
            Event::ToolResult(result) => {
                let by = settled_by(result.settled_by.as_ref());
                self.line(&format!("= {}{by}", result.content))
            }
            Event::AnswerRejected(rejected) => {
                // The message, then each violation's description it does not already say.
                let mut what = vec![rejected.message.clone()];
                what.extend(
                    rejected
                        .field_violations
                        .iter()
                        .map(|violation| violation.description.clone())
                        .filter(|description| !rejected.message.contains(description.as_str())),
                );
                self.line(&format!(
                    "answer rejected: {}: {}",
                    rejected.reason,
                    what.join("; ")
                ))
            }
            // The tool result that follows says what the answer did.
            Event::AnswerAccepted(_) | Event::Heartbeat(_) => Ok(()),
            Event::RunCompleted(_) => self.line("run completed"),
            Event::RunFailed(failed) => self.line(&format!("run failed: {}", failed.message)),
            Event::RunCancelled(cancelled) => {
                self.line(&format!("run cancelled: {}", cancelled.reason))
            }
            Event::StepRestarted(restarted) => self.line(&format!(
                "(the step starts over, attempt {}: {}; the text since it began is void)",
                restarted.attempt, restarted.reason
            )),
        }
    }

    /// One event of the pending-calls feed (heartbeats and the snapshot's end print nothing).
    pub fn feed_event(&mut self, event: &pb::WatchPendingCallsResponse) -> Result<(), CliError> {
        match &event.event {
            None | Some(FeedEvent::Heartbeat(_)) => Ok(()),
            Some(_) if self.json => self.json_line(event),
            Some(FeedEvent::CallPending(pending)) => {
                let row = pending_row(pending, std::time::SystemTime::now());
                self.line(&row.join("  "))
            }
            Some(FeedEvent::CallSettled(settled)) => self.line(&format!(
                "{}  {}  {}{}",
                settled.run_id,
                settled.tool_call_id,
                settled_how(settled.kind()),
                settled_by(settled.settled_by.as_ref())
            )),
            Some(FeedEvent::SnapshotDone(_)) => Ok(()),
        }
    }

    /// Rows under a header, each column as wide as its widest cell (the last one as it is).
    pub fn table(&mut self, header: &[&str], rows: &[Vec<String>]) -> Result<(), CliError> {
        let mut widths: Vec<usize> = header.iter().map(|title| title.chars().count()).collect();
        for row in rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let line = |cells: Vec<&str>| {
            let last = cells.len().saturating_sub(1);
            cells
                .iter()
                .enumerate()
                .map(|(index, cell)| {
                    if index == last {
                        (*cell).to_owned()
                    } else {
                        format!("{cell:<width$}", width = widths[index])
                    }
                })
                .collect::<Vec<_>>()
                .join("  ")
        };
        self.line(&line(header.to_vec()))?;
        for row in rows {
            self.line(&line(row.iter().map(String::as_str).collect()))?;
        }
        Ok(())
    }

    /// One run of a listing.
    pub fn run(&mut self, run: &pb::Run) -> Result<(), CliError> {
        if self.json {
            return self.json_line(run);
        }
        let created = run
            .create_time
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default();
        self.line(&format!(
            "{}\t{}\t{}\t{created}\t{} pending",
            run.run_id,
            short_name(run.status().as_str_name(), "RUN_STATUS_"),
            run.agent_id,
            run.pending_tool_calls.len()
        ))
    }
}

/// `RUN_STATUS_SUSPENDED` → `suspended`.
pub fn short_name(name: &str, prefix: &str) -> String {
    name.strip_prefix(prefix)
        .unwrap_or(name)
        .to_ascii_lowercase()
        .replace('_', "-")
}

/// A waiting call over several lines: the question and its options, or the tool and its arguments.
pub fn describe_call(call: &WaitingCall) -> String {
    let id = &call.tool_call_id;
    match call.kind {
        pb::SuspendKind::Approval => {
            let reason = if call.approval_reason.is_empty() {
                String::new()
            } else {
                format!(" ({})", call.approval_reason)
            };
            format!(
                "! {} waits for approval{reason}  [{id}]\n{}",
                call.tool_name,
                indent(&call.pretty_arguments())
            )
        }
        pb::SuspendKind::ClientTool => format!(
            "… {} {} waits for a worker  [{id}]",
            call.tool_name, call.arguments_json
        ),
        pb::SuspendKind::Form => {
            let form = &call.form;
            let heading = [form.title.as_str(), form.message.as_str()]
                .into_iter()
                .filter(|line| !line.is_empty())
                .collect::<Vec<_>>()
                .join(": ");
            let heading = if heading.is_empty() {
                "a form".to_owned()
            } else {
                heading
            };
            let mut text = format!("? {heading}  [{id}]");
            for field in &form.fields {
                text.push_str(&format!("\n  {}: {}", field.name, field.question));
                if let Some(pb::form_field::Kind::Choice(choice)) = &field.kind {
                    let values: Vec<&str> =
                        choice.choices.iter().map(|c| c.value.as_str()).collect();
                    text.push_str(&format!(" [{}]", values.join(" | ")));
                }
                if field.required {
                    text.push_str(" (required)");
                }
            }
            text
        }
        _ => {
            let mode = match call.selection_mode() {
                pb::SelectionMode::SingleSelect => " (pick one)",
                pb::SelectionMode::MultiSelect => " (pick any)",
                pb::SelectionMode::Unspecified => "",
            };
            let mut text = format!("? {}{mode}  [{id}]", call.payload.question);
            for option in &call.payload.options {
                text.push_str(&format!("\n  - {}", option.label));
                if !option.description.is_empty() {
                    text.push_str(&format!(": {}", option.description));
                }
            }
            text
        }
    }
}

/// Who settled a call, worded the same everywhere: ` (by key:alice)` after what happened, or
/// nothing when the server does not say.
pub fn settled_by(by: Option<&pb::SettledBy>) -> String {
    match by {
        Some(by) if !by.subject.is_empty() => format!(" (by {})", by.subject),
        _ => String::new(),
    }
}

/// How a call was settled: `answered`, `declined`, `expired`, ….
fn settled_how(kind: pb::ToolResultKind) -> String {
    match kind {
        pb::ToolResultKind::Unspecified => "settled".to_owned(),
        pb::ToolResultKind::Output => "output sent".to_owned(),
        kind => short_name(kind.as_str_name(), "TOOL_RESULT_KIND_"),
    }
}

/// The columns of `askuser pending`.
pub const PENDING_HEADER: [&str; 7] = ["RUN", "CALL", "AGENT", "KIND", "AGE", "EXPIRES", "ASKS"];

/// A pending call as a row of `askuser pending`.
pub fn pending_row(pending: &pb::CallPending, now: std::time::SystemTime) -> Vec<String> {
    let call = pending.call.clone().unwrap_or_default();
    let waiting = WaitingCall::from(&call);
    let (kind, asks) = summarize_call(&waiting);
    let age = call
        .suspend_time
        .as_ref()
        .and_then(|time| std::time::SystemTime::try_from(*time).ok())
        .map(|since| short_duration(now.duration_since(since).unwrap_or_default()))
        .unwrap_or_else(|| "-".to_owned());
    let expires = call
        .expire_time
        .as_ref()
        .and_then(|time| std::time::SystemTime::try_from(*time).ok())
        .map(|at| match at.duration_since(now) {
            Ok(left) => format!("in {}", short_duration(left)),
            Err(_) => "now".to_owned(),
        })
        .unwrap_or_else(|| "never".to_owned());
    vec![
        pending.run_id.clone(),
        call.tool_call_id.clone(),
        pending.agent_id.clone(),
        kind.to_owned(),
        age,
        expires,
        asks,
    ]
}

/// `42s`, `5m`, `3h`, `2d`: the largest unit, rounded down.
pub fn short_duration(duration: std::time::Duration) -> String {
    let seconds = duration.as_secs();
    match seconds {
        0..60 => format!("{seconds}s"),
        60..3600 => format!("{}m", seconds / 60),
        3600..86400 => format!("{}h", seconds / 3600),
        _ => format!("{}d", seconds / 86400),
    }
}

/// A waiting call's kind, and what it asks on one line.
pub fn summarize_call(call: &WaitingCall) -> (&'static str, String) {
    match call.kind {
        pb::SuspendKind::Approval => (
            "approval",
            format!("{} {}", call.tool_name, call.arguments_json),
        ),
        pb::SuspendKind::ClientTool => (
            "client-tool",
            format!("{} {}", call.tool_name, call.arguments_json),
        ),
        pb::SuspendKind::Form => {
            let questions: Vec<&str> = call
                .form
                .fields
                .iter()
                .map(|field| field.question.as_str())
                .collect();
            ("form", questions.join(" | "))
        }
        _ => {
            let labels: Vec<&str> = call
                .payload
                .options
                .iter()
                .map(|option| option.label.as_str())
                .collect();
            let options = if labels.is_empty() {
                String::new()
            } else {
                format!(" [{}]", labels.join(" | "))
            };
            ("question", format!("{}{options}", call.payload.question))
        }
    }
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|line| format!("    {line}"))
        .collect::<Vec<_>>()
        .join("\n")
}
