//! When to try a request again: capped exponential backoff with jitter, or what the server's
//! `Retry-After` asks for. Model providers and HTTP tools use the same policy.

use std::time::{Duration, SystemTime};

use reqwest::StatusCode;
use reqwest::header::HeaderMap;

/// The wait before the first retry, doubled for each further one.
const INITIAL_BACKOFF: Duration = Duration::from_millis(500);
/// The longest backoff.
const MAX_BACKOFF: Duration = Duration::from_secs(8);
/// A server asking for a longer wait than this is not waited for: the step fails now rather than
/// hold the run for minutes.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// The wait before retry number `retry` (1-based): half of it fixed, half random, so clients that
/// failed together do not all come back together.
pub fn backoff(retry: u32) -> Duration {
    let full = INITIAL_BACKOFF
        .saturating_mul(1 << retry.saturating_sub(1).min(16))
        .min(MAX_BACKOFF);
    let half = full / 2;
    half + half.mul_f64(rand::random::<f64>())
}

/// The wait a response asks for: OpenAI's `retry-after-ms`, or `Retry-After` in seconds or as an
/// HTTP date.
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(millis) = header("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(millis / 1000.0).ok();
    }
    let value = header("retry-after")?.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Why an attempt failed, as far as retrying is concerned.
#[derive(Clone, Copy, Debug)]
pub enum Failure {
    /// No usable response: the connection failed, timed out or broke off.
    Transport,
    /// An error status, with the wait the response asked for.
    Status {
        status: StatusCode,
        retry_after: Option<Duration>,
    },
}

/// The wait before attempt `attempts + 1`, or `None` when another try cannot help: transport
/// failures, 429 and 5xx are retried (honouring `Retry-After` up to [`MAX_RETRY_AFTER`]); other
/// statuses are not.
pub fn delay(failure: Failure, attempts: u32) -> Option<Duration> {
    match failure {
        Failure::Status {
            status,
            retry_after,
        } if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() => {
            match retry_after {
                Some(wait) if wait > MAX_RETRY_AFTER => None,
                Some(wait) => Some(wait),
                None => Some(backoff(attempts)),
            }
        }
        Failure::Status { .. } => None,
        Failure::Transport => Some(backoff(attempts)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(name: &'static str, value: &'static str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(name, HeaderValue::from_static(value));
        headers
    }

    #[test]
    fn retry_after_reads_seconds_dates_and_milliseconds() {
        let now = httpdate::parse_http_date("Wed, 21 Oct 2015 07:28:00 GMT").expect("date");
        let cases = [
            ("retry-after", "3", Some(Duration::from_secs(3))),
            (
                "retry-after",
                "Wed, 21 Oct 2015 07:28:30 GMT",
                Some(Duration::from_secs(30)),
            ),
            (
                "retry-after",
                "Wed, 21 Oct 2015 07:27:00 GMT",
                Some(Duration::ZERO),
            ),
            ("retry-after", "soon", None),
            ("retry-after-ms", "1500", Some(Duration::from_millis(1500))),
        ];
        for (name, value, expected) in cases {
            assert_eq!(retry_after(&headers(name, value), now), expected, "{value}");
        }
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_with_jitter() {
        for retry in 1..=3 {
            let full = INITIAL_BACKOFF * (1 << (retry - 1));
            let wait = backoff(retry);
            assert!(wait >= full / 2 && wait <= full, "{retry}: {wait:?}");
        }
        let wait = backoff(40);
        assert!(wait >= MAX_BACKOFF / 2 && wait <= MAX_BACKOFF, "{wait:?}");
    }

    #[test]
    fn retries_transport_failures_429_and_5xx_only() {
        let status = |code: u16, retry_after| Failure::Status {
            status: StatusCode::from_u16(code).expect("status"),
            retry_after,
        };
        assert!(delay(Failure::Transport, 1).is_some());
        assert!(delay(status(500, None), 1).is_some());
        assert_eq!(
            delay(status(429, Some(Duration::from_secs(2))), 1),
            Some(Duration::from_secs(2))
        );
        assert_eq!(delay(status(429, Some(Duration::from_secs(3600))), 1), None);
        assert_eq!(delay(status(400, None), 1), None);
        assert_eq!(delay(status(404, None), 1), None);
    }
}
