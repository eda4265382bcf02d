//! `askuser.v1.AgentService`: decode, validate, hand to the runtime, stream events back.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tracing::Instrument;

use futures::{Stream, StreamExt};
use tonic::{Request, Response, Status, Streaming};

use super::caller::{caller, credential};
use super::convert::{self, answer_from_proto};
use super::error::ApiError;
use super::inbound::Inbound;
use super::limits::{self, Field, RequestLimits};
use super::pending_frames::{PendingFrameStream, pending_frames};
use super::recheck::{rechecked, still_valid};
use super::stream_caps::{StreamCaps, StreamSlot};
use crate::auth::{AuthError, Credential};
use crate::domain::{Principal, Scope};
use crate::proto::v1 as pb;
use crate::proto::v1::agent_service_server::AgentService;
use crate::proto::v1::run_agent_request::Frame;
use crate::runtime::ask_user::describe;
use crate::runtime::{EventStream, FollowUntil, RejectReason, Runtime, RuntimeError, short_id};

/// The frames a server-streaming RPC sends.
pub type FrameStream = Pin<Box<dyn Stream<Item = Result<pb::RunAgentResponse, Status>> + Send>>;

/// How the service's streams and pages are bounded.
#[derive(Clone, Copy, Debug)]
pub struct StreamSettings {
    /// A heartbeat goes out on a stream idle this long.
    pub heartbeat_interval: Duration,
    /// The most a `ListRuns` page may take on the wire; the page ends before the run that would
    /// pass it.
    pub max_page_bytes: usize,
    /// Streaming calls open at once, server-wide.
    pub max_open_streams: usize,
    /// Streaming calls one principal may have open at once.
    pub max_streams_per_principal: usize,
    /// Streaming calls one tenant may have open at once.
    pub max_streams_per_tenant: usize,
    /// How long `RunAgent` waits for its first frame.
    pub first_frame_timeout: Duration,
    /// What a request may hold.
    pub limits: RequestLimits,
}

/// Handlers of `AgentService` (and of `HumanService`, whose requests are followed as runs are:
/// human_service.rs).
#[derive(Clone)]
pub struct AgentApi {
    pub(super) runtime: Runtime,
    heartbeat_interval: Duration,
    max_page_bytes: usize,
    first_frame_timeout: Duration,
    pub(super) limits: RequestLimits,
    /// One permit per open streaming call; a stream holds its permit until it ends.
    open_streams: Arc<Semaphore>,
    /// Open streams per principal and per tenant.
    stream_caps: Arc<StreamCaps>,
}

/// An open streaming call's place among `--max-open-streams`, counted in the open-streams metric
/// while it lives.
pub(super) struct StreamPermit {
    _slot: StreamSlot,
    _permit: OwnedSemaphorePermit,
    _counted: crate::metrics::OpenStream,
}

/// Who follows a run (and answers on it), and the credential its stream checks again on a timer
/// and before each answer frame.
pub(super) struct Follower {
    pub(super) principal: Principal,
    credential: Option<Credential>,
}

impl Follower {
    pub(super) fn of<T>(request: &Request<T>) -> Follower {
        Follower {
            principal: caller(request),
            credential: credential(request),
        }
    }
}

impl AgentApi {
    pub fn new(runtime: Runtime, settings: StreamSettings) -> Self {
        Self {
            runtime,
            heartbeat_interval: settings.heartbeat_interval,
            max_page_bytes: settings.max_page_bytes,
            first_frame_timeout: settings.first_frame_timeout,
            limits: settings.limits,
            open_streams: Arc::new(Semaphore::new(settings.max_open_streams)),
            stream_caps: Arc::new(StreamCaps::new(
                settings.max_streams_per_principal,
                settings.max_streams_per_tenant,
            )),
        }
    }

    /// A permit for one more open stream of `principal`, or RESOURCE_EXHAUSTED when its tenant,
    /// itself or the server has as many open as it allows.
    pub(super) fn stream_permit(&self, principal: &Principal) -> Result<StreamPermit, Status> {
        let slot = self.stream_caps.take(principal)?;
        let permit = Arc::clone(&self.open_streams)
            .try_acquire_owned()
            .map_err(|_| Status::from(ApiError::TooManyStreams))?;
        Ok(StreamPermit {
            _slot: slot,
            _permit: permit,
            _counted: crate::metrics::stream_opened(),
        })
    }

    /// Turns a run's events into frames. On `RunAgent`, the client's answers are handled in the
    /// same loop, so an answer's `answer_accepted` / `answer_rejected` frame always comes before the
    /// events it causes. A heartbeat goes out whenever nothing else did for a whole interval.
    pub(super) fn frames(
        &self,
        permit: StreamPermit,
        run_id: String,
        first: Option<pb::RunAgentResponse>,
        mut events: EventStream,
        follower: Follower,
        // The client's half of a `RunAgent` stream.
        mut inbound: Option<Inbound>,
    ) -> FrameStream {
        let Follower {
            principal,
            credential,
        } = follower;
        let recheck = credential.clone();
        let heartbeat = self.heartbeat_interval;
        let runtime = self.runtime.clone();
        let limits = self.limits;
        // The RPC's span: the answers of a `RunAgent` stream are its work too, and it lasts as
        // long as the stream.
        let rpc = tracing::Span::current();
        let frames: FrameStream = Box::pin(async_stream::stream! {
            // Held as long as the stream is open.
            let _permit = permit;
            let mut delivered = 0;
            if let Some(frame) = first {
                yield Ok(frame);
            }
            // One timer for the stream, pushed back before each wait (moving a deadline later is
            // an atomic store, where a new timer per frame is a trip through the timer wheel).
            let quiet = tokio::time::sleep(heartbeat);
            tokio::pin!(quiet);
            loop {
                quiet.as_mut().reset(tokio::time::Instant::now() + heartbeat);
                let client_frame = async {
                    match inbound.as_mut() {
                        Some(inbound) => inbound.message().await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    event = events.next() => match event {
                        Some(Ok(event)) => {
                            delivered = event.sequence;
                            yield Ok(crate::wire::event_to_proto(event));
                        }
                        Some(Err(error)) => {
                            yield Err(Status::from(ApiError::from(error)));
                            break;
                        }
                        None => break,
                    },
                    message = client_frame => match message {
                        Ok(Some(pb::RunAgentRequest { frame: Some(Frame::Answer(answer)) })) => {
                            if let Err(status) = still_valid(recheck.as_ref()).await {
                                yield Err(status);
                                break;
                            }
                            let frame =
                                answer_frame(&runtime, &run_id, answer, &limits, principal.clone())
                                    .instrument(rpc.clone())
                                    .await;
                            let ends = frame.is_err();
                            yield frame;
                            if ends {
                                break;
                            }
                        }
                        Ok(Some(_)) => {
                            yield Err(Status::from(ApiError::Protocol(
                                "after the first frame, only answer frames are valid".into(),
                            )));
                            break;
                        }
                        // The client half-closed: it can send no answer on this stream, so the
                        // stream ends when the run next waits for answers (or ends). This makes
                        // one-shot clients (grpcurl -d '{"start": ...}') work.
                        Ok(None) => {
                            inbound = None;
                            events =
                                runtime.follow(&run_id, &principal, delivered, FollowUntil::Idle);
                        }
                        // The client went away.
                        Err(_) => break,
                    },
                    () = &mut quiet => {
                        yield Ok(convert::unstored_frame(
                            &run_id,
                            pb::run_agent_response::Event::Heartbeat(pb::Heartbeat {}),
                        ));
                    }
                }
            }
        });
        rechecked(frames, credential)
    }
}

async fn answer_frame(
    runtime: &Runtime,
    run_id: &str,
    answer: pb::Answer,
    limits: &RequestLimits,
    caller: Principal,
) -> Result<pb::RunAgentResponse, Status> {
    let tool_call_id = answer.tool_call_id.clone();
    let answer_id = answer.answer_id.clone();
    let reject = |reason, message, violations| {
        Ok(convert::rejected_frame(
            run_id,
            &tool_call_id,
            &answer_id,
            reason,
            message,
            violations,
        ))
    };
    if !answer.run_id.is_empty() && answer.run_id != run_id {
        return reject(
            RejectReason::RunMismatch,
            format!(
                "this stream follows run \"{run_id}\", not \"{}\"; answer that run on its own stream or with ResumeRun",
                short_id(&answer.run_id)
            ),
            Vec::new(),
        );
    }
    let request = match answer_from_proto(answer, Some(run_id), limits, caller) {
        Ok(request) => request,
        Err(ApiError::InvalidAnswer(violations)) => {
            return reject(
                RejectReason::InvalidAnswer,
                describe(&violations),
                violations,
            );
        }
        Err(other) => return Err(other.into()),
    };
    match runtime.answer(request).await {
        Ok(ack) => Ok(convert::accepted_frame(run_id, ack)),
        Err(RuntimeError::AnswerRejected {
            reason,
            message,
            violations,
        }) => reject(reason, message, violations),
        Err(other) => Err(ApiError::from(other).into()),
    }
}

fn require(value: &str, field: &str) -> Result<(), ApiError> {
    if value.is_empty() {
        Err(ApiError::field(field, format!("{field} must not be empty")))
    } else {
        Ok(())
    }
}

#[tonic::async_trait]
impl AgentService for AgentApi {
    type RunAgentStream = FrameStream;
    type ResumeRunStream = FrameStream;
    type WatchRunStream = FrameStream;
    type WatchPendingCallsStream = PendingFrameStream;

    async fn run_agent(
        &self,
        request: Request<Streaming<pb::RunAgentRequest>>,
    ) -> Result<Response<Self::RunAgentStream>, Status> {
        let follower = Follower::of(&request);
        let principal = follower.principal.clone();
        let permit = self.stream_permit(&principal)?;
        // Read to its end even when the call fails early, so the stream ends without a reset.
        let mut inbound = Inbound::new(request.into_inner(), self.runtime.clone());
        let first = tokio::time::timeout(self.first_frame_timeout, inbound.message())
            .await
            .map_err(|_| ApiError::NoFirstFrame(self.first_frame_timeout))??
            .and_then(|m| m.frame);
        let (run_id, events) = match first {
            Some(Frame::Start(start)) => {
                // The stream itself needs `runs:read` (an attach is a read); a start more.
                if !principal.may(Scope::RunsStart) {
                    return Err(AuthError::MissingScope(Scope::RunsStart).into());
                }
                let start = convert::start_from_proto(start, &self.limits, principal.clone())?;
                self.runtime
                    .start_run(start)
                    .await
                    .map_err(|error| match error {
                        RuntimeError::InvalidArgument(violations) => {
                            ApiError::InvalidRequest(convert::nest("start", violations))
                        }
                        other => other.into(),
                    })?
            }
            Some(Frame::Attach(attach)) => {
                require(&attach.run_id, "attach.run_id")?;
                limits::check([("attach.run_id", Field::Id(&attach.run_id))], &self.limits)?;
                self.runtime
                    .get_run(&attach.run_id, &principal)
                    .await
                    .map_err(ApiError::from)?;
                let events = self.runtime.follow(
                    &attach.run_id,
                    &principal,
                    attach.after_sequence,
                    FollowUntil::End,
                );
                (attach.run_id, events)
            }
            Some(Frame::Answer(_)) | None => {
                return Err(
                    ApiError::Protocol("the first frame must be start or attach".into()).into(),
                );
            }
        };
        Ok(Response::new(self.frames(
            permit,
            run_id,
            None,
            events,
            follower,
            Some(inbound),
        )))
    }

    async fn resume_run(
        &self,
        request: Request<pb::ResumeRunRequest>,
    ) -> Result<Response<Self::ResumeRunStream>, Status> {
        let follower = Follower::of(&request);
        let principal = follower.principal.clone();
        let permit = self.stream_permit(&principal)?;
        let answer = request
            .into_inner()
            .answer
            .ok_or_else(|| ApiError::field("answer", "answer is required"))?;
        let request = answer_from_proto(answer, None, &self.limits, principal.clone())?;
        let run_id = request.run_id.clone();
        let ack = self.runtime.answer(request).await.map_err(ApiError::from)?;
        let events = self.runtime.follow(
            &run_id,
            &principal,
            ack.result_sequence.saturating_sub(1),
            FollowUntil::Idle,
        );
        let first = convert::accepted_frame(&run_id, ack);
        Ok(Response::new(self.frames(
            permit,
            run_id,
            Some(first),
            events,
            follower,
            None,
        )))
    }

    async fn watch_run(
        &self,
        request: Request<pb::WatchRunRequest>,
    ) -> Result<Response<Self::WatchRunStream>, Status> {
        let follower = Follower::of(&request);
        let principal = follower.principal.clone();
        let permit = self.stream_permit(&principal)?;
        let request = request.into_inner();
        require(&request.run_id, "run_id")?;
        limits::check([("run_id", Field::Id(&request.run_id))], &self.limits)?;
        self.runtime
            .get_run(&request.run_id, &principal)
            .await
            .map_err(ApiError::from)?;
        let events = self.runtime.follow(
            &request.run_id,
            &principal,
            request.after_sequence,
            FollowUntil::End,
        );
        Ok(Response::new(self.frames(
            permit,
            request.run_id,
            None,
            events,
            follower,
            None,
        )))
    }

    async fn get_run(
        &self,
        request: Request<pb::GetRunRequest>,
    ) -> Result<Response<pb::GetRunResponse>, Status> {
        let principal = caller(&request);
        let request = request.into_inner();
        require(&request.run_id, "run_id")?;
        limits::check([("run_id", Field::Id(&request.run_id))], &self.limits)?;
        let run = self
            .runtime
            .get_run(&request.run_id, &principal)
            .await
            .map_err(ApiError::from)?;
        Ok(Response::new(pb::GetRunResponse {
            run: Some(convert::run_to_proto(run)),
        }))
    }

    async fn list_runs(
        &self,
        request: Request<pb::ListRunsRequest>,
    ) -> Result<Response<pb::ListRunsResponse>, Status> {
        let principal = caller(&request);
        let request = request.into_inner();
        limits::check(
            [
                ("agent_id", Field::Id(&request.agent_id)),
                ("page_token", Field::PageToken(&request.page_token)),
                ("metadata", Field::Metadata(&request.metadata)),
            ],
            &self.limits,
        )?;
        let filter = convert::list_filter(&request)?;
        let page = self
            .runtime
            .list_runs(
                &principal,
                filter.clone(),
                request.page_size,
                &request.page_token,
            )
            .await
            .map_err(ApiError::from)?;
        let mut runs = Vec::with_capacity(page.runs.len());
        let mut bytes = 0;
        let mut next_page_token = page.next_page_token;
        for run in page.runs {
            let run = convert::run_to_proto(run);
            bytes += prost::Message::encoded_len(&run);
            // Always at least one run, so that paging goes on.
            if bytes > self.max_page_bytes
                && let Some(last) = runs.last()
            {
                let last: &pb::Run = last;
                next_page_token = self.runtime.page_token_after(&filter, &last.run_id);
                break;
            }
            runs.push(run);
        }
        Ok(Response::new(pb::ListRunsResponse {
            runs,
            next_page_token,
        }))
    }

    async fn cancel_run(
        &self,
        request: Request<pb::CancelRunRequest>,
    ) -> Result<Response<pb::CancelRunResponse>, Status> {
        let principal = caller(&request);
        let request = request.into_inner();
        require(&request.run_id, "run_id")?;
        limits::check(
            [
                ("run_id", Field::Id(&request.run_id)),
                ("reason", Field::Reason(&request.reason)),
            ],
            &self.limits,
        )?;
        let run = self
            .runtime
            .cancel_run(&request.run_id, &request.reason, &principal)
            .await
            .map_err(ApiError::from)?;
        Ok(Response::new(pb::CancelRunResponse {
            run: Some(convert::run_to_proto(run)),
        }))
    }

    async fn watch_pending_calls(
        &self,
        request: Request<pb::WatchPendingCallsRequest>,
    ) -> Result<Response<Self::WatchPendingCallsStream>, Status> {
        let principal = caller(&request);
        let credential = credential(&request);
        let permit = self.stream_permit(&principal)?;
        let request = request.into_inner();
        limits::check(
            [
                ("agent_ids", Field::Ids(&request.agent_ids)),
                ("tool_names", Field::Ids(&request.tool_names)),
            ],
            &self.limits,
        )?;
        let filter = convert::pending_filter(request)?;
        let events = self.runtime.watch_pending(filter, principal);
        Ok(Response::new(rechecked(
            pending_frames(permit, events, self.heartbeat_interval),
            credential,
        )))
    }

    async fn claim_call(
        &self,
        request: Request<pb::ClaimCallRequest>,
    ) -> Result<Response<pb::ClaimCallResponse>, Status> {
        let principal = caller(&request);
        let request = request.into_inner();
        limits::check(
            [
                ("run_id", Field::Id(&request.run_id)),
                ("tool_call_id", Field::Id(&request.tool_call_id)),
                ("claimant", Field::Id(&request.claimant)),
            ],
            &self.limits,
        )?;
        let ttl = request
            .ttl
            .as_ref()
            .map(|ttl| convert::duration_from_proto(ttl, "ttl"))
            .transpose()?;
        let until_ms = self
            .runtime
            .claim_call(
                &request.run_id,
                &principal,
                &request.tool_call_id,
                &request.claimant,
                ttl,
            )
            .await
            .map_err(ApiError::from)?;
        Ok(Response::new(pb::ClaimCallResponse {
            expire_time: Some(crate::wire::timestamp(until_ms)),
        }))
    }

    async fn list_agents(
        &self,
        request: Request<pb::ListAgentsRequest>,
    ) -> Result<Response<pb::ListAgentsResponse>, Status> {
        let principal = caller(&request);
        Ok(Response::new(pb::ListAgentsResponse {
            agents: self
                .runtime
                .agents(&principal)
                .into_iter()
                .map(convert::agent_to_proto)
                // An agent's instructions are its operator's business: `admin` only.
                .map(|agent| match principal.may(Scope::Admin) {
                    true => agent,
                    false => pb::Agent {
                        instructions: String::new(),
                        ..agent
                    },
                })
                .collect(),
        }))
    }
}
