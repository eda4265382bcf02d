use std::sync::Arc;
use std::time::Duration;

use super::tools::Tool;
use crate::model::Model;

/// An agent this server runs.
pub struct AgentDefinition {
    pub id: String,
    pub name: String,
    pub instructions: String,
    /// The tools the agent may call, in the order the agents file lists them.
    pub tools: Vec<Arc<Tool>>,
    pub max_steps: u32,
    /// Default time to live of its questions; `None`: they never expire.
    pub question_ttl: Option<Duration>,
    pub model: Arc<dyn Model>,
}
