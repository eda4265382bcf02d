//! The transport floor: the round trip's frame pattern on a bare tonic `AgentService` with no
//! store, no agent and no checks beyond the pattern itself. The bench runs it as a child process
//! of its own binary (`askuser-bench --serve-floor`) and drives it with the same client code as
//! askuser, so that every askuser figure can be shown as a fraction of what the transport alone
//! does on the same machine in the same run.
//!
//! It runs on two worker threads, as issue 24 defines the floor (a worker per core here). The
//! server on SQLite runs one worker beside its writer's thread on 2 cores; the floor on one worker
//! ran faster (on 7 December 2026, two rounds of two repeats: 44,278–44,936 round trips a second
//! at 64 streams against 35,853–38,110 on two, 16,625–16,845 sequentially against 14,466–15,095),
//! which the report's text says beside the shares it gives.
//!
//! The pattern is the ask_user round trip's as askuser sends it (the bench counts both and the
//! report shows the counts): three frames out after the start (`run_started`, `tool_call`,
//! `tool_call_suspended`), one frame in (the answer), five out (`answer_accepted`, `tool_result`,
//! the text in two `text_delta`s of at most 16 characters, `run_completed`), then the end of the
//! stream. A task per stream writes to a channel, as a real service does.

use std::pin::Pin;

use askuser::proto::v1 as pb;
use askuser::proto::v1::agent_service_server::{AgentService, AgentServiceServer};
use askuser::proto::v1::run_agent_request::Frame;
use askuser::proto::v1::run_agent_response::Event;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;
use tokio_stream::Stream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status, Streaming};

use crate::workload::ASK_USER;

type Frames = Pin<Box<dyn Stream<Item = Result<pb::RunAgentResponse, Status>> + Send>>;

/// Serves the floor on 127.0.0.1:0 until SIGTERM; announces its address on stdout as
/// `askuser serve` does.
pub fn serve() -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        println!("{}{}", askuser::server::LISTENING, listener.local_addr()?);
        let mut terminate = signal(SignalKind::terminate())?;
        // As the server's listener: small frames leave at once (no Nagle delay).
        let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
        tonic::transport::Server::builder()
            .add_service(AgentServiceServer::new(Floor))
            .serve_with_incoming_shutdown(incoming, async move {
                terminate.recv().await;
            })
            .await
            .map_err(std::io::Error::other)
    })
}

struct Floor;

fn frame(run_id: &str, sequence: u64, event: Event) -> Result<pb::RunAgentResponse, Status> {
    let now = std::time::SystemTime::now();
    Ok(pb::RunAgentResponse {
        run_id: run_id.to_owned(),
        sequence,
        time: Some(prost_types::Timestamp::from(now)),
        event: Some(event),
    })
}

/// The frames up to the suspension, with the payloads a real run of the workload has.
fn suspended(call_id: &str, start: pb::StartRun) -> [Event; 3] {
    let arguments = r#"{"question":"Which environment?","options":[{"label":"staging"},{"label":"production"}]}"#;
    [
        Event::RunStarted(pb::RunStarted {
            agent_id: start.agent_id,
            prompt: start.prompt,
            metadata: start.metadata,
        }),
        Event::ToolCall(pb::ToolCall {
            tool_call_id: call_id.to_owned(),
            tool_name: "ask_user".into(),
            arguments_json: arguments.into(),
        }),
        Event::ToolCallSuspended(pb::ToolCallSuspended {
            tool_call_id: call_id.to_owned(),
            tool_name: "ask_user".into(),
            suspend_payload: Some(pb::SuspendPayload {
                question: "Which environment?".into(),
                options: ["staging", "production"]
                    .into_iter()
                    .map(|label| pb::AskUserOption {
                        label: label.into(),
                        ..Default::default()
                    })
                    .collect(),
                selection_mode: Some(pb::SelectionMode::SingleSelect as i32),
            }),
            kind: ASK_USER.kind as i32,
            arguments_json: arguments.into(),
            ..Default::default()
        }),
    ]
}

/// The frames after the answer: `answer_accepted` (not stored: sequence 0), then the rest.
fn completed(call_id: &str, answer: String) -> (Event, Vec<Event>) {
    let accepted = Event::AnswerAccepted(pb::AnswerAccepted {
        tool_call_id: call_id.to_owned(),
        ..Default::default()
    });
    let output = format!("Deploying to {answer}");
    let mut events = vec![Event::ToolResult(pb::ToolResult {
        tool_call_id: call_id.to_owned(),
        content: answer,
        kind: pb::ToolResultKind::Answered as i32,
        ..Default::default()
    })];
    // As the scripted model streams text: pieces of at most 16 characters.
    let characters: Vec<char> = output.chars().collect();
    events.extend(characters.chunks(16).map(|piece| {
        Event::TextDelta(pb::TextDelta {
            text: piece.iter().collect(),
        })
    }));
    events.push(Event::RunCompleted(pb::RunCompleted {
        output_text: output,
        usage: None,
    }));
    (accepted, events)
}

/// One stream: start → three frames; answer → three frames and the end.
async fn run(
    mut inbound: Streaming<pb::RunAgentRequest>,
    outbound: mpsc::Sender<Result<pb::RunAgentResponse, Status>>,
) -> Result<(), Status> {
    let Some(Frame::Start(start)) = inbound.message().await?.and_then(|request| request.frame)
    else {
        return Err(Status::invalid_argument("the first frame must be a start"));
    };
    let run_id = uuid::Uuid::now_v7().to_string();
    let call_id = format!("call_{}", uuid::Uuid::now_v7().simple());
    let mut sequence = 0;
    for event in suspended(&call_id, start) {
        sequence += 1;
        if outbound
            .send(frame(&run_id, sequence, event))
            .await
            .is_err()
        {
            return Ok(());
        }
    }
    while let Some(request) = inbound.message().await? {
        let Some(Frame::Answer(answer)) = request.frame else {
            continue;
        };
        let text = match answer.answer {
            Some(pb::answer::Answer::Text(text)) if answer.tool_call_id == call_id => text,
            _ => {
                return Err(Status::invalid_argument(
                    "not an answer to the pending call",
                ));
            }
        };
        let (accepted, events) = completed(&call_id, text);
        if outbound.send(frame(&run_id, 0, accepted)).await.is_err() {
            return Ok(());
        }
        for event in events {
            sequence += 1;
            if outbound
                .send(frame(&run_id, sequence, event))
                .await
                .is_err()
            {
                return Ok(());
            }
        }
        return Ok(());
    }
    Ok(())
}

fn unimplemented<T>() -> Result<T, Status> {
    Err(Status::unimplemented(
        "the transport floor serves RunAgent only",
    ))
}

#[tonic::async_trait]
impl AgentService for Floor {
    type RunAgentStream = Frames;
    type ResumeRunStream = Frames;
    type WatchRunStream = Frames;
    type WatchPendingCallsStream =
        Pin<Box<dyn Stream<Item = Result<pb::WatchPendingCallsResponse, Status>> + Send>>;

    async fn run_agent(
        &self,
        request: Request<Streaming<pb::RunAgentRequest>>,
    ) -> Result<Response<Frames>, Status> {
        let inbound = request.into_inner();
        let (sender, receiver) = mpsc::channel(8);
        tokio::spawn(async move {
            if let Err(status) = run(inbound, sender.clone()).await {
                let _ = sender.send(Err(status)).await;
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(receiver))))
    }

    async fn resume_run(
        &self,
        _: Request<pb::ResumeRunRequest>,
    ) -> Result<Response<Frames>, Status> {
        unimplemented()
    }

    async fn watch_run(&self, _: Request<pb::WatchRunRequest>) -> Result<Response<Frames>, Status> {
        unimplemented()
    }

    async fn get_run(
        &self,
        _: Request<pb::GetRunRequest>,
    ) -> Result<Response<pb::GetRunResponse>, Status> {
        unimplemented()
    }

    async fn list_runs(
        &self,
        _: Request<pb::ListRunsRequest>,
    ) -> Result<Response<pb::ListRunsResponse>, Status> {
        unimplemented()
    }

    async fn cancel_run(
        &self,
        _: Request<pb::CancelRunRequest>,
    ) -> Result<Response<pb::CancelRunResponse>, Status> {
        unimplemented()
    }

    async fn list_agents(
        &self,
        _: Request<pb::ListAgentsRequest>,
    ) -> Result<Response<pb::ListAgentsResponse>, Status> {
        unimplemented()
    }

    async fn watch_pending_calls(
        &self,
        _: Request<pb::WatchPendingCallsRequest>,
    ) -> Result<Response<Self::WatchPendingCallsStream>, Status> {
        unimplemented()
    }

    async fn claim_call(
        &self,
        _: Request<pb::ClaimCallRequest>,
    ) -> Result<Response<pb::ClaimCallResponse>, Status> {
        unimplemented()
    }
}
