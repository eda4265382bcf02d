//! Which webhooks a run gets: the agents file's subscriptions for its agent, and those its start
//! asks for, which must match an allowed URL pattern so that a client cannot make the server call
//! arbitrary addresses.

use super::webhook_allow::{AllowPattern, parse_webhook_url};
use super::{RuntimeError, Violation};
use crate::domain::{DEFAULT_TENANT, WebhookEvent, WebhookPlan, WebhookTarget};

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
    /// URL patterns a start's subscriptions must match (see [`AllowPattern`]). None: starts may
    /// not subscribe.
    pub allow: Vec<AllowPattern>,
    /// The environment variable holding the secret that signs starts' subscriptions.
    pub secret_env: Option<String>,
    /// Fractions of a call's time to live at which a call still waiting is reminded of.
    pub reminders: Vec<f64>,
    /// The longest URL a start may subscribe, in bytes (`--max-webhook-url-bytes`).
    pub max_url_bytes: usize,
}

impl WebhookSettings {
    /// The plan of a run of an agent with the subscriptions `agent`, started with `requested`:
    /// `None` when it has none. A requested URL too long, unparsable or that no pattern allows is
    /// INVALID_ARGUMENT on `webhooks[i].url`. The plan keeps the normalised URL, the one matched.
    ///
    /// A start's own subscriptions are signed with the secrets of its `tenant` when it has its
    /// own (`tenant_has_secret`); else, for the default tenant only, with `--webhook-secret-env`;
    /// else they are refused (FAILED_PRECONDITION): one tenant's secret never signs another's.
    pub(super) fn plan(
        &self,
        agent: &[WebhookTarget],
        requested: Vec<RunWebhook>,
        tenant: &str,
        tenant_has_secret: bool,
    ) -> Result<Option<WebhookPlan>, RuntimeError> {
        let mut violations = Vec::new();
        let mut targets = agent.to_vec();
        // `Some(None)`: the tenant's own secrets; `None`: nothing may sign.
        let signing = match (tenant_has_secret, &self.secret_env) {
            (true, _) => Some(None),
            (false, Some(secret_env)) if tenant == DEFAULT_TENANT => Some(Some(secret_env.clone())),
            (false, _) => None,
        };
        for (index, webhook) in requested.into_iter().enumerate() {
            match self.allowed(&webhook.url) {
                Ok(url) => {
                    let Some(secret_env) = signing.clone() else {
                        return Err(RuntimeError::WebhookSecretRequired(tenant.to_owned()));
                    };
                    targets.push(WebhookTarget {
                        url: url.into(),
                        events: webhook.events,
                        secret_env,
                        operator: false,
                    })
                }
                Err(description) => violations.push(Violation {
                    field: format!("webhooks[{index}].url"),
                    description,
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

    /// The normalised URL of a start's subscription to `url`, or why it is refused.
    fn allowed(&self, url: &str) -> Result<url::Url, String> {
        if self.allow.is_empty() {
            return Err("this server takes no per-run webhooks (see --webhook-allow)".into());
        }
        if url.len() > self.max_url_bytes {
            return Err(format!(
                "the URL is longer than {} bytes (--max-webhook-url-bytes)",
                self.max_url_bytes
            ));
        }
        let parsed = parse_webhook_url(url).map_err(str::to_owned)?;
        match self.allow.iter().any(|pattern| pattern.allows(&parsed)) {
            true => Ok(parsed),
            false => Err("the URL matches no --webhook-allow pattern".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(allow: &[&str]) -> WebhookSettings {
        WebhookSettings {
            allow: allow.iter().map(|p| p.parse().expect("pattern")).collect(),
            secret_env: Some("S".into()),
            reminders: Vec::new(),
            max_url_bytes: 64,
        }
    }

    fn requested(urls: &[&str]) -> Vec<RunWebhook> {
        urls.iter()
            .map(|url| RunWebhook {
                url: (*url).into(),
                events: Vec::new(),
            })
            .collect()
    }

    #[test]
    fn refused_urls_are_field_violations() {
        let long = format!("https://hooks.example.com/{}", "a".repeat(64));
        let urls = [
            "https://hooks.example.com/ok",
            "http://169.254.169.254/",
            long.as_str(),
        ];
        match settings(&["https://hooks.example.com/"]).plan(
            &[],
            requested(&urls),
            DEFAULT_TENANT,
            false,
        ) {
            Err(RuntimeError::InvalidArgument(violations)) => {
                let fields: Vec<&str> = violations.iter().map(|v| v.field.as_str()).collect();
                assert_eq!(fields, ["webhooks[1].url", "webhooks[2].url"]);
                assert!(
                    violations[1]
                        .description
                        .contains("--max-webhook-url-bytes")
                );
            }
            other => panic!("expected violations, got {other:?}"),
        }
        assert!(
            settings(&[])
                .plan(&[], requested(&urls[..1]), DEFAULT_TENANT, false)
                .is_err()
        );
    }

    #[test]
    fn the_plan_keeps_the_normalised_url() {
        let plan = settings(&["https://hooks.example.com/"])
            .plan(
                &[],
                requested(&["https://HOOKS.example.com:443/a/./b/../c"]),
                DEFAULT_TENANT,
                false,
            )
            .expect("allowed")
            .expect("a plan");
        assert_eq!(plan.targets[0].url, "https://hooks.example.com/a/c");
        assert!(!plan.targets[0].operator);
        assert_eq!(plan.targets[0].secret_env.as_deref(), Some("S"));
    }

    #[test]
    fn only_the_default_tenant_falls_back_on_the_server_secret() {
        let allowed = settings(&["https://hooks.example.com/"]);
        let ask = || requested(&["https://hooks.example.com/a"]);
        assert!(matches!(
            allowed.plan(&[], ask(), "acme", false),
            Err(RuntimeError::WebhookSecretRequired(tenant)) if tenant == "acme"
        ));
        let own = allowed.plan(&[], ask(), "acme", true).expect("allowed");
        assert_eq!(own.expect("a plan").targets[0].secret_env, None);
        assert!(allowed.plan(&[], Vec::new(), "acme", false).is_ok());
    }
}
