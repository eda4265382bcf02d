//! Webhook delivery: a background task per replica sends the outbox's due deliveries (written by
//! the store with the events that make them), signed per the Standard Webhooks spec, retrying with
//! exponential backoff until they are delivered or too old.

mod body;
mod deliverer;
mod destination;
mod shares;
mod signing;
mod tenant_secrets;

pub use deliverer::{DelivererSettings, start};
pub use signing::{SigningError, secret_from_env, sign};
pub use tenant_secrets::{Sealer, TenantSecretError, TenantSecrets};
