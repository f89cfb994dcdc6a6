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
