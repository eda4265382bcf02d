//! A server's listed tools made into askuser tools: named `SERVER__tool`, bounded in size, with the
//! approval the agents file gives them (the server's annotations count only when trusted).

use std::sync::{Arc, Weak};

use serde_json::Value;
use tracing::warn;

use super::McpServer;
use super::settings::McpServerSettings;
use crate::runtime::tools::{ApprovalPolicy, ArgumentsSchema, Tool, ToolKind, check_name};

/// Between a server's name and its tool's in a qualified name.
pub const SEPARATOR: &str = "__";

/// The name the model calls a server's tool by.
pub fn qualified_name(server: &str, tool: &str) -> String {
    format!("{server}{SEPARATOR}{tool}")
}

/// How deep a tool's input schema may nest; deeper ones are left out (a schema is compiled and
/// walked recursively).
const MAX_SCHEMA_DEPTH: usize = 32;

/// A server's tool as askuser runs it.
#[derive(Clone)]
pub struct McpTool {
    /// The server's own name for it.
    pub name: String,
    pub server: Weak<McpServer>,
    /// The server's name, for messages once the server is gone.
    pub server_name: String,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("server", &self.server_name)
            .field("name", &self.name)
            .finish()
    }
}

/// The tools of one listing, in the server's order, each checked; those that cannot be offered are
/// left out with a warning naming them.
pub fn tools_of(
    server: &Arc<McpServer>,
    settings: &McpServerSettings,
    listed: Vec<Value>,
) -> Vec<Arc<Tool>> {
    let limits = &settings.limits;
    if listed.len() > limits.max_tools {
        warn!(
            mcp_server = %settings.name,
            listed = listed.len(),
            kept = limits.max_tools,
            "the MCP server lists more tools than an MCP server may offer; the rest are left out"
        );
    }
    let mut seen = std::collections::HashSet::new();
    let mut budget = limits.max_listing_bytes;
    listed
        .into_iter()
        .take(limits.max_tools)
        .filter_map(|listed| match tool_of(server, settings, &listed) {
            Ok(tool) if seen.contains(&tool.name) => {
                warn!(mcp_server = %settings.name, tool = %tool.name, "the MCP server lists a tool twice; the first is kept");
                None
            }
            Ok(tool) => {
                let size = tool.description.len() + tool.schema.source().to_string().len();
                if size > budget {
                    warn!(mcp_server = %settings.name, tool = %tool.name, "MCP tool left out: the server's tools are past {} bytes of descriptions and schemas", limits.max_listing_bytes);
                    budget = 0;
                    return None;
                }
                budget -= size;
                seen.insert(tool.name.clone());
                Some(Arc::new(tool))
            }
            Err(why) => {
                let name = listed.get("name").and_then(Value::as_str).unwrap_or("?");
                warn!(mcp_server = %settings.name, tool = %crate::runtime::mcp::clip(name, 80), "MCP tool left out: {why}");
                None
            }
        })
        .collect()
}

fn tool_of(
    server: &Arc<McpServer>,
    settings: &McpServerSettings,
    listed: &Value,
) -> Result<Tool, String> {
    let limits = &settings.limits;
    let name = listed
        .get("name")
        .and_then(Value::as_str)
        .ok_or("it has no name")?;
    let qualified = qualified_name(&settings.name, name);
    check_name(&qualified).map_err(|e| format!("{e} (the server's name, __, the tool's name)"))?;
    let schema = listed
        .get("inputSchema")
        .cloned()
        .unwrap_or_else(|| serde_json::json!({ "type": "object" }));
    let schema_bytes = schema.to_string().len();
    if schema_bytes > limits.max_schema_bytes {
        return Err(format!(
            "its input schema is {schema_bytes} bytes; at most {} are taken",
            limits.max_schema_bytes
        ));
    }
    if depth(&schema) > MAX_SCHEMA_DEPTH {
        return Err(format!(
            "its input schema nests deeper than {MAX_SCHEMA_DEPTH} levels"
        ));
    }
    let schema = ArgumentsSchema::compile(schema)
        .map_err(|e| format!("its input schema is not a usable JSON Schema: {e}"))?;
    let mut description = listed
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if description.len() > limits.max_description_bytes {
        let mut end = limits.max_description_bytes;
        while !description.is_char_boundary(end) {
            end -= 1;
        }
        description.truncate(end);
    }
    let read_only = listed
        .pointer("/annotations/readOnlyHint")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let approval = match settings.tool_approval.get(name) {
        Some(policy) => policy.clone(),
        None if settings.trust_annotations && read_only => ApprovalPolicy::Never,
        None => settings.approval.clone(),
    };
    Ok(Tool {
        name: qualified,
        description,
        schema,
        kind: ToolKind::Mcp(McpTool {
            name: name.to_owned(),
            server: Arc::downgrade(server),
            server_name: settings.name.clone(),
        }),
        approval,
        timeout: None,
        assignees: Vec::new(),
    })
}

/// How deep a JSON value nests.
fn depth(value: &Value) -> usize {
    // Iterative: the value came from a stranger, and recursion is what is being bounded.
    let mut deepest = 0;
    let mut stack = vec![(value, 1usize)];
    while let Some((value, level)) = stack.pop() {
        deepest = deepest.max(level);
        match value {
            Value::Array(items) => stack.extend(items.iter().map(|v| (v, level + 1))),
            Value::Object(map) => stack.extend(map.values().map(|v| (v, level + 1))),
            _ => {}
        }
    }
    deepest
}
