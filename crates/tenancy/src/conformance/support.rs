//! Helpers every part of the conformance suite uses.

use crate::{CatalogError, NewTenant, TenantSettings};

pub(super) fn ok<T>(r: Result<T, CatalogError>, what: &str) -> T {
    r.unwrap_or_else(|e| panic!("{what}: unexpected error {e:?}"))
}

pub(super) fn suffix() -> String {
    let mut b = [0u8; 6];
    let _ = getrandom::fill(&mut b);
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A new tenant description with a unique namespace and host.
pub fn new_tenant(label: &str) -> NewTenant {
    let s = suffix();
    NewTenant {
        name: format!("Tenant {label}"),
        namespace: format!("{label}-{s}"),
        settings: TenantSettings {
            hosts: vec![format!("{label}-{s}.example.com")],
            cors_origins: vec![format!("https://{label}-{s}.example.com")],
            ..TenantSettings::default()
        },
    }
}

/// Decisions as the suite makes them when the version does not matter to
/// the check: by the owner, on the review's latest version.
pub(super) trait DecideLatest {
    /// [`Catalog::decide_review`](crate::Catalog::decide_review) by the
    /// owner on the latest version (read first; 0 for an unknown review).
    async fn decide_latest(
        &self,
        tenant: &crate::TenantId,
        id: &str,
        state: crate::ReviewState,
        feedback: Option<&crate::BlobRef>,
        now: i64,
    ) -> Result<crate::Outcome<crate::ReviewEvent>, CatalogError>;
}

impl DecideLatest for crate::Catalog {
    async fn decide_latest(
        &self,
        tenant: &crate::TenantId,
        id: &str,
        state: crate::ReviewState,
        feedback: Option<&crate::BlobRef>,
        now: i64,
    ) -> Result<crate::Outcome<crate::ReviewEvent>, CatalogError> {
        let latest = match self.review_snapshot(tenant, id).await {
            Ok(Some(snapshot)) => snapshot.head.latest,
            _ => 0,
        };
        let decision = crate::NewDecision {
            state,
            version: latest,
            writer: crate::OWNER_WRITER,
            name: None,
            feedback,
            sealed: None,
        };
        Ok(self
            .decide_review(tenant, id, &decision, now)
            .await?
            .map(|decided| decided.event))
    }
}
