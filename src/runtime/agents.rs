use std::sync::Arc;
use std::time::Duration;

use super::tools::Tool;
use crate::domain::WebhookTarget;
use crate::model::Model;

/// An agent this server runs.
pub struct AgentDefinition {
    pub id: String,
    pub name: String,
    pub instructions: String,
    /// The tools the agent may call, in the order the agents file lists them.
    pub tools: Vec<Arc<Tool>>,
    pub max_steps: u32,
    /// Steps of its runs worked on at once; `None`: only the server's limit applies.
    pub max_concurrent_steps: Option<usize>,
    /// Tokens a run may use before its next model request is refused.
    pub max_tokens_per_run: Option<u64>,
    /// Default time to live of its questions; `None`: they never expire.
    pub question_ttl: Option<Duration>,
    pub model: Arc<dyn Model>,
    /// The tenants whose principals may see and run the agent; empty: every tenant.
    pub tenants: Vec<String>,
    /// Who may answer its questions and decide its approvals (users, and groups as `group:NAME`),
    /// unless a tool names its own approvers; empty: anyone allowed to answer.
    pub assignees: Vec<String>,
    /// The agents file's webhook subscriptions that cover its runs.
    pub webhooks: Vec<WebhookTarget>,
}

impl AgentDefinition {
    /// Whether principals of `tenant` may see and run the agent.
    pub fn serves(&self, tenant: &str) -> bool {
        self.tenants.is_empty() || self.tenants.iter().any(|t| t == tenant)
    }
}
