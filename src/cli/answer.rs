//! `askuser answer RUN CALL`: settles one waiting call with `ResumeRun`, from flags or, without
//! them, from a prompt (asked again while the server finds the answer invalid); then prints what
//! follows until the run waits again or ends.

use std::io::IsTerminal;

use clap::ArgGroup;
use tonic::Streaming;

use super::agents::one_line;
use super::call::{WaitingCall, WaitingCalls};
use super::connect::{ClientArgs, Connection};
use super::follow::follow;
use super::pending::order_key;
use super::print::{Printer, pending_row, short_name, summarize_call};
use super::{CliError, form_values, prompt, resolve};
use crate::proto::v1 as pb;
use crate::proto::v1::answer::Answer;
use crate::proto::v1::approval_decision::{Approve, Decision, Edit, Reject};

/// `askuser answer`.
#[derive(Clone, Debug, clap::Args)]
#[command(group(ArgGroup::new("given_answer").args([
    "text", "select", "none", "decline", "approve", "reject", "edit", "output", "field", "reply",
])))]
pub struct AnswerArgs {
    /// The run (its id, or a unique prefix of at least 6 characters). Without it, in a terminal,
    /// a picker offers the calls that wait.
    pub run_id: Option<String>,
    /// The call to settle (its `tool_call_id`, or a unique prefix); optional when the run waits on
    /// one call.
    pub tool_call_id: Option<String>,
    /// A free-text answer (or a single select's label).
    #[arg(long)]
    pub text: Option<String>,
    /// An option's label to select (repeatable for a multi select).
    #[arg(long = "select", value_name = "LABEL")]
    pub select: Vec<String>,
    /// A form's field: NAME=VALUE, typed by the field (repeat it for each field, and for each
    /// choice of a multiple-choice field; a value not offered is the person's own answer).
    #[arg(long = "field", value_name = "NAME=VALUE")]
    pub field: Vec<String>,
    /// Reply in prose instead of answering a question or a form.
    #[arg(long, value_name = "TEXT")]
    pub reply: Option<String>,
    /// Select no option: a multi select's "none of these".
    #[arg(long)]
    pub none: bool,
    /// Decline the question (on an approval: reject it), with an optional reason.
    #[arg(long, value_name = "REASON", num_args = 0..=1, default_missing_value = "")]
    pub decline: Option<String>,
    /// Approve the call: the tool runs as called.
    #[arg(long)]
    pub approve: bool,
    /// Reject the call, with an optional reason: the tool never runs.
    #[arg(long, value_name = "REASON", num_args = 0..=1, default_missing_value = "")]
    pub reject: Option<String>,
    /// Approve the call with these arguments instead (a JSON object).
    #[arg(long, value_name = "JSON")]
    pub edit: Option<String>,
    /// A client tool call's output.
    #[arg(long, value_name = "TEXT")]
    pub output: Option<String>,
    /// With --output: the tool failed.
    #[arg(long, requires = "output")]
    pub error: bool,
    /// An idempotency key: sending the same answer again with it is acknowledged, not refused.
    #[arg(long)]
    pub answer_id: Option<String>,
    #[command(flatten)]
    pub client: ClientArgs,
}

impl AnswerArgs {
    /// The answer its flags give, if any.
    fn given_answer(&self) -> Option<Answer> {
        let decision = |decision| {
            Answer::Approval(pb::ApprovalDecision {
                decision: Some(decision),
            })
        };
        if let Some(text) = &self.text {
            Some(Answer::Text(text.clone()))
        } else if !self.select.is_empty() || self.none {
            Some(Answer::Selections(pb::Selections {
                labels: self.select.clone(),
            }))
        } else if let Some(reply) = &self.reply {
            Some(Answer::Reply(reply.clone()))
        } else if let Some(reason) = &self.decline {
            Some(Answer::Decline(pb::Decline {
                reason: reason.clone(),
            }))
        } else if self.approve {
            Some(decision(Decision::Approve(Approve {})))
        } else if let Some(reason) = &self.reject {
            Some(decision(Decision::Reject(Reject {
                reason: reason.clone(),
            })))
        } else if let Some(arguments_json) = &self.edit {
            Some(decision(Decision::Edit(Edit {
                arguments_json: arguments_json.clone(),
            })))
        } else {
            self.output.as_ref().map(|content| {
                Answer::ToolOutput(pb::ToolOutput {
                    content: content.clone(),
                    is_error: self.error,
                })
            })
        }
    }

    /// Whether a flag gives the answer.
    fn has_answer_flag(&self) -> bool {
        !self.field.is_empty() || self.given_answer().is_some()
    }

    fn answer(&self, target: &Target, answer: Answer) -> pb::Answer {
        pb::Answer {
            run_id: target.run_id.clone(),
            tool_call_id: target.tool_call_id.clone(),
            answer: Some(answer),
            answer_id: self.answer_id.clone().unwrap_or_default(),
        }
    }
}

/// The call an answer goes to, and what it asks when the caller may read it.
struct Target {
    run_id: String,
    tool_call_id: String,
    call: Option<WaitingCall>,
}

pub async fn run(args: AnswerArgs) -> Result<(), CliError> {
    let interactive = std::io::stdin().is_terminal();
    if args.run_id.is_none() && !interactive {
        return Err(CliError::Usage(
            "which call? give RUN CALL (`askuser pending` lists them; a unique prefix of 6 \
             characters of each will do), or run in a terminal to pick one"
                .into(),
        ));
    }
    if !args.has_answer_flag() && !interactive {
        return Err(CliError::Usage(
            "no answer given: use --text, --select, --none, --field, --reply, --decline, \
             --approve, --reject, --edit or --output, or run in a terminal to be asked"
                .into(),
        ));
    }
    let mut connection = Connection::open(&args.client).await?;
    let target = target(&mut connection, &args, interactive).await?;
    if let Some(call) = &target.call {
        check_flags(&args, call)?;
    }
    let given = if args.field.is_empty() {
        args.given_answer()
    } else {
        let call = match &target.call {
            Some(call) => call.clone(),
            None => waiting_call(&mut connection, &target).await?,
        };
        Some(Answer::Form(form_values::from_flags(
            &call.form,
            &args.field,
        )?))
    };
    let (first, stream) = match given {
        Some(answer) => resume(&mut connection, args.answer(&target, answer)).await?,
        None => ask_until_accepted(&mut connection, &args, &target).await?,
    };
    let mut printer = Printer::new(args.client.json);
    let mut waiting = WaitingCalls::default();
    if let Some(frame) = first {
        printer.frame(&frame)?;
        waiting.note(&frame);
    }
    follow(stream, &mut printer, &mut waiting).await?;
    waiting.print_hints(&target.run_id);
    Ok(())
}

/// The run and call the arguments name (prefixes resolved), or the one picked.
async fn target(
    connection: &mut Connection,
    args: &AnswerArgs,
    interactive: bool,
) -> Result<Target, CliError> {
    let Some(given_run) = &args.run_id else {
        return pick_pending(connection, None).await;
    };
    let Some(run) = resolve::run(connection, given_run).await? else {
        // Not allowed to read runs: the ids go as given.
        let Some(tool_call_id) = &args.tool_call_id else {
            return Err(CliError::Usage(format!(
                "which call of run {given_run}? give RUN CALL"
            )));
        };
        return Ok(Target {
            run_id: given_run.clone(),
            tool_call_id: tool_call_id.clone(),
            call: None,
        });
    };
    match &args.tool_call_id {
        Some(given_call) => {
            let call = resolve::call(&run, given_call)?;
            Ok(Target {
                run_id: run.run_id.clone(),
                tool_call_id: call
                    .map(|call| call.tool_call_id.clone())
                    .unwrap_or_else(|| given_call.clone()),
                call: call.map(WaitingCall::from),
            })
        }
        None => match run.pending_tool_calls.as_slice() {
            [] => Err(CliError::Usage(format!(
                "run {} waits for nothing (status {})",
                run.run_id,
                short_name(run.status().as_str_name(), "RUN_STATUS_")
            ))),
            [call] => Ok(Target {
                run_id: run.run_id.clone(),
                tool_call_id: call.tool_call_id.clone(),
                call: Some(WaitingCall::from(call)),
            }),
            calls if !interactive => Err(CliError::Usage(format!(
                "run {} waits on {} calls: give one of {} as CALL",
                run.run_id,
                calls.len(),
                calls
                    .iter()
                    .map(|call| call.tool_call_id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
            _ => pick_pending(connection, Some(&run)).await,
        },
    }
}

/// Offers the calls that wait (all of them, or `run`'s), oldest first; the one picked.
async fn pick_pending(
    connection: &mut Connection,
    run: Option<&pb::Run>,
) -> Result<Target, CliError> {
    let mut pending = match run {
        Some(run) => run
            .pending_tool_calls
            .iter()
            .map(|call| pb::CallPending {
                run_id: run.run_id.clone(),
                agent_id: run.agent_id.clone(),
                call: Some(call.clone()),
            })
            .collect(),
        None => {
            connection
                .pending_calls(pb::WatchPendingCallsRequest::default())
                .await?
        }
    };
    if pending.is_empty() {
        return Err(CliError::Usage("no calls wait for an answer".into()));
    }
    pending.sort_by_key(order_key);
    let now = std::time::SystemTime::now();
    let entries = pending
        .iter()
        .enumerate()
        .map(|(index, pending)| {
            let call = WaitingCall::from(&pending.call.clone().unwrap_or_default());
            let (kind, asks) = summarize_call(&call);
            let row = pending_row(pending, now);
            prompt::PickerEntry {
                number: index + 1,
                row: format!(
                    "{kind:<11}  {:<12}  {}  ({} ago)",
                    pending.agent_id,
                    one_line(&asks, 60),
                    row[4]
                ),
            }
        })
        .collect();
    let title = format!("{} calls wait; which one?", pending.len());
    let index = prompt::blocking(move || prompt::pick(&title, entries)).await?;
    let chosen = pending.swap_remove(index);
    let call = chosen.call.unwrap_or_default();
    Ok(Target {
        run_id: chosen.run_id,
        tool_call_id: call.tool_call_id.clone(),
        call: Some(WaitingCall::from(&call)),
    })
}

/// Refuses, before anything is sent, a flag that cannot answer the call: the wrong kind of
/// answer, or a label the question does not offer.
fn check_flags(args: &AnswerArgs, call: &WaitingCall) -> Result<(), CliError> {
    let Some(answer) = (if args.field.is_empty() {
        args.given_answer()
    } else {
        Some(Answer::Form(pb::FormAnswer::default()))
    }) else {
        return Ok(());
    };
    let fits = matches!(
        (call.kind, &answer),
        (_, Answer::Decline(_))
            | (
                pb::SuspendKind::Question,
                Answer::Text(_) | Answer::Selections(_) | Answer::Reply(_)
            )
            | (pb::SuspendKind::Form, Answer::Form(_) | Answer::Reply(_))
            | (pb::SuspendKind::Approval, Answer::Approval(_))
            | (pb::SuspendKind::ClientTool, Answer::ToolOutput(_))
    );
    if !fits {
        let (what, flags) = match call.kind {
            pb::SuspendKind::Approval => {
                ("an approval", "--approve, --reject [REASON] or --edit JSON")
            }
            pb::SuspendKind::ClientTool => ("a client tool call", "--output TEXT [--error]"),
            pb::SuspendKind::Form => ("a form", "--field NAME=VALUE, --reply or --decline"),
            _ => (
                "a question",
                "--text, --select, --none, --reply or --decline",
            ),
        };
        return Err(CliError::Usage(format!(
            "call {} is {what}: answer it with {flags}",
            call.tool_call_id
        )));
    }
    if let Answer::Selections(selections) = &answer {
        let offered: Vec<&str> = call
            .payload
            .options
            .iter()
            .map(|option| option.label.as_str())
            .collect();
        if let Some(wrong) = selections
            .labels
            .iter()
            .find(|label| !offered.contains(&label.as_str()))
        {
            return Err(CliError::Usage(format!(
                "--select {wrong}: not an offered label; the labels are {}",
                offered.join(", ")
            )));
        }
    }
    Ok(())
}

/// Applies an answer; its first frame (`answer_accepted`) and the rest of the stream.
async fn resume(
    connection: &mut Connection,
    answer: pb::Answer,
) -> Result<
    (
        Option<pb::RunAgentResponse>,
        Streaming<pb::RunAgentResponse>,
    ),
    CliError,
> {
    let request = pb::ResumeRunRequest {
        answer: Some(answer),
    };
    let mut stream = connection.client.resume_run(request).await?.into_inner();
    let first = stream.message().await?;
    Ok((first, stream))
}

/// The call `target` names, as `GetRun` shows it while it waits.
async fn waiting_call(
    connection: &mut Connection,
    target: &Target,
) -> Result<WaitingCall, CliError> {
    let run = connection.get_run(&target.run_id).await?;
    run.pending_tool_calls
        .iter()
        .find(|call| call.tool_call_id == target.tool_call_id)
        .map(WaitingCall::from)
        .ok_or_else(|| {
            CliError::Usage(format!(
                "call {} of run {} waits for nothing (settled already, or no such call)",
                target.tool_call_id, target.run_id
            ))
        })
}

/// Prompts for the call's answer until the server accepts one.
async fn ask_until_accepted(
    connection: &mut Connection,
    args: &AnswerArgs,
    target: &Target,
) -> Result<
    (
        Option<pb::RunAgentResponse>,
        Streaming<pb::RunAgentResponse>,
    ),
    CliError,
> {
    let call = match &target.call {
        Some(call) => call.clone(),
        None => waiting_call(connection, target).await?,
    };
    loop {
        let answer = prompt::ask_before_expiry(call.clone(), String::new()).await?;
        match resume(connection, args.answer(target, answer)).await {
            // The call still waits: say why, and ask again.
            Err(CliError::Status(status)) if status.code() == tonic::Code::InvalidArgument => {
                eprintln!("askuser: {}", CliError::Status(status));
            }
            other => return other,
        }
    }
}
