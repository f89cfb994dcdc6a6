//! Who a request is for ([`TenantCtx`]), and the tenant rules every
//! resource family applies the same way: who may create, and how long what
//! is created lives. One copy of each, so pastes and reviews (and the
//! families after them) cannot drift apart.

use std::sync::Arc;

use tenancy::KeyId;

use crate::tenants::{KeyOwner, TenantView};

/// Who a request is for: the tenant, and the API key it authenticated with
/// (none for an anonymous request, which is the tenant of its host or the
/// default tenant).
#[derive(Debug)]
pub(crate) struct TenantCtx {
    pub(crate) tenant: Arc<TenantView>,
    pub(crate) key: Option<Arc<KeyOwner>>,
}

/// The request needs an API key of its tenant (401).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CredentialRequired;

/// A requested lifetime outside what the tenant allows (422).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TtlOutOfRange {
    /// The tenant's longest lifetime, seconds.
    pub(crate) max_secs: u64,
}

impl TenantCtx {
    /// Anonymous creates need a tenant that allows them.
    pub(crate) fn may_create(&self) -> Result<(), CredentialRequired> {
        if self.key.is_none() && !self.tenant.allow_anonymous {
            return Err(CredentialRequired);
        }
        Ok(())
    }

    /// Acting on a tenant's resources as a whole (listing) needs its key.
    pub(crate) fn require_key(&self) -> Result<&KeyId, CredentialRequired> {
        self.key
            .as_ref()
            .map(|owner| &owner.key)
            .ok_or(CredentialRequired)
    }

    /// The lifetime of something created now: the requested one when it is
    /// between 1 second and the tenant's maximum, else the tenant's default
    /// (raised to `floor` for resources that must expire).
    pub(crate) fn ttl_secs(
        &self,
        requested: Option<u64>,
        floor: u64,
    ) -> Result<u64, TtlOutOfRange> {
        let tenant = &self.tenant;
        match requested {
            None => Ok(tenant.default_ttl_secs.max(floor)),
            Some(ttl) if (1..=tenant.max_ttl_secs).contains(&ttl) => Ok(ttl),
            Some(_) => Err(TtlOutOfRange {
                max_secs: tenant.max_ttl_secs,
            }),
        }
    }
}
