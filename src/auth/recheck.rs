//! A stream's credential, checked again while the stream lives, so that a key revoked or a token
//! past its `exp` ends the streams it opened (`--principal-recheck`).

use std::sync::Arc;
use std::time::Duration;

use super::{AuthError, Authenticator};

/// A re-check interval below this would only load the store.
const MIN_RECHECK: Duration = Duration::from_millis(100);

/// The bearer credential a request was authenticated with, put in its extensions next to its
/// principal. A principal without one (`--auth none`, a client certificate) has nothing to
/// re-check: it lasts as long as its connection.
#[derive(Clone)]
pub struct Credential {
    authenticator: Arc<Authenticator>,
    bearer: Arc<str>,
}

impl Credential {
    pub(super) fn new(authenticator: Arc<Authenticator>, bearer: &str) -> Credential {
        Credential {
            authenticator,
            bearer: bearer.into(),
        }
    }

    /// How often an open stream checks the credential again.
    pub fn interval(&self) -> Duration {
        self.authenticator.principal_recheck.max(MIN_RECHECK)
    }

    /// Authenticates the credential again, as a new request would be: a revoked key, an expired
    /// token or one whose signing key is gone is `InvalidCredentials`.
    pub async fn check(&self) -> Result<(), AuthError> {
        self.authenticator.principal(&self.bearer).await.map(drop)
    }
}
