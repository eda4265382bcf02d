//! Model providers behind one streaming [`Model`] trait: a model turn is a stream of text deltas and
//! tool calls. `scripted` runs the whole protocol with no LLM.

mod scripted;

use std::pin::Pin;

use async_trait::async_trait;
use futures::Stream;

use crate::domain::{Message, ModelToolCall, Usage};

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
}

/// A tool a model may call.
#[derive(Clone, Debug)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON schema of the arguments.
    pub parameters: serde_json::Value,
}

/// Everything a model turn sees.
#[derive(Clone, Copy, Debug)]
pub struct ModelRequest<'a> {
    pub instructions: &'a str,
    pub transcript: &'a [Message],
    pub tools: &'a [ToolSpec],
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
    /// Starts one model turn over the transcript.
    async fn stream_turn(&self, request: ModelRequest<'_>) -> Result<ModelStream, ModelError>;
}
