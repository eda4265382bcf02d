//! `askuser answer RUN CALL`: settles one waiting call with `ResumeRun`, from flags or, without
//! them, from a prompt (asked again while the server finds the answer invalid); then prints what
//! follows until the run waits again or ends.

use std::io::IsTerminal;

use clap::ArgGroup;
use tonic::Streaming;

use super::call::{WaitingCall, WaitingCalls};
use super::connect::{ClientArgs, Connection};
use super::follow::follow;
use super::print::Printer;
use super::{CliError, form_values, prompt};
use crate::proto::v1 as pb;
use crate::proto::v1::answer::Answer;
use crate::proto::v1::approval_decision::{Approve, Decision, Edit, Reject};

/// `askuser answer`.
#[derive(Clone, Debug, clap::Args)]
#[command(group(ArgGroup::new("given_answer").args([
    "text", "select", "none", "decline", "approve", "reject", "edit", "output", "field", "reply",
])))]
pub struct AnswerArgs {
    /// The run.
    pub run_id: String,
    /// The call to settle (its `tool_call_id`).
    pub tool_call_id: String,
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

    fn answer(&self, answer: Answer) -> pb::Answer {
        pb::Answer {
            run_id: self.run_id.clone(),
            tool_call_id: self.tool_call_id.clone(),
            answer: Some(answer),
            answer_id: self.answer_id.clone().unwrap_or_default(),
        }
    }
}

pub async fn run(args: AnswerArgs) -> Result<(), CliError> {
    let mut connection = Connection::open(&args.client).await?;
    let given = if args.field.is_empty() {
        args.given_answer()
    } else {
        let call = waiting_call(&mut connection, &args).await?;
        if call.kind != pb::SuspendKind::Form {
            return Err(CliError::Usage(format!(
                "--field answers a form, and call {} is not one: answer it with --text, \
                 --select, --none, --reply or --decline (a question), --approve, --reject or \
                 --edit (an approval), or --output (a client tool)",
                args.tool_call_id
            )));
        }
        Some(Answer::Form(form_values::from_flags(
            &call.form,
            &args.field,
        )?))
    };
    let (first, stream) = match given {
        Some(answer) => resume(&mut connection, args.answer(answer)).await?,
        None => ask_until_accepted(&mut connection, &args).await?,
    };
    let mut printer = Printer::new(args.client.json);
    let mut waiting = WaitingCalls::default();
    if let Some(frame) = first {
        printer.frame(&frame)?;
        waiting.note(&frame);
    }
    follow(stream, &mut printer, &mut waiting).await?;
    waiting.print_hints(&args.run_id);
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

/// The call `args` names, as `GetRun` shows it while it waits.
async fn waiting_call(
    connection: &mut Connection,
    args: &AnswerArgs,
) -> Result<WaitingCall, CliError> {
    let run = connection.get_run(&args.run_id).await?;
    run.pending_tool_calls
        .iter()
        .find(|call| call.tool_call_id == args.tool_call_id)
        .map(WaitingCall::from)
        .ok_or_else(|| {
            CliError::Usage(format!(
                "call {} of run {} waits for nothing (settled already, or no such call)",
                args.tool_call_id, args.run_id
            ))
        })
}

/// Prompts for the call's answer until the server accepts one.
async fn ask_until_accepted(
    connection: &mut Connection,
    args: &AnswerArgs,
) -> Result<
    (
        Option<pb::RunAgentResponse>,
        Streaming<pb::RunAgentResponse>,
    ),
    CliError,
> {
    if !std::io::stdin().is_terminal() {
        return Err(CliError::Usage(
            "no answer given: use --text, --select, --none, --field, --reply, --decline, \
             --approve, --reject, --edit or --output, or run in a terminal to be asked"
                .into(),
        ));
    }
    let call = waiting_call(connection, args).await?;
    loop {
        let asked = call.clone();
        let answer = prompt::blocking(move || prompt::ask(&asked)).await?;
        match resume(connection, args.answer(answer)).await {
            // The call still waits: say why, and ask again.
            Err(CliError::Status(status)) if status.code() == tonic::Code::InvalidArgument => {
                eprintln!("askuser: {}", CliError::Status(status));
            }
            other => return other,
        }
    }
}
