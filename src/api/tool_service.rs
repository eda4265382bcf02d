//! `askuser.v1.ToolService`: built-in tools executed outside any run.

use tonic::{Request, Response, Status};

use super::convert;
use super::error::ApiError;
use crate::proto::v1 as pb;
use crate::proto::v1::tool_service_server::ToolService;
use crate::runtime::{Runtime, RuntimeError};

/// Handlers of `ToolService`.
pub struct ToolApi {
    runtime: Runtime,
}

impl ToolApi {
    pub fn new(runtime: Runtime) -> Self {
        Self { runtime }
    }
}

#[tonic::async_trait]
impl ToolService for ToolApi {
    async fn ask_user(
        &self,
        request: Request<pb::AskUserRequest>,
    ) -> Result<Response<pb::AskUserResponse>, Status> {
        let input = request.into_inner().input.unwrap_or_default();
        let input = convert::input_from_proto(input, "input")?;
        let content = self
            .runtime
            .ask_user_fallback(&input)
            .map_err(|error| match error {
                RuntimeError::InvalidArgument(violations) => {
                    ApiError::InvalidRequest(convert::nest("input", violations))
                }
                other => other.into(),
            })?;
        Ok(Response::new(pb::AskUserResponse { content }))
    }
}
