//! `askuser.v1.AdminService`: API keys managed while servers run (the `admin` scope, checked by
//! the authentication layer).

use std::sync::Arc;

use tonic::{Request, Response, Status};

use super::convert::timestamp;
use super::error::ApiError;
use crate::auth::api_key;
use crate::domain::{Scope, now_millis};
use crate::proto::v1 as pb;
use crate::proto::v1::admin_service_server::AdminService;
use crate::runtime::RuntimeError;
use crate::store::{ApiKeyRecord, KeyStore, StoreError};

/// Handlers of `AdminService`.
pub struct AdminApi {
    keys: Arc<dyn KeyStore>,
}

impl AdminApi {
    pub fn new(keys: Arc<dyn KeyStore>) -> Self {
        Self { keys }
    }
}

fn store_error(error: StoreError) -> ApiError {
    ApiError::Runtime(RuntimeError::Store(error))
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
        let request = request.into_inner();
        if request.tenant.is_empty() {
            return Err(ApiError::field("tenant", "must not be empty").into());
        }
        let scopes = request
            .scopes
            .iter()
            .enumerate()
            .map(|(index, name)| {
                Scope::parse(name)
                    .ok_or_else(|| ApiError::field(format!("scopes[{index}]"), "unknown scope"))
            })
            .collect::<Result<Vec<_>, _>>()?;
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
        _request: Request<pb::ListKeysRequest>,
    ) -> Result<Response<pb::ListKeysResponse>, Status> {
        let keys = self.keys.list_keys().await.map_err(store_error)?;
        Ok(Response::new(pb::ListKeysResponse {
            keys: keys.into_iter().map(key_to_proto).collect(),
        }))
    }

    async fn revoke_key(
        &self,
        request: Request<pb::RevokeKeyRequest>,
    ) -> Result<Response<pb::RevokeKeyResponse>, Status> {
        let key_id = request.into_inner().key_id;
        if !self
            .keys
            .revoke_key(&key_id, now_millis())
            .await
            .map_err(store_error)?
        {
            return Err(ApiError::KeyNotFound(key_id).into());
        }
        Ok(Response::new(pb::RevokeKeyResponse {}))
    }
}
