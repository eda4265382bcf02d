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

    async fn render_question(
        &self,
        request: Request<pb::RenderQuestionRequest>,
    ) -> Result<Response<pb::RenderQuestionResponse>, Status> {
        let request = request.into_inner();
        let content = self
            .runtime
            .render_question(&request.tool_name, &request.arguments_json)
            .map_err(|error| match error {
                RuntimeError::InvalidArgument(violations) => {
                    let (named, arguments): (Vec<_>, Vec<_>) = violations
                        .into_iter()
                        .partition(|violation| violation.field == "tool_name");
                    let mut violations = named;
                    violations.extend(convert::nest("arguments_json", arguments));
                    ApiError::InvalidRequest(violations)
                }
                other => other.into(),
            })?;
        Ok(Response::new(pb::RenderQuestionResponse { content }))
    }
}
