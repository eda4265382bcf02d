//! A provider for OpenAI-compatible chat completions APIs (OpenAI, Ollama, vLLM, ...): each turn
//! streams `POST {base_url}/chat/completions` as server-sent events.
//!
//! Connection failures, timeouts, 429 and 5xx are retried; a response that breaks off (or sends a
//! chunk that cannot be read) is retried too, after a `Restarted` event, since its text was
//! already streamed.

mod wire;

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use eventsource_stream::{EventStreamError, Eventsource};
use futures::StreamExt;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};
use reqwest::{StatusCode, Url};
use tracing::warn;

use super::{Model, ModelError, ModelEvent, ModelRequest, ModelStream};
use crate::http::retry::{self, Failure};
use crate::http::{error_response, failure_kind, request_error};
use crate::redact::{redact, redact_url};

/// How long a request may wait for the connection, the response, or the next piece of it.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Retries of a failed request.
pub const DEFAULT_MAX_RETRIES: u32 = 2;

/// The settings of an `openai` agent model, as validated from the agents file.
pub struct OpenAiSettings {
    pub model: String,
    /// e.g. `https://api.openai.com/v1`; requests go to `{base_url}/chat/completions`.
    pub base_url: String,
    /// Sent as `Authorization: Bearer`; local servers need none.
    pub api_key: Option<String>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    /// Extra request headers.
    pub headers: BTreeMap<String, String>,
    /// See [`DEFAULT_REQUEST_TIMEOUT`].
    pub request_timeout: Duration,
    pub max_retries: u32,
    pub parallel_tool_calls: Option<bool>,
}

/// An OpenAI-compatible chat completions model.
pub struct OpenAiModel {
    client: reqwest::Client,
    endpoint: Url,
    settings: OpenAiSettings,
}

impl OpenAiModel {
    pub fn new(settings: OpenAiSettings) -> Result<Self, ModelError> {
        let base_url = redact_url(&settings.base_url);
        let mut endpoint = Url::parse(&settings.base_url)
            .map_err(|e| ModelError::Settings(format!("base_url \"{base_url}\": {e}")))?;
        if !matches!(endpoint.scheme(), "http" | "https") {
            return Err(ModelError::Settings(format!(
                "base_url \"{base_url}\" must be an http or https URL"
            )));
        }
        // Appended as path segments so a query in the base URL (Azure's api-version) stays.
        endpoint
            .path_segments_mut()
            .map_err(|()| {
                ModelError::Settings(format!("base_url \"{base_url}\" cannot have a path"))
            })?
            .pop_if_empty()
            .extend(["chat", "completions"]);
        let mut headers = HeaderMap::new();
        for (name, value) in &settings.headers {
            let header_name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| ModelError::Settings(format!("header name \"{name}\": {e}")))?;
            let mut header_value = HeaderValue::from_str(value)
                .map_err(|e| ModelError::Settings(format!("header \"{name}\" value: {e}")))?;
            // Extra headers often carry keys (Azure's `api-key`): kept out of debug output.
            header_value.set_sensitive(true);
            headers.insert(header_name, header_value);
        }
        if let Some(key) = &settings.api_key {
            // The key itself stays out of the message.
            let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                ModelError::Settings("the API key is not a valid header value".into())
            })?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        let client = reqwest::Client::builder()
            .user_agent(concat!("askuser/", env!("CARGO_PKG_VERSION")))
            .default_headers(headers)
            .connect_timeout(settings.request_timeout)
            .read_timeout(settings.request_timeout)
            .build()
            .map_err(|e| ModelError::Settings(format!("HTTP client: {}", request_error(e))))?;
        Ok(Self {
            client,
            endpoint,
            settings,
        })
    }
}

#[async_trait]
impl Model for OpenAiModel {
    fn provider(&self) -> &str {
        "openai"
    }

    fn name(&self) -> &str {
        &self.settings.model
    }

    fn endpoint(&self) -> &str {
        self.endpoint.as_str()
    }

    async fn stream_turn(&self, request: ModelRequest<'_>) -> Result<ModelStream, ModelError> {
        let body = wire::request_body(&self.settings, request);
        let client = self.client.clone();
        let endpoint = self.endpoint.clone();
        let max_retries = self.settings.max_retries;
        Ok(Box::pin(async_stream::stream! {
            let mut attempts = 0;
            loop {
                attempts += 1;
                let failure = 'attempt: {
                    let response = match send(&client, &endpoint, &body).await {
                        Ok(response) => response,
                        Err(failure) => break 'attempt failure,
                    };
                    let mut events = response.bytes_stream().eventsource();
                    let mut turn = wire::TurnAssembly::default();
                    loop {
                        let data = match events.next().await {
                            Some(Ok(event)) => event.data,
                            Some(Err(error)) => break 'attempt stream_failure(error),
                            // Some servers close without `[DONE]` once the turn is over.
                            None if turn.has_finish_reason() => break,
                            None => break 'attempt AttemptFailure::Broken {
                                how: "the response broke off",
                                cause: "the response ended before [DONE]".into(),
                            },
                        };
                        if data == "[DONE]" {
                            break;
                        }
                        match turn.push(&data) {
                            Ok(text) if text.is_empty() => {}
                            Ok(text) => yield Ok(ModelEvent::TextDelta(text)),
                            Err(cause) => break 'attempt malformed(cause),
                        }
                    }
                    match turn.finish() {
                        Ok(events) => {
                            for event in events {
                                yield Ok(event);
                            }
                        }
                        Err(error) => yield Err(error),
                    }
                    return;
                };
                let delay = failure.retry_delay(attempts);
                let Some(delay) = delay.filter(|_| attempts <= max_retries) else {
                    yield Err(failure.into_error(&endpoint, attempts));
                    return;
                };
                warn!(
                    endpoint = %redact(&endpoint),
                    attempts,
                    ?delay,
                    failure = %failure.describe(),
                    "model request failed; retrying"
                );
                // What the provider sent is in the log line above, not in the event clients see.
                if let AttemptFailure::Broken { how, .. } = failure {
                    yield Ok(ModelEvent::Restarted {
                        reason: format!("{how}; asking the model again"),
                    });
                }
                tokio::time::sleep(delay).await;
            }
        }))
    }
}

/// Why one attempt at a turn failed.
enum AttemptFailure {
    /// No response: the connection failed or timed out; `how` in a few words, `cause` in detail.
    Unreachable { how: &'static str, cause: String },
    /// An error status.
    Status {
        status: StatusCode,
        retry_after: Option<Duration>,
        body: String,
    },
    /// The response started, then broke off, timed out or sent a chunk that cannot be read.
    Broken { how: &'static str, cause: String },
}

impl AttemptFailure {
    /// The wait before trying again, or `None` when another try cannot help.
    fn retry_delay(&self, attempts: u32) -> Option<Duration> {
        let failure = match self {
            AttemptFailure::Status {
                status,
                retry_after,
                ..
            } => Failure::Status {
                status: *status,
                retry_after: *retry_after,
            },
            AttemptFailure::Unreachable { .. } | AttemptFailure::Broken { .. } => {
                Failure::Transport
            }
        };
        retry::delay(failure, attempts)
    }

    fn describe(&self) -> String {
        match self {
            AttemptFailure::Unreachable { cause, .. } | AttemptFailure::Broken { cause, .. } => {
                cause.clone()
            }
            AttemptFailure::Status { status, body, .. } => format!("HTTP {status}: {body}"),
        }
    }

    fn into_error(self, endpoint: &Url, attempts: u32) -> ModelError {
        let endpoint = redact(endpoint);
        match self {
            AttemptFailure::Status { status, body, .. } => ModelError::Status {
                endpoint,
                status,
                attempts,
                body,
            },
            AttemptFailure::Unreachable { how, cause } | AttemptFailure::Broken { how, cause } => {
                ModelError::Unavailable {
                    endpoint,
                    attempts,
                    how,
                    cause,
                }
            }
        }
    }
}

/// Sends the request; a response with an error status is a failure, its body read for the message.
async fn send(
    client: &reqwest::Client,
    endpoint: &Url,
    body: &serde_json::Value,
) -> Result<reqwest::Response, AttemptFailure> {
    let response = client
        .post(endpoint.clone())
        .json(body)
        .send()
        .await
        .map_err(|e| AttemptFailure::Unreachable {
            how: failure_kind(&e),
            cause: request_error(e),
        })?;
    if response.status().is_success() {
        return Ok(response);
    }
    let (status, retry_after, body) = error_response(response).await;
    Err(AttemptFailure::Status {
        status,
        retry_after,
        body,
    })
}

/// A response that broke off, timed out or could not be read as events.
fn stream_failure(error: EventStreamError<reqwest::Error>) -> AttemptFailure {
    let (how, cause) = match error {
        EventStreamError::Transport(error) if error.is_timeout() => {
            ("timed out", request_error(error))
        }
        EventStreamError::Transport(error) => ("the response broke off", request_error(error)),
        other => ("the response could not be read", other.to_string()),
    };
    AttemptFailure::Broken {
        how,
        cause: format!("the response broke off: {cause}"),
    }
}

/// A response whose events could not be assembled into a turn.
fn malformed(cause: String) -> AttemptFailure {
    AttemptFailure::Broken {
        how: "the response could not be read",
        cause,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(base_url: &str) -> Result<String, ModelError> {
        OpenAiModel::new(OpenAiSettings {
            model: "m".into(),
            base_url: base_url.into(),
            api_key: None,
            temperature: None,
            max_tokens: None,
            headers: BTreeMap::new(),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            max_retries: DEFAULT_MAX_RETRIES,
            parallel_tool_calls: None,
        })
        .map(|model| model.endpoint.to_string())
    }

    #[test]
    fn endpoint_is_under_the_base_url() {
        let cases = [
            (
                "https://api.openai.com/v1",
                "https://api.openai.com/v1/chat/completions",
            ),
            (
                "http://127.0.0.1:11434/v1/",
                "http://127.0.0.1:11434/v1/chat/completions",
            ),
            (
                "https://x.openai.azure.com/openai/deployments/d?api-version=2024-10-21",
                "https://x.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21",
            ),
        ];
        for (base_url, expected) in cases {
            assert_eq!(endpoint(base_url).expect("valid"), expected);
        }
        assert!(endpoint("ftp://example.com/v1").is_err());
    }
}
