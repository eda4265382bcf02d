//! Outbound HTTP shared by the OpenAI provider and HTTP tools: one retry policy, one way to
//! describe a failed request and to quote a response body in a message.

pub mod retry;

use std::time::{Duration, SystemTime};

use reqwest::StatusCode;

/// How many characters of a response body a message quotes.
const EXCERPT_CHARS: usize = 300;

/// A request error with its causes, e.g. `error sending request: client error (Connect): tcp
/// connect error: Connection refused`, which reqwest's own message leaves out; without the URL,
/// which errors name once, up front.
pub fn request_error(error: reqwest::Error) -> String {
    let error = error.without_url();
    let mut text = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// How a request failed, in a few words a client may see (a timeout, a connection that could not
/// be made, a response cut short); [`request_error`] has the details.
pub fn failure_kind(error: &reqwest::Error) -> &'static str {
    if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "could not connect"
    } else if error.is_body() || error.is_decode() {
        "the response broke off"
    } else {
        "the request could not be sent"
    }
}

/// The start of a text, for error messages.
pub fn excerpt(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(EXCERPT_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// What a response with an error status says: the status, the wait it asks for before a retry,
/// and an excerpt of its body.
pub async fn error_response(response: reqwest::Response) -> (StatusCode, Option<Duration>, String) {
    let status = response.status();
    let retry_after = retry::retry_after(response.headers(), SystemTime::now());
    let body = match response.text().await {
        Ok(text) => excerpt(&text),
        Err(e) => format!("(the body could not be read: {})", request_error(e)),
    };
    (status, retry_after, body)
}
