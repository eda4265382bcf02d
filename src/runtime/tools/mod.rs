//! The tools agents call: the built-in `ask_user`, client tools the caller runs, and HTTP and MCP
//! tools the server runs. Each has a JSON Schema for its arguments and an approval policy that the server
//! enforces; [`plan_call`] decides, once per call, what a model's call becomes.

mod approval;
mod http;
mod schema;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::ask_user::{self, AskUserLimits, Violation};
use super::forms::FormTool;
use super::mcp::McpTool;
use crate::domain::{ModelToolCall, SuspendKind, Suspension, ToolDefinition};
use crate::model::ToolSpec;

pub use approval::ApprovalPolicy;
pub use http::{HttpTool, HttpToolSettings};
pub use schema::ArgumentsSchema;

/// Who runs a tool.
#[derive(Clone, Debug)]
pub enum ToolKind {
    /// The built-in question to a person.
    AskUser,
    /// A built-in form: several questions at once (`ask_user_questions`, `ask_user_form`).
    Form(FormTool),
    /// The caller runs it and settles the call with its output.
    Client,
    /// The server runs it.
    Http(Box<HttpTool>),
    /// An MCP server's tool, which the server calls.
    Mcp(McpTool),
}

impl ToolKind {
    /// Its name in traces.
    pub fn name(&self) -> &'static str {
        match self {
            ToolKind::AskUser => "ask_user",
            ToolKind::Form(FormTool::Questions) => "ask_user_questions",
            ToolKind::Form(FormTool::Elicitation) => "ask_user_form",
            ToolKind::Client => "client",
            ToolKind::Http(_) => "http",
            ToolKind::Mcp(_) => "mcp",
        }
    }
}

/// A tool an agent or a run may call.
#[derive(Clone, Debug)]
pub struct Tool {
    pub name: String,
    pub description: String,
    /// The arguments' schema; `ask_user` checks its arguments its own way.
    pub schema: ArgumentsSchema,
    pub kind: ToolKind,
    pub approval: ApprovalPolicy,
    /// How long a client tool call waits for its output; `None`: as long as a question waits.
    pub timeout: Option<Duration>,
    /// Who may decide its approvals; empty: the agent's assignees.
    pub assignees: Vec<String>,
}

/// The longest tool name, as the chat completions API allows.
const MAX_NAME_CHARS: usize = 64;

/// Checks a tool name: letters, digits, `_` and `-`, 1 to 64 characters.
pub fn check_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.chars().count() <= MAX_NAME_CHARS
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if valid {
        Ok(())
    } else {
        Err(format!(
            "tool name \"{name}\" must be 1 to {MAX_NAME_CHARS} letters, digits, _ or -"
        ))
    }
}

impl Tool {
    /// The built-in `ask_user`.
    pub fn ask_user(limits: &AskUserLimits) -> Result<Self, String> {
        Ok(Tool {
            name: ask_user::TOOL_NAME.to_owned(),
            description: ask_user::TOOL_DESCRIPTION.to_owned(),
            schema: ArgumentsSchema::compile(ask_user::arguments_schema(limits))?,
            kind: ToolKind::AskUser,
            approval: ApprovalPolicy::Never,
            timeout: None,
            assignees: Vec::new(),
        })
    }

    /// A built-in form tool under `name` (one of [`FormTool::named`]'s names).
    pub fn form(name: &str, tool: FormTool, limits: &AskUserLimits) -> Result<Self, String> {
        Ok(Tool {
            name: name.to_owned(),
            description: tool.description().to_owned(),
            schema: ArgumentsSchema::compile(tool.arguments_schema(limits))?,
            kind: ToolKind::Form(tool),
            approval: ApprovalPolicy::Never,
            timeout: None,
            assignees: Vec::new(),
        })
    }

    /// Whether `name` is a built-in tool's (which no other tool may take).
    pub fn is_built_in(name: &str) -> bool {
        name == ask_user::TOOL_NAME || FormTool::named(name).is_some()
    }

    /// A client tool given for one run; the error names what is wrong.
    pub fn for_run(definition: &ToolDefinition) -> Result<Self, Violation> {
        check_name(&definition.name).map_err(|e| Violation::new("name", e))?;
        if Tool::is_built_in(&definition.name) {
            return Err(Violation::new(
                "name",
                format!("{} is built in", definition.name),
            ));
        }
        let schema = ArgumentsSchema::parse(&definition.parameters_json_schema).map_err(|e| {
            Violation::new(
                "parameters_json_schema",
                format!("not a usable JSON Schema: {e}"),
            )
        })?;
        Ok(Tool {
            name: definition.name.clone(),
            description: definition.description.clone(),
            schema,
            kind: ToolKind::Client,
            approval: if definition.approval_always {
                ApprovalPolicy::Always
            } else {
                ApprovalPolicy::Never
            },
            timeout: None,
            assignees: Vec::new(),
        })
    }

    /// The tool as a model is told about it.
    pub fn spec(&self) -> ToolSpec<'_> {
        ToolSpec {
            name: &self.name,
            description: &self.description,
            parameters: self.schema.source(),
        }
    }
}

/// The tools one run may call: its agent's (with its MCP servers' tools as they are now), then
/// its own.
pub struct RunTools<'a> {
    agent: Cow<'a, [Arc<Tool>]>,
    run: Vec<Tool>,
}

impl<'a> RunTools<'a> {
    /// The agent's tools and the run's own, compiled from their stored definitions (checked when
    /// the run started, so a failure here means the stored data changed).
    pub fn new(
        agent: Cow<'a, [Arc<Tool>]>,
        definitions: &[ToolDefinition],
    ) -> Result<Self, String> {
        let run = definitions
            .iter()
            .map(|d| {
                Tool::for_run(d).map_err(|v| format!("run tool {}: {}", d.name, v.description))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { agent, run })
    }

    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.agent
            .iter()
            .map(Arc::as_ref)
            .chain(self.run.iter())
            .find(|tool| tool.name == name)
    }

    fn names(&self) -> Vec<&str> {
        self.agent
            .iter()
            .map(|t| t.name.as_str())
            .chain(self.run.iter().map(|t| t.name.as_str()))
            .collect()
    }

    /// Every tool as the model is told about it.
    pub fn specs(&self) -> Vec<ToolSpec<'_>> {
        self.agent
            .iter()
            .map(|t| t.spec())
            .chain(self.run.iter().map(Tool::spec))
            .collect()
    }
}

/// What a model's tool call becomes.
#[derive(Clone, Debug, PartialEq)]
pub enum CallPlan {
    /// Unknown tool or invalid arguments: the model gets this error result and nothing runs.
    Invalid(String),
    /// The call waits for someone; `timeout` is the tool's own wait, if it has one.
    Suspend {
        suspension: Suspension,
        timeout: Option<Duration>,
    },
    /// The server runs the tool with these (canonical) arguments.
    Execute { arguments_json: String },
}

/// Decides what a model's call becomes: checked against its tool's schema, then held for approval
/// when the tool's policy asks for it (the model has no say), then suspended for a person or the
/// caller, or executed by the server.
pub fn plan_call(
    tools: &RunTools<'_>,
    call: &ModelToolCall,
    metadata: &BTreeMap<String, String>,
    limits: &AskUserLimits,
) -> CallPlan {
    let Some(tool) = tools.get(&call.name) else {
        return CallPlan::Invalid(format!(
            "Unknown tool \"{}\": the tools are: {}",
            call.name,
            tools.names().join(", ")
        ));
    };
    if let ToolKind::AskUser = tool.kind {
        return match ask_user::parse_arguments(&call.arguments_json)
            .and_then(|input| ask_user::validate(&input, limits))
        {
            Ok(payload) => CallPlan::Suspend {
                suspension: Suspension {
                    kind: SuspendKind::Question,
                    payload: Some(payload),
                    ..Suspension::default()
                },
                timeout: None,
            },
            Err(violations) => CallPlan::Invalid(ask_user::invalid_call_result(&violations)),
        };
    }
    if let ToolKind::Form(form_tool) = tool.kind {
        return match form_tool.form(&call.arguments_json, limits) {
            Ok(form) => CallPlan::Suspend {
                suspension: Suspension {
                    kind: SuspendKind::Form,
                    form: Some(Box::new(form)),
                    ..Suspension::default()
                },
                timeout: None,
            },
            Err(violations) => CallPlan::Invalid(ask_user::invalid_call_result(&violations)),
        };
    }
    let (args, arguments_json) = match tool.schema.check(&call.arguments_json) {
        Ok(checked) => checked,
        Err(error) => {
            return CallPlan::Invalid(format!("Invalid arguments for {}: {error}", tool.name));
        }
    };
    if let Some(approval_reason) = tool.approval.required(&args, metadata) {
        return CallPlan::Suspend {
            suspension: Suspension {
                kind: SuspendKind::Approval,
                payload: None,
                form: None,
                arguments_json,
                approval_reason,
                assignees: Vec::new(),
            },
            timeout: None,
        };
    }
    run_plan(tool, arguments_json)
}

/// What an approved (or approval-free) call of `tool` becomes: the caller runs a client tool, the
/// server an HTTP tool.
pub fn run_plan(tool: &Tool, arguments_json: String) -> CallPlan {
    match tool.kind {
        ToolKind::Http(_) | ToolKind::Mcp(_) => CallPlan::Execute { arguments_json },
        ToolKind::Client | ToolKind::AskUser | ToolKind::Form(_) => CallPlan::Suspend {
            suspension: Suspension {
                kind: SuspendKind::ClientTool,
                payload: None,
                form: None,
                arguments_json,
                approval_reason: String::new(),
                assignees: Vec::new(),
            },
            timeout: tool.timeout,
        },
    }
}

/// The JSON value of a tool's arguments schema, for listings.
pub fn schema_text(tool: &Tool) -> String {
    Value::to_string(tool.schema.source())
}
