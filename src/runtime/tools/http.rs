//! HTTP tools: the server sends the call's JSON arguments to a URL from the agents file and the
//! response becomes the call's result. At least once: a request cut short by a crash is sent again
//! with the same `Idempotency-Key`, which the receiver can dedupe on.

use std::time::{Duration, Instant};

use futures::StreamExt;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, Url};
use tracing::warn;

use crate::http::retry::{self, Failure};
use crate::http::{error_response, request_error};
use crate::redact::redact;

/// The header naming a call for the receiver's deduplication: `<run_id>/<tool_call_id>`.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// How an HTTP tool is reached, as the agents file says.
#[derive(Clone, Debug)]
pub struct HttpToolSettings {
    pub url: String,
    pub method: String,
    /// Header names with their values (read from the environment by the caller).
    pub headers: Vec<(String, String)>,
    pub timeout: Duration,
    pub max_retries: u32,
}

/// A configured HTTP tool.
#[derive(Clone)]
pub struct HttpTool {
    url: Url,
    method: Method,
    headers: HeaderMap,
    max_retries: u32,
    client: reqwest::Client,
}

impl std::fmt::Debug for HttpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may hold credentials; header values are sensitive, and print as such.
        f.debug_struct("HttpTool")
            .field("url", &redact(&self.url))
            .field("method", &self.method)
            .field("headers", &self.headers)
            .field("max_retries", &self.max_retries)
            .finish_non_exhaustive()
    }
}

/// What running an HTTP tool gave: the result the model gets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpOutcome {
    pub content: String,
    pub is_error: bool,
}

impl HttpTool {
    pub fn new(settings: HttpToolSettings) -> Result<Self, String> {
        let url = Url::parse(&settings.url).map_err(|e| format!("url: {e}"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!(
                "url: the scheme must be http or https, not {}",
                url.scheme()
            ));
        }
        let method = match settings.method.to_ascii_uppercase().as_str() {
            "" | "POST" => Method::POST,
            "PUT" => Method::PUT,
            "PATCH" => Method::PATCH,
            "DELETE" => Method::DELETE,
            other => {
                return Err(format!(
                    "method \"{other}\": an HTTP tool sends its arguments as a body, so POST, PUT, PATCH or DELETE"
                ));
            }
        };
        let mut headers = HeaderMap::new();
        for (name, value) in settings.headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("header name \"{name}\" is not valid"))?;
            let mut value = HeaderValue::from_str(&value)
                .map_err(|_| format!("the value of header {name} is not a valid header value"))?;
            // Kept out of debug output and logs.
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        if settings.timeout.is_zero() {
            return Err("timeout must be more than 0".into());
        }
        let client = reqwest::Client::builder()
            .timeout(settings.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("HTTP client: {}", request_error(e)))?;
        Ok(Self {
            url,
            method,
            headers,
            max_retries: settings.max_retries,
            client,
        })
    }

    /// Sends the call, retrying connection failures, 429 and 5xx with backoff. A 2xx body (cut at
    /// `max_body_bytes`, with a note) is the content; a failure is an error result naming the status
    /// and an excerpt of the body. Neither names the URL or a header: those may hold credentials.
    pub async fn execute(
        &self,
        tool_name: &str,
        idempotency_key: &str,
        arguments_json: &str,
        max_body_bytes: usize,
    ) -> HttpOutcome {
        let started = Instant::now();
        let outcome = self
            .send_retrying(tool_name, idempotency_key, arguments_json, max_body_bytes)
            .await;
        crate::metrics::http_tool_call(tool_name, started.elapsed(), outcome.is_error);
        outcome
    }

    async fn send_retrying(
        &self,
        tool_name: &str,
        idempotency_key: &str,
        arguments_json: &str,
        max_body_bytes: usize,
    ) -> HttpOutcome {
        let mut attempts = 0;
        loop {
            attempts += 1;
            let failure = match self.attempt(idempotency_key, arguments_json).await {
                Ok(response) => return read_success(response, max_body_bytes).await,
                Err(failure) => failure,
            };
            let delay =
                retry::delay(failure.retry, attempts).filter(|_| attempts <= self.max_retries);
            let Some(delay) = delay else {
                return HttpOutcome {
                    content: format!(
                        "{tool_name} failed after {attempts} attempt(s): {}",
                        failure.message
                    ),
                    is_error: true,
                };
            };
            warn!(tool = tool_name, attempts, ?delay, failure = %failure.message, "HTTP tool request failed; retrying");
            tokio::time::sleep(delay).await;
        }
    }

    async fn attempt(
        &self,
        idempotency_key: &str,
        arguments_json: &str,
    ) -> Result<reqwest::Response, AttemptFailure> {
        let response = self
            .client
            .request(self.method.clone(), self.url.clone())
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(IDEMPOTENCY_KEY, idempotency_key)
            .body(arguments_json.to_owned())
            .send()
            .await
            .map_err(|e| AttemptFailure {
                retry: Failure::Transport,
                message: request_error(e),
            })?;
        if response.status().is_success() {
            return Ok(response);
        }
        let (status, retry_after, body) = error_response(response).await;
        Err(AttemptFailure {
            retry: Failure::Status {
                status,
                retry_after,
            },
            message: format!("HTTP {status}: {body}"),
        })
    }
}

struct AttemptFailure {
    retry: Failure,
    message: String,
}

/// Reads a 2xx body up to the cap.
async fn read_success(response: reqwest::Response, max_body_bytes: usize) -> HttpOutcome {
    let mut body = Vec::new();
    let mut cut = false;
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        match chunk {
            Ok(chunk) => {
                let room = max_body_bytes.saturating_sub(body.len());
                if chunk.len() > room {
                    body.extend_from_slice(&chunk[..room]);
                    cut = true;
                    break;
                }
                body.extend_from_slice(&chunk);
            }
            Err(error) => {
                return HttpOutcome {
                    content: format!("the response broke off: {}", request_error(error)),
                    is_error: true,
                };
            }
        }
    }
    let mut content = String::from_utf8_lossy(&body).into_owned();
    if cut {
        // A cut may split a character; from_utf8_lossy marks it rather than fail.
        content.push_str(&format!(
            "\n[the response was cut at {max_body_bytes} bytes]"
        ));
    }
    HttpOutcome {
        content,
        is_error: false,
    }
}
