//! `--webhook-allow` patterns, matched on the parsed and normalised URL (the `url` crate, as the
//! deliverer's HTTP client parses it), never on its text: a pattern binds the scheme, the host (a
//! leading `*.` stands for one whole label), the port, and a path prefix on segment boundaries
//! after `.`/`..` (also percent-encoded) are resolved. URLs with userinfo are refused.

use std::fmt;
use std::str::FromStr;

use url::{Host, Url};

/// One pattern, e.g. `https://*.hooks.example.com/askuser/`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllowPattern {
    scheme: String,
    /// Whether the host is `*.<host>`: any one label, then `host`.
    wildcard: bool,
    host: Host<String>,
    /// The port, explicit or the scheme's default.
    port: Option<u16>,
    /// The path's segments a URL's must start with; `*` matches any one segment.
    segments: Vec<String>,
    text: String,
}

impl fmt::Display for AllowPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A path's segments, without the empty last one a trailing `/` makes.
fn segments(url: &Url) -> Vec<String> {
    let mut segments: Vec<String> = url
        .path_segments()
        .map(|segments| segments.map(str::to_owned).collect())
        .unwrap_or_default();
    if segments.last().is_some_and(String::is_empty) {
        segments.pop();
    }
    segments
}

impl FromStr for AllowPattern {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (scheme, rest) = text
            .split_once("://")
            .ok_or("a pattern is an http or https URL, e.g. https://hooks.example.com/askuser/")?;
        let (wildcard, rest) = match rest.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, rest),
        };
        let url = Url::parse(&format!("{scheme}://{rest}")).map_err(|e| e.to_string())?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err("the scheme must be http or https".into());
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err("a pattern has no user or password".into());
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err("a pattern has no query or fragment".into());
        }
        let host = url.host().ok_or("a pattern needs a host")?.to_owned();
        if wildcard && !matches!(host, Host::Domain(_)) {
            return Err("`*.` goes before a domain name only".into());
        }
        let mut segments = segments(&url);
        // `/*` at the end says "anything below", as a trailing `/` does.
        if segments.last().is_some_and(|last| last == "*") {
            segments.pop();
        }
        if segments
            .iter()
            .any(|segment| segment.contains('*') && segment != "*")
        {
            return Err("`*` stands for a whole path segment only".into());
        }
        if host.to_string().contains('*') {
            return Err("`*` stands for the whole leftmost label of the host only".into());
        }
        Ok(AllowPattern {
            scheme: url.scheme().to_owned(),
            wildcard,
            host,
            port: url.port_or_known_default(),
            segments,
            text: text.to_owned(),
        })
    }
}

impl AllowPattern {
    /// Whether the parsed `url` is one this pattern allows.
    pub fn allows(&self, url: &Url) -> bool {
        if url.scheme() != self.scheme || url.port_or_known_default() != self.port {
            return false;
        }
        let host_matches = match (url.host(), &self.host) {
            (Some(Host::Domain(domain)), Host::Domain(suffix)) if self.wildcard => domain
                .strip_suffix(suffix.as_str())
                .and_then(|label| label.strip_suffix('.'))
                .is_some_and(|label| !label.is_empty() && !label.contains('.')),
            (Some(host), pattern) => host.to_owned() == *pattern,
            (None, _) => false,
        };
        if !host_matches {
            return false;
        }
        let path = segments(url);
        path.len() >= self.segments.len()
            && self
                .segments
                .iter()
                .zip(&path)
                .all(|(pattern, segment)| pattern == "*" || pattern == segment)
    }
}

/// A start's webhook URL, parsed and normalised, or why it cannot be one: not http(s), or with a
/// user or password.
pub fn parse_webhook_url(text: &str) -> Result<Url, &'static str> {
    let url = Url::parse(text).map_err(|_| "not a URL")?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err("the URL must be http or https, with a host");
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("the URL must not have a user or password");
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allows(pattern: &str, url: &str) -> bool {
        let pattern: AllowPattern = pattern.parse().expect("pattern");
        parse_webhook_url(url).is_ok_and(|url| pattern.allows(&url))
    }

    #[test]
    fn a_wildcard_is_one_whole_leftmost_label() {
        let pattern = "http://*.hooks.example.com/*";
        assert!(allows(pattern, "http://a.hooks.example.com/x"));
        assert!(allows(pattern, "http://A.Hooks.Example.com/"));
        assert!(!allows(pattern, "http://hooks.example.com/x"));
        assert!(!allows(pattern, "http://a.b.hooks.example.com/x"));
        assert!(!allows(pattern, "http://ahooks.example.com/x"));
        assert!(!allows(pattern, "http://a.hooks.example.com.evil.org/x"));
        assert!(!allows(
            pattern,
            "http://127.0.0.1:18081/.hooks.example.com/x"
        ));
        assert!(!allows(pattern, "http://127.0.0.1/?.hooks.example.com/x"));
        assert!(!allows(pattern, "http://127.0.0.1/#.hooks.example.com/x"));
        assert!(!allows(pattern, "http://a.hooks.example.com@127.0.0.1/x"));
        assert!(!allows(pattern, "https://a.hooks.example.com/x"));
        assert!(!allows(pattern, "http://a.hooks.example.com:8080/x"));
    }

    #[test]
    fn a_path_is_a_prefix_on_segment_boundaries_after_normalisation() {
        let pattern = "https://hooks.example.com/hook/";
        assert!(allows(pattern, "https://hooks.example.com/hook/a"));
        assert!(allows(pattern, "https://hooks.example.com:443/hook"));
        assert!(allows(pattern, "https://hooks.example.com/hook/a/../b?x=1"));
        assert!(!allows(pattern, "https://hooks.example.com/hookx"));
        assert!(!allows(
            pattern,
            "https://hooks.example.com/hook/../redirect"
        ));
        assert!(!allows(pattern, "https://hooks.example.com/hook/%2e%2e/x"));
        assert!(!allows(pattern, "https://hooks.example.com/hook/.%2E/x"));
        assert!(!allows(pattern, "https://hooks.example.com/hook\\..\\x"));
        assert!(!allows(pattern, "https://user:pw@hooks.example.com/hook/"));
        assert!(allows(
            "https://*.corp.example/*/askuser",
            "https://ci.corp.example/team/askuser/more"
        ));
        assert!(!allows(
            "https://*.corp.example/*/askuser",
            "https://ci.corp.example/team/other"
        ));
    }

    #[test]
    fn ports_and_addresses_are_bound() {
        assert!(allows("http://127.0.0.1:8080/", "http://127.0.0.1:8080/h"));
        assert!(!allows("http://127.0.0.1:8080/", "http://127.0.0.1:8081/h"));
        assert!(!allows("http://127.0.0.1:8080/", "http://127.0.0.2:8080/h"));
        assert!(allows("http://[::1]:8080/", "http://[0::1]:8080/h"));
    }

    #[test]
    fn bad_patterns_are_refused() {
        for bad in [
            "hooks.example.com",
            "ftp://hooks.example.com/",
            "https://a*.example.com/",
            "https://*.127.0.0.1/",
            "https://hooks.example.com/a*b",
            "https://u@hooks.example.com/",
            "https://hooks.example.com/?q",
            "https://hooks.*.com/",
        ] {
            assert!(bad.parse::<AllowPattern>().is_err(), "{bad}");
        }
    }
}
