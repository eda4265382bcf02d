//! The chat completions wire format: the request body, and a turn assembled from the streamed
//! `chat.completion.chunk`s.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::OpenAiSettings;
use crate::domain::{Message, ModelToolCall, Usage};
use crate::http::excerpt;
use crate::model::{ModelError, ModelEvent, ModelRequest, ToolSpec};

/// The body of `POST /chat/completions` for one turn.
pub(super) fn request_body(settings: &OpenAiSettings, request: ModelRequest<'_>) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), settings.model.clone().into());
    body.insert(
        "messages".into(),
        messages(request.instructions, request.transcript).into(),
    );
    body.insert("stream".into(), true.into());
    body.insert("stream_options".into(), json!({ "include_usage": true }));
    // The API rejects an empty `tools` array, and `parallel_tool_calls` without tools.
    if !request.tools.is_empty() {
        body.insert(
            "tools".into(),
            request.tools.iter().map(tool).collect::<Vec<_>>().into(),
        );
        if let Some(parallel) = settings.parallel_tool_calls {
            body.insert("parallel_tool_calls".into(), parallel.into());
        }
    }
    if let Some(temperature) = settings.temperature {
        body.insert("temperature".into(), temperature.into());
    }
    if let Some(max_tokens) = settings.max_tokens {
        body.insert("max_tokens".into(), max_tokens.into());
    }
    Value::Object(body)
}

/// The agent's instructions as the system message, then the transcript.
fn messages(instructions: &str, transcript: &[Message]) -> Vec<Value> {
    let system =
        (!instructions.is_empty()).then(|| json!({ "role": "system", "content": instructions }));
    system
        .into_iter()
        .chain(transcript.iter().map(message))
        .collect()
}

fn message(message: &Message) -> Value {
    match message {
        Message::User { text } => json!({ "role": "user", "content": text }),
        Message::Assistant { text, tool_calls } if tool_calls.is_empty() => {
            json!({ "role": "assistant", "content": text })
        }
        Message::Assistant { text, tool_calls } => json!({
            "role": "assistant",
            // A turn that only called tools has null content, as the API itself writes it.
            "content": if text.is_empty() { Value::Null } else { text.as_str().into() },
            "tool_calls": tool_calls.iter().map(|call| json!({
                "id": call.id,
                "type": "function",
                "function": { "name": call.name, "arguments": call.arguments_json },
            })).collect::<Vec<_>>(),
        }),
        Message::Tool {
            tool_call_id,
            content,
            ..
        } => json!({ "role": "tool", "tool_call_id": tool_call_id, "content": content }),
    }
}

/// A tool, in strict mode when its schema allows it: the model's arguments then always match the
/// schema's shape. The server checks every call against the schema either way.
fn tool(spec: &ToolSpec<'_>) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.parameters,
            "strict": strict_compatible(spec.parameters),
        },
    })
}

/// Whether structured outputs' strict mode accepts a schema: every object closes its properties
/// (`additionalProperties: false`) and requires all of them, all the way down.
fn strict_compatible(schema: &Value) -> bool {
    let Some(schema) = schema.as_object() else {
        return false;
    };
    let children_ok = |key: &str| match schema.get(key) {
        None => true,
        Some(Value::Array(items)) => items.iter().all(strict_compatible),
        Some(item) => strict_compatible(item),
    };
    let is_object =
        schema.get("type") == Some(&json!("object")) || schema.contains_key("properties");
    let object_ok = !is_object || {
        let properties = schema.get("properties").and_then(Value::as_object);
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        schema.get("additionalProperties") == Some(&Value::Bool(false))
            && properties.is_none_or(|properties| {
                properties.iter().all(|(name, property)| {
                    required.contains(&name.as_str()) && strict_compatible(property)
                })
            })
    };
    object_ok && children_ok("items") && children_ok("anyOf")
}

/// One `chat.completion.chunk`; fields this provider does not use are ignored.
#[derive(Deserialize)]
struct Chunk {
    /// Empty in the closing usage chunk.
    choices: Vec<Choice>,
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct Choice {
    delta: Delta,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    content: Option<String>,
    /// What a model says instead of answering when it refuses (strict mode).
    refusal: Option<String>,
    tool_calls: Option<Vec<ToolCallDelta>>,
}

/// A fragment of a tool call: the first one of an index carries its id and name, and every one
/// may carry a piece of the arguments.
#[derive(Deserialize)]
struct ToolCallDelta {
    index: usize,
    id: Option<String>,
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    name: Option<String>,
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    prompt_tokens: u64,
    completion_tokens: u64,
}

#[derive(Default)]
struct ToolCallParts {
    id: String,
    name: String,
    arguments: String,
}

/// A turn being assembled from the chunks of one response.
#[derive(Default)]
pub(super) struct TurnAssembly {
    /// Tool calls by their index in the turn.
    tool_calls: BTreeMap<usize, ToolCallParts>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
}

impl TurnAssembly {
    /// Takes the JSON of one chunk; returns the text it adds, or why the chunk is malformed.
    pub(super) fn push(&mut self, data: &str) -> Result<String, String> {
        let chunk: Chunk = serde_json::from_str(data)
            .map_err(|e| format!("malformed chunk ({e}): {}", excerpt(data)))?;
        if let Some(usage) = chunk.usage {
            self.usage = Some(Usage {
                input_tokens: usage.prompt_tokens,
                output_tokens: usage.completion_tokens,
            });
        }
        let mut text = String::new();
        for choice in chunk.choices {
            let delta = choice.delta;
            text.extend(delta.content);
            text.extend(delta.refusal);
            for fragment in delta.tool_calls.into_iter().flatten() {
                let parts = self.tool_calls.entry(fragment.index).or_default();
                // Some servers repeat the id and name in every fragment: keep them, don't append.
                if let Some(id) = fragment.id.filter(|id| !id.is_empty()) {
                    parts.id = id;
                }
                if let Some(function) = fragment.function {
                    if let Some(name) = function.name.filter(|name| !name.is_empty()) {
                        parts.name = name;
                    }
                    parts.arguments.extend(function.arguments);
                }
            }
            if choice.finish_reason.is_some() {
                self.finish_reason = choice.finish_reason;
            }
        }
        Ok(text)
    }

    /// Whether a chunk said why the turn ended (only the usage chunk and `[DONE]` may follow).
    pub(super) fn has_finish_reason(&self) -> bool {
        self.finish_reason.is_some()
    }

    /// The end of the turn: its tool calls in index order, then `Finished`. A turn cut short by
    /// `max_tokens` (`length`) or a filter is an error, not an answer: its text or tool call
    /// arguments are incomplete.
    pub(super) fn finish(self) -> Result<Vec<ModelEvent>, ModelError> {
        match self.finish_reason.as_deref() {
            None | Some("stop" | "tool_calls") => {}
            Some(other) => return Err(ModelError::Incomplete(other.to_owned())),
        }
        Ok(self
            .tool_calls
            .into_values()
            .map(|parts| {
                ModelEvent::ToolCall(ModelToolCall {
                    id: parts.id,
                    name: parts.name,
                    arguments_json: parts.arguments,
                })
            })
            .chain(std::iter::once(ModelEvent::Finished(self.usage)))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_mode_only_for_closed_fully_required_schemas() {
        let closed = json!({"type": "object", "properties": {"service": {"type": "string"}},
            "required": ["service"], "additionalProperties": false});
        assert!(strict_compatible(&closed));
        let optional = json!({"type": "object", "properties": {"service": {"type": "string"},
            "note": {"type": "string"}}, "required": ["service"], "additionalProperties": false});
        assert!(!strict_compatible(&optional));
        let open = json!({"type": "object", "properties": {"service": {"type": "string"}},
            "required": ["service"]});
        assert!(!strict_compatible(&open));
        let nested_open = json!({"type": "object", "properties": {"target": {"type": "object",
            "properties": {"env": {"type": "string"}}, "required": ["env"]}},
            "required": ["target"], "additionalProperties": false});
        assert!(!strict_compatible(&nested_open));
    }

    fn call(index: usize, id: Option<&str>, name: Option<&str>, arguments: &str) -> String {
        json!({
            "object": "chat.completion.chunk",
            "choices": [{
                "index": 0,
                "delta": { "tool_calls": [{
                    "index": index,
                    "id": id,
                    "type": id.map(|_| "function"),
                    "function": { "name": name, "arguments": arguments },
                }]},
                "finish_reason": null,
            }],
        })
        .to_string()
    }

    #[test]
    fn assembles_interleaved_tool_calls_by_index() {
        let mut turn = TurnAssembly::default();
        for chunk in [
            call(1, Some("call_b"), Some("ask_user"), ""),
            call(0, Some("call_a"), Some("ask_user"), "{\"qu"),
            call(1, None, None, "{\"question\":\"B?\"}"),
            call(0, None, None, "estion\":\"A?\"}"),
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":null}"#
                .to_owned(),
            r#"{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}"#
                .to_owned(),
        ] {
            assert_eq!(turn.push(&chunk), Ok(String::new()));
        }
        let events = turn.finish().expect("finished");
        let tool_call = |id: &str, arguments: &str| {
            ModelEvent::ToolCall(ModelToolCall {
                id: id.into(),
                name: "ask_user".into(),
                arguments_json: arguments.into(),
            })
        };
        assert_eq!(
            events,
            vec![
                tool_call("call_a", "{\"question\":\"A?\"}"),
                tool_call("call_b", "{\"question\":\"B?\"}"),
                ModelEvent::Finished(Some(Usage {
                    input_tokens: 7,
                    output_tokens: 3
                })),
            ]
        );
    }

    #[test]
    fn length_is_incomplete_and_an_error_object_is_malformed() {
        let mut turn = TurnAssembly::default();
        let text = turn.push(
            r#"{"choices":[{"index":0,"delta":{"content":"Hal"},"finish_reason":"length"}]}"#,
        );
        assert_eq!(text, Ok("Hal".to_owned()));
        assert!(matches!(turn.finish(), Err(ModelError::Incomplete(reason)) if reason == "length"));
        let error = TurnAssembly::default()
            .push(r#"{"error":{"message":"overloaded"}}"#)
            .expect_err("malformed");
        assert!(error.contains("overloaded"), "{error}");
    }

    #[test]
    fn assistant_turn_that_only_calls_tools_has_null_content() {
        let transcript = [Message::Assistant {
            text: String::new(),
            tool_calls: vec![ModelToolCall {
                id: "call_1".into(),
                name: "ask_user".into(),
                arguments_json: "{}".into(),
            }],
        }];
        let sent = messages("", &transcript);
        assert_eq!(
            sent,
            vec![json!({
                "role": "assistant",
                "content": null,
                "tool_calls": [{
                    "id": "call_1",
                    "type": "function",
                    "function": { "name": "ask_user", "arguments": "{}" },
                }],
            })]
        );
    }
}
