//! Endpoints in messages: an URL's userinfo (`user:password@`) and query string may hold
//! credentials (a database password, an `api-key` or `token` parameter), so every message, log line
//! and stored error shows an URL only through [`redact_url`].

use reqwest::Url;

/// What stands in for a removed secret.
const HIDDEN: &str = "***";

/// An URL without its userinfo and with its query string hidden.
pub fn redact_url(url: &str) -> String {
    match Url::parse(url) {
        Ok(parsed) => redact(&parsed),
        Err(_) => "<an unparsable URL, not shown>".into(),
    }
}

/// [`redact_url`] of a parsed URL.
pub fn redact(url: &Url) -> String {
    let mut url = url.clone();
    if !url.username().is_empty() || url.password().is_some() {
        // Fails only for URLs that cannot have userinfo, which then have none.
        let _ = url.set_password(None);
        let _ = url.set_username(HIDDEN);
    }
    if url.query().is_some() {
        url.set_query(Some(HIDDEN));
    }
    url.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn userinfo_and_query_are_hidden() {
        let shown = redact_url("http://user:secret@127.0.0.1:8080/x?token=abc");
        assert_eq!(shown, "http://***@127.0.0.1:8080/x?***");
        let shown =
            redact_url("postgres://askuser:s3cret@db.internal:5432/askuser?sslpassword=k3y");
        assert_eq!(shown, "postgres://***@db.internal:5432/askuser?***");
        assert_eq!(
            redact_url("https://api.openai.com/v1"),
            "https://api.openai.com/v1"
        );
        assert!(!redact_url("host=db password=s3cret").contains("s3cret"));
    }
}
