//! The gRPC surface (and its MCP face): decodes and validates requests, calls the runtime, maps
//! errors to statuses.

mod admin_service;
mod agent_service;
mod caller;
mod client_subject;
mod convert;
mod error;
mod form_answer;
mod form_from_proto;
#[cfg(test)]
mod frame_properties;
mod human_service;
mod inbound;
mod limits;
mod mcp;
mod pending_frames;
mod reason;
mod recheck;
mod stream_caps;
mod tool_service;

pub use admin_service::AdminApi;
pub use agent_service::{AgentApi, StreamSettings};
pub use client_subject::client_subject;
pub use error::{ApiError, ERROR_DOMAIN};
pub use limits::RequestLimits;
pub use mcp::{MCP_PATH, McpFace, service as mcp_service};
pub use tool_service::ToolApi;
