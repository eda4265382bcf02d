//! A model that plays a fixed script from the agent's TOML, for demos and tests.

use async_trait::async_trait;
use serde::Deserialize;

use super::{Model, ModelError, ModelEvent, ModelRequest, ModelStream};
use crate::domain::{Message, ModelToolCall, ToolResultKind};

/// One option of a scripted question.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedOption {
    pub label: String,
    #[serde(default)]
    pub description: Option<String>,
}

/// One scripted `ask_user` call, passed to the tool as written (so a script can also make bad calls).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedAsk {
    #[serde(default)]
    pub question: String,
    #[serde(default)]
    pub options: Option<Vec<ScriptedOption>>,
    #[serde(default)]
    pub selection_mode: Option<String>,
}

/// One scripted call of any tool, with its arguments as written (placeholders filled in string values).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCall {
    pub tool: String,
    #[serde(default)]
    pub arguments: Option<toml::Table>,
    /// The arguments as JSON text instead, sent as written (placeholders filled): a TOML table's
    /// keys come back sorted, and some arguments' order matters (a form's fields).
    #[serde(default)]
    pub arguments_json: Option<String>,
}

/// One model turn of a script.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedTurn {
    /// `ask_user` calls made in parallel in this turn.
    #[serde(default)]
    pub ask: Vec<ScriptedAsk>,
    /// Calls of any tool made in parallel in this turn, after the `ask` ones.
    #[serde(default)]
    pub call: Vec<ScriptedCall>,
    /// Text to say; the run then completes.
    #[serde(default)]
    pub say: Option<String>,
    /// The model errors with this message.
    #[serde(default)]
    pub fail: Option<String>,
    /// How long the model "thinks" before the turn's output, e.g. `500ms` (tests use it to catch
    /// a run mid-step).
    #[serde(default, with = "humantime_serde_opt")]
    pub delay: Option<std::time::Duration>,
    /// Said instead of the turn (which then makes no call, and the run completes) when a call of
    /// the turn before was declined; likewise for a rejected approval, an expired question and a
    /// reply in prose. Checked in this order.
    #[serde(default)]
    pub if_declined: Option<String>,
    #[serde(default)]
    pub if_rejected: Option<String>,
    #[serde(default)]
    pub if_expired: Option<String>,
    #[serde(default)]
    pub if_replied: Option<String>,
}

impl ScriptedTurn {
    /// What to say instead of the turn, given how the calls of the turn before were settled.
    fn instead(&self, settled: &[ToolResultKind]) -> Option<&String> {
        [
            (ToolResultKind::Declined, &self.if_declined),
            (ToolResultKind::Rejected, &self.if_rejected),
            (ToolResultKind::Expired, &self.if_expired),
            (ToolResultKind::Replied, &self.if_replied),
        ]
        .into_iter()
        .find_map(|(kind, text)| text.as_ref().filter(|_| settled.contains(&kind)))
    }
}

/// How the calls of the last turn were settled: the kinds of the tool results after the last
/// assistant message.
fn last_turn_outcomes(transcript: &[Message]) -> Vec<ToolResultKind> {
    transcript
        .iter()
        .rev()
        .take_while(|message| !matches!(message, Message::Assistant { .. }))
        .filter_map(|message| match message {
            Message::Tool { kind, .. } => Some(*kind),
            _ => None,
        })
        .collect()
}

mod humantime_serde_opt {
    use serde::{Deserialize, Deserializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<std::time::Duration>, D::Error> {
        Option::<String>::deserialize(deserializer)?
            .map(|text| humantime::parse_duration(&text).map_err(serde::de::Error::custom))
            .transpose()
    }
}

/// Plays [`ScriptedTurn`]s in order; the turn played is the number of assistant turns so far.
#[derive(Clone, Debug)]
pub struct ScriptedModel {
    turns: Vec<ScriptedTurn>,
}

/// How many characters of a `say` go in one text delta.
const DELTA_CHARS: usize = 16;

impl ScriptedModel {
    pub fn new(turns: Vec<ScriptedTurn>) -> Self {
        Self { turns }
    }
}

/// What a script's placeholders stand for: the run's tool results in order (`{{result.N}}`, any
/// kind) and its answers (`{{answer.N}}`: results other than invalid calls, after `User answered: `).
#[derive(Default)]
struct Results {
    answers: Vec<String>,
    results: Vec<String>,
}

impl Results {
    fn of(transcript: &[Message]) -> Self {
        let mut results = Results::default();
        for message in transcript {
            if let Message::Tool { content, kind, .. } = message {
                results.results.push(content.clone());
                if *kind != ToolResultKind::InvalidCall {
                    results.answers.push(
                        content
                            .strip_prefix("User answered: ")
                            .unwrap_or(content)
                            .to_owned(),
                    );
                }
            }
        }
        results
    }
}

/// Replaces `{{answer.N}}` and `{{result.N}}` (1-based), and `{{result.N.key.key}}` with a value
/// inside a JSON result (a form's: `{{result.2.content.version}}`; an array's items joined with
/// `, `); unknown placeholders stay as written.
fn fill(template: &str, results: &Results) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            rest = &rest[start..];
            break;
        };
        match placeholder(&after[..end], results) {
            Some(value) => out.push_str(&value),
            None => out.push_str(&rest[start..start + 2 + end + 2]),
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}

/// The value a placeholder (between the braces) stands for.
fn placeholder(name: &str, results: &Results) -> Option<String> {
    let mut parts = name.split('.');
    let values = match parts.next()? {
        "answer" => &results.answers,
        "result" => &results.results,
        _ => return None,
    };
    let index: usize = parts.next()?.parse().ok()?;
    let value = values.get(index.checked_sub(1)?)?;
    let keys: Vec<&str> = parts.collect();
    if keys.is_empty() {
        return Some(value.clone());
    }
    let parsed: serde_json::Value = serde_json::from_str(value).ok()?;
    let mut json = &parsed;
    for key in keys {
        json = json.get(key)?;
    }
    Some(match json {
        serde_json::Value::String(text) => text.clone(),
        serde_json::Value::Array(items) => items
            .iter()
            .map(|item| {
                item.as_str()
                    .map_or_else(|| item.to_string(), str::to_owned)
            })
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
    })
}

/// A TOML value as JSON, with placeholders filled in its strings.
fn fill_value(value: &toml::Value, results: &Results) -> serde_json::Value {
    match value {
        toml::Value::String(text) => fill(text, results).into(),
        toml::Value::Integer(n) => (*n).into(),
        toml::Value::Float(f) => (*f).into(),
        toml::Value::Boolean(b) => (*b).into(),
        toml::Value::Datetime(d) => d.to_string().into(),
        toml::Value::Array(items) => items.iter().map(|v| fill_value(v, results)).collect(),
        toml::Value::Table(table) => table
            .iter()
            .map(|(k, v)| (k.clone(), fill_value(v, results)))
            .collect::<serde_json::Map<_, _>>()
            .into(),
    }
}

fn ask_arguments(ask: &ScriptedAsk, answers: &Results) -> String {
    let mut args = serde_json::Map::new();
    args.insert("question".into(), fill(&ask.question, answers).into());
    if let Some(options) = &ask.options {
        let options = options
            .iter()
            .map(|o| {
                let mut option = serde_json::Map::new();
                option.insert("label".into(), o.label.clone().into());
                if let Some(description) = &o.description {
                    option.insert("description".into(), description.clone().into());
                }
                serde_json::Value::Object(option)
            })
            .collect::<Vec<_>>();
        args.insert("options".into(), options.into());
    }
    if let Some(mode) = &ask.selection_mode {
        args.insert("selectionMode".into(), mode.clone().into());
    }
    serde_json::Value::Object(args).to_string()
}

#[async_trait]
impl Model for ScriptedModel {
    fn provider(&self) -> &str {
        "scripted"
    }

    fn model(&self) -> &str {
        "scripted"
    }

    fn endpoint(&self) -> &str {
        "scripted"
    }

    async fn stream_turn(&self, request: ModelRequest<'_>) -> Result<ModelStream, ModelError> {
        let index = request
            .transcript
            .iter()
            .filter(|m| matches!(m, Message::Assistant { .. }))
            .count();
        let turn = self
            .turns
            .get(index)
            .ok_or(ModelError::Exhausted(index + 1))?;
        let answers = Results::of(request.transcript);
        if let Some(delay) = turn.delay {
            tokio::time::sleep(delay).await;
        }
        if let Some(message) = &turn.fail {
            return Err(ModelError::Failed(fill(message, &answers)));
        }
        let mut events = Vec::new();
        let said = |text: &str| {
            let text: Vec<char> = fill(text, &answers).chars().collect();
            text.chunks(DELTA_CHARS)
                .map(|piece| Ok(ModelEvent::TextDelta(piece.iter().collect())))
                .collect::<Vec<_>>()
        };
        if let Some(text) = turn.instead(&last_turn_outcomes(request.transcript)) {
            events.extend(said(text));
            events.push(Ok(ModelEvent::Finished(None)));
            return Ok(Box::pin(futures::stream::iter(events)));
        }
        if let Some(text) = &turn.say {
            events.extend(said(text));
        }
        for ask in &turn.ask {
            events.push(Ok(ModelEvent::ToolCall(ModelToolCall {
                id: format!("call_{}", uuid::Uuid::now_v7().simple()),
                name: "ask_user".into(),
                arguments_json: ask_arguments(ask, &answers),
            })));
        }
        for call in &turn.call {
            let arguments_json = match (&call.arguments_json, &call.arguments) {
                (Some(text), _) => fill(text, &answers),
                (None, Some(table)) => {
                    fill_value(&toml::Value::Table(table.clone()), &answers).to_string()
                }
                (None, None) => "{}".to_owned(),
            };
            events.push(Ok(ModelEvent::ToolCall(ModelToolCall {
                id: format!("call_{}", uuid::Uuid::now_v7().simple()),
                name: call.tool.clone(),
                arguments_json,
            })));
        }
        events.push(Ok(ModelEvent::Finished(None)));
        Ok(Box::pin(futures::stream::iter(events)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_answers_in_order_asked() {
        let answers = Results {
            answers: vec!["staging".to_owned(), "lint, unit".to_owned()],
            results: vec!["User answered: staging".to_owned()],
        };
        assert_eq!(
            fill(
                "to {{answer.1}} with {{answer.2}} {{answer.3}} ({{result.1}})",
                &answers
            ),
            "to staging with lint, unit {{answer.3}} (User answered: staging)"
        );
    }

    #[test]
    fn answers_strip_the_answered_prefix_only() {
        let tool = |content: &str, kind| Message::Tool {
            tool_call_id: "c".into(),
            content: content.into(),
            is_error: false,
            kind,
        };
        let transcript = vec![
            tool("User answered: a", ToolResultKind::Answered),
            tool("Failed to ask user: x", ToolResultKind::InvalidCall),
            tool("User declined to answer", ToolResultKind::Declined),
        ];
        let results = Results::of(&transcript);
        assert_eq!(results.answers, vec!["a", "User declined to answer"]);
        assert_eq!(results.results.len(), 3);
    }

    #[test]
    fn a_turn_says_what_fits_how_the_turn_before_was_settled() {
        let turn: ScriptedTurn = toml::from_str(
            "say = \"Hello, {{answer.1}}!\"\nif_declined = \"Hello, whoever you are!\"\n\
             if_rejected = \"not done\"",
        )
        .expect("a turn");
        let tool = |kind| Message::Tool {
            tool_call_id: "c".into(),
            content: "x".into(),
            is_error: false,
            kind,
        };
        let assistant = Message::Assistant {
            text: String::new(),
            tool_calls: Vec::new(),
        };
        // Only the calls since the last assistant message count.
        let transcript = vec![
            tool(ToolResultKind::Declined),
            assistant,
            tool(ToolResultKind::Answered),
        ];
        assert_eq!(turn.instead(&last_turn_outcomes(&transcript)), None);
        let declined = [ToolResultKind::Answered, ToolResultKind::Declined];
        assert_eq!(
            turn.instead(&declined).map(String::as_str),
            Some("Hello, whoever you are!")
        );
        assert_eq!(
            turn.instead(&[ToolResultKind::Rejected])
                .map(String::as_str),
            Some("not done")
        );
        assert_eq!(
            turn.instead(&[ToolResultKind::Expired]),
            None,
            "no if_expired: the turn plays"
        );
    }
}
