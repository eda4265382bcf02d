use std::sync::Arc;
use std::time::Duration;

use crate::model::{Model, ToolSpec};

/// An agent this server runs.
pub struct AgentDefinition {
    pub id: String,
    pub name: String,
    pub instructions: String,
    /// Tool names the agent may call.
    pub tools: Vec<String>,
    /// The tools as the model is told about them.
    pub tool_specs: Vec<ToolSpec>,
    pub max_steps: u32,
    /// Default time to live of its questions; `None`: they never expire.
    pub question_ttl: Option<Duration>,
    pub model: Arc<dyn Model>,
}
