//! Calling a server's tool: `tools/call` under the server's timeout, with the call's idempotency
//! key in `_meta`. A tool that asks for input (an `input_required` result) makes the call wait for
//! a person as a form; once answered, the call is made again with the answers and the server's
//! request state, as many rounds as the SDK allows.

use std::collections::BTreeMap;

use rmcp::model::{CallToolRequestParams, CallToolResponse, MetaObject, RequestMetaObject};
use serde_json::{Value, json};

use super::continuation::{Continuation, MAX_REQUEST_STATE_BYTES, MAX_ROUNDS};
use super::live::LiveAsker;
use super::outcome::{self, McpOutcome};
use super::{IDEMPOTENCY_META, McpServer, qualified_name};
use crate::domain::Form;
use crate::runtime::ask_user::{self, AskUserLimits};
use crate::runtime::forms::FormTool;

/// What a call came to: a result, or a form for a person before it can go on.
#[derive(Clone, Debug)]
pub enum McpStep {
    Done(McpOutcome),
    Ask {
        form: Box<Form>,
        /// Stored with the call; the answer is added to it.
        continuation: String,
    },
}

/// One call of a server's tool.
pub struct McpCall<'a> {
    /// The server's own name for the tool.
    pub tool: &'a str,
    /// `<run_id>/<tool_call_id>`.
    pub idempotency_key: &'a str,
    pub arguments_json: &'a str,
    /// What the call goes on with, when a person answered its input.
    pub continuation: Option<&'a str>,
    pub max_output_bytes: usize,
    /// Who asks a person for input the server asks for within the live call.
    pub asker: &'a dyn LiveAsker,
}

impl McpServer {
    /// Makes the call (or goes on with it); every failure is an error result the model reads.
    pub async fn call(&self, call: McpCall<'_>, limits: &AskUserLimits) -> McpStep {
        let started = std::time::Instant::now();
        let step = self.call_once(&call, limits).await;
        let failed = matches!(&step, McpStep::Done(outcome) if outcome.is_error);
        crate::metrics::mcp_tool_call(self.name(), started.elapsed(), failed);
        step
    }

    async fn call_once(&self, call: &McpCall<'_>, limits: &AskUserLimits) -> McpStep {
        let server = self.name();
        let qualified = qualified_name(server, call.tool);
        let failed = |why: String| McpStep::Done(McpOutcome::error(format!("{qualified} {why}")));
        let continuation = match call.continuation.map(Continuation::parse).transpose() {
            // A live call's input outlives the process that held the call only in the store: the
            // call is made again (at least once), and the server asks again.
            Ok(Some(continuation)) if continuation.live => None,
            Ok(continuation) => continuation,
            Err(why) => return failed(format!("cannot go on: {why}")),
        };
        // More input asked in the same round: ask it before calling again.
        if let Some(continuation) = continuation.as_ref().filter(|c| c.next_request().is_some()) {
            return self.ask(&qualified, continuation.clone(), limits);
        }
        // A call taken over after a restart, or made while the server reconnects, waits for it
        // (within the call's time) rather than fail at once.
        self.up_within(self.settings.timeout).await;
        let state = self.read();
        let peer = match state.peer {
            Some(peer) if state.up => peer,
            _ => {
                return failed(format!(
                    "was not called: MCP server {server} is down ({})",
                    state.error
                ));
            }
        };
        if !state.tools.iter().any(|t| t.name == qualified) {
            return failed(format!(
                "was not called: MCP server {server} no longer offers the tool {}",
                call.tool
            ));
        }
        let arguments = match serde_json::from_str(call.arguments_json) {
            Ok(Value::Object(arguments)) => arguments,
            _ => return failed("was not called: the arguments are not a JSON object".into()),
        };
        let mut meta = serde_json::Map::new();
        meta.insert(IDEMPOTENCY_META.into(), call.idempotency_key.into());
        let mut params = CallToolRequestParams::new(call.tool.to_owned()).with_arguments(arguments);
        params.meta = Some(RequestMetaObject(MetaObject(meta)));
        let round = continuation.as_ref().map_or(0, |c| c.round);
        if let Some(continuation) = continuation {
            params.input_responses = Some(continuation.responses);
            params.request_state = continuation.request_state;
        }
        let timeout = self.settings.timeout;
        let (_in_flight, mut asks) = self.register();
        let response = peer.call_tool_once(params);
        tokio::pin!(response);
        // The timeout is the server's to answer in: a person's answer to input it asked for
        // within the call starts it again.
        let mut deadline = tokio::time::Instant::now() + timeout;
        let response = loop {
            tokio::select! {
                response = &mut response => break Ok(response),
                _ = tokio::time::sleep_until(deadline) => break Err(()),
                Some(ask) = asks.recv() => {
                    let answer = call.asker.ask(ask.params).await;
                    let _ = ask.reply.send(answer);
                    deadline = tokio::time::Instant::now() + timeout;
                }
            }
        };
        match response {
            Err(_) => failed(format!(
                "failed: MCP server {server} did not answer within {}",
                humantime::format_duration(timeout)
            )),
            Ok(Err(error)) => McpStep::Done(McpOutcome::error(
                self.scrub(format!("{qualified} failed: MCP server {server}: {error}")),
            )),
            Ok(Ok(CallToolResponse::Complete(result))) => match serde_json::to_value(&result) {
                Ok(result) => McpStep::Done(outcome::from_result(&result, call.max_output_bytes)),
                Err(error) => failed(format!("gave an unreadable result: {error}")),
            },
            Ok(Ok(CallToolResponse::InputRequired(input))) => match serde_json::to_value(&input)
                .map_err(|e| e.to_string())
                .and_then(|input| input_continuation(&input, round))
            {
                Ok(continuation) => self.ask(&qualified, continuation, limits),
                Err(why) => failed(format!("failed: MCP server {server} {why}")),
            },
            Ok(Ok(CallToolResponse::Task(_))) => failed(format!(
                "failed: MCP server {server} answered with a task, which askuser does not follow"
            )),
            Ok(Ok(_)) => failed(format!(
                "failed: MCP server {server} gave an answer askuser does not know"
            )),
        }
    }

    /// The form of the continuation's next request.
    fn ask(&self, qualified: &str, continuation: Continuation, limits: &AskUserLimits) -> McpStep {
        let Some((_, request)) = continuation.next_request() else {
            return McpStep::Done(McpOutcome::error(format!(
                "{qualified} failed: nothing to ask"
            )));
        };
        match elicitation_form(request, limits) {
            Ok(form) => McpStep::Ask {
                form: Box::new(form),
                continuation: continuation.to_text(),
            },
            Err(why) => McpStep::Done(McpOutcome::error(format!(
                "{qualified} failed: MCP server {} asked for input askuser cannot show: {why}",
                self.name()
            ))),
        }
    }
}

/// The continuation of an `input_required` result after `round` rounds, or why the call cannot go
/// on (input of a kind askuser does not give, too many rounds, too much state).
fn input_continuation(input: &Value, round: u32) -> Result<Continuation, String> {
    let round = round + 1;
    if round > MAX_ROUNDS {
        return Err(format!("asked for input more than {MAX_ROUNDS} times"));
    }
    let request_state = input
        .get("requestState")
        .and_then(Value::as_str)
        .map(str::to_owned);
    if request_state
        .as_ref()
        .is_some_and(|state| state.len() > MAX_REQUEST_STATE_BYTES)
    {
        return Err(format!(
            "sent a request state over {MAX_REQUEST_STATE_BYTES} bytes"
        ));
    }
    let mut requests = BTreeMap::new();
    let asked = input.get("inputRequests").and_then(Value::as_object);
    for (key, request) in asked.into_iter().flatten() {
        match request.get("method").and_then(Value::as_str) {
            Some("elicitation/create") => {
                requests.insert(
                    key.clone(),
                    request.get("params").cloned().unwrap_or_default(),
                );
            }
            other => {
                // Sampling and roots are not offered.
                return Err(format!(
                    "asked for {}, which askuser does not offer",
                    other.unwrap_or("an unknown kind of input")
                ));
            }
        }
    }
    if requests.is_empty() {
        return Err("asked for input without saying which".into());
    }
    Ok(Continuation {
        request_state,
        requests,
        responses: BTreeMap::new(),
        round,
        live: false,
    })
}

/// The form an elicitation request's params ask: a form mode request's schema made into fields,
/// or a URL to open (URL mode).
pub fn elicitation_form(params: &Value, limits: &AskUserLimits) -> Result<Form, String> {
    let message = params.get("message").and_then(Value::as_str).unwrap_or("");
    if params.get("mode").and_then(Value::as_str) == Some("url") {
        let url = params.get("url").and_then(Value::as_str).unwrap_or("");
        let form = Form {
            message: message.to_owned(),
            url: url.to_owned(),
            ..Form::default()
        };
        return crate::runtime::forms::validate(&form, limits)
            .map(|()| form)
            .map_err(|v| ask_user::describe(&v));
    }
    let arguments = json!({
        "message": message,
        "requestedSchema": params.get("requestedSchema").cloned().unwrap_or_default(),
    });
    FormTool::Elicitation
        .form(&arguments.to_string(), limits)
        .map_err(|v| ask_user::describe(&v))
}
