//! The deliverer's slots, shared fairly: at most so many attempts at once in all, for the runs of
//! one tenant, and to one destination (host and port), so that one tenant's slow or dead
//! receivers hold at most their share and never every slot.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::Notify;

/// The most attempts at once: in all, per tenant, per destination.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub total: usize,
    pub per_tenant: usize,
    pub per_host: usize,
}

#[derive(Default)]
struct Counts {
    total: usize,
    tenants: HashMap<String, usize>,
    hosts: HashMap<String, usize>,
}

/// The slots in use, and a wake-up for the deliverer when one is given back.
pub struct Shares {
    limits: Limits,
    counts: Mutex<Counts>,
    pub released: Notify,
}

/// One slot, given back when dropped.
pub struct Share {
    shares: Arc<Shares>,
    tenant: String,
    host: String,
}

fn give_back(counts: &mut HashMap<String, usize>, key: &str) {
    if let Some(count) = counts.get_mut(key) {
        *count -= 1;
        if *count == 0 {
            counts.remove(key);
        }
    }
}

impl Shares {
    pub fn new(limits: Limits) -> Arc<Self> {
        Arc::new(Shares {
            limits,
            counts: Mutex::default(),
            released: Notify::new(),
        })
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        // The counts stay consistent under every step that holds the lock: no panic between.
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Slots free in all.
    pub fn free(&self) -> usize {
        self.limits.total.saturating_sub(self.counts().total)
    }

    /// The tenants at their share, whose deliveries are not worth claiming now.
    pub fn full_tenants(&self) -> Vec<String> {
        self.counts()
            .tenants
            .iter()
            .filter(|(_, count)| **count >= self.limits.per_tenant)
            .map(|(tenant, _)| tenant.clone())
            .collect()
    }

    /// A slot for an attempt for `tenant` to `host`, unless one of them (or the whole) is at its
    /// share.
    pub fn take(self: &Arc<Self>, tenant: &str, host: &str) -> Option<Share> {
        let mut counts = self.counts();
        let tenant_count = counts.tenants.get(tenant).copied().unwrap_or(0);
        let host_count = counts.hosts.get(host).copied().unwrap_or(0);
        if counts.total >= self.limits.total
            || tenant_count >= self.limits.per_tenant
            || host_count >= self.limits.per_host
        {
            return None;
        }
        counts.total += 1;
        *counts.tenants.entry(tenant.to_owned()).or_default() += 1;
        *counts.hosts.entry(host.to_owned()).or_default() += 1;
        Some(Share {
            shares: Arc::clone(self),
            tenant: tenant.to_owned(),
            host: host.to_owned(),
        })
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        {
            let mut counts = self.shares.counts();
            counts.total -= 1;
            give_back(&mut counts.tenants, &self.tenant);
            give_back(&mut counts.hosts, &self.host);
        }
        self.shares.released.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenant_and_a_host_get_at_most_their_share() {
        let shares = Shares::new(Limits {
            total: 4,
            per_tenant: 2,
            per_host: 1,
        });
        let a = shares.take("a", "slow:80").expect("a first slot");
        assert!(shares.take("a", "slow:80").is_none(), "a host's share");
        let b = shares.take("a", "other:80").expect("another host");
        assert!(shares.take("a", "third:80").is_none(), "a tenant's share");
        assert_eq!(shares.full_tenants(), ["a"]);
        let c = shares.take("b", "fast:80").expect("another tenant");
        assert_eq!(shares.free(), 1);
        drop((a, b, c));
        assert_eq!(shares.free(), 4);
        assert!(shares.full_tenants().is_empty());
    }
}
