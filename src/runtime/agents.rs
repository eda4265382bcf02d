use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use super::mcp::{McpServer, McpTool, SEPARATOR};
use super::tools::{ApprovalPolicy, ArgumentsSchema, Tool, ToolKind};
use crate::domain::WebhookTarget;
use crate::model::Model;

/// An agent this server runs.
pub struct AgentDefinition {
    pub id: String,
    pub name: String,
    pub instructions: String,
    /// The tools the agent may call, in the order the agents file lists them (an MCP server's
    /// tools are in `mcp`).
    pub tools: Vec<Arc<Tool>>,
    /// The MCP servers whose tools it may call.
    pub mcp: Vec<McpOffer>,
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
    /// Whether askuser's MCP endpoint offers it to MCP hosts (as `run_<id>`).
    pub offered_over_mcp: bool,
}

/// An MCP server's tools an agent may call: all of them (`mcp_servers = [...]`), or those its
/// `tools` names (`SERVER__tool`).
#[derive(Clone, Debug)]
pub struct McpOffer {
    pub server: Arc<McpServer>,
    /// Qualified names; `None`: every tool the server offers.
    pub only: Option<Vec<String>>,
}

impl McpOffer {
    fn offers(&self, qualified: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|names| names.iter().any(|n| n == qualified))
    }
}

impl AgentDefinition {
    /// Whether principals of `tenant` may see and run the agent.
    pub fn serves(&self, tenant: &str) -> bool {
        self.tenants.is_empty() || self.tenants.iter().any(|t| t == tenant)
    }

    /// The tools the agent may call now: its own, then those of its MCP servers that are up.
    pub fn tools_now(&self) -> Cow<'_, [Arc<Tool>]> {
        if self.mcp.is_empty() {
            return Cow::Borrowed(&self.tools);
        }
        let mut tools = self.tools.clone();
        for offer in &self.mcp {
            tools.extend(
                offer
                    .server
                    .tools()
                    .iter()
                    .filter(|tool| offer.offers(&tool.name))
                    .cloned(),
            );
        }
        Cow::Owned(tools)
    }

    /// The tool a call already made names, to run it: one the agent offers now, or else an MCP
    /// server's tool that is gone for the moment (down, or no longer listed), whose call then
    /// gives the model an error result instead of waiting for nothing.
    pub fn tool_for_call(&self, name: &str) -> Option<Arc<Tool>> {
        if let Some(tool) = self.tools_now().iter().find(|t| t.name == name) {
            return Some(Arc::clone(tool));
        }
        let offer = self.mcp.iter().find(|offer| {
            name.strip_prefix(offer.server.name())
                .is_some_and(|rest| rest.starts_with(SEPARATOR))
                && offer.offers(name)
        })?;
        let tool_name = &name[offer.server.name().len() + SEPARATOR.len()..];
        Some(Arc::new(Tool {
            name: name.to_owned(),
            description: String::new(),
            schema: ArgumentsSchema::any_object().ok()?,
            kind: ToolKind::Mcp(McpTool {
                name: tool_name.to_owned(),
                server: Arc::downgrade(&offer.server),
                server_name: offer.server.name().to_owned(),
            }),
            approval: ApprovalPolicy::Always,
            timeout: None,
            assignees: Vec::new(),
        }))
    }
}
