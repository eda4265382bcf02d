//! The delivery loop: claims due deliveries with a lease (so one replica at a time attempts each),
//! sends each, and records the outcome. At least once: a delivery is marked delivered only after a
//! 2xx answer, so a crash between the two sends it again, with the same `webhook-id`.

use std::sync::Arc;
use std::time::Duration;

use rand::Rng;
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use super::body::body;
use super::signing::{secret_from_env, sign};
use crate::domain::WebhookEvent;
use crate::http::request_error;
use crate::store::{AttemptOutcome, DueDelivery, RunStore};

/// How often the outbox is looked at while nothing is due.
const POLL_INTERVAL: Duration = Duration::from_millis(250);
/// Deliveries attempted at once by one replica.
const MAX_IN_FLIGHT: usize = 32;
/// The longest wait between two attempts of one delivery.
const MAX_BACKOFF: Duration = Duration::from_secs(3600);

/// Settings of the deliverer.
#[derive(Clone, Debug)]
pub struct DelivererSettings {
    /// The server's public address: suspended and reminder bodies link to `<it>/runs/<run>#<call>`.
    pub public_url: Option<String>,
    /// How long a delivery is retried before it is given up (dead).
    pub max_age: Duration,
    /// The wait before the first retry; each next one doubles, with jitter.
    pub initial_backoff: Duration,
    /// How long a receiver may take to answer.
    pub timeout: Duration,
}

struct Deliverer {
    store: Arc<dyn RunStore>,
    client: reqwest::Client,
    settings: DelivererSettings,
    /// This replica's name in delivery leases.
    owner: String,
}

/// Starts delivering until `shutdown`; attempts still in flight then are abandoned, and their
/// leases lapse for another replica (or the next start) to send them again.
pub fn start(
    store: Arc<dyn RunStore>,
    settings: DelivererSettings,
    shutdown: CancellationToken,
) -> Result<JoinHandle<()>, reqwest::Error> {
    let client = reqwest::Client::builder()
        .timeout(settings.timeout)
        // A receiver that moved is told to update its URL, not followed (Standard Webhooks).
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("askuser/", env!("CARGO_PKG_VERSION")))
        .build()?;
    let deliverer = Arc::new(Deliverer {
        store,
        client,
        settings,
        owner: uuid::Uuid::now_v7().simple().to_string(),
    });
    Ok(tokio::spawn(deliverer.run(shutdown)))
}

impl Deliverer {
    /// A lease outlasts an attempt: its request's timeout, and room for signing and recording.
    fn lease_ms(&self) -> i64 {
        let lease = self.settings.timeout * 2 + Duration::from_secs(10);
        i64::try_from(lease.as_millis()).unwrap_or(i64::MAX)
    }

    async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        let slots = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
        loop {
            let free = slots.available_permits();
            let mut more = false;
            if free > 0 {
                let now = self.store.now_ms();
                match self
                    .store
                    .claim_deliveries(&self.owner, now, now + self.lease_ms(), free)
                    .await
                {
                    Ok(due) => {
                        more = due.len() == free;
                        for delivery in due {
                            let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
                                return;
                            };
                            let deliverer = Arc::clone(&self);
                            tokio::spawn(async move {
                                deliverer.attempt(delivery).await;
                                drop(slot);
                            });
                        }
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
            }
        }
    }

    /// Attempts one claimed delivery and records how it went.
    async fn attempt(&self, due: DueDelivery) {
        let webhook_id = due.delivery.webhook_id.clone();
        let event = due.delivery.event;
        let outcome = self.send(due).await;
        match &outcome {
            AttemptOutcome::Delivered => crate::metrics::webhook_attempt(event.as_str(), true),
            AttemptOutcome::Retry { .. } | AttemptOutcome::Dead { .. } => {
                crate::metrics::webhook_attempt(event.as_str(), false)
            }
            AttemptOutcome::Obsolete { .. } => {}
        }
        debug!(webhook_id, ?outcome, "webhook attempt");
        let now = self.store.now_ms();
        if let Err(error) = self
            .store
            .finish_delivery(&webhook_id, &self.owner, now, outcome)
            .await
        {
            // The lease lapses and the delivery is attempted again.
            warn!(%error, webhook_id, "recording a webhook attempt failed");
        }
    }

    async fn send(&self, due: DueDelivery) -> AttemptOutcome {
        let DueDelivery {
            delivery,
            event,
            run,
            call_waits,
        } = due;
        let (Some(event), Some(run)) = (event, run) else {
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
        let body = match body(&delivery, event, &run, self.settings.public_url.as_deref()) {
            Ok(body) => body,
            Err(error) => return failed(error.to_string()),
        };
        let secret = match secret_from_env(&delivery.secret_env) {
            Ok(secret) => secret,
            Err(error) => return failed(error.to_string()),
        };
        let timestamp = self.store.now_ms() / 1000;
        let signature = match sign(&secret, &delivery.webhook_id, timestamp, body.as_bytes()) {
            Ok(signature) => signature,
            Err(error) => return failed(error.to_string()),
        };
        let response = self
            .client
            .post(&delivery.url)
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
