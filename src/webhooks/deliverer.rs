//! The delivery loop: claims due deliveries with a lease (so one replica at a time attempts each),
//! sends each, and records the outcome. At least once: a delivery is marked delivered only after a
//! 2xx answer, so a crash between the two sends it again, with the same `webhook-id`.

use std::sync::Arc;
use std::time::Duration;

use rand::Rng;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};
use url::{Host, Url};

use super::body::body;
use super::destination::{PublicOnly, REFUSED, is_private, was_refused};
use super::shares::{Limits, Share, Shares};
use super::signing::{secret_from_env, sign_all};
use super::tenant_secrets::TenantSecrets;
use crate::domain::WebhookEvent;
use crate::http::request_error;
use crate::store::{AttemptOutcome, DeliveryClaim, DueDelivery, FinishedAttempt, RunStore};

/// How often the outbox is looked at while nothing is due.
const POLL_INTERVAL: Duration = Duration::from_millis(250);
/// How long a delivery whose tenant or destination has its share waits before it is claimed
/// again.
const DEFER: Duration = Duration::from_secs(1);
/// The longest wait between two attempts of one delivery.
const MAX_BACKOFF: Duration = Duration::from_secs(3600);

/// Settings of the deliverer.
#[derive(Clone, Debug)]
pub struct DelivererSettings {
    /// The server's public address: suspended and reminder bodies link to `<it>/runs/<run>#<call>`.
    pub public_url: Option<String>,
    /// Signs the `answer_url` of waiting calls' deliveries (with `public_url`); `None`: no links.
    pub answer_links: Option<Arc<crate::auth::AnswerLinks>>,
    /// How long a delivery is retried before it is given up (dead).
    pub max_age: Duration,
    /// The wait before the first retry; each next one doubles, with jitter.
    pub initial_backoff: Duration,
    /// How long a receiver may take to answer.
    pub timeout: Duration,
    /// Whether runs' own subscriptions may not reach private addresses (`--webhook-deny-private`).
    pub deny_private: bool,
    /// Attempts at once: in all, for one tenant's runs, to one destination.
    pub max_in_flight: usize,
    pub max_in_flight_per_tenant: usize,
    pub max_in_flight_per_host: usize,
}

struct Deliverer {
    store: Arc<dyn RunStore>,
    /// For the operator's subscriptions (and every one with `--webhook-deny-private=false`).
    client: reqwest::Client,
    /// For runs' own: connects only to the public addresses it resolved itself, with no proxy.
    public_only: reqwest::Client,
    settings: DelivererSettings,
    secrets: Arc<TenantSecrets>,
    shares: Arc<Shares>,
    /// This replica's name in delivery leases.
    owner: String,
}

/// Starts delivering until `shutdown`; attempts still in flight then are abandoned, and their
/// leases lapse for another replica (or the next start) to send them again.
pub fn start(
    store: Arc<dyn RunStore>,
    secrets: Arc<TenantSecrets>,
    settings: DelivererSettings,
    shutdown: CancellationToken,
) -> Result<JoinHandle<()>, reqwest::Error> {
    let builder = || {
        reqwest::Client::builder()
            .timeout(settings.timeout)
            // A receiver that moved is told to update its URL, not followed (Standard Webhooks).
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("askuser/", env!("CARGO_PKG_VERSION")))
    };
    let client = builder().build()?;
    // A proxy would resolve the name itself, past the check.
    let public_only = builder()
        .no_proxy()
        .dns_resolver(Arc::new(PublicOnly))
        .build()?;
    let shares = Shares::new(Limits {
        total: settings.max_in_flight,
        per_tenant: settings.max_in_flight_per_tenant,
        per_host: settings.max_in_flight_per_host,
    });
    let deliverer = Arc::new(Deliverer {
        store,
        client,
        public_only,
        settings,
        secrets,
        shares,
        owner: uuid::Uuid::now_v7().simple().to_string(),
    });
    Ok(tokio::spawn(deliverer.run(shutdown)))
}

/// The destination a delivery's share is counted against: its URL's host and port.
fn destination(due: &DueDelivery) -> String {
    due.delivery
        .target
        .as_ref()
        .and_then(|target| Url::parse(&target.url).ok())
        .map(|url| {
            let host = url.host_str().unwrap_or_default().to_owned();
            format!("{host}:{}", url.port_or_known_default().unwrap_or(0))
        })
        .unwrap_or_default()
}

impl Deliverer {
    /// A lease outlasts an attempt: its request's timeout, and room for signing and recording.
    fn lease_ms(&self) -> i64 {
        let lease = self.settings.timeout * 2 + Duration::from_secs(10);
        i64::try_from(lease.as_millis()).unwrap_or(i64::MAX)
    }

    async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        loop {
            let free = self.shares.free();
            let mut more = false;
            if free > 0 {
                let now = self.store.now_ms();
                let full = self.shares.full_tenants();
                match self
                    .store
                    .claim_deliveries(DeliveryClaim {
                        owner: &self.owner,
                        now_ms: now,
                        lease_until_ms: now + self.lease_ms(),
                        limit: free,
                        skip_tenants: &full,
                    })
                    .await
                {
                    Ok(due) => {
                        let claimed = due.len();
                        let mut started = 0;
                        for delivery in due {
                            let tenant = delivery.run.as_ref().map(|run| run.tenant.as_str());
                            let host = destination(&delivery);
                            match self.shares.take(tenant.unwrap_or_default(), &host) {
                                Some(share) => {
                                    started += 1;
                                    let deliverer = Arc::clone(&self);
                                    tokio::spawn(deliverer.attempt(delivery, share));
                                }
                                None => self.defer(&delivery).await,
                            }
                        }
                        // Claim again at once only while every claim started an attempt: a
                        // deferred one waits for a slot to be given back.
                        more = claimed == free && started == claimed;
                    }
                    Err(error) => warn!(%error, "claiming webhook deliveries failed"),
                }
            }
            if more {
                continue;
            }
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(POLL_INTERVAL) => {}
                () = self.shares.released.notified() => {}
            }
        }
    }

    /// Gives a claimed delivery back unattempted, due again shortly.
    async fn defer(&self, due: &DueDelivery) {
        let now = self.store.now_ms();
        let at_ms = now + i64::try_from(DEFER.as_millis()).unwrap_or(i64::MAX);
        let webhook_id = &due.delivery.webhook_id;
        let outcome = AttemptOutcome::Deferred { at_ms };
        if let Err(error) = self
            .store
            .finish_delivery(FinishedAttempt {
                webhook_id,
                owner: &self.owner,
                now_ms: now,
                outcome,
            })
            .await
        {
            warn!(%error, webhook_id, "deferring a webhook delivery failed");
        }
    }

    /// Attempts one claimed delivery and records how it went.
    async fn attempt(self: Arc<Self>, due: DueDelivery, share: Share) {
        let webhook_id = due.delivery.webhook_id.clone();
        let event = due.delivery.event;
        let outcome = self.send(due).await;
        match &outcome {
            AttemptOutcome::Delivered => crate::metrics::webhook_attempt(event.as_str(), true),
            AttemptOutcome::Retry { .. } | AttemptOutcome::Dead { .. } => {
                crate::metrics::webhook_attempt(event.as_str(), false)
            }
            AttemptOutcome::Obsolete { .. } | AttemptOutcome::Deferred { .. } => {}
        }
        debug!(webhook_id, ?outcome, "webhook attempt");
        let now = self.store.now_ms();
        if let Err(error) = self
            .store
            .finish_delivery(FinishedAttempt {
                webhook_id: &webhook_id,
                owner: &self.owner,
                now_ms: now,
                outcome,
            })
            .await
        {
            // The lease lapses and the delivery is attempted again.
            warn!(%error, webhook_id, "recording a webhook attempt failed");
        }
        drop(share);
    }

    async fn send(&self, due: DueDelivery) -> AttemptOutcome {
        let DueDelivery {
            delivery,
            event,
            run,
            call_waits,
        } = due;
        let (Some(event), Some(run), Some(target)) = (event, run, delivery.target.clone()) else {
            return AttemptOutcome::Obsolete {
                reason: "the run was deleted".into(),
            };
        };
        if delivery.event == WebhookEvent::CallReminder && !call_waits {
            return AttemptOutcome::Obsolete {
                reason: "the call no longer waits".into(),
            };
        }
        let failed = |error: String| self.failed(&delivery, error);
        let Ok(url) = Url::parse(&target.url) else {
            return failed("the subscription's URL does not parse".into());
        };
        // The operator's own subscriptions may reach inside; a client's may not.
        let guarded = self.settings.deny_private && !target.operator;
        let refused = || AttemptOutcome::Dead {
            error: REFUSED.into(),
        };
        if guarded {
            let literal = match url.host() {
                Some(Host::Ipv4(ip)) => Some(ip.into()),
                Some(Host::Ipv6(ip)) => Some(ip.into()),
                _ => None,
            };
            if literal.is_some_and(is_private) {
                return refused();
            }
        }
        let body = match body(
            &delivery,
            event,
            &run,
            self.settings.public_url.as_deref(),
            self.settings.answer_links.as_deref(),
        ) {
            Ok(body) => body,
            Err(error) => return failed(error.to_string()),
        };
        let now_ms = self.store.now_ms();
        // The operator's (and the default tenant's fallback) name a variable; the rest are signed
        // with the run's tenant's own secrets, two during a rotation's overlap.
        let secrets = match target.secret_env.as_deref() {
            Some(secret_env) => match secret_from_env(secret_env) {
                Ok(secret) => vec![secret],
                Err(error) => return failed(error.to_string()),
            },
            None => match self.secrets.signers(&run.tenant, now_ms).await {
                Ok(Some(secrets)) => secrets,
                Ok(None) => return failed("the run's tenant has no webhook secret".into()),
                Err(error) => return failed(error.to_string()),
            },
        };
        let timestamp = now_ms / 1000;
        let signature = match sign_all(&secrets, &delivery.webhook_id, timestamp, body.as_bytes()) {
            Ok(signature) => signature,
            Err(error) => return failed(error.to_string()),
        };
        let client = match guarded {
            true => &self.public_only,
            false => &self.client,
        };
        let response = client
            .post(url)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header("webhook-id", &delivery.webhook_id)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", signature)
            .body(body)
            .send()
            .await;
        match response {
            Ok(response) if response.status().is_success() => AttemptOutcome::Delivered,
            // The receiver wants no more (Standard Webhooks): give up at once.
            Ok(response) if response.status() == reqwest::StatusCode::GONE => {
                AttemptOutcome::Dead {
                    error: "the receiver answered 410 Gone".into(),
                }
            }
            Ok(response) => failed(format!("the receiver answered {}", response.status())),
            // No detail: the one message, whatever the connection would have said.
            Err(error) if guarded && was_refused(&error) => refused(),
            Err(error) => failed(request_error(error)),
        }
    }

    /// A failed attempt: retried after an exponential backoff with jitter, unless the next try
    /// would come past the delivery's maximum age.
    fn failed(&self, delivery: &crate::store::DeliveryRecord, error: String) -> AttemptOutcome {
        let doublings = delivery.attempts.min(30);
        let backoff = self
            .settings
            .initial_backoff
            .saturating_mul(1 << doublings)
            .min(MAX_BACKOFF);
        // Between half and all of the backoff, so that receivers that failed together are not
        // retried together.
        let wait = backoff.mul_f64(rand::rng().random_range(0.5..=1.0));
        let at_ms = self.store.now_ms() + i64::try_from(wait.as_millis()).unwrap_or(i64::MAX);
        let max_age_ms = i64::try_from(self.settings.max_age.as_millis()).unwrap_or(i64::MAX);
        if at_ms.saturating_sub(delivery.pending_since_ms) > max_age_ms {
            AttemptOutcome::Dead { error }
        } else {
            AttemptOutcome::Retry { at_ms, error }
        }
    }
}
