//! `askuser.v1.HumanService`: asking a person from code outside any run. A request is followed
//! as a run is, on the same streams (heartbeats, limits on open streams, credentials checked again).

use tonic::{Request, Response, Status};

use super::agent_service::{AgentApi, Follower, FrameStream};
use super::convert;
use super::error::ApiError;
use super::form_from_proto::form_from_proto;
use crate::proto::v1 as pb;
use crate::proto::v1::human_service_server::HumanService;
use crate::runtime::RuntimeError;
use crate::runtime::requests::{AskRequest, RequestCall};

/// Decodes a request; sizes are checked first, as a run's start's are.
pub(super) fn decode(
    request: pb::AskRequest,
    api: &AgentApi,
    principal: crate::domain::Principal,
) -> Result<AskRequest, ApiError> {
    use pb::ask_request::Call;
    let limits = &api.limits;
    super::limits::check_ask(&request, limits)?;
    let call = match request.call {
        None => {
            return Err(ApiError::field(
                "call",
                "a request asks one thing: question, form or approval",
            ));
        }
        Some(Call::Question(input)) => {
            RequestCall::Question(convert::input_from_proto(input, "question")?)
        }
        Some(Call::Form(form)) => RequestCall::Form(Box::new(form_from_proto(form, "form")?)),
        Some(Call::Approval(approval)) => RequestCall::Approval {
            tool_name: approval.tool_name,
            arguments_json: approval.arguments_json,
            reason: approval.reason,
        },
    };
    let ttl = request
        .ttl
        .as_ref()
        .map(|ttl| convert::duration_from_proto(ttl, "ttl"))
        .transpose()?;
    Ok(AskRequest {
        call,
        context: request.context,
        assignees: request.assignees,
        ttl,
        metadata: request.metadata.into_iter().collect(),
        webhooks: convert::run_webhooks_from_proto(request.webhooks, "webhooks")?,
        request_id: request.request_id,
        principal,
    })
}

#[tonic::async_trait]
impl HumanService for AgentApi {
    type AskStream = FrameStream;

    async fn ask(
        &self,
        request: Request<pb::AskRequest>,
    ) -> Result<Response<Self::AskStream>, Status> {
        let follower = Follower::of(&request);
        let principal = follower.principal.clone();
        let permit = self.stream_permit(&principal)?;
        let ask = decode(request.into_inner(), self, principal)?;
        let (run_id, events) = self.runtime.ask(ask).await.map_err(|error| match error {
            RuntimeError::InvalidArgument(violations) => ApiError::InvalidRequest(violations),
            other => other.into(),
        })?;
        Ok(Response::new(
            self.frames(permit, run_id, None, events, follower, None),
        ))
    }
}
