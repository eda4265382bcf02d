//! The endpoint's tools: their input schemas, and each call turned into what askuser does. An ask
//! becomes the `AskRequest` a gRPC caller would send and goes through the same decoding and checks
//! (`human_service::decode`); a `run_<agent>` call starts a run as `RunAgent` would.

use std::sync::Arc;

use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolRequestParams, CallToolResponse, JsonObject, Tool};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Map, Value, json};

use super::errors;
use super::{McpFace, follow, outcome, tasks};
use crate::api::agent_service::AgentApi;
use crate::domain::{self, Principal, Scope};
use crate::proto::v1 as pb;
use crate::runtime::forms::{FORM_TOOL, FormTool, QUESTIONS_TOOL};
use crate::runtime::{StartRunRequest, Violation, ask_user};

/// One question, in the seed's `ask_user` shape.
const ASK_USER: &str = ask_user::TOOL_NAME;
/// A tool call to approve, edit or reject before the host runs it.
const REQUEST_APPROVAL: &str = "request_approval";
/// `run_<agent_id>` runs an agent offered over MCP.
const RUN_PREFIX: &str = "run_";

/// The arguments every ask takes besides its own: `request_id`, `context`, `assignees`,
/// `ttl_seconds`.
fn common_properties() -> Value {
    json!({
        "request_id": {
            "type": "string",
            "description": "Makes a retry safe: a call with the request_id of an earlier one waits for that same request instead of asking again. Give one to resume waiting after a lost connection."
        },
        "context": {
            "type": "string",
            "description": "Markdown shown with the question: what is going on and why it is asked."
        },
        "assignees": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Who may answer: subjects, and groups as group:NAME. Empty: anyone allowed to answer."
        },
        "ttl_seconds": {
            "type": "integer",
            "minimum": 1,
            "description": "Seconds until the question expires unanswered. Absent: it never expires."
        }
    })
}

/// A JSON Schema object as the tool listing holds it.
fn object(schema: Value) -> Arc<JsonObject> {
    match schema {
        Value::Object(object) => Arc::new(object),
        _ => Arc::new(JsonObject::new()),
    }
}

/// `schema` with the common properties added, requiring only `required`.
fn with_common(mut schema: Value, required: &[&str]) -> Arc<JsonObject> {
    if let (Some(properties), Value::Object(common)) = (
        schema.get_mut("properties").and_then(Value::as_object_mut),
        common_properties(),
    ) {
        properties.extend(common);
    }
    schema["required"] = json!(required);
    object(schema)
}

/// The tools `principal` may call: the asks, and the agents of its tenant offered over MCP.
pub(super) fn list(api: &AgentApi, principal: &Principal) -> Vec<Tool> {
    let limits = &api.limits.ask_user;
    let mut tools = Vec::new();
    if principal.may(Scope::AsksCreate) {
        tools.push(Tool::new(
            ASK_USER,
            ask_user::TOOL_DESCRIPTION,
            with_common(ask_user::arguments_schema(limits), &["question"]),
        ));
        for form in [FormTool::Questions, FormTool::Elicitation] {
            let name = match form {
                FormTool::Questions => QUESTIONS_TOOL,
                FormTool::Elicitation => FORM_TOOL,
            };
            let schema = form.arguments_schema(limits);
            let required: Vec<String> = schema["required"]
                .as_array()
                .map(|names| {
                    names
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            let required: Vec<&str> = required.iter().map(String::as_str).collect();
            tools.push(Tool::new(
                name,
                form.description(),
                with_common(schema, &required),
            ));
        }
        tools.push(Tool::new(
            REQUEST_APPROVAL,
            "Ask a person to approve, edit or reject a tool call before you run it, and wait for \
             the decision. Returns {decision, arguments, reason, settled_by}: run the tool with \
             `arguments` only when the decision is approved or edited.",
            with_common(
                json!({
                    "type": "object",
                    "properties": {
                        "tool_name": {"type": "string", "description": "The tool you want to run."},
                        "arguments": {"type": "object", "description": "The arguments you want to run it with."},
                        "reason": {"type": "string", "description": "Why it needs approval, shown to the approver."}
                    },
                    "additionalProperties": false
                }),
                &["tool_name", "arguments"],
            ),
        ));
    }
    if principal.may(Scope::RunsStart) {
        for agent in api.runtime.agents(principal) {
            if !agent.offered_over_mcp {
                continue;
            }
            let description = match agent.instructions.is_empty() {
                true => format!(
                    "Run the askuser agent {} and return its answer.",
                    agent.name
                ),
                false => format!(
                    "Run the askuser agent {}: {} Its questions go to askuser's people; the call \
                     returns the run's final text.",
                    agent.name, agent.instructions
                ),
            };
            tools.push(Tool::new(
                format!("{RUN_PREFIX}{}", agent.id),
                description,
                object(json!({
                    "type": "object",
                    "properties": {
                        "prompt": {"type": "string", "description": "What to ask the agent."},
                        "request_id": {"type": "string", "description": "Makes a retry safe: the same request_id follows the same run."}
                    },
                    "required": ["prompt"],
                    "additionalProperties": false
                })),
            ));
        }
    }
    tools
}

/// The arguments every ask takes besides its own, taken out of `arguments`.
struct Common {
    request_id: String,
    context: String,
    assignees: Vec<String>,
    ttl: Option<prost_types::Duration>,
}

/// The optional string argument `name` (absent or null: empty); anything else is a violation.
fn optional_string(
    arguments: &Map<String, Value>,
    name: &str,
    violations: &mut Vec<Violation>,
) -> String {
    match arguments.get(name) {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(_) => {
            violations.push(Violation::new(name, format!("{name} must be a string")));
            String::new()
        }
    }
}

/// The first argument not in `known`, as a violation: a tool's arguments are closed.
fn unknown_argument(
    arguments: &Map<String, Value>,
    known: &[&str],
    tool: &str,
) -> Option<Violation> {
    arguments
        .keys()
        .find(|key| !known.contains(&key.as_str()))
        .map(|unknown| {
            Violation::new(
                unknown.clone(),
                format!("{unknown} is not an argument of {tool}"),
            )
        })
}

fn common(arguments: &mut Map<String, Value>) -> Result<Common, Vec<Violation>> {
    let mut violations = Vec::new();
    let request_id = optional_string(arguments, "request_id", &mut violations);
    let context = optional_string(arguments, "context", &mut violations);
    arguments.remove("request_id");
    arguments.remove("context");
    let assignees = match arguments.remove("assignees") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) if items.iter().all(Value::is_string) => items
            .into_iter()
            .filter_map(|item| item.as_str().map(str::to_owned))
            .collect(),
        Some(_) => {
            violations.push(Violation::new(
                "assignees",
                "assignees must be an array of strings",
            ));
            Vec::new()
        }
    };
    let ttl = match arguments.remove("ttl_seconds") {
        None | Some(Value::Null) => None,
        Some(value) => match value.as_i64().filter(|seconds| *seconds >= 1) {
            Some(seconds) => Some(prost_types::Duration { seconds, nanos: 0 }),
            None => {
                violations.push(Violation::new(
                    "ttl_seconds",
                    "ttl_seconds must be a whole number of seconds, at least 1",
                ));
                None
            }
        },
    };
    match violations.is_empty() {
        true => Ok(Common {
            request_id,
            context,
            assignees,
            ttl,
        }),
        false => Err(violations),
    }
}

/// A question as the API takes it.
fn question_to_proto(input: domain::AskUserInput) -> pb::AskUserInput {
    pb::AskUserInput {
        question: input.question,
        options: input
            .options
            .into_iter()
            .map(|option| pb::AskUserOption {
                label: option.label,
                description: option.description,
            })
            .collect(),
        selection_mode: input.selection_mode.map(|mode| match mode {
            domain::SelectionMode::SingleSelect => pb::SelectionMode::SingleSelect as i32,
            domain::SelectionMode::MultiSelect => pb::SelectionMode::MultiSelect as i32,
        }),
    }
}

/// What an ask tool's arguments ask, as the API's `AskRequest` call.
fn ask_call(
    name: &str,
    arguments: &Map<String, Value>,
    limits: &ask_user::AskUserLimits,
) -> Result<pb::ask_request::Call, Vec<Violation>> {
    use pb::ask_request::Call;
    let text = Value::Object(arguments.clone()).to_string();
    Ok(match name {
        ASK_USER => Call::Question(question_to_proto(ask_user::parse_arguments(&text)?)),
        QUESTIONS_TOOL => Call::Form(crate::wire::form_to_proto(
            &FormTool::Questions.form(&text, limits)?,
        )),
        FORM_TOOL => Call::Form(crate::wire::form_to_proto(
            &FormTool::Elicitation.form(&text, limits)?,
        )),
        _ => {
            let mut violations = Vec::new();
            let tool_name = match arguments.get("tool_name") {
                Some(Value::String(tool_name)) => tool_name.clone(),
                _ => {
                    violations.push(Violation::new("tool_name", "tool_name must be a string"));
                    String::new()
                }
            };
            let arguments_json = match arguments.get("arguments") {
                Some(value @ Value::Object(_)) => value.to_string(),
                _ => {
                    violations.push(Violation::new("arguments", "arguments must be an object"));
                    String::new()
                }
            };
            let reason = optional_string(arguments, "reason", &mut violations);
            violations.extend(unknown_argument(
                arguments,
                &["tool_name", "arguments", "reason"],
                REQUEST_APPROVAL,
            ));
            if !violations.is_empty() {
                return Err(violations);
            }
            Call::Approval(pb::ApprovalRequest {
                tool_name,
                arguments_json,
                reason,
            })
        }
    })
}

/// Calls the tool `request` names, as `principal`: waits for the end, or, when the host asked
/// for tasks, returns the task at once.
pub(super) async fn call(
    face: &McpFace,
    request: CallToolRequestParams,
    context: &RequestContext<RoleServer>,
    principal: Principal,
) -> Result<CallToolResponse, McpError> {
    let name = request.name.to_string();
    // A call that waits holds a stream's place among the limits, as a gRPC stream would.
    let waits = !tasks::wanted(context);
    let permit = |principal: &Principal| {
        waits
            .then(|| face.api.stream_permit(principal))
            .transpose()
            .map_err(|status| errors::from_status(&name, &status))
    };
    let mut arguments = request.arguments.unwrap_or_default();
    match name.as_str() {
        ASK_USER | QUESTIONS_TOOL | FORM_TOOL | REQUEST_APPROVAL => {
            errors::need(&principal, Scope::AsksCreate)?;
            let common = common(&mut arguments).map_err(|v| errors::invalid(&name, v))?;
            let call = ask_call(&name, &arguments, &face.api.limits.ask_user)
                .map_err(|v| errors::invalid(&name, v))?;
            let ask = pb::AskRequest {
                call: Some(call),
                context: common.context,
                assignees: common.assignees,
                ttl: common.ttl,
                request_id: common.request_id,
                ..Default::default()
            };
            let ask = crate::api::human_service::decode(ask, &face.api, principal.clone())
                .map_err(|error| errors::from_api(&name, error))?;
            let permit = permit(&principal)?;
            let (run_id, events) = face
                .api
                .runtime
                .ask(ask)
                .await
                .map_err(|error| errors::from_runtime(&name, error))?;
            if !waits {
                return Ok(CallToolResponse::Task(tasks::created(&run_id)));
            }
            follow::to_end(face, &run_id, events, context).await?;
            drop(permit);
            let run = face
                .api
                .runtime
                .get_run(&run_id, &principal)
                .await
                .map_err(|error| errors::from_runtime(&name, error))?;
            Ok(CallToolResponse::Complete(match name.as_str() {
                REQUEST_APPROVAL => outcome::approval(&run),
                _ => outcome::answer(&run),
            }))
        }
        _ => match name.strip_prefix(RUN_PREFIX) {
            Some(agent_id) => {
                errors::need(&principal, Scope::RunsStart)?;
                let offered = face
                    .api
                    .runtime
                    .agents(&principal)
                    .into_iter()
                    .any(|agent| agent.id == agent_id && agent.offered_over_mcp);
                if !offered {
                    return Err(errors::unknown_tool(&name));
                }
                let run = run_arguments(&arguments, face.api.limits.max_prompt_bytes)
                    .map_err(|v| errors::invalid(&name, v))?;
                let permit = permit(&principal)?;
                let (run_id, events) = face
                    .api
                    .runtime
                    .start_run(StartRunRequest {
                        agent_id: agent_id.to_owned(),
                        prompt: run.0,
                        metadata: Default::default(),
                        question_ttl: None,
                        tools: Vec::new(),
                        request_id: run.1,
                        principal,
                        webhooks: Vec::new(),
                    })
                    .await
                    .map_err(|error| errors::from_runtime(&name, error))?;
                if !waits {
                    return Ok(CallToolResponse::Task(tasks::created(&run_id)));
                }
                let end = follow::to_end(face, &run_id, events, context).await?;
                drop(permit);
                Ok(CallToolResponse::Complete(outcome::run_end(&run_id, end)))
            }
            None => Err(errors::unknown_tool(&name)),
        },
    }
}

/// A run tool's prompt and request id.
fn run_arguments(
    arguments: &Map<String, Value>,
    max_prompt_bytes: usize,
) -> Result<(String, String), Vec<Violation>> {
    let mut violations = Vec::new();
    let prompt = match arguments.get("prompt") {
        Some(Value::String(prompt)) if prompt.len() > max_prompt_bytes => {
            violations.push(Violation::new(
                "prompt",
                format!("the prompt is over {max_prompt_bytes} bytes"),
            ));
            String::new()
        }
        Some(Value::String(prompt)) if !prompt.trim().is_empty() => prompt.clone(),
        _ => {
            violations.push(Violation::new(
                "prompt",
                "prompt must be a non-empty string",
            ));
            String::new()
        }
    };
    let request_id = optional_string(arguments, "request_id", &mut violations);
    violations.extend(unknown_argument(
        arguments,
        &["prompt", "request_id"],
        "this tool",
    ));
    match violations.is_empty() {
        true => Ok((prompt, request_id)),
        false => Err(violations),
    }
}
