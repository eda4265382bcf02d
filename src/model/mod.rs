//! Model providers behind one streaming [`Model`] trait: a model turn is a stream of text deltas and
//! tool calls. `scripted` runs the whole protocol with no LLM; `openai` speaks the OpenAI-compatible
//! chat completions API (OpenAI, Ollama, vLLM, ...).

mod openai;
mod scripted;

use std::pin::Pin;

use async_trait::async_trait;
use futures::Stream;

use crate::domain::{Message, ModelToolCall, Usage};

pub use openai::{DEFAULT_MAX_RETRIES, DEFAULT_REQUEST_TIMEOUT, OpenAiModel, OpenAiSettings};
pub use scripted::{ScriptedAsk, ScriptedModel, ScriptedOption, ScriptedTurn};

/// Errors of the model layer.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The model itself reports a failure (e.g. a scripted `fail` turn).
    #[error("{0}")]
    Failed(String),
    /// The script or provider has nothing more to say.
    #[error("the model has no turn {0}")]
    Exhausted(usize),
    /// A provider's settings cannot be used (reported when the agents file is loaded).
    #[error("{0}")]
    Settings(String),
    /// The provider answered the last attempt with an error status. The body and the endpoint
    /// (redacted) are for the log: see [`failure_message`].
    #[error("POST {endpoint} answered HTTP {status} after {attempts} attempt(s): {body}")]
    Status {
        endpoint: String,
        status: reqwest::StatusCode,
        attempts: u32,
        /// The start of the response body.
        body: String,
    },
    /// The provider could not be reached, or its response broke off, on the last attempt.
    #[error("POST {endpoint} failed after {attempts} attempt(s): {cause}")]
    Unavailable {
        endpoint: String,
        attempts: u32,
        /// How, in a few words a client may see: "timed out", "could not connect", ...
        how: &'static str,
        cause: String,
    },
    /// The response ended without finishing the turn (`finish_reason` `length`, `content_filter`,
    /// ...); retrying would end the same way.
    #[error("the response ended incomplete (finish_reason \"{0}\")")]
    Incomplete(String),
}

/// The message of a run that failed because its model did: which provider failed and how. What a
/// provider answered (its body) and where it was reached stay in the log, on a line that holds the
/// correlation id the message quotes.
pub fn failure_message(provider: &str, error: &ModelError) -> String {
    let how = match error {
        ModelError::Status {
            status, attempts, ..
        } => format!("HTTP {status} after {attempts} attempt(s)"),
        ModelError::Unavailable { how, attempts, .. } => {
            format!("{how} after {attempts} attempt(s)")
        }
        // Words of the server's own (a script's failure, a finish reason): nothing to hide.
        ModelError::Failed(_) | ModelError::Exhausted(_) | ModelError::Incomplete(_) => {
            return format!("model provider {provider} failed: {error}");
        }
        ModelError::Settings(_) => "its settings cannot be used".to_owned(),
    };
    let correlation_id = uuid::Uuid::now_v7().simple().to_string();
    tracing::error!(provider, %error, correlation_id, "model provider failed");
    format!(
        "model provider {provider} failed: {how} (the server's log has the details under correlation id \
         {correlation_id})"
    )
}

/// A tool a model may call, borrowed from the tool: a step tells its model of every tool, and
/// copying and dropping each one's schema for that was 2.5 % of the server's samples at 64
/// concurrent round trips (a profile of 7 December 2026).
#[derive(Clone, Copy, Debug)]
pub struct ToolSpec<'a> {
    pub name: &'a str,
    pub description: &'a str,
    /// JSON schema of the arguments.
    pub parameters: &'a serde_json::Value,
}

/// Everything a model turn sees.
#[derive(Clone, Copy, Debug)]
pub struct ModelRequest<'a> {
    pub instructions: &'a str,
    pub transcript: &'a [Message],
    pub tools: &'a [ToolSpec<'a>],
}

/// One piece of a model turn.
#[derive(Clone, Debug, PartialEq)]
pub enum ModelEvent {
    TextDelta(String),
    ToolCall(ModelToolCall),
    /// The turn starts over (e.g. a provider retry after a response cut mid-stream): everything
    /// streamed so far in this turn is void.
    Restarted {
        reason: String,
    },
    /// The turn ended; usage when the provider reports it.
    Finished(Option<Usage>),
}

/// The stream of one model turn.
pub type ModelStream = Pin<Box<dyn Stream<Item = Result<ModelEvent, ModelError>> + Send>>;

/// A model provider.
#[async_trait]
pub trait Model: Send + Sync {
    /// The provider's name, e.g. `scripted`.
    fn provider(&self) -> &str;
    /// The model's name at its provider (e.g. `gpt-4o-mini`), as configured.
    fn model(&self) -> &str;
    /// Where its requests go (a base URL), which requests in flight are limited by.
    fn endpoint(&self) -> &str;
    /// Starts one model turn over the transcript.
    async fn stream_turn(&self, request: ModelRequest<'_>) -> Result<ModelStream, ModelError>;
}
