//! The agents file: `[[tool]]`s and `[[agent]]`s in TOML, checked and compiled into the
//! runtime's agent definitions when the server starts.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use super::ConfigError;
use super::mcp_servers::McpServerEntry;
use crate::domain::{WebhookEvent, WebhookTarget};
use crate::model::{
    DEFAULT_MAX_RETRIES, DEFAULT_REQUEST_TIMEOUT, Model, OpenAiModel, OpenAiSettings,
    ScriptedModel, ScriptedTurn,
};
use crate::runtime::forms::{self, FormTool};
use crate::runtime::mcp::{McpServer, SEPARATOR};
use crate::runtime::tools::{
    ApprovalPolicy, ArgumentsSchema, HttpTool, HttpToolSettings, Tool, ToolKind, check_name,
};
use crate::runtime::{AgentDefinition, AskUserLimits, McpOffer};
use crate::webhooks::secret_from_env;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentsFile {
    #[serde(default)]
    tool: Vec<ToolEntry>,
    #[serde(default)]
    agent: Vec<AgentEntry>,
    #[serde(default)]
    webhook: Vec<WebhookEntry>,
    #[serde(default)]
    mcp_server: Vec<McpServerEntry>,
}

/// A `[[webhook]]`: where the runs of some agents (every agent when none is listed) are told of
/// their events.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WebhookEntry {
    url: String,
    /// Event types (`call.suspended`, ...); empty: every one.
    #[serde(default)]
    events: Vec<String>,
    /// The environment variable holding the signing secret (never the secret).
    secret_env: String,
    #[serde(default)]
    agents: Vec<String>,
}

impl WebhookEntry {
    /// Checks the entry against the agents `known` and the environment; its target.
    fn target(&self, known: &HashSet<String>) -> Result<WebhookTarget, String> {
        let url: http::Uri = self.url.parse().map_err(|e| format!("url: {e}"))?;
        if !matches!(url.scheme_str(), Some("http" | "https")) || url.host().is_none() {
            return Err("url must be an http or https URL".into());
        }
        let events = self
            .events
            .iter()
            .map(|name| {
                WebhookEvent::parse(name).ok_or_else(|| {
                    let known: Vec<&str> = WebhookEvent::ALL.iter().map(|e| e.as_str()).collect();
                    format!("unknown event \"{name}\" (known: {})", known.join(", "))
                })
            })
            .collect::<Result<_, _>>()?;
        if let Some(unknown) = self.agents.iter().find(|agent| !known.contains(*agent)) {
            return Err(format!("unknown agent \"{unknown}\""));
        }
        secret_from_env(&self.secret_env).map_err(|e| format!("secret_env: {e}"))?;
        Ok(WebhookTarget {
            url: self.url.clone(),
            events,
            secret_env: Some(self.secret_env.clone()),
            // The operator wrote it: the private-address rule is for URLs clients give.
            operator: true,
        })
    }

    fn covers(&self, agent_id: &str) -> bool {
        self.agents.is_empty() || self.agents.iter().any(|agent| agent == agent_id)
    }
}

/// A `[[tool]]`: declared once, listed by name in each agent that may call it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolEntry {
    name: String,
    kind: ToolEntryKind,
    #[serde(default)]
    description: String,
    /// JSON Schema of the arguments (a TOML table); absent: any object.
    #[serde(default)]
    parameters: Option<toml::Value>,
    /// `never` (the default), `always`, or a CEL expression over `args` and `run.metadata`.
    #[serde(default)]
    approval: Option<String>,
    /// Who may decide its approvals (subjects, and groups as `group:NAME`); absent: the agent's
    /// `assignees`.
    #[serde(default)]
    assignees: Vec<String>,
    /// HTTP tools: where the arguments go.
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    method: Option<String>,
    /// HTTP tools: header name → the environment variable holding its value (never the value).
    #[serde(default)]
    headers_env: BTreeMap<String, String>,
    /// HTTP tools: each request's timeout; client tools: how long a call waits for its output.
    #[serde(default)]
    timeout: Option<String>,
    /// HTTP tools: retries after the first attempt.
    #[serde(default)]
    max_retries: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ToolEntryKind {
    Client,
    Http,
}

/// The default timeout of an HTTP tool's request.
const DEFAULT_HTTP_TOOL_TIMEOUT: Duration = Duration::from_secs(30);
/// Retries of an HTTP tool's request after the first attempt, by default.
const DEFAULT_HTTP_TOOL_RETRIES: u32 = 3;

/// Checks a `[[tool]]` entry, compiles its schema and policy and, for an HTTP tool, reads its
/// header values from the environment.
fn tool_from_entry(entry: ToolEntry) -> Result<Tool, String> {
    check_name(&entry.name)?;
    if Tool::is_built_in(&entry.name) {
        return Err(format!(
            "{} is built in; list it in an agent's tools without declaring it",
            entry.name
        ));
    }
    let parameters = match entry.parameters {
        Some(value) => serde_json::to_value(value).map_err(|e| format!("parameters: {e}"))?,
        None => serde_json::json!({ "type": "object" }),
    };
    let schema = ArgumentsSchema::compile(parameters)
        .map_err(|e| format!("parameters is not a usable JSON Schema: {e}"))?;
    let approval = ApprovalPolicy::parse(entry.approval.as_deref().unwrap_or("never"))
        .map_err(|e| format!("approval is not a valid CEL expression: {e}"))?;
    let timeout = entry
        .timeout
        .as_deref()
        .map(|text| match humantime::parse_duration(text) {
            Ok(timeout) if !timeout.is_zero() => Ok(timeout),
            Ok(_) => Err("timeout must be more than 0".to_owned()),
            Err(e) => Err(format!("timeout \"{text}\": {e}")),
        })
        .transpose()?;
    let http_only = entry.url.is_some()
        || entry.method.is_some()
        || !entry.headers_env.is_empty()
        || entry.max_retries.is_some();
    let kind = match entry.kind {
        ToolEntryKind::Client if http_only => {
            return Err("url, method, headers_env and max_retries are for HTTP tools".into());
        }
        ToolEntryKind::Client => ToolKind::Client,
        ToolEntryKind::Http => {
            let url = entry.url.ok_or("an HTTP tool needs a url")?;
            let headers = super::values::headers_from_env(entry.headers_env)?;
            ToolKind::Http(Box::new(HttpTool::new(HttpToolSettings {
                url,
                method: entry.method.unwrap_or_default(),
                headers,
                timeout: timeout.unwrap_or(DEFAULT_HTTP_TOOL_TIMEOUT),
                max_retries: entry.max_retries.unwrap_or(DEFAULT_HTTP_TOOL_RETRIES),
            })?))
        }
    };
    check_assignees(&entry.assignees)?;
    Ok(Tool {
        name: entry.name,
        description: entry.description,
        assignees: entry.assignees,
        schema,
        timeout: match kind {
            ToolKind::Client => timeout,
            _ => None,
        },
        kind,
        approval,
    })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentEntry {
    id: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    instructions: String,
    /// Tool names; an MCP server's tools are named `SERVER__tool`.
    #[serde(default = "default_tools")]
    tools: Vec<String>,
    /// MCP servers all of whose tools the agent may call.
    #[serde(default)]
    mcp_servers: Vec<String>,
    #[serde(default = "default_max_steps")]
    max_steps: u32,
    /// Steps of this agent's runs worked on at once; unlimited (but for the server's own limit)
    /// when absent.
    #[serde(default)]
    max_concurrent_steps: Option<usize>,
    /// Tokens (input and output, as the provider reports them) a run of this agent may use; past
    /// it the run fails before its next model request.
    #[serde(default)]
    max_tokens_per_run: Option<u64>,
    /// Default time to live of the agent's questions, e.g. `10m` or `7d`.
    #[serde(default)]
    question_ttl: Option<String>,
    /// The tenants that may see and run the agent; absent: every tenant.
    #[serde(default)]
    tenants: Vec<String>,
    /// Who may answer its questions and decide its approvals (subjects, and groups as
    /// `group:NAME`); absent: anyone with the scope to answer.
    #[serde(default)]
    assignees: Vec<String>,
    /// Whether MCP hosts may run it, as the tool `run_<id>` of askuser's own MCP endpoint.
    #[serde(default)]
    mcp: bool,
    model: ModelEntry,
}

/// Checks a list of assignees: subjects, or groups written `group:NAME`, none empty.
fn check_assignees(assignees: &[String]) -> Result<(), String> {
    match assignees
        .iter()
        .find(|a| a.is_empty() || a.as_str() == "group:")
    {
        Some(_) => Err("assignees must not be empty (a subject, or group:NAME)".into()),
        None => Ok(()),
    }
}

fn default_tools() -> Vec<String> {
    vec!["ask_user".to_owned()]
}

fn default_max_steps() -> u32 {
    8
}

#[derive(Debug, Deserialize)]
#[serde(tag = "provider", rename_all = "snake_case", deny_unknown_fields)]
enum ModelEntry {
    Scripted {
        #[serde(default)]
        turns: Vec<ScriptedTurn>,
    },
    Openai(OpenAiEntry),
}

/// An OpenAI-compatible chat completions model.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OpenAiEntry {
    model: String,
    base_url: String,
    /// The environment variable holding the API key: the key never sits in the file.
    #[serde(default)]
    api_key_env: Option<String>,
    #[serde(default)]
    temperature: Option<f64>,
    #[serde(default)]
    max_tokens: Option<u32>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// e.g. `60s`.
    #[serde(default)]
    request_timeout: Option<String>,
    #[serde(default)]
    max_retries: Option<u32>,
    #[serde(default)]
    parallel_tool_calls: Option<bool>,
}

/// Checks an `openai` entry, reads its API key from the environment and builds the model.
fn openai_model(entry: OpenAiEntry) -> Result<OpenAiModel, String> {
    if entry.model.is_empty() {
        return Err("model must not be empty".into());
    }
    if let Some(temperature) = entry.temperature.filter(|t| !(t.is_finite() && *t >= 0.0)) {
        return Err(format!(
            "temperature must be a number of at least 0, not {temperature}"
        ));
    }
    let api_key = entry
        .api_key_env
        .map(|name| {
            std::env::var(&name)
                .ok()
                .filter(|key| !key.is_empty())
                .ok_or_else(|| {
                    format!("api_key_env: the environment variable {name} is not set or empty")
                })
        })
        .transpose()?;
    let request_timeout = match entry.request_timeout.as_deref() {
        None => DEFAULT_REQUEST_TIMEOUT,
        Some(text) => match humantime::parse_duration(text) {
            Ok(timeout) if !timeout.is_zero() => timeout,
            Ok(_) => return Err("request_timeout must be more than 0".into()),
            Err(e) => return Err(format!("request_timeout \"{text}\": {e}")),
        },
    };
    OpenAiModel::new(OpenAiSettings {
        model: entry.model,
        base_url: entry.base_url,
        api_key,
        temperature: entry.temperature,
        max_tokens: entry.max_tokens,
        headers: entry.headers,
        request_timeout,
        max_retries: entry.max_retries.unwrap_or(DEFAULT_MAX_RETRIES),
        parallel_tool_calls: entry.parallel_tool_calls,
    })
    .map_err(|e| e.to_string())
}

/// The built-in demo agents.
pub const DEMO_AGENTS: &str = include_str!("../demo_agents.toml");

/// Reads the agents file, or the demo agents without one.
pub fn load_agents(
    path: Option<&Path>,
    limits: &AskUserLimits,
) -> Result<Vec<AgentDefinition>, ConfigError> {
    match path {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                path: path.to_owned(),
                source,
            })?;
            parse_agents(&text, &path.display().to_string(), limits)
        }
        None => parse_agents(DEMO_AGENTS, "built-in demo agents", limits),
    }
}

/// Parses an agents file; `origin` names it in errors.
pub fn parse_agents(
    text: &str,
    origin: &str,
    limits: &AskUserLimits,
) -> Result<Vec<AgentDefinition>, ConfigError> {
    let file: AgentsFile = toml::from_str(text).map_err(|source| ConfigError::Parse {
        origin: origin.to_owned(),
        source: Box::new(source),
    })?;
    let mut tools: BTreeMap<String, Arc<Tool>> = BTreeMap::new();
    let ask_user = Tool::ask_user(limits).map_err(|message| ConfigError::Tool {
        origin: origin.to_owned(),
        tool: "ask_user".into(),
        message,
    })?;
    tools.insert(ask_user.name.clone(), Arc::new(ask_user));
    for name in [
        forms::QUESTIONS_TOOL,
        forms::QUESTIONS_TOOL_ALIAS,
        forms::FORM_TOOL,
    ] {
        let tool = FormTool::named(name)
            .ok_or_else(|| format!("{name} is not a form tool"))
            .and_then(|kind| Tool::form(name, kind, limits))
            .map_err(|message| ConfigError::Tool {
                origin: origin.to_owned(),
                tool: name.into(),
                message,
            })?;
        tools.insert(tool.name.clone(), Arc::new(tool));
    }
    for entry in file.tool {
        let name = entry.name.clone();
        let invalid = |message: String| ConfigError::Tool {
            origin: origin.to_owned(),
            tool: name.clone(),
            message,
        };
        let tool = tool_from_entry(entry).map_err(invalid)?;
        if tools.contains_key(&name) {
            return Err(invalid("the name is used by another tool".into()));
        }
        tools.insert(name, Arc::new(tool));
    }
    let mut servers: BTreeMap<String, Arc<McpServer>> = BTreeMap::new();
    for entry in file.mcp_server {
        let name = entry.name.clone();
        let invalid = |message: String| ConfigError::McpServer {
            origin: origin.to_owned(),
            server: name.clone(),
            message,
        };
        let settings = entry.settings().map_err(invalid)?;
        if servers.contains_key(&name) {
            return Err(invalid("the name is used by another mcp_server".into()));
        }
        servers.insert(name, McpServer::new(settings));
    }
    let known: HashSet<String> = file.agent.iter().map(|entry| entry.id.clone()).collect();
    let webhooks = file
        .webhook
        .iter()
        .enumerate()
        .map(|(index, entry)| {
            let target = entry
                .target(&known)
                .map_err(|message| ConfigError::Webhook {
                    origin: origin.to_owned(),
                    index: index + 1,
                    url: entry.url.clone(),
                    message,
                })?;
            Ok((entry, target))
        })
        .collect::<Result<Vec<_>, ConfigError>>()?;
    let mut seen = HashSet::new();
    file.agent
        .into_iter()
        .map(|entry| {
            let invalid = |message: String| ConfigError::Agent {
                origin: origin.to_owned(),
                agent: entry.id.clone(),
                message,
            };
            if entry.id.is_empty() {
                return Err(invalid("id must not be empty".into()));
            }
            if !seen.insert(entry.id.clone()) {
                return Err(invalid("id is used by another agent".into()));
            }
            if entry.max_steps == 0 {
                return Err(invalid("max_steps must be at least 1".into()));
            }
            if entry.max_concurrent_steps == Some(0) {
                return Err(invalid("max_concurrent_steps must be at least 1".into()));
            }
            if entry.max_tokens_per_run == Some(0) {
                return Err(invalid("max_tokens_per_run must be at least 1".into()));
            }
            check_assignees(&entry.assignees).map_err(invalid)?;
            if entry.tenants.iter().any(String::is_empty) {
                return Err(invalid("tenants must not be empty".into()));
            }
            let mut listed = HashSet::new();
            let mut mcp: Vec<McpOffer> = Vec::new();
            for server in &entry.mcp_servers {
                let found = servers.get(server).ok_or_else(|| {
                    invalid(format!(
                        "unknown mcp_server \"{server}\" (known: {})",
                        servers.keys().cloned().collect::<Vec<_>>().join(", ")
                    ))
                })?;
                if mcp.iter().any(|offer| offer.server.name() == server) {
                    return Err(invalid(format!("mcp_server \"{server}\" is listed twice")));
                }
                mcp.push(McpOffer {
                    server: Arc::clone(found),
                    only: None,
                });
            }
            let mut agent_tools = Vec::new();
            for name in &entry.tools {
                if !listed.insert(name) {
                    return Err(invalid(format!("tool \"{name}\" is listed twice")));
                }
                let Some((server, _)) = name
                    .split_once(SEPARATOR)
                    .filter(|(server, _)| servers.contains_key(*server))
                else {
                    agent_tools.push(name);
                    continue;
                };
                crate::runtime::tools::check_name(name).map_err(|e| {
                    invalid(format!("{e}: an MCP tool's name is its server's, __, and the tool's"))
                })?;
                match mcp.iter_mut().find(|offer| offer.server.name() == server) {
                    Some(offer) => match &mut offer.only {
                        Some(names) => names.push(name.clone()),
                        None => {
                            return Err(invalid(format!(
                                "tool \"{name}\" is listed, and so is its mcp_server \"{server}\" in mcp_servers (which offers all its tools)"
                            )));
                        }
                    },
                    None => mcp.push(McpOffer {
                        server: Arc::clone(&servers[server]),
                        only: Some(vec![name.clone()]),
                    }),
                }
            }
            let agent_tools = agent_tools
                .into_iter()
                .map(|name| {
                    tools.get(name).cloned().ok_or_else(|| {
                        invalid(format!(
                            "unknown tool \"{name}\" (known: {})",
                            tools.keys().cloned().collect::<Vec<_>>().join(", ")
                        ))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            let question_ttl = entry
                .question_ttl
                .as_deref()
                .map(|text| {
                    humantime::parse_duration(text)
                        .map_err(|e| invalid(format!("question_ttl \"{text}\": {e}")))
                })
                .transpose()?;
            let model: Arc<dyn Model> = match entry.model {
                ModelEntry::Scripted { turns } => {
                    for (index, turn) in turns.iter().enumerate() {
                        let calls = !turn.ask.is_empty() || !turn.call.is_empty();
                        let kinds = usize::from(calls)
                            + usize::from(turn.say.is_some())
                            + usize::from(turn.fail.is_some());
                        if kinds != 1 {
                            return Err(invalid(format!(
                                "scripted turn {} must have exactly one of ask/call, say, fail",
                                index + 1
                            )));
                        }
                        if let Some(call) = turn
                            .call
                            .iter()
                            .find(|call| call.arguments.is_some() && call.arguments_json.is_some())
                        {
                            return Err(invalid(format!(
                                "scripted turn {}: the call of {} gives both arguments and arguments_json; give one",
                                index + 1,
                                call.tool
                            )));
                        }
                    }
                    Arc::new(ScriptedModel::new(turns))
                }
                ModelEntry::Openai(openai) => Arc::new(openai_model(openai).map_err(invalid)?),
            };
            let agent_webhooks = webhooks
                .iter()
                .filter(|(webhook, _)| webhook.covers(&entry.id))
                .map(|(_, target)| target.clone())
                .collect();
            Ok(AgentDefinition {
                name: entry.name.unwrap_or_else(|| entry.id.clone()),
                id: entry.id,
                instructions: entry.instructions,
                tools: agent_tools,
                mcp,
                max_steps: entry.max_steps,
                max_concurrent_steps: entry.max_concurrent_steps,
                max_tokens_per_run: entry.max_tokens_per_run,
                question_ttl,
                model,
                webhooks: agent_webhooks,
                tenants: entry.tenants,
                assignees: entry.assignees,
                offered_over_mcp: entry.mcp,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_agents_parse() {
        let agents =
            parse_agents(DEMO_AGENTS, "demo", &AskUserLimits::default()).expect("demo agents");
        let ids: Vec<&str> = agents.iter().map(|a| a.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "deploy",
                "environment",
                "greeter",
                "deployer",
                "status_check",
                "release"
            ]
        );
    }

    #[test]
    fn rejects_unknown_tools_and_mixed_turns() {
        let limits = AskUserLimits::default();
        let unknown =
            "[[agent]]\nid = \"a\"\ntools = [\"shell\"]\n[agent.model]\nprovider = \"scripted\"\n";
        let error = parse_agents(unknown, "t", &limits).err().expect("error");
        assert!(
            error.to_string().contains("unknown tool \"shell\""),
            "{error}"
        );
        let mixed = "[[agent]]\nid = \"a\"\n[agent.model]\nprovider = \"scripted\"\n[[agent.model.turns]]\nsay = \"x\"\nfail = \"y\"\n";
        let error = parse_agents(mixed, "t", &limits).err().expect("error");
        assert!(
            error
                .to_string()
                .contains("exactly one of ask/call, say, fail"),
            "{error}"
        );
    }

    #[test]
    fn a_bad_tool_stops_loading_naming_the_tool() {
        let limits = AskUserLimits::default();
        let tool = |body: &str| format!("[[tool]]\nname = \"deploy\"\n{body}\n");
        let cases = [
            (
                tool("kind = \"client\"\nparameters = { type = 12 }"),
                "JSON Schema",
            ),
            (
                tool("kind = \"client\"\napproval = 'args.environment =='"),
                "CEL",
            ),
            (tool("kind = \"http\""), "needs a url"),
            (
                tool("kind = \"client\"\nurl = \"http://127.0.0.1:1/x\""),
                "for HTTP tools",
            ),
            (
                tool("kind = \"http\"\nurl = \"http://127.0.0.1:1/x\"\nmethod = \"GET\""),
                "POST, PUT, PATCH or DELETE",
            ),
            (
                tool("kind = \"client\"\n[[tool]]\nname = \"deploy\"\nkind = \"client\""),
                "used by another tool",
            ),
            (
                "[[tool]]\nname = \"ask_user\"\nkind = \"client\"\n".to_owned(),
                "built in",
            ),
        ];
        for (text, expected) in cases {
            let error = parse_agents(&text, "t", &limits)
                .err()
                .expect("error")
                .to_string();
            assert!(error.contains("tool \""), "{text}: {error}");
            assert!(error.contains(expected), "{text}: {error}");
        }
    }

    fn openai_agent(model_table: &str) -> String {
        format!("[[agent]]\nid = \"a\"\n[agent.model]\nprovider = \"openai\"\n{model_table}")
    }

    fn openai_error(model_table: &str) -> String {
        parse_agents(&openai_agent(model_table), "t", &AskUserLimits::default())
            .err()
            .expect("error")
            .to_string()
    }

    #[test]
    fn openai_accepts_every_setting() {
        let text = openai_agent(
            "model = \"gpt-4o-mini\"\nbase_url = \"http://127.0.0.1:11434/v1\"\ntemperature = 0.2\n\
             max_tokens = 512\nrequest_timeout = \"90s\"\nmax_retries = 4\nparallel_tool_calls = false\n\
             [agent.model.headers]\nOpenAI-Organization = \"org-1\"\n",
        );
        let agents = parse_agents(&text, "t", &AskUserLimits::default()).expect("valid");
        assert_eq!(agents[0].model.provider(), "openai");
    }

    #[test]
    fn openai_rejects_bad_settings() {
        let base = "model = \"m\"\nbase_url = \"http://127.0.0.1:1/v1\"\n";
        let cases = [
            (
                format!("{base}api_key = \"sk-in-the-file\"\n"),
                "unknown field `api_key`",
            ),
            (
                format!("{base}api_key_env = \"ASKUSER_TEST_NEVER_SET_KEY\"\n"),
                "environment variable ASKUSER_TEST_NEVER_SET_KEY",
            ),
            (
                "model = \"m\"\nbase_url = \"127.0.0.1:1/v1\"\n".to_owned(),
                "base_url \"<an unparsable URL, not shown>\": relative URL",
            ),
            (
                format!("{base}request_timeout = \"soon\"\n"),
                "request_timeout",
            ),
            (format!("{base}temperature = -1.0\n"), "temperature"),
            (
                format!("{base}[agent.model.headers]\n\"bad name\" = \"x\"\n"),
                "header name \"bad name\"",
            ),
        ];
        for (table, expected) in cases {
            let error = openai_error(&table);
            assert!(error.contains(expected), "{table}: {error}");
        }
    }
}
