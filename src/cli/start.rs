//! `askuser start AGENT [PROMPT]`: starts a run and follows it on one `RunAgent` stream, streaming
//! its text and asking each question inline (in a terminal; elsewhere the stream ends when the run
//! first waits, and the calls to answer are named).

use std::io::IsTerminal;

use tokio::sync::mpsc;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;

use super::call::{WaitingCall, WaitingCalls};
use super::connect::{ClientArgs, Connection};
use super::print::Printer;
use super::{CliError, prompt};
use crate::proto::v1 as pb;
use crate::proto::v1::run_agent_request::Frame;
use crate::proto::v1::run_agent_response::Event;

/// `askuser start`.
#[derive(Clone, Debug, clap::Args)]
pub struct StartArgs {
    /// The agent to run.
    pub agent: String,
    /// What to ask the agent; asked for in a terminal when not given.
    pub prompt: Option<String>,
    /// Metadata kept with the run, as KEY=VALUE (repeatable).
    #[arg(long = "metadata", value_parser = key_value)]
    pub metadata: Vec<(String, String)>,
    #[command(flatten)]
    pub client: ClientArgs,
}

fn key_value(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .ok_or_else(|| "expected KEY=VALUE".to_owned())
}

pub async fn run(args: StartArgs) -> Result<(), CliError> {
    // Prompts need a person at a terminal; --json is for scripts, which answer with `askuser answer`.
    let interactive = !args.client.json && std::io::stdin().is_terminal();
    let prompt = match args.prompt {
        Some(prompt) => prompt,
        None if interactive => {
            let agent = args.agent.clone();
            prompt::blocking(move || prompt::ask_prompt(&agent)).await?
        }
        None => String::new(),
    };
    let mut connection = Connection::open(&args.client).await?;
    let start = pb::RunAgentRequest {
        frame: Some(Frame::Start(pb::StartRun {
            agent_id: args.agent.clone(),
            prompt,
            metadata: args.metadata.into_iter().collect(),
            ..Default::default()
        })),
    };
    let (sender, receiver) = mpsc::channel(4);
    let requests = tokio_stream::once(start).chain(ReceiverStream::new(receiver));
    let mut inbound = match connection.client.run_agent(requests).await {
        Ok(response) => response.into_inner(),
        Err(status) => return Err(agent_error(&mut connection, &args.agent, status).await),
    };
    let mut session = Session {
        printer: if interactive {
            Printer::new(args.client.json).with_prompts()
        } else {
            Printer::new(args.client.json)
        },
        // Without prompts nothing more is sent: the half-closed stream ends when the run waits.
        answers: interactive.then_some(sender),
        run_id: String::new(),
        waiting: WaitingCalls::default(),
    };
    loop {
        let frame = tokio::select! {
            frame = inbound.message() => match frame {
                Ok(frame) => frame,
                Err(status) if session.run_id.is_empty() => {
                    return Err(agent_error(&mut connection, &args.agent, status).await);
                }
                Err(status) => return Err(status.into()),
            },
            Ok(()) = tokio::signal::ctrl_c() => return Err(session.detached()),
        };
        let Some(frame) = frame else {
            break;
        };
        session.printer.frame(&frame)?;
        session.follow(frame).await?;
    }
    session.waiting.print_hints(&session.run_id);
    Ok(())
}

/// A refused start: an agent the server does not know lists the known ones and the closest.
async fn agent_error(connection: &mut Connection, agent: &str, status: tonic::Status) -> CliError {
    use tonic_types::StatusExt;
    let unknown_agent = status.code() == tonic::Code::NotFound
        && status
            .get_details_error_info()
            .is_some_and(|info| info.reason == "AGENT_NOT_FOUND");
    if unknown_agent {
        super::agents::unknown_agent(connection, agent, status.into()).await
    } else {
        status.into()
    }
}

/// One run followed on its stream.
struct Session {
    printer: Printer,
    /// Where answers go, when a person answers here.
    answers: Option<mpsc::Sender<pb::RunAgentRequest>>,
    run_id: String,
    waiting: WaitingCalls,
}

impl Session {
    async fn follow(&mut self, frame: pb::RunAgentResponse) -> Result<(), CliError> {
        self.waiting.note(&frame);
        match frame.event {
            Some(Event::RunStarted(_)) => self.run_id = frame.run_id,
            Some(Event::ToolCallSuspended(suspended)) => {
                self.ask(WaitingCall::from(&suspended)).await?;
            }
            Some(Event::AnswerRejected(rejected)) => {
                // A bad answer leaves the call waiting: ask again. Any other refusal (answered
                // elsewhere, expired, not ours to answer) means no answer from here can settle it.
                match self.waiting.get(&rejected.tool_call_id) {
                    Some(call) if rejected.reason == pb::ErrorReason::InvalidAnswer.wire_name() => {
                        self.ask(call.clone()).await?
                    }
                    _ => self.waiting.forget(&rejected.tool_call_id),
                }
            }
            Some(Event::RunFailed(failed)) => {
                return Err(CliError::RunFailed {
                    run_id: frame.run_id,
                    message: failed.message,
                });
            }
            _ => {}
        }
        Ok(())
    }

    /// Asks a person for the call's answer and sends it, when a person answers here.
    async fn ask(&self, call: WaitingCall) -> Result<(), CliError> {
        let Some(answers) = &self.answers else {
            return Ok(());
        };
        if !call.is_for_a_person() {
            return Ok(());
        }
        let tool_call_id = call.tool_call_id.clone();
        let hint = format!(
            "; run {} goes on: follow it with `askuser watch {}`",
            self.run_id, self.run_id
        );
        let answer = match prompt::ask_before_expiry(call, hint).await {
            Err(error) if error.is_interruption() => return Err(self.detached()),
            other => other?,
        };
        let frame = Frame::Answer(pb::Answer {
            run_id: self.run_id.clone(),
            tool_call_id,
            answer: Some(answer),
            answer_id: String::new(),
        });
        // Refused only once the stream has ended, whose end or error the next read reports.
        answers
            .send(pb::RunAgentRequest { frame: Some(frame) })
            .await
            .ok();
        Ok(())
    }

    /// Ctrl-C: the run goes on without this client; how to pick it up again.
    fn detached(&self) -> CliError {
        CliError::Interrupted {
            run_id: (!self.run_id.is_empty()).then(|| self.run_id.clone()),
            calls: self.waiting.ids(),
        }
    }
}
