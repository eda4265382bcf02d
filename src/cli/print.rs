//! Output on stdout: human lines, or with `--json` the proto3 JSON mapping of each frame or item,
//! one object per line.

use std::io::{Stdout, Write};

use super::CliError;
use super::call::WaitingCall;
use super::error::describe_violations;
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
                let by = result
                    .settled_by
                    .as_ref()
                    .map(|by| format!(" (by {})", by.subject))
                    .unwrap_or_default();
                self.line(&format!("= {}{by}", result.content))
            }
            Event::AnswerRejected(rejected) => {
                let violations: Vec<(String, String)> = rejected
                    .field_violations
                    .iter()
                    .map(|violation| (violation.field.clone(), violation.description.clone()))
                    .collect();
                // The violations say what the message says, field by field.
                let what = if violations.is_empty() {
                    format!(": {}", rejected.message)
                } else {
                    describe_violations(&violations)
                };
                self.line(&format!("answer rejected: {}{what}", rejected.reason))
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
                let Some(call) = &pending.call else {
                    return Ok(());
                };
                let summary = summarize_call(&WaitingCall::from(call));
                let expiry = call
                    .expire_time
                    .as_ref()
                    .map(|time| format!("\texpires {time}"))
                    .unwrap_or_default();
                self.line(&format!(
                    "{}\t{}\t{}\t{summary}{expiry}",
                    pending.run_id, call.tool_call_id, pending.agent_id
                ))
            }
            Some(FeedEvent::CallSettled(settled)) => {
                let by = settled
                    .settled_by
                    .as_ref()
                    .map(|by| format!(" by {}", by.subject))
                    .unwrap_or_default();
                self.line(&format!(
                    "{}\t{}\tsettled: {}{by}",
                    settled.run_id,
                    settled.tool_call_id,
                    short_name(settled.kind().as_str_name(), "TOOL_RESULT_KIND_")
                ))
            }
            Some(FeedEvent::SnapshotDone(_)) => Ok(()),
        }
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
fn short_name(name: &str, prefix: &str) -> String {
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

/// A waiting call on one line: its kind and what it asks.
fn summarize_call(call: &WaitingCall) -> String {
    match call.kind {
        pb::SuspendKind::Approval => {
            format!("approval\t{} {}", call.tool_name, call.arguments_json)
        }
        pb::SuspendKind::ClientTool => {
            format!("client-tool\t{} {}", call.tool_name, call.arguments_json)
        }
        pb::SuspendKind::Form => {
            let questions: Vec<&str> = call
                .form
                .fields
                .iter()
                .map(|field| field.question.as_str())
                .collect();
            format!("form\t{}", questions.join(" | "))
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
            format!("question\t{}{options}", call.payload.question)
        }
    }
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|line| format!("    {line}"))
        .collect::<Vec<_>>()
        .join("\n")
}
