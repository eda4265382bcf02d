//! What a client does around each call: the deadline, retries on UNAVAILABLE, and a `RunAgent`
//! stream that reattaches after the last sequence it delivered when the connection goes away.

use std::future::Future;
use std::time::Duration;

use askuser::proto::v1 as pb;
use askuser::proto::v1::run_agent_request::Frame;
use askuser::proto::v1::run_agent_response::Event;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Code, Request, Status, Streaming};

use super::{Agents, number};

/// Reattachment and retries: backoff from 100 ms doubling to 2 s, for at most 30 s.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(2);
const GIVE_UP_AFTER: Duration = Duration::from_secs(30);

/// The deadline `timeout_ms` gives a call; none when absent or 0.
pub(super) fn deadline_of(request: &Value) -> Option<Instant> {
    match number(request, "timeout_ms") {
        0 => None,
        ms => Some(Instant::now() + Duration::from_millis(ms)),
    }
}

/// A request that carries the deadline to the server too (`grpc-timeout`).
pub(super) fn with_deadline<T>(message: T, deadline: Option<Instant>) -> Request<T> {
    let mut request = Request::new(message);
    if let Some(deadline) = deadline {
        request.set_timeout(deadline.saturating_duration_since(Instant::now()));
    }
    request
}

/// Awaits a call, failing with DEADLINE_EXCEEDED at the deadline: tonic leaves a stream's
/// deadline to the caller.
pub(super) async fn within<T>(
    deadline: Option<Instant>,
    call: impl Future<Output = Result<T, Status>>,
) -> Result<T, Status> {
    match deadline {
        None => call.await,
        Some(deadline) => tokio::time::timeout_at(deadline, call)
            .await
            .unwrap_or_else(|_| Err(Status::deadline_exceeded("deadline exceeded"))),
    }
}

/// Calls again when the connection was lost (the server restarting), with backoff, within the
/// deadline.
pub(super) async fn retrying<T, F, Fut>(deadline: Option<Instant>, mut call: F) -> Result<T, Status>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Status>>,
{
    let started = Instant::now();
    let mut backoff = FIRST_BACKOFF;
    loop {
        match within(deadline, call()).await {
            Err(status) if connection_lost(&status) && started.elapsed() < GIVE_UP_AFTER => {
                within(deadline, async {
                    tokio::time::sleep(backoff).await;
                    Ok(())
                })
                .await?;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
            result => return result,
        }
    }
}

/// Whether a call failed because the connection went away: UNAVAILABLE, or the UNKNOWN (a reset
/// mid-stream) or CANCELLED (a request in flight on a connection that died) that tonic makes of a
/// transport error. A status made from a transport error has a source; one the server sent has
/// none.
pub(super) fn connection_lost(status: &Status) -> bool {
    match status.code() {
        Code::Unavailable => true,
        Code::Unknown | Code::Cancelled => std::error::Error::source(status).is_some(),
        _ => false,
    }
}

/// Opens a `RunAgent` stream with its first frame.
pub(super) async fn open(
    agents: &mut Agents,
    first: Frame,
    deadline: Option<Instant>,
) -> Result<
    (
        mpsc::Sender<pb::RunAgentRequest>,
        Streaming<pb::RunAgentResponse>,
    ),
    Status,
> {
    let (sender, receiver) = mpsc::channel(16);
    sender
        .send(pb::RunAgentRequest { frame: Some(first) })
        .await
        .map_err(|_| Status::internal("the request stream closed"))?;
    let request = with_deadline(ReceiverStream::new(receiver), deadline);
    let inbound = within(deadline, agents.run_agent(request))
        .await?
        .into_inner();
    Ok((sender, inbound))
}

/// A `RunAgent` stream that reattaches after the last sequence it delivered.
pub(super) struct RunStream {
    agents: Agents,
    run_id: String,
    sender: mpsc::Sender<pb::RunAgentRequest>,
    inbound: Streaming<pb::RunAgentResponse>,
    /// The `run_started` frame `start` read to learn the run's id, still to be delivered.
    read_ahead: Option<pb::RunAgentResponse>,
    last_sequence: u64,
    /// Answers sent that no `answer_accepted` / `answer_rejected` frame has acknowledged.
    unacked: Vec<pb::Answer>,
    deadline: Option<Instant>,
}

impl RunStream {
    /// A stream just opened on `run_id`, which has delivered every frame up to `last_sequence`;
    /// `read_ahead` is a frame read already and still to be delivered.
    pub(super) fn new(
        agents: Agents,
        run_id: String,
        (sender, inbound): (
            mpsc::Sender<pb::RunAgentRequest>,
            Streaming<pb::RunAgentResponse>,
        ),
        read_ahead: Option<pb::RunAgentResponse>,
        last_sequence: u64,
        deadline: Option<Instant>,
    ) -> Self {
        RunStream {
            agents,
            run_id,
            sender,
            inbound,
            read_ahead,
            last_sequence,
            unacked: Vec::new(),
            deadline,
        }
    }

    pub(super) async fn next(&mut self) -> Result<Option<pb::RunAgentResponse>, Status> {
        if let Some(frame) = self.read_ahead.take() {
            return Ok(Some(self.delivered(frame)));
        }
        loop {
            match within(self.deadline, self.inbound.message()).await {
                Ok(Some(frame)) => return Ok(Some(self.delivered(frame))),
                Ok(None) => return Ok(None),
                Err(status) if connection_lost(&status) => self.reattach(status).await?,
                Err(status) => return Err(status),
            }
        }
    }

    fn delivered(&mut self, frame: pb::RunAgentResponse) -> pb::RunAgentResponse {
        self.last_sequence = self.last_sequence.max(frame.sequence);
        let acknowledged = match &frame.event {
            Some(Event::AnswerAccepted(accepted)) => Some(&accepted.tool_call_id),
            Some(Event::AnswerRejected(rejected)) => Some(&rejected.tool_call_id),
            _ => None,
        };
        if let Some(id) = acknowledged {
            self.unacked.retain(|answer| &answer.tool_call_id != id);
        }
        frame
    }

    async fn reattach(&mut self, mut last: Status) -> Result<(), Status> {
        let started = Instant::now();
        let mut backoff = FIRST_BACKOFF;
        while started.elapsed() < GIVE_UP_AFTER {
            within(self.deadline, async {
                tokio::time::sleep(backoff).await;
                Ok(())
            })
            .await?;
            backoff = (backoff * 2).min(MAX_BACKOFF);
            let attach = Frame::Attach(pb::AttachRun {
                run_id: self.run_id.clone(),
                after_sequence: self.last_sequence,
            });
            match open(&mut self.agents, attach, self.deadline).await {
                Ok((sender, inbound)) => {
                    for answer in &self.unacked {
                        let frame = Some(Frame::Answer(answer.clone()));
                        // A failure here shows on the next read, which reattaches again.
                        let _ = sender.send(pb::RunAgentRequest { frame }).await;
                    }
                    (self.sender, self.inbound) = (sender, inbound);
                    return Ok(());
                }
                Err(status) if connection_lost(&status) => last = status,
                Err(status) => return Err(status),
            }
        }
        Err(last)
    }

    pub(super) async fn send(&mut self, answer: pb::Answer) {
        self.unacked.push(answer.clone());
        let frame = Some(Frame::Answer(answer));
        // A closed stream is reattached by the next read, which re-sends the answer.
        let _ = self.sender.send(pb::RunAgentRequest { frame }).await;
    }
}
