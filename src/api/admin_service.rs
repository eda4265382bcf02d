//! `askuser.v1.AdminService`: API keys and webhook deliveries managed while servers run (the
//! `admin` scope, checked by the authentication layer). An admin acts on its own tenant only;
//! other tenants' keys take `operator`.

use std::sync::Arc;

use tonic::{Request, Response, Status};

use super::caller::caller;
use super::error::ApiError;
use crate::auth::{AuthError, api_key};
use crate::domain::{Principal, Scope, now_millis};
use crate::proto::v1 as pb;
use crate::proto::v1::admin_service_server::AdminService;
use crate::runtime::{RuntimeError, Violation};
use crate::store::{
    ApiKeyRecord, DeliveryQuery, DeliveryRecord, DeliveryStatus, DeliveryStore, KeyRevocation,
    KeyStore, RedeliverOutcome, Redelivery, StoreError, Tenancy,
};
use crate::webhooks::{TenantSecretError, TenantSecrets};
use crate::wire::timestamp;

/// Handlers of `AdminService`.
pub struct AdminApi {
    keys: Arc<dyn KeyStore>,
    deliveries: Arc<dyn DeliveryStore>,
    webhook_secrets: Arc<TenantSecrets>,
}

impl AdminApi {
    pub fn new(
        keys: Arc<dyn KeyStore>,
        deliveries: Arc<dyn DeliveryStore>,
        webhook_secrets: Arc<TenantSecrets>,
    ) -> Self {
        Self {
            keys,
            deliveries,
            webhook_secrets,
        }
    }
}

/// Deliveries a listing returns unless asked for fewer, and at most.
const DEFAULT_DELIVERY_PAGE: usize = 100;
const MAX_DELIVERY_PAGE: usize = 1000;

fn delivery_status_to_proto(status: DeliveryStatus) -> pb::WebhookDeliveryStatus {
    match status {
        DeliveryStatus::Pending => pb::WebhookDeliveryStatus::Pending,
        DeliveryStatus::Delivered => pb::WebhookDeliveryStatus::Delivered,
        DeliveryStatus::Dead => pb::WebhookDeliveryStatus::Dead,
        DeliveryStatus::Obsolete => pb::WebhookDeliveryStatus::Obsolete,
    }
}

fn delivery_status_filter(value: i32) -> Result<Option<DeliveryStatus>, ApiError> {
    match pb::WebhookDeliveryStatus::try_from(value) {
        Ok(pb::WebhookDeliveryStatus::Unspecified) => Ok(None),
        Ok(pb::WebhookDeliveryStatus::Pending) => Ok(Some(DeliveryStatus::Pending)),
        Ok(pb::WebhookDeliveryStatus::Delivered) => Ok(Some(DeliveryStatus::Delivered)),
        Ok(pb::WebhookDeliveryStatus::Dead) => Ok(Some(DeliveryStatus::Dead)),
        Ok(pb::WebhookDeliveryStatus::Obsolete) => Ok(Some(DeliveryStatus::Obsolete)),
        Err(_) => Err(ApiError::field("status", "unknown delivery status")),
    }
}

fn delivery_to_proto(delivery: DeliveryRecord) -> pb::WebhookDelivery {
    let pending = delivery.status == DeliveryStatus::Pending;
    pb::WebhookDelivery {
        status: delivery_status_to_proto(delivery.status).into(),
        webhook_id: delivery.webhook_id,
        run_id: delivery.run_id,
        sequence: delivery.sequence,
        event_type: delivery.event.as_str().to_owned(),
        url: delivery.target.map(|target| target.url).unwrap_or_default(),
        attempts: delivery.attempts,
        last_error: delivery.last_error,
        create_time: Some(timestamp(delivery.created_ms)),
        last_attempt_time: delivery.last_attempt_ms.map(timestamp),
        next_attempt_time: pending.then(|| timestamp(delivery.next_attempt_ms)),
    }
}

/// A listing's page token: the last delivery's creation time and id.
fn delivery_page_token(delivery: &DeliveryRecord) -> String {
    format!("{}:{}", delivery.created_ms, delivery.webhook_id)
}

fn parse_delivery_page_token(token: &str) -> Result<Option<(i64, String)>, ApiError> {
    if token.is_empty() {
        return Ok(None);
    }
    token
        .split_once(':')
        .and_then(|(ms, id)| Some((ms.parse().ok()?, id.to_owned())))
        .map(Some)
        .ok_or_else(|| ApiError::field("page_token", "not a token this listing gave"))
}

/// The longest key name or tenant `CreateKey` takes, in bytes.
const MAX_KEY_TEXT_BYTES: usize = 128;

/// What is wrong with a key's name or tenant, if anything: it shows in listings and logs.
fn key_text_problem(text: &str) -> Option<String> {
    if text.is_empty() {
        Some("must not be empty".into())
    } else if text.len() > MAX_KEY_TEXT_BYTES {
        Some(format!("must be at most {MAX_KEY_TEXT_BYTES} bytes"))
    } else if text.chars().any(char::is_control) {
        Some("must not hold NUL or other control characters".into())
    } else {
        None
    }
}

/// The scopes of a `CreateKey` request, or every violation of it and of its tenant and name.
fn key_scopes(request: &pb::CreateKeyRequest) -> Result<Vec<Scope>, ApiError> {
    let mut violations = Vec::new();
    let mut violation =
        |field: String, description: String| violations.push(Violation { field, description });
    for (field, text) in [("tenant", &request.tenant), ("name", &request.name)] {
        if let Some(problem) = key_text_problem(text) {
            violation(field.into(), problem);
        }
    }
    let mut scopes = Vec::with_capacity(request.scopes.len());
    for (index, name) in request.scopes.iter().enumerate() {
        match Scope::parse(name) {
            None => violation(format!("scopes[{index}]"), "unknown scope".into()),
            Some(scope) if scopes.contains(&scope) => {
                violation(format!("scopes[{index}]"), format!("{name} is given twice"))
            }
            Some(scope) => scopes.push(scope),
        }
    }
    match violations.is_empty() {
        true => Ok(scopes),
        false => Err(ApiError::InvalidRequest(violations)),
    }
}

/// The keys a caller manages: its tenant's, or every tenant's with `operator`.
fn key_tenancy(caller: &Principal) -> Tenancy<'_> {
    match caller.may(Scope::Operator) {
        true => Tenancy::Any,
        false => Tenancy::Only(&caller.tenant),
    }
}

fn store_error(error: StoreError) -> ApiError {
    ApiError::Runtime(RuntimeError::Store(error))
}

fn secret_error(error: TenantSecretError) -> ApiError {
    match error {
        TenantSecretError::NoKey => ApiError::NoWebhookSecretsKey,
        TenantSecretError::Store(error) => store_error(error),
        error => ApiError::Runtime(RuntimeError::Internal(error.to_string())),
    }
}

fn key_to_proto(key: ApiKeyRecord) -> pb::ApiKey {
    pb::ApiKey {
        key_id: key.key_id,
        tenant: key.tenant,
        name: key.name,
        scopes: key
            .scopes
            .iter()
            .map(|scope| scope.as_str().to_owned())
            .collect(),
        create_time: Some(timestamp(key.created_ms)),
        revoke_time: key.revoked_ms.map(timestamp),
    }
}

#[tonic::async_trait]
impl AdminService for AdminApi {
    async fn create_key(
        &self,
        request: Request<pb::CreateKeyRequest>,
    ) -> Result<Response<pb::CreateKeyResponse>, Status> {
        let caller = caller(&request);
        let request = request.into_inner();
        let scopes = key_scopes(&request)?;
        // A key of another tenant, or one holding a scope its maker does not (`operator` for an
        // admin), takes `operator`.
        if request.tenant != caller.tenant && !caller.may(Scope::Operator) {
            return Err(AuthError::MissingScope(Scope::Operator).into());
        }
        if let Some(scope) = scopes.iter().find(|scope| !caller.may(**scope)) {
            return Err(AuthError::MissingScope(*scope).into());
        }
        let generated = api_key::generate(request.tenant, request.name, scopes);
        let record = generated.stored.record();
        self.keys
            .create_key(generated.stored)
            .await
            .map_err(store_error)?;
        Ok(Response::new(pb::CreateKeyResponse {
            key: Some(key_to_proto(record)),
            secret: generated.key,
        }))
    }

    async fn list_keys(
        &self,
        request: Request<pb::ListKeysRequest>,
    ) -> Result<Response<pb::ListKeysResponse>, Status> {
        let caller = caller(&request);
        let keys = self
            .keys
            .list_keys(key_tenancy(&caller))
            .await
            .map_err(store_error)?;
        Ok(Response::new(pb::ListKeysResponse {
            keys: keys.into_iter().map(key_to_proto).collect(),
        }))
    }

    async fn revoke_key(
        &self,
        request: Request<pb::RevokeKeyRequest>,
    ) -> Result<Response<pb::RevokeKeyResponse>, Status> {
        let caller = caller(&request);
        let key_id = request.into_inner().key_id;
        // Another tenant's key is NOT_FOUND, as a key nobody made.
        if !self
            .keys
            .revoke_key(KeyRevocation {
                key_id: &key_id,
                tenancy: key_tenancy(&caller),
                now_ms: now_millis(),
            })
            .await
            .map_err(store_error)?
        {
            return Err(ApiError::KeyNotFound(key_id).into());
        }
        Ok(Response::new(pb::RevokeKeyResponse {}))
    }

    async fn list_webhook_deliveries(
        &self,
        request: Request<pb::ListWebhookDeliveriesRequest>,
    ) -> Result<Response<pb::ListWebhookDeliveriesResponse>, Status> {
        let tenant = caller(&request).tenant;
        let request = request.into_inner();
        let limit = match request.page_size {
            0 => DEFAULT_DELIVERY_PAGE,
            size => usize::try_from(size).map_or(MAX_DELIVERY_PAGE, |s| s.min(MAX_DELIVERY_PAGE)),
        };
        let mut deliveries = self
            .deliveries
            .list_deliveries(DeliveryQuery {
                tenant: Some(tenant),
                run_id: (!request.run_id.is_empty()).then_some(request.run_id),
                status: delivery_status_filter(request.status)?,
                after: parse_delivery_page_token(&request.page_token)?,
                // One more than the page: whether another page follows.
                limit: limit + 1,
            })
            .await
            .map_err(store_error)?;
        let next_page_token = match deliveries.len() > limit {
            true => {
                deliveries.truncate(limit);
                deliveries
                    .last()
                    .map(delivery_page_token)
                    .unwrap_or_default()
            }
            false => String::new(),
        };
        Ok(Response::new(pb::ListWebhookDeliveriesResponse {
            deliveries: deliveries.into_iter().map(delivery_to_proto).collect(),
            next_page_token,
        }))
    }

    async fn redeliver_webhook(
        &self,
        request: Request<pb::RedeliverWebhookRequest>,
    ) -> Result<Response<pb::RedeliverWebhookResponse>, Status> {
        let tenant = caller(&request).tenant;
        let webhook_id = request.into_inner().webhook_id;
        let outcome = self
            .deliveries
            .redeliver(Redelivery {
                webhook_id: &webhook_id,
                tenancy: Tenancy::Only(&tenant),
                now_ms: now_millis(),
            })
            .await
            .map_err(store_error)?;
        match outcome {
            RedeliverOutcome::Redelivered(delivery) => {
                Ok(Response::new(pb::RedeliverWebhookResponse {
                    delivery: Some(delivery_to_proto(delivery)),
                }))
            }
            RedeliverOutcome::Unchanged(delivery) => {
                Err(ApiError::NotRedeliverable(webhook_id, delivery.status.as_str()).into())
            }
            RedeliverOutcome::NotFound => Err(ApiError::DeliveryNotFound(webhook_id).into()),
        }
    }

    async fn rotate_webhook_secret(
        &self,
        request: Request<pb::RotateWebhookSecretRequest>,
    ) -> Result<Response<pb::RotateWebhookSecretResponse>, Status> {
        let tenant = caller(&request).tenant;
        let (secret, previous_until_ms) = self
            .webhook_secrets
            .rotate(&tenant, now_millis())
            .await
            .map_err(secret_error)?;
        Ok(Response::new(pb::RotateWebhookSecretResponse {
            secret,
            previous_expire_time: previous_until_ms.map(timestamp),
        }))
    }
}
