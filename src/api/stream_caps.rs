//! Caps on the streaming calls one principal, and one tenant, may have open at once, so that no
//! caller holds the server's streams (`--max-open-streams`) for itself. Counted where every
//! streaming RPC takes its place ([`super::agent_service`]'s stream permit).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::error::ApiError;
use crate::domain::Principal;
use crate::runtime::RuntimeError;

/// Who a count is kept for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Holder {
    Tenant(String),
    /// A tenant's subject (a key, a token's `sub`, a client certificate).
    Principal(String, String),
}

/// Open streams per tenant and per principal, with their caps.
#[derive(Debug)]
pub struct StreamCaps {
    per_principal: usize,
    per_tenant: usize,
    open: Mutex<HashMap<Holder, usize>>,
}

impl StreamCaps {
    pub fn new(per_principal: usize, per_tenant: usize) -> Self {
        Self {
            per_principal,
            per_tenant,
            open: Mutex::default(),
        }
    }

    /// A place for one more stream of `principal`, or the cap it would pass.
    pub fn take(self: &Arc<Self>, principal: &Principal) -> Result<StreamSlot, ApiError> {
        let tenant = Holder::Tenant(principal.tenant.clone());
        let subject = Holder::Principal(principal.tenant.clone(), principal.subject.clone());
        let mut open = self
            .open
            .lock()
            .map_err(|_| RuntimeError::Internal("the stream counts are poisoned".into()))?;
        let count = |holder: &Holder| open.get(holder).copied().unwrap_or(0);
        if count(&tenant) >= self.per_tenant {
            return Err(ApiError::TooManyTenantStreams(self.per_tenant));
        }
        if count(&subject) >= self.per_principal {
            return Err(ApiError::TooManyPrincipalStreams(self.per_principal));
        }
        for holder in [&tenant, &subject] {
            *open.entry(holder.clone()).or_insert(0) += 1;
        }
        Ok(StreamSlot {
            caps: Arc::clone(self),
            holders: [tenant, subject],
        })
    }
}

/// One open stream's place in its tenant's and principal's counts, given back when dropped.
#[derive(Debug)]
pub struct StreamSlot {
    caps: Arc<StreamCaps>,
    holders: [Holder; 2],
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let Ok(mut open) = self.caps.open.lock() else {
            return;
        };
        for holder in &self.holders {
            if let Some(count) = open.get_mut(holder) {
                *count -= 1;
                if *count == 0 {
                    open.remove(holder);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn principal(tenant: &str, subject: &str) -> Principal {
        Principal {
            tenant: tenant.into(),
            subject: subject.into(),
            ..Principal::anonymous()
        }
    }

    #[test]
    fn caps_count_per_principal_and_per_tenant_and_free_on_drop() {
        let caps = Arc::new(StreamCaps::new(2, 3));
        let a1 = principal("acme", "one");
        let a2 = principal("acme", "two");
        let first = caps.take(&a1).expect("first");
        let second = caps.take(&a1).expect("second");
        assert!(matches!(
            caps.take(&a1),
            Err(ApiError::TooManyPrincipalStreams(2))
        ));
        let third = caps.take(&a2).expect("another principal of the tenant");
        assert!(matches!(
            caps.take(&a2),
            Err(ApiError::TooManyTenantStreams(3))
        ));
        let other = caps
            .take(&principal("globex", "one"))
            .expect("another tenant");
        drop(first);
        let fourth = caps.take(&a2).expect("a place was given back");
        drop((second, third, other, fourth));
        assert!(caps.open.lock().expect("lock").is_empty(), "counts left");
    }
}
