//! Which webhooks a run gets: the agents file's subscriptions for its agent, and those its start
//! asks for, which must match an allowed URL pattern so that a client cannot make the server call
//! arbitrary addresses.

use super::{RuntimeError, Violation};
use crate::domain::{WebhookEvent, WebhookPlan, WebhookTarget};

/// A subscription a start asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunWebhook {
    pub url: String,
    /// The events it wants; empty: every one.
    pub events: Vec<WebhookEvent>,
}

/// The server's webhook settings.
#[derive(Clone, Debug, Default)]
pub struct WebhookSettings {
    /// URL patterns a start's subscriptions must match: a prefix, or a glob when it has a `*`
    /// (which matches any run of characters). None: starts may not subscribe.
    pub allow: Vec<String>,
    /// The environment variable holding the secret that signs starts' subscriptions.
    pub secret_env: Option<String>,
    /// Fractions of a call's time to live at which a call still waiting is reminded of.
    pub reminders: Vec<f64>,
}

impl WebhookSettings {
    /// The plan of a run of an agent with the subscriptions `agent`, started with `requested`:
    /// `None` when it has none. A requested URL no pattern allows is INVALID_ARGUMENT on
    /// `webhooks[i].url`.
    pub(super) fn plan(
        &self,
        agent: &[WebhookTarget],
        requested: Vec<RunWebhook>,
    ) -> Result<Option<WebhookPlan>, RuntimeError> {
        let mut violations = Vec::new();
        let mut targets = agent.to_vec();
        for (index, webhook) in requested.into_iter().enumerate() {
            match &self.secret_env {
                Some(secret_env) if self.allows(&webhook.url) => targets.push(WebhookTarget {
                    url: webhook.url,
                    events: webhook.events,
                    secret_env: secret_env.clone(),
                }),
                _ => violations.push(Violation {
                    field: format!("webhooks[{index}].url"),
                    description: if self.allow.is_empty() {
                        "this server takes no per-run webhooks (see --webhook-allow)".into()
                    } else {
                        "the URL matches no --webhook-allow pattern".into()
                    },
                }),
            }
        }
        if !violations.is_empty() {
            return Err(RuntimeError::InvalidArgument(violations));
        }
        Ok((!targets.is_empty()).then(|| WebhookPlan {
            targets,
            reminders: self.reminders.clone(),
        }))
    }

    fn allows(&self, url: &str) -> bool {
        self.allow
            .iter()
            .any(|pattern| match pattern.contains('*') {
                true => glob_matches(pattern, url),
                false => url.starts_with(pattern.as_str()),
            })
    }
}

/// Whether `text` matches `pattern`, whose `*`s match any run of characters (none included).
fn glob_matches(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(allow: &[&str]) -> WebhookSettings {
        WebhookSettings {
            allow: allow.iter().map(|p| p.to_string()).collect(),
            secret_env: Some("S".into()),
            reminders: Vec::new(),
        }
    }

    #[test]
    fn prefixes_and_globs_allow_urls() {
        let allowed = settings(&[
            "https://hooks.example.com/",
            "https://*.corp.example/*/askuser",
        ]);
        assert!(allowed.allows("https://hooks.example.com/a"));
        assert!(!allowed.allows("https://hooks.example.com.evil.org/"));
        assert!(allowed.allows("https://ci.corp.example/team/askuser"));
        assert!(!allowed.allows("https://ci.corp.example/team/askuser/more"));
        assert!(!allowed.allows("http://ci.corp.example/team/askuser"));
        assert!(!settings(&[]).allows("https://hooks.example.com/"));
    }

    #[test]
    fn a_disallowed_url_is_a_field_violation() {
        let requested = vec![
            RunWebhook {
                url: "https://hooks.example.com/ok".into(),
                events: Vec::new(),
            },
            RunWebhook {
                url: "http://169.254.169.254/".into(),
                events: Vec::new(),
            },
        ];
        match settings(&["https://hooks.example.com/"]).plan(&[], requested) {
            Err(RuntimeError::InvalidArgument(violations)) => {
                assert_eq!(violations.len(), 1);
                assert_eq!(violations[0].field, "webhooks[1].url");
            }
            other => panic!("expected a violation, got {other:?}"),
        }
    }
}
